"""Plays a scenario's steps against a controller, each at its time on the controller's clock.

:meth:`ScenarioPlayer.schedule` sets one clock timer per step, at the time it is scheduled plus the
step's ``t``: on a virtual clock the steps fire as the clock is moved (``placement-sim simulate`` moves
it to the end; a client's ``clock advance`` does in ``serve``), on a real clock at their times after the
start. Every step calls what the controls call (:class:`controller.dynamics.Dynamics`, the topic
administration, the request faults). A step that fails (an unknown broker, a topic that exists) is
reported with its error and the scenario carries on.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from controller.clock import Timer
from controller.cluster import NO_LEADER, LeaderRecoveryState, PartitionStatus
from controller.handlers.simulator_partition_state import partition_entry
from controller.offload import Turns
from controller.scenario.spec import (
    AddBroker,
    CreateTopic,
    Elect,
    FailPromotion,
    FaultAdd,
    FaultClear,
    ProduceLoad,
    Reassign,
    RemoveBroker,
    Scenario,
    SlowFollower,
    Snapshot,
    StartBroker,
    Step,
    StopBroker,
    parse_scenario,
)
from controller.topic_admin import NewTopic
from protocol.codes import ErrorCode

if TYPE_CHECKING:
    from controller.app import Controller

log = logging.getLogger(__name__)

__all__ = ["PartitionCopy", "ScenarioPlayer", "Scenarios", "SnapshotData", "StepResult"]

#: The most lines of detail one step reports (the elections of 100,000 partitions are counted, not listed).
MAX_DETAILS = 20


class StepFailed(Exception):
    """A step that could not be carried out; the message says why."""


class PartitionCopy(NamedTuple):
    """One partition as a snapshot found it: the fields of the partition that SimulatorPartitionState
    answers (:func:`~controller.handlers.simulator_partition_state.partition_entry` reads it as it reads
    the partition)."""

    index: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    high_watermark: int
    status: PartitionStatus
    leader_recovery_state: LeaderRecoveryState
    leo: tuple[int, ...]
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass(frozen=True, repr=False)
class SnapshotData:
    """The partitions at a snapshot (copies, by topic) and a summary of them."""

    label: str
    #: (topic, its partitions in order); empty when the snapshot has no table.
    partitions_by_topic: tuple[tuple[str, tuple[PartitionCopy, ...]], ...]
    partitions: int
    offline: int
    under_replicated: int
    #: Partitions led by each broker, by broker id.
    leaders: dict[int, int]
    table: bool

    @property
    def topics(self) -> list[dict[str, Any]]:
        """The partitions as SimulatorPartitionState answers them (its ``Topics``)."""
        return [
            {
                "Name": name,
                "ErrorCode": ErrorCode.NONE,
                "Partitions": [partition_entry(c, list(c.offline_replicas)) for c in copies],  # type: ignore[arg-type]
            }
            for name, copies in self.partitions_by_topic
        ]

    def summary(self) -> str:
        leaders = ", ".join(f"{b}:{n}" for b, n in sorted(self.leaders.items()))
        return (
            f"{self.partitions} partitions: {self.offline} offline, {self.under_replicated} under-replicated; "
            f"leaders per broker [{leaders}]"
        )

    def __repr__(self) -> str:
        return f"SnapshotData({self.label!r}, {self.summary()!r})"


@dataclass(frozen=True)
class StepResult:
    """What one step did: ``error`` None when it went well; ``details`` say more (elections, faults);
    ``seq_before`` is the event log's last sequence number when it started (the events after it, up to
    the next step's, are the step's and what followed)."""

    step: Step
    at_ms: int
    error: str | None
    details: tuple[str, ...]
    seq_before: int
    snapshot: SnapshotData | None = None


class ScenarioPlayer:
    """Schedules a scenario's steps on a controller's clock and runs them (see the module docstring)."""

    def __init__(
        self,
        controller: Controller,
        scenario: Scenario,
        on_step: Callable[[StepResult], Awaitable[None] | None] | None = None,
    ) -> None:
        self.controller = controller
        self.scenario = scenario
        self.on_step = on_step
        self.results: list[StepResult] = []
        self.start_ms: int | None = None
        self._timers: list[Timer] = []

    def schedule(self) -> int:
        """Sets a timer for every step, ``t`` after now; the clock time the steps count from."""
        clock = self.controller.clock
        start = self.start_ms = clock.now()
        for step in self.scenario.steps:
            self._timers.append(
                clock.call_at(start + step.at_ms, _firing(self, step), f"scenario step {step.index}")
            )
        return start

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    @property
    def done(self) -> bool:
        return len(self.results) == len(self.scenario.steps)

    async def fire(self, step: Step) -> StepResult:
        """Runs one step now; its result (kept in :attr:`results`, given to ``on_step``)."""
        controller = self.controller
        seq = controller.cluster.events.last_seq
        now = controller.clock.now()
        snapshot = None
        error = None
        details: list[str] = []
        try:
            if isinstance(step, Snapshot):
                snapshot = await self._snapshot(step)
            else:
                details = await self._run(step)
        except (StepFailed, KeyError, ValueError, RuntimeError) as exc:
            error = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        if len(details) > MAX_DETAILS:
            details = [*details[:MAX_DETAILS], f"... and {len(details) - MAX_DETAILS} more"]
        result = StepResult(step, now, error, tuple(details), seq, snapshot)
        self.results.append(result)
        if error is not None:
            # Nobody else reports it when no one is told of the results (a scenario loaded over the wire).
            level = logging.WARNING if self.on_step is None else logging.INFO
            log.log(level, "scenario step %d (%s) failed: %s", step.index, step.describe(), error)
        else:
            summary = f" ({snapshot.summary()})" if snapshot is not None else ""
            log.info("scenario step %d at %d ms: %s%s", step.index, now, step.describe(), summary)
        if self.on_step is not None:
            reported = self.on_step(result)
            if inspect.isawaitable(reported):  # a reporter that formats a big snapshot off the loop
                await reported
        return result

    # ------------------------------------------------------------------------------------- the steps

    async def _run(self, step: Step) -> list[str]:
        c = self.controller
        dynamics = c.dynamics
        if isinstance(step, CreateTopic):
            assignments = [(i, list(r)) for i, r in enumerate(step.assignments)]
            topic = NewTopic(step.topic, step.partitions, step.replication_factor, assignments, step.configs)
            [result] = await c.topic_admin.create_topics([topic])
            if result.error is not None:
                raise StepFailed(f"{ErrorCode(result.error).name}: {result.message}")
            return []
        if isinstance(step, ProduceLoad):
            rate = step.records_per_s
            if step.total_records_per_s is not None:
                topic = c.cluster.topics.get(step.topic)
                if topic is None:
                    raise StepFailed(f"no topic {step.topic!r}")
                rate = step.total_records_per_s / len(topic.partitions)
            await dynamics.produce_load(step.topic, rate or 0.0)
            return []
        if isinstance(step, StopBroker):
            return await self._each(
                self._brokers(step.brokers, step.rack), lambda b: dynamics.stop_broker(b, step.mode)
            )
        if isinstance(step, StartBroker):
            return await self._each(self._brokers(step.brokers, step.rack), dynamics.start_broker)
        if isinstance(step, AddBroker):
            await dynamics.add_broker(step.broker, step.rack)
            return []
        if isinstance(step, RemoveBroker):
            await dynamics.remove_broker(step.broker)
            return []
        if isinstance(step, SlowFollower):
            await dynamics.set_replication(step.broker, step.delay_ms, step.records_per_s)
            return []
        if isinstance(step, FailPromotion):
            if c.cluster.broker_state(step.broker) is None:
                raise StepFailed(f"no broker {step.broker}")
            await dynamics.fail_promotion(step.broker, step.fails)
            return []
        if isinstance(step, Elect):
            return await self._elect(step)
        if isinstance(step, Reassign):
            return await self._reassign(step)
        if isinstance(step, FaultAdd):
            faults = c.faults.add_all(step.faults)
            return [f"fault {f.id}: {f.spec}" for f in faults]
        if isinstance(step, FaultClear):
            return [f"cleared {c.faults.clear(step.ids)} fault(s)"]
        raise StepFailed(f"unknown step {step.action!r}")  # pragma: no cover - every action is above

    async def _reassign(self, step: Reassign) -> list[str]:
        """AlterPartitionReassignments in-process (``Dynamics.reassign``): the new replicas then copy at the
        replication model's rates, and the removed ones leave once the new ones are in sync."""
        [outcome] = await self.controller.dynamics.reassign(
            {(step.topic, step.partition): list(step.replicas)}
        )
        if outcome.error is not None:
            message = f": {outcome.message}" if outcome.message else ""
            raise StepFailed(f"{step.topic}-{step.partition}: {ErrorCode(outcome.error).name}{message}")
        return []

    def _brokers(self, brokers: tuple[int, ...], rack: str | None) -> tuple[int, ...]:
        if rack is None:
            return brokers
        found = tuple(
            sorted(
                b.id
                for b in self.controller.cluster.broker_states.values()
                if b.registered and b.rack == rack
            )
        )
        if not found:
            raise StepFailed(f"no registered broker is on rack {rack!r}")
        return found

    @staticmethod
    async def _each(brokers: tuple[int, ...], action: Callable[[int], Any]) -> list[str]:
        """Runs ``action`` for every broker; the others still run when one fails (the step fails, saying so)."""
        failures = []
        for broker in brokers:
            try:
                await action(broker)
            except (KeyError, ValueError) as exc:
                failures.append(str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc))
        if failures:
            done = len(brokers) - len(failures)
            raise StepFailed(
                "; ".join(failures[:MAX_DETAILS]) + (f" (done for the {done} other(s))" if done else "")
            )
        return []

    async def _elect(self, step: Elect) -> list[str]:
        dynamics = self.controller.dynamics
        if step.topic is None:
            targets = None
        elif step.partition is not None:
            targets = [(step.topic, step.partition)]
        else:
            topic = self.controller.cluster.topics.get(step.topic)
            if topic is None:
                raise StepFailed(f"no topic {step.topic!r}")
            targets = [(step.topic, i) for i in range(len(topic.partitions))]
        outcomes = await dynamics.elect_leaders(step.kind, targets)
        elected = sum(1 for o in outcomes if o.error is None)
        not_needed = sum(1 for o in outcomes if o.error == ErrorCode.ELECTION_NOT_NEEDED)
        failed = [o for o in outcomes if o.error not in (None, ErrorCode.ELECTION_NOT_NEEDED)]
        if targets is not None and len(targets) == 1 and failed:
            o = failed[0]
            raise StepFailed(
                f"{o.topic}-{o.partition}: {ErrorCode(o.error).name}"
                + (f": {o.message}" if o.message else "")
            )
        lines = [f"elected {elected}, not needed {not_needed}, failed {len(failed)}"]
        lines += [f"{o.topic}-{o.partition}: {ErrorCode(o.error).name}" for o in failed]
        return lines

    async def _snapshot(self, step: Snapshot) -> SnapshotData:
        c = self.controller
        cluster = c.cluster
        names = sorted(cluster.topics) if step.topics is None else list(step.topics)
        missing = [n for n in names if n not in cluster.topics]
        if missing:
            raise StepFailed(f"no topic {missing[0]!r}")
        turns = Turns()
        topics: list[tuple[str, tuple[PartitionCopy, ...]]] = []
        offline = under = count = 0
        leaders: Counter[int] = Counter()
        serving = cluster.serving_ids()
        offline_replicas = cluster.offline_replicas
        offline_by_replicas: dict[tuple[int, ...], tuple[int, ...]] = {}
        for name in names:
            copies: list[PartitionCopy] = []
            for p in cluster.topics[name].partitions:
                if turns.due():  # 100,000 partitions are read in turns of the event loop
                    await asyncio.sleep(0)
                count += 1
                leader = p.leader
                if leader == NO_LEADER or leader not in serving:
                    offline += 1
                else:
                    leaders[leader] += 1
                if len(p.isr) < len(p.replicas):
                    under += 1
                if step.table:
                    replicas = tuple(p.replicas)
                    offline_of = offline_by_replicas.get(replicas)
                    if offline_of is None:  # the same for every partition on the same brokers
                        offline_of = offline_by_replicas[replicas] = tuple(offline_replicas(p))
                    copies.append(
                        PartitionCopy(
                            p.index,
                            leader,
                            p.leader_epoch,
                            p.partition_epoch,
                            replicas,
                            tuple(p.isr),
                            offline_of,
                            p.high_watermark,
                            p.status,
                            p.leader_recovery_state,
                            tuple(p.leo),
                            tuple(p.elr),
                            tuple(p.last_known_elr),
                        )
                    )
            if step.table:
                topics.append((name, tuple(copies)))
        return SnapshotData(step.label, tuple(topics), count, offline, under, dict(leaders), step.table)


def _firing(player: ScenarioPlayer, step: Step) -> Callable[[], Any]:
    async def fire() -> None:
        await player.fire(step)

    return fire


class Scenarios:
    """The controller's scenario player (a subsystem built on first use: :mod:`controller.app`): scenarios
    played on its clock, from ``serve --scenario``, SimulatorScenarioLoad and ``ServerThread.load_scenario``."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def play(
        self,
        scenario: str | Scenario,
        source: str = "<scenario>",
        on_step: Callable[[StepResult], Awaitable[None] | None] | None = None,
    ) -> ScenarioPlayer:
        """Schedules every step of ``scenario`` (its TOML text, or a parsed :class:`Scenario`), each ``t``
        after now; the player (its ``start_ms`` is the clock time the steps count from). ScenarioError for
        a text that is not a scenario."""
        parsed = parse_scenario(scenario, source) if isinstance(scenario, str) else scenario
        player = ScenarioPlayer(self.controller, parsed, on_step)
        player.schedule()
        return player
