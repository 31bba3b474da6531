"""The cluster's dynamics: brokers that fail and come back, replication, and elections, on one clock.

:class:`Dynamics` is what the controls (``ServerThread.stop_broker``, ``advance``, ...) and ElectLeaders
call. Every change of state runs as one controller event at a time (the controller's lock, shared with
topic administration), as KRaft's controller processes its event queue; reading state never waits.

- :mod:`.lifecycle`: crash, hang, isolation, controlled shutdown, restart, brokers added and removed;
- :mod:`.replication`: log end offsets, the in-sync set, the high watermark;
- :mod:`controller.election`: who leads, with the configured policy.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from controller.clock import Clock, Timer, VirtualClock
from controller.cluster import NO_LEADER, Cluster, LeaderRecoveryState, PartitionState, PartitionStatus
from controller.config import ServerConfig
from controller.dynamics.lifecycle import STOP_MODES, FluvioLifecycle, KafkaLifecycle, Lifecycle, Network
from controller.dynamics.replication import FluvioReplication, KafkaReplication, Replication
from controller.election import rules
from controller.election.api import ElectionStyle, Trigger
from controller.election.change import ElectionKind
from controller.election.service import Change, ElectionService
from controller.election.styles import start_election_service
from controller.events import Event
from controller.offload import Turns
from protocol.codes import ErrorCode

if TYPE_CHECKING:
    from controller.reassignment import Reassignments, ReassignOutcome

log = logging.getLogger(__name__)

__all__ = ["ELECTION_KINDS", "STOP_MODES", "Dynamics", "ElectionOutcome", "PartitionSnapshot"]

#: The elections ``elect(kind=...)`` and ElectLeaders ask for (ElectionType 0 preferred, 1 unclean), and
#: the trigger each is for the policy.
ELECTION_KINDS = {ElectionKind.PREFERRED: Trigger.PREFERRED, ElectionKind.UNCLEAN: Trigger.UNCLEAN}

#: Each style's lifecycle and replication, chosen once by the election policy's style.
_STYLES: dict[ElectionStyle, tuple[type[Lifecycle], type[Replication]]] = {
    ElectionStyle.KAFKA: (KafkaLifecycle, KafkaReplication),
    ElectionStyle.FLUVIO: (FluvioLifecycle, FluvioReplication),
}

#: Kafka's cap on preferred elections per automatic rebalance pass (and on unclean ones per check).
MAX_ELECTIONS_PER_IMBALANCE = 1000

#: How often KRaft's controller looks for leaderless partitions of topics that allow unclean elections
#: and elects them a leader, while some partition has none (``QuorumController``'s
#: ``uncleanLeaderElectionCheckIntervalMs``, 5 minutes): turning ``unclean.leader.election.enable`` on at
#: run time elects at the next check, not at once.
UNCLEAN_ELECTION_CHECK_MS = 300_000
#: A check that hit the cap runs again this soon (``QuorumController``: 10 ms).
UNCLEAN_ELECTION_RECHECK_MS = 10


@dataclass(frozen=True)
class PartitionSnapshot:
    """A partition's state at one moment (``partition_state``): ``isr`` is the LRS under Fluvio's style;
    ``status`` is ``Online``/``Offline``, or Fluvio's ``Election``/``CandidateFound`` during an election;
    ``leader_recovery_state`` is RECOVERING after an unclean election until the new leader has recovered
    its log (at the next replication tick)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    high_watermark: int
    log_end_offsets: dict[int, int]
    status: PartitionStatus
    offline_replicas: tuple[int, ...]
    leader_recovery_state: LeaderRecoveryState
    #: A reassignment in progress: the replicas being added and removed (both empty when none is).
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    #: The last stable offset: the high watermark, or the first offset of an open transaction below it.
    last_stable_offset: int = -1


@dataclass(frozen=True)
class ElectionOutcome:
    """One partition's answer to an election request: ``error`` is None (a leader was elected) or the
    wire error (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ...)."""

    topic: str
    partition: int
    error: ErrorCode | None
    message: str | None = None


class Dynamics:
    """Lifecycle, replication and elections of one cluster (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        cluster: Cluster,
        clock: Clock,
        elections: ElectionService,
        lock: asyncio.Lock,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.elections = elections
        self.lock = lock
        lifecycle, replication = _STYLES[elections.style]
        self.replication = replication(config, cluster, clock)
        self.lifecycle = lifecycle(config, cluster, clock, elections, self.replication)
        self.lifecycle.run_event = self.run_event
        elections.on_changes = self._after_changes
        elections.before_change = self._before_change
        self.replication.on_reassignment_complete = self._reassignment_complete
        #: Called with the partitions a controller change touched (leader, epochs, in-sync set), in order,
        #: before replication looks at them: the replicas' logs follow (``controller.data_path``).
        self.on_partitions_changed: Callable[[Sequence[PartitionState]], None] = lambda partitions: None
        #: Also called with the partitions a controller change touched, after replication looked at them:
        #: coordinators whose state lives in a topic's partitions take over as their leaders move (the
        #: transaction coordinator on ``__transaction_state``).
        self.partition_watchers: list[Callable[[Sequence[PartitionState]], None]] = []
        #: Called with the name of a deleted topic.
        self.on_topic_deleted: Callable[[str], None] = lambda topic: None
        #: Called before log end offsets move without records (a synthetic workload, a set offset): whoever
        #: follows the logs with records is made ready first (the Controller builds its data path).
        self.before_workload: Callable[[], object] = lambda: None
        #: A partition's last stable offset (the data path's, once it exists: transactions).
        self.last_stable_offset: Callable[[PartitionState], int] = lambda p: p.high_watermark
        self._rebalance_timer: Timer | None = None
        if elections.preferred_rebalance and config.auto_rebalance:
            self._schedule_rebalance(config.imbalance_check_seconds * 1000)
        self._unclean_timer: Timer | None = None
        if any(p.leader == NO_LEADER for p in cluster.partitions()):
            self._schedule_unclean_check(UNCLEAN_ELECTION_CHECK_MS)

    @cached_property
    def reassignments(self) -> Reassignments:
        """Partition reassignments (AlterPartitionReassignments), completed as replication catches up: made
        at the first one asked for, so that a server that is asked none never loads their module."""
        from controller.reassignment import Reassignments

        return Reassignments(self.cluster, self.clock, self.elections, self.run_event)

    def _reassignment_complete(self, partition: PartitionState, isr: list[int]) -> None:
        self.reassignments.complete_later(partition, isr)

    @classmethod
    async def start(
        cls, config: ServerConfig, cluster: Cluster, clock: Clock, lock: asyncio.Lock
    ) -> Dynamics:
        elections = await start_election_service(config, cluster, clock)
        return cls(config, cluster, clock, elections, lock)

    def attach(self, network: Network) -> None:
        """The server's listeners follow the brokers' processes from now on."""
        self.lifecycle.network = network

    async def close(self) -> None:
        for timer in (self._rebalance_timer, self._unclean_timer):
            if timer is not None:
                timer.cancel()
        await self.lifecycle.close()
        reassignments = self.__dict__.get("reassignments")  # made only if one was asked for
        if reassignments is not None:
            await reassignments.close()
        await self.replication.close()
        await self.elections.close()

    async def run_event(self, action: Callable[[], Awaitable[Any]]) -> Any:
        """Runs one controller event: state changes never interleave."""
        async with self.lock:
            return await action()

    def _before_change(self, changes: Sequence[Change]) -> None:
        if self.replication.coasting:
            self.replication.settle(c.partition for c in changes)

    def _after_changes(self, partitions: Sequence[PartitionState]) -> None:
        self.on_partitions_changed(partitions)
        self.replication.changed(partitions, "partition change")
        for watcher in self.partition_watchers:
            watcher(partitions)
        if self._unclean_timer is None:
            for p in partitions:
                if p.leader == NO_LEADER:
                    self._schedule_unclean_check(UNCLEAN_ELECTION_CHECK_MS)
                    break

    # ------------------------------------------------------------------------------------- controls

    async def stop_broker(self, broker: int, mode: str = "crash") -> None:
        await self.run_event(lambda: self.lifecycle.stop_broker(broker, mode))

    async def start_broker(self, broker: int) -> None:
        await self.run_event(lambda: self.lifecycle.start_broker(broker))

    async def add_broker(self, broker: int, rack: str | None = None) -> None:
        await self.run_event(lambda: self.lifecycle.add_broker(broker, rack))

    async def remove_broker(self, broker: int) -> None:
        await self.run_event(lambda: self.lifecycle.remove_broker(broker))

    async def set_replication(
        self, broker: int, delay_ms: int | None = None, records_per_s: float | None = -1
    ) -> None:
        async def action() -> None:
            self.replication.set_replication(broker, delay_ms, records_per_s)

        await self.run_event(action)

    async def produce_load(self, topic: str, records_per_s: float) -> None:
        self.before_workload()

        async def action() -> None:
            self.replication.produce_load(topic, records_per_s)

        await self.run_event(action)

    async def set_log_end_offset(self, topic: str, partition: int, broker: int, offset: int) -> None:
        self.before_workload()

        async def action() -> None:
            self.replication.set_log_end_offset(topic, partition, broker, offset)

        await self.run_event(action)

    async def fail_promotion(self, broker: int, fails: bool = True) -> None:
        """Fluvio: ``broker``'s promotions fail (it never confirms) until cleared."""

        async def action() -> None:
            self.replication.settle()  # a confirmed promotion changes partitions without an election
            self.elections.set_promotion_fault(broker, fails)

        await self.run_event(action)

    async def elect(
        self, topic: str, partition: int, kind: ElectionKind | str = ElectionKind.PREFERRED
    ) -> ElectionOutcome:
        [outcome] = await self.elect_leaders(kind, [(topic, partition)])
        return outcome

    async def elect_leaders(
        self, kind: ElectionKind | str, partitions: Sequence[tuple[str, int]] | None
    ) -> list[ElectionOutcome]:
        """ElectLeaders: ``kind`` PREFERRED or UNCLEAN (or its value, ``"preferred"``/``"unclean"``);
        ``partitions`` None means every partition, and then the ones that need no election are left out."""
        trigger = next((t for k, t in ELECTION_KINDS.items() if kind is k or kind == k.value), None)
        if trigger is None:
            choices = ", ".join(k.value for k in ELECTION_KINDS)
            raise ValueError(f"kind must be one of {choices}, not {kind!r}")
        return await self.run_event(lambda: self._elect_leaders(trigger, partitions))

    async def _elect_leaders(
        self, trigger: Trigger, wanted: Sequence[tuple[str, int]] | None
    ) -> list[ElectionOutcome]:
        """Runs under the controller's lock (topics do not change meanwhile), in turns of the event loop:
        a request for every partition of a big cluster does not hold up other clients."""
        every = wanted is None
        turns = Turns()
        targets: list[tuple[str, int]] = []
        if wanted is None:
            for t in list(self.cluster.topics.values()):
                for start in range(0, len(t.partitions), 1000):
                    targets += [(t.name, p.index) for p in t.partitions[start : start + 1000]]
                    await turns.yield_if_due()
        else:
            targets = list(wanted)
        outcomes: dict[int, ElectionOutcome] = {}
        changes: list[Change] = []
        positions: list[int] = []
        # One message per unknown topic, shared by its partitions: a topic name of 32,700 characters
        # named with 20,000 partitions made 654 MB of messages.
        no_such_topic: dict[str, str] = {}
        for i, (topic, index) in enumerate(targets):
            if turns.due():
                await asyncio.sleep(0)
            t = self.cluster.topics.get(topic)
            if t is None or not 0 <= index < len(t.partitions):
                if t is None:
                    message = no_such_topic.get(topic)
                    if message is None:
                        message = no_such_topic[topic] = f"No such topic as {topic}"
                else:
                    message = f"No such partition as {topic}-{index}"
                outcomes[i] = ElectionOutcome(topic, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message)
                continue
            p = t.partitions[index]
            if rules.election_not_needed(p.replicas, p.leader, trigger):
                if not every:  # left out of an answer for every partition
                    outcomes[i] = ElectionOutcome(topic, index, ErrorCode.ELECTION_NOT_NEEDED)
                continue
            changes.append(Change(p, trigger=trigger))
            positions.append(i)
        before = {id(c.partition): c.partition.leader for c in changes}
        results = await self.elections.change(changes, f"{trigger.value} election requested")
        none_found = (
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            if trigger is Trigger.PREFERRED
            else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        )
        for i, change, result in zip(positions, changes, results, strict=True):
            if turns.due():
                await asyncio.sleep(0)
            p = change.partition
            if result.error is not None:
                outcomes[i] = ElectionOutcome(p.topic, p.index, result.error, result.message)
            elif self.elections.elected(p, before[id(p)]):
                outcomes[i] = ElectionOutcome(p.topic, p.index, None)
            else:
                outcomes[i] = ElectionOutcome(p.topic, p.index, none_found)
        return (
            [outcomes[i] for i in sorted(outcomes)] if every else [outcomes[i] for i in range(len(targets))]
        )

    async def reassign(
        self,
        moves: Mapping[tuple[str, int], Sequence[int] | None],
        allow_replication_factor_change: bool = True,
    ) -> list[ReassignOutcome]:
        """AlterPartitionReassignments in-process: each partition ``(topic, index)`` moves to its replicas
        (None cancels its reassignment); one outcome per partition, in order (``error`` None when it
        started, completed at once or was cancelled). The new replicas copy at the replication model's
        rates; :meth:`partition_state` shows ``adding_replicas`` and ``removing_replicas`` meanwhile."""
        return await self.reassignments.alter_moves(moves, allow_replication_factor_change)

    async def advance(self, ms: int) -> int:
        """Moves a virtual clock ``ms`` ahead, firing what falls due on the way; the new time."""
        if not isinstance(self.clock, VirtualClock):
            raise RuntimeError("advance() needs simulator.clock=virtual; a real clock moves by itself")
        return await self.clock.advance(ms)

    def events(self, since: int = 0) -> list[Event]:
        return self.cluster.events.since(since)

    def partition_state(self, topic: str, partition: int) -> PartitionSnapshot:
        p = self.cluster.partition(topic, partition)
        self.replication.settle([p])
        return PartitionSnapshot(
            p.topic,
            p.index,
            p.leader,
            p.leader_epoch,
            p.partition_epoch,
            tuple(p.replicas),
            tuple(p.isr),
            p.high_watermark,
            p.log_end_offsets,
            p.status,
            tuple(self.cluster.offline_replicas(p)),
            p.leader_recovery_state,
            tuple(p.adding_replicas),
            tuple(p.removing_replicas),
            self.last_stable_offset(p),
        )

    def topic_deleted(self, topic: str) -> None:
        self.replication.forget(topic)
        self.on_topic_deleted(topic)

    async def configs_changed(self, topic: str | None) -> None:
        """After a config change of ``topic`` (None: of brokers, so of every topic), under the controller's
        lock: the high watermarks ``min.insync.replicas`` held back move on at once, as a leader's next
        fetch would move them, idle partitions included (in turns of the event loop)."""
        topics = [self.cluster.topics[topic]] if topic is not None else list(self.cluster.topics.values())
        self.replication.settle()
        turns = Turns()
        for t in topics:
            for p in t.partitions:
                self.replication.refresh(p, "config change")
                await turns.yield_if_due()

    # ------------------------------------------------------------------------------------- rebalance

    def _schedule_rebalance(self, delay: int) -> None:
        async def fire() -> None:
            self._rebalance_timer = None
            capped = await self.run_event(self._rebalance)
            self._schedule_rebalance(0 if capped else self.config.imbalance_check_seconds * 1000)

        self._rebalance_timer = self.clock.call_later(delay, fire, "automatic preferred leader rebalance")

    async def _rebalance(self) -> bool:
        """Kafka's automatic preferred-leader balancing: whether the pass hit the cap."""
        imbalanced = [
            p
            for p in self.cluster.partitions()
            if p.replicas
            and p.leader != p.replicas[0]
            and p.replicas[0] in p.isr
            and self.cluster.is_active(p.replicas[0])
        ]
        batch = imbalanced[:MAX_ELECTIONS_PER_IMBALANCE]
        if batch:
            await self.elections.change(
                [Change(p, trigger=Trigger.PREFERRED) for p in batch], "automatic leader rebalance"
            )
        return len(imbalanced) > MAX_ELECTIONS_PER_IMBALANCE

    # ------------------------------------------------------------------------------------- unclean check

    def _schedule_unclean_check(self, delay: int) -> None:
        """The next look for leaderless partitions that may elect uncleanly (Kafka's style only)."""
        if not self.elections.unclean_check:
            return

        async def fire() -> None:
            self._unclean_timer = None
            capped, leaderless = await self.run_event(self._elect_unclean)
            if capped or leaderless:
                if self._unclean_timer is not None:  # scheduled by a change meanwhile
                    self._unclean_timer.cancel()
                self._schedule_unclean_check(
                    UNCLEAN_ELECTION_RECHECK_MS if capped else UNCLEAN_ELECTION_CHECK_MS
                )

        self._unclean_timer = self.clock.call_later(delay, fire, "unclean leader election check")

    async def _elect_unclean(self) -> tuple[bool, bool]:
        """Kafka's ``maybeElectUncleanLeaders``: an unclean election for each leaderless partition whose
        topic has ``unclean.leader.election.enable`` in effect (at most :data:`MAX_ELECTIONS_PER_IMBALANCE`).
        Whether the pass hit the cap, and whether some partition is still leaderless."""
        turns = Turns()
        leaderless: list[PartitionState] = []
        for t in list(self.cluster.topics.values()):
            leaderless += [p for p in t.partitions if p.leader == NO_LEADER]
            await turns.yield_if_due()
        allowed = [p for p in leaderless if self.elections.unclean_allowed(p)]
        batch = allowed[:MAX_ELECTIONS_PER_IMBALANCE]
        if batch:
            await self.elections.change(
                [Change(p, trigger=Trigger.UNCLEAN) for p in batch], "unclean leader election check"
            )
        return len(allowed) > MAX_ELECTIONS_PER_IMBALANCE, any(p.leader == NO_LEADER for p in leaderless)
