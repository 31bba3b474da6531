"""The replication model: records arrive at leaders, followers copy them, the in-sync set and the high
watermark follow.

Time moves in ticks of ``simulator.replication.tick.ms`` on the cluster's clock, and only while some
partition has something to do (a workload on its topic, or a follower behind its leader): an idle
cluster costs nothing. Every tick:

- the leader of each partition of a topic with a workload appends ``records_per_s`` x tick records
  (a leader whose process is down or hung appends nothing: producers cannot reach it);
- each follower on a live broker copies from its leader what the leader had ``delay_ms`` ago (its
  broker's setting), at most ``records_per_s`` x tick records (no limit by default); when it has
  everything it fetched for, it was caught up as of that moment;
- a follower outside the in-sync set rejoins when its log end offset reaches the high watermark (and,
  with Kafka's rules, the start of the leader's epoch) and its broker is active;
- the high watermark is the lowest log end offset over the in-sync set (Kafka: also over caught-up
  followers about to join; no advance while the ISR is smaller than ``min.insync.replicas``; Fluvio:
  over every replica of the assignment, see :class:`FluvioReplication`). It never goes back, except to
  a new leader's log end offset when that is lower (an unclean election: the new leader's log is the
  truth).

Who leaves the in-sync set differs by style (:class:`KafkaReplication`, :class:`FluvioReplication`):
Kafka's leaders drop, every ``replica.lag.time.max.ms`` / 2, the followers that are not caught up
(``Replica.isCaughtUp``); Fluvio's SC drops only offline SPUs (unless
``simulator.election.fluvio.lrs.max.lag.records`` is set). All counts are whole records, so the model
is exact and repeatable: rates are spread over ticks without rounding drift.

On an exclusive virtual clock (:class:`~controller.clock.VirtualClock`: nobody but the dynamics reads
the cluster, the sweep's failure simulation) a partition whose ticks only carry its workload (a leader
appending, followers copying all of it at once, nobody joining or leaving the in-sync set: see
:meth:`Replication._steady`) is not stepped tick by tick: it *coasts*, and its state after the ticks
is computed in one step when it is next needed (:meth:`Replication.settle`): before a change of it
(the election service asks), before a broker it has a replica on changes (found by comparing the
broker sets at the next tick or settling), before the ISR lag check and any control of the model.
The rates' whole records telescope over ticks and the high watermark only rises, so the state is the
same, record for record, as after the ticks one by one.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from controller.clock import Clock, Timer, VirtualClock
from controller.cluster import NO_LEADER, Cluster, LeaderRecoveryState, PartitionChange, PartitionState
from controller.config import ServerConfig
from controller.config.topic_configs import MIN_INSYNC_REPLICAS
from controller.election.change import PartitionChangeBuilder, completed_reassignment

log = logging.getLogger(__name__)

__all__ = ["MAX_LOAD", "FluvioReplication", "KafkaReplication", "Replication"]

#: The most records per second per partition a workload may bring (log end offsets stay far inside int64).
MAX_LOAD = 1e9


def _records(rate: float, tick: int, tick_ms: int) -> int:
    """Whole records in tick number ``tick`` at ``rate`` per second: no drift over many ticks."""
    per_tick = rate * tick_ms / 1000
    return int((tick + 1) * per_tick) - int(tick * per_tick)


def _records_in(rate: float, first: int, last: int, tick_ms: int) -> int:
    """Whole records in ticks ``first`` to ``last`` (inclusive): the sum of :func:`_records` over them,
    which telescopes (the same products, so the same numbers)."""
    per_tick = rate * tick_ms / 1000
    return int((last + 1) * per_tick) - int(first * per_tick)


def _same_offsets(partition: PartitionState, leo: list[int]) -> list[int]:
    return leo


def _no_watermark_wait(partition: PartitionState) -> None:
    return None


class Replication:
    """Log end offsets, the in-sync set and the high watermark of every partition (see the module
    docstring); the rules that differ by style are the subclasses' methods."""

    def __init__(self, config: ServerConfig, cluster: Cluster, clock: Clock) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.tick_ms = config.replication_tick_ms
        self.lag_ms = config.replica_lag_ms
        #: Records per second per partition, by topic.
        self.load: dict[str, float] = {}
        self._load_start: dict[str, int] = {}
        self._active: dict[tuple[str, int], PartitionState] = {}
        self._history: dict[tuple[str, int], deque[tuple[int, int]]] = {}
        self._tick = 0
        self._tick_timer: Timer | None = None
        self._lag_timer: Timer | None = None
        # (broker generation, serving, joinable, whether some serving broker copies with a delay)
        self._broker_sets: tuple[int, frozenset[int], frozenset[int], bool] | None = None
        # The brokers whose followers copy with a delay (set_replication is the one place delays are set).
        self._delayed = {b.id for b in cluster.broker_states.values() if b.copy_delay_ms}
        # Coasting partitions (see the module docstring): key -> (partition, the first tick it skipped).
        self._coasting: dict[tuple[str, int], tuple[PartitionState, int]] = {}
        # The serving and the joinable brokers the coasting partitions coast with; the last tick's time.
        self._coast_sets: tuple[frozenset[int], frozenset[int]] = (frozenset(), frozenset())
        self._last_tick_at = 0
        #: Called with a partition and the log end offsets the model wants for its replicas, before they
        #: are set: the replicas' logs follow (``controller.data_path``) and the offsets they reach are
        #: returned (a follower copies whole client batches, so it may end a little past the model's).
        self.on_log_end_offsets: Callable[[PartitionState, list[int]], list[int]] = _same_offsets
        #: Called after a partition's high watermark moved up (acks=all answers wait for it).
        self.on_high_watermark: Callable[[PartitionState], None] = _no_watermark_wait
        #: Called with a partition and the ISR its leader asks for when that ISR completes the partition's
        #: reassignment (:meth:`controller.reassignment.Reassignments.complete_later`).
        self.on_reassignment_complete: Callable[[PartitionState, list[int]], None] = lambda p, isr: None
        #: Called after the high watermark of a partition of the topic moved up, by topic name (a
        #: coordinator's internal topic: its durable answers wait for it, :mod:`controller.coordinator_topic`).
        self.watermark_watchers: dict[str, Callable[[PartitionState], None]] = {}
        # Partitions whose followers fetch what their leader just appended (see appended()), and the timer.
        self._fetching: dict[tuple[str, int], PartitionState] = {}
        self._fetch_timer: Timer | None = None
        at_once = config.replication_fetch_at_once
        self.fetch_at_once = at_once == "true" or (at_once == "auto" and clock.kind == "real")

    async def close(self) -> None:
        # Coasting partitions are left as they are: no tick fires any more, so settle() brings them to
        # the last tick whenever a reader asks, exactly as now.
        for timer in (self._tick_timer, self._lag_timer, self._fetch_timer):
            if timer is not None:
                timer.cancel()

    # ------------------------------------------------------------------------------------- settings

    def produce_load(self, topic: str, records_per_s: float) -> None:
        self.settle()
        if topic not in self.cluster.topics:
            raise KeyError(f"no topic {topic!r}")
        if not 0 <= records_per_s <= MAX_LOAD:
            raise ValueError(f"records_per_s must be from 0 to {MAX_LOAD:g}, got {records_per_s}")
        if records_per_s:
            self.load[topic] = records_per_s
            self._load_start[topic] = self._tick
            for p in self.cluster.topics[topic].partitions:
                self.touch(p)
        else:
            self.load.pop(topic, None)
        self._schedule()

    def set_replication(
        self, broker: int, delay_ms: int | None = None, records_per_s: float | None = -1
    ) -> None:
        self.settle()
        b = self.cluster.broker_state(broker)
        if b is None:
            raise KeyError(f"no broker {broker}")
        changes: dict[str, Any] = {}
        if delay_ms is not None:
            if delay_ms < 0:
                raise ValueError(f"delay_ms must not be negative, got {delay_ms}")
            changes["copy_delay_ms"] = delay_ms
        if records_per_s is not None and records_per_s > MAX_LOAD:
            raise ValueError(
                f"records_per_s must be at most {MAX_LOAD:g} (None: no limit), got {records_per_s}"
            )
        if records_per_s is None or (records_per_s is not None and records_per_s >= 0):
            changes["copy_rate"] = records_per_s
        elif records_per_s != -1:
            raise ValueError(f"records_per_s must not be negative, got {records_per_s}")
        self.cluster.update_broker(broker, "replication settings", **changes)
        if b.copy_delay_ms:
            self._delayed.add(broker)
        else:
            self._delayed.discard(broker)
        if delay_ms:
            self._start_history(broker)
        self.touch_broker(broker)

    def _start_history(self, broker: int) -> None:
        """A delay counts from the moment it is set: what each leader of this follower holds now is the
        earliest log end offset it owes, so records appended before the next tick wait the delay too."""
        now = self.clock.now()
        for p in self.cluster.partitions_on(broker):
            if p.leader != NO_LEADER and p.leader != broker:
                leo = p.leo[p.replicas.index(p.leader)]
                self._history.setdefault((p.topic, p.index), deque([(now, leo)]))

    def set_log_end_offset(self, topic: str, index: int, broker: int, offset: int) -> None:
        self.settle()
        p = self.cluster.partition(topic, index)
        if broker not in p.replicas:
            raise ValueError(f"broker {broker} holds no replica of {p.name} {p.replicas}")
        if offset < 0:
            raise ValueError(f"a log end offset is not negative, got {offset}")
        i = p.replicas.index(broker)
        leo = list(p.leo)
        leader = p.leader if p.leader != NO_LEADER else None
        if broker == leader:
            highest_follower = max(
                (v for r, v in zip(p.replicas, leo, strict=True) if r != broker), default=0
            )
            if offset < highest_follower:
                raise ValueError(
                    f"the leader's log end offset cannot be below a follower's: {p.name} has a follower at "
                    f"{highest_follower}"
                )
        elif leader is not None and offset > leo[p.replicas.index(leader)]:
            raise ValueError(
                f"a follower's log end offset cannot pass its leader's: the leader {leader} of {p.name} is at "
                f"{leo[p.replicas.index(leader)]}; set it first"
            )
        if broker in p.isr and offset < p.high_watermark:
            raise ValueError(
                f"broker {broker} is in the in-sync set of {p.name}, whose high watermark is {p.high_watermark}: "
                "its log end offset cannot go below it"
            )
        leo[i] = offset
        leo = self.on_log_end_offsets(p, leo)
        epoch_start = min(p.epoch_start_offset, offset) if broker == leader else None
        cause = f"log end offset of broker {broker} set"
        self.cluster.apply_changes([PartitionChange.of(p, cause, leo=leo, epoch_start_offset=epoch_start)])
        self.refresh(p, "log end offset set")
        self.touch(p)

    # ------------------------------------------------------------------------------------- bookkeeping

    def touch(self, p: PartitionState) -> None:
        """Marks a partition as having replication work (it stays active while it has some). One with
        nothing to do (no workload, every follower at its leader's log end offset, nobody waiting to
        rejoin the in-sync set, or no leader at all) is looked at now, as a tick would, and not
        scheduled: a failover that moves 100,000 leaders leaves no tick over idle partitions behind."""
        self._look((p,), None)

    def appended(self, p: PartitionState) -> None:
        """A leader appended to ``p`` (a client's batch, a transaction marker, a coordinator's record):
        :meth:`touch`, and the followers' fetches are answered at once, as Kafka's leader answers its
        followers' waiting fetches right after an append (``ReplicaManager.appendRecords`` completes the
        partition's delayed fetches; a follower's fetch waits for ``replica.fetch.min.bytes`` = 1 byte):
        where every serving follower copies all its leader has at each tick (no copy delay, no copy rate)
        and no workload appends on ticks, the partition is stepped as a tick would step it, as soon as the
        event loop (or a virtual clock, at the same time) comes back to the cluster, not a tick later.
        What the step does is the tick's, so the in-sync set, the high watermark and the answers waiting
        for it follow the same rules; only the wait for the tick goes. ``simulator.replication.fetch.at.once``
        (:attr:`fetch_at_once`) turns it on (``true``, or ``auto``: with the real clock only); it is off by
        default (see docs/fidelity.md)."""
        self._look((p,), None)
        key = (p.topic, p.index)
        if not self.fetch_at_once or key not in self._active or not self._fetches_at_once(p):
            return
        self._fetching[key] = p
        if self._fetch_timer is None:
            self._fetch_timer = self.clock.call_later(0, self._on_fetch, "follower fetch")

    def _fetches_at_once(self, p: PartitionState) -> bool:
        """Whether a step of ``p`` now is what its next tick would do (see :meth:`appended`)."""
        leader = p.leader
        if (
            leader == NO_LEADER
            or self.load.get(p.topic)
            or p.leader_recovery_state is not LeaderRecoveryState.RECOVERED
            or self._delayed
            and not self._delayed.isdisjoint(p.replicas)
        ):
            return False
        serving = self._brokers()[0]
        if leader not in serving:
            return False
        states = self.cluster.broker_states
        return all(r == leader or r not in serving or states[r].copy_rate is None for r in p.replicas)

    def _on_fetch(self) -> None:
        self._fetch_timer = None
        fetching, self._fetching = self._fetching, {}
        if self._coasting:
            self._catch_up_brokers()
        now = self.clock.now()
        for key, p in fetching.items():
            if key not in self._active or key in self._coasting or not self._fetches_at_once(p):
                continue  # a tick stepped it already, or what it may do changed: the tick's rules
            if not self._step(p, key, self._tick, now):
                del self._active[key]
        if not self._active and self._tick_timer is not None:
            self._tick_timer.cancel()  # the fetches did what it was for
            self._tick_timer = None

    def changed(self, partitions: Sequence[PartitionState], cause: str) -> None:
        """After a controller change of ``partitions``: :meth:`refresh` then :meth:`touch` each, in order,
        reading the clock and the broker sets once (a failover changes 100,000 partitions)."""
        self._look(partitions, cause)

    def _look(self, partitions: Sequence[PartitionState], cause: str | None) -> None:
        """:meth:`touch` for each of ``partitions``, after :meth:`refresh` unless ``cause`` is None."""
        active = self._active
        load = self.load
        now = self.clock.now()
        sets = None
        scheduled = False
        for p in partitions:
            leader = p.leader
            # refresh(): nothing can raise the high watermark past the leader's log end offset
            if (
                cause is not None
                and leader != NO_LEADER
                and p.high_watermark < p.leo[p.replicas.index(leader)]
            ):
                self._update_hw(p, now, cause)
            if active and (p.topic, p.index) in active:
                scheduled = True
                continue
            if leader == NO_LEADER:
                continue
            if not load.get(p.topic) and p.leader_recovery_state is LeaderRecoveryState.RECOVERED:
                if sets is None:
                    sets = self._broker_sets
                    if sets is None or sets[0] != self.cluster.broker_generation:
                        sets = self._broker_sets_now()
                if self._caught_up_if_idle(p, leader, sets, now):
                    continue
            active[(p.topic, p.index)] = p
            scheduled = True
        if scheduled:
            self._schedule()

    def _caught_up_if_idle(
        self, p: PartitionState, leader: int, sets: tuple[int, frozenset[int], frozenset[int], bool], now: int
    ) -> bool:
        """Whether ``p`` is idle; if so its followers that its leader serves had everything as of ``now``
        (what a tick's fetch would record). ``sets`` are :meth:`_broker_sets_now`'s."""
        replicas, leo, isr = p.replicas, p.leo, p.isr
        if min(leo) < leo[replicas.index(leader)]:
            return False
        _, serving, joinable, delayed = sets
        for r in replicas:
            if r not in isr and r in joinable:
                return False
        caught_up = p.caught_up  # bookkeeping, not state a client sees: set in place, no event
        if leader not in serving:
            caught_up[replicas.index(leader)] = now
            return True
        if not delayed:  # every serving follower had everything as of now
            for i, r in enumerate(replicas):
                if r == leader or (r in serving and now > caught_up[i]):
                    caught_up[i] = now
            return True
        states = self.cluster.broker_states
        for i, r in enumerate(replicas):
            if r == leader:
                caught_up[i] = now
            elif r in serving:
                at = now - states[r].copy_delay_ms
                if at > caught_up[i]:
                    caught_up[i] = at
        return True

    def touch_broker(self, broker: int) -> None:
        if self._coasting:
            self._catch_up_brokers()
        for p in self.cluster.partitions_on(broker):
            self._active[(p.topic, p.index)] = p
        self._schedule()

    def forget(self, topic: str) -> None:
        self.settle()
        for key in [k for k in self._active if k[0] == topic]:
            del self._active[key]
            self._history.pop(key, None)
        self.load.pop(topic, None)

    def _schedule(self) -> None:
        if self._active and self._tick_timer is None:
            self._tick_timer = self.clock.call_later(self.tick_ms, self._on_tick, "replication tick")

    # ------------------------------------------------------------------------------------- the model

    def _brokers(self) -> tuple[frozenset[int], frozenset[int]]:
        """The brokers whose process serves, and those of them that may join in-sync sets (active too)."""
        cached = self._broker_sets
        if cached is None or cached[0] != self.cluster.broker_generation:
            cached = self._broker_sets_now()
        return cached[1], cached[2]

    def _broker_sets_now(self) -> tuple[int, frozenset[int], frozenset[int], bool]:
        serving = self.cluster.serving_ids()
        cached = self._broker_sets = (
            self.cluster.broker_generation,
            serving,
            serving & self.cluster.active_ids(),
            not self._delayed.isdisjoint(serving),
        )
        return cached

    def _serving(self, broker: int) -> bool:
        return broker in self._brokers()[0]

    def _may_join(self, broker: int) -> bool:
        return broker in self._brokers()[1]

    def _on_tick(self) -> None:
        self._tick_timer = None
        coasting = self._coasting
        if coasting:
            self._catch_up_brokers()
        now = self.clock.now()
        tick = self._tick
        self._tick += 1
        if not coasting or len(coasting) != len(self._active):  # else every active partition coasts
            coast = self._may_coast()
            if coast and not coasting:
                self._coast_sets = self._brokers()
            still: dict[tuple[str, int], PartitionState] = {}
            for key, p in self._active.items():
                if key in coasting:
                    still[key] = p
                elif coast and self._steady(p):
                    coasting[key] = (p, tick)
                    still[key] = p
                elif self._step(p, key, tick, now):
                    still[key] = p
            self._active = still
        self._last_tick_at = now
        self._schedule()

    # ------------------------------------------------------------------------------------- coasting

    def _may_coast(self) -> bool:
        """Whether partitions may coast (see the module docstring): on an exclusive virtual clock, with
        nobody following the logs or waiting for high watermarks, and no rule that acts at each tick."""
        clock = self.clock
        return (
            isinstance(clock, VirtualClock)
            and clock.exclusive
            and self.on_log_end_offsets is _same_offsets
            and self.on_high_watermark is _no_watermark_wait
            and not self.watermark_watchers
            and not self._acts_at_ticks()
        )

    def _steady(self, p: PartitionState) -> bool:
        """Whether ticks change ``p`` by its workload alone until the brokers, the settings or the partition
        change (none of which happens while the clock fires only ticks): it has a leader that has
        recovered its log and a workload, each follower either copies all its leader has (had, with a
        delay) at every tick (a serving broker without rate limit, under a serving leader) or copies
        nothing, and no follower outside the in-sync set may join it. Such ticks write no record."""
        leader = p.leader
        if (
            leader == NO_LEADER
            or not self.load.get(p.topic)
            or p.leader_recovery_state is not LeaderRecoveryState.RECOVERED
            or p.topic not in self.cluster.topics
        ):
            return False
        serving, joinable = self._brokers()
        leader_up = leader in serving
        isr = p.isr
        states = self.cluster.broker_states
        for r in p.replicas:
            if r == leader:
                continue
            if r in joinable and r not in isr:
                return False
            if leader_up and r in serving and states[r].copy_rate is not None:
                return False
        return True

    @property
    def coasting(self) -> bool:
        """Whether some partition coasts (its state is due at :meth:`settle`)."""
        return bool(self._coasting)

    def settle(self, partitions: Iterable[PartitionState] | None = None) -> None:
        """Brings the coasting partitions among ``partitions`` (None: all) to their state after the last
        tick: what reads or changes them on an exclusive clock (see the module docstring) calls it first."""
        coasting = self._coasting
        if not coasting:
            return
        self._catch_up_brokers()
        last, at, serving = self._tick - 1, self._last_tick_at, self._coast_sets[0]
        if partitions is None:
            self._coasting = {}
            for key, (p, first) in coasting.items():
                self._coast(key, p, first, last, at, serving)
            return
        for p in partitions:
            key = (p.topic, p.index)
            entry = coasting.pop(key, None)
            if entry is not None:
                self._coast(key, p, entry[1], last, at, serving)

    def _catch_up_brokers(self) -> None:
        """The coasting partitions with a replica on a broker that started or stopped serving or may now
        (or no longer) join in-sync sets are brought to the last tick, with the broker sets they coasted
        with: brokers change between ticks, and those partitions' next ticks differ."""
        old_serving, old_joinable = self._coast_sets
        serving, joinable = self._brokers()
        if serving is old_serving and joinable is old_joinable:
            return
        changed = (old_serving ^ serving) | (old_joinable ^ joinable)
        coasting = self._coasting
        last, at = self._tick - 1, self._last_tick_at
        for broker in sorted(changed):
            for p in self.cluster.partitions_on(broker):
                key = (p.topic, p.index)
                entry = coasting.pop(key, None)
                if entry is not None:
                    self._coast(key, p, entry[1], last, at, old_serving)
        self._coast_sets = (serving, joinable)

    def _coast(
        self,
        key: tuple[str, int],
        p: PartitionState,
        first: int,
        last: int,
        at: int,
        serving: frozenset[int],
    ) -> None:
        """``p`` after ticks ``first`` to ``last`` (the last one at ``at``), as the ticks one by one would
        have left it: the leader's log end offset plus the records of those ticks (if it serves), its
        followers on serving brokers at it (or, with a delay, at what the leader had then: those ticks'
        copies are replayed, a few operations each) and caught up as of the last tick, the high watermark
        refreshed once (it only rises, to the lowest log end offset of the in-sync set)."""
        replicas = p.replicas
        li = replicas.index(p.leader)
        leo = p.leo
        caught_up = list(p.caught_up)
        top = leo[li]
        delayed = False
        if p.leader in serving:
            start = self._load_start.get(p.topic, 0)
            rate, tick_ms = self.load[p.topic], self.tick_ms
            states = self.cluster.broker_states
            followers = [
                (i, states[r].copy_delay_ms) for i, r in enumerate(replicas) if i != li and r in serving
            ]
            max_delay = max((delay for _, delay in followers), default=0)
            leo = list(leo)
            if max_delay:
                delayed = True
                history = self._history.get(key)
                before = top
                for tick in range(first, last + 1):  # _step's copies, tick by tick
                    now = at - (last - tick) * tick_ms
                    top = before + _records_in(rate, first - start, tick - start, tick_ms)
                    for i, delay in followers:
                        target = top if not delay else self._leo_at(history, now - delay, top)
                        if leo[i] < target:
                            leo[i] = target
                        if now - delay > caught_up[i]:
                            caught_up[i] = now - delay
                    if history is None:
                        history = self._history[key] = deque()
                    history.append((now, top))
                    while history and history[0][0] < now - max_delay - tick_ms:
                        history.popleft()
            else:
                top += _records_in(rate, first - start, last - start, tick_ms)
                for i, _ in followers:
                    if leo[i] < top:
                        leo[i] = top
                    if at > caught_up[i]:
                        caught_up[i] = at
            leo[li] = top
            self.cluster.progress(p, leo=leo)
        caught_up[li] = at
        p.caught_up = caught_up  # bookkeeping, not state a client sees: no event
        if self._history and not delayed:
            self._history.pop(key, None)
        if p.high_watermark < top:  # what refresh() asks, at the last tick
            self._update_hw(p, at, "replication")

    def _acts_at_ticks(self) -> bool:
        """Whether a rule of the style changes in-sync sets at ticks (then nothing coasts)."""
        return False

    def _step(self, p: PartitionState, key: tuple[str, int], tick: int, now: int) -> bool:
        """One tick of one partition; whether it still has work."""
        if p.topic not in self.cluster.topics:
            return False
        leader = p.leader
        if leader == NO_LEADER:
            return False
        li = p.replicas.index(leader)
        leo = list(p.leo)
        caught_up = list(p.caught_up)
        rate = self.load.get(p.topic, 0.0)
        leader_up = self._serving(leader)
        if rate and leader_up:
            leo[li] += _records(rate, tick - self._load_start.get(p.topic, 0), self.tick_ms)
        caught_up[li] = now
        history = self._history.get(key)
        max_delay = 0
        work = bool(rate)
        for i, r in enumerate(p.replicas):
            if i == li:
                continue
            b = self.cluster.broker_state(r)
            if b is None or not leader_up or not self._serving(r):
                work = work or leo[i] < leo[li]
                continue
            delay = b.copy_delay_ms
            max_delay = max(max_delay, delay)
            target = leo[li] if not delay else self._leo_at(history, now - delay, leo[li])
            if leo[i] < target:
                budget = target - leo[i] if b.copy_rate is None else _records(b.copy_rate, tick, self.tick_ms)
                leo[i] += min(budget, target - leo[i])
            if leo[i] >= target:
                caught_up[i] = max(caught_up[i], now - delay)
            if leo[i] < leo[li]:
                work = True
        if leo != p.leo:
            leo = self.on_log_end_offsets(p, leo)
        if max_delay:
            if history is None:
                history = self._history[key] = deque()
            history.append((now, leo[li]))
            while history and history[0][0] < now - max_delay - self.tick_ms:
                history.popleft()
        else:
            self._history.pop(key, None)
        changes: dict[str, Any] = {}
        if leo != p.leo:
            changes["leo"] = leo
        if caught_up != p.caught_up:
            p.caught_up = caught_up  # bookkeeping, not state a client sees: no event
        if changes:
            self.cluster.progress(p, **changes)
        if leader_up:
            if p.leader_recovery_state is LeaderRecoveryState.RECOVERING:
                # The leader of an unclean election has recovered its log: it reports RECOVERED
                # (Kafka's AlterPartition with LeaderRecoveryState RECOVERED).
                self._write(
                    self._builder(p).set_target_leader_recovery_state(LeaderRecoveryState.RECOVERED),
                    "leader recovered its log",
                )
            self._shrink_by_records(p)
            self._expand(p, "replication")
        self.refresh(p, "replication")
        return work or any(r not in p.isr and self._may_join(r) for r in p.replicas)

    @staticmethod
    def _leo_at(history: deque[tuple[int, int]] | None, when: int, current: int) -> int:
        """The leader's log end offset at ``when`` (the latest known at or before it)."""
        if not history:
            return current
        found = None
        for time, leo in history:
            if time > when:
                break
            found = leo
        return found if found is not None else history[0][1]

    def refresh(self, p: PartitionState, cause: str) -> None:
        """The high watermark after anything that moved a log end offset or the ISR.

        Followers rejoin the in-sync set only at ticks: a follower must fetch from its leader first."""
        leader = p.leader
        if leader == NO_LEADER or p.high_watermark >= p.leo[p.replicas.index(leader)]:
            return  # no leader, or at the leader's log end offset already: nothing can raise it
        self._update_hw(p, self.clock.now(), cause)

    def _expand(self, p: PartitionState, cause: str) -> None:
        """Followers that fetched up to the high watermark (and the leader epoch's start) rejoin."""
        hw = p.high_watermark
        joining = [
            r
            for i, r in enumerate(p.replicas)
            if r not in p.isr
            and r != p.leader
            and self._may_join(r)
            and p.leo[i] >= hw
            and self._may_rejoin_at(p, p.leo[i])
        ]
        if joining:
            isr = self._asked_isr([r for r in p.replicas if r in p.isr or r in joining])
            if p.adding_replicas or p.removing_replicas:
                done = completed_reassignment(p.replicas, p.adding_replicas, p.removing_replicas, isr)
                if done is not None:
                    # The ISR change completes a reassignment: the controller writes it, with an election
                    # when the leader leaves (Kafka answers the leader's AlterPartition so), as its next
                    # event, in slices (a reassignment of 30,000 partitions completes in one tick).
                    self.on_reassignment_complete(p, isr)
                    return
            self._write(self._builder(p).set_target_isr(isr), f"{cause}: broker(s) {joining} caught up")

    def _asked_isr(self, isr: list[int]) -> list[int]:
        """The ISR in the order the leader asks the controller for it (the controller keeps that order)."""
        return isr

    def _builder(self, p: PartitionState) -> PartitionChangeBuilder:
        """A change a leader asks for (Kafka's AlterPartition): it never moves the leadership."""
        return PartitionChangeBuilder(p, self.cluster.active_ids()).set_election(None)

    def _write(self, builder: PartitionChangeBuilder, cause: str) -> None:
        record = builder.build(cause)
        if record is not None:
            self.cluster.apply_changes([record])

    def _update_hw(self, p: PartitionState, now: int, cause: str) -> None:
        if p.high_watermark >= p.leo[p.replicas.index(p.leader)]:
            return  # at the leader's log end offset already: no replica set can raise it
        offsets = self._hw_offsets(p, now)
        if not offsets:
            return
        hw = min(offsets)
        if hw > p.high_watermark:
            self.cluster.progress(p, high_watermark=hw)
            self.on_high_watermark(p)
            watcher = self.watermark_watchers.get(p.topic)
            if watcher is not None:
                watcher(p)

    def _hw_offsets(self, p: PartitionState, now: int) -> list[int]:
        """The log end offsets the high watermark is the lowest of (none: it stays)."""
        raise NotImplementedError

    def _may_rejoin_at(self, p: PartitionState, leo: int) -> bool:
        """Whether a follower at ``leo`` (at least the high watermark) may rejoin the in-sync set."""
        raise NotImplementedError

    def _shrink_by_records(self, p: PartitionState) -> None:
        """After a tick: followers that leave the in-sync set by how far behind they are (none by default)."""


class KafkaReplication(Replication):
    """Kafka's leaders (``Partition.scala``): a follower rejoins at the high watermark and the start of
    the leader's epoch; the high watermark waits for ``min.insync.replicas`` and counts caught-up
    followers about to join; every ``replica.lag.time.max.ms`` / 2 the followers that are not caught up
    leave the ISR."""

    def _asked_isr(self, isr: list[int]) -> list[int]:
        """A Kafka leader's AlterPartition names the ISR from a ``java.util.HashSet<Integer>``: in the
        order the set iterates, by bucket of the id (ascending ids up to the set's capacity), whatever the
        replicas' order; the controller writes it so. (Fencing, elections and the controller's own
        changes keep the ISR's order.)"""
        capacity = 16
        while len(isr) > capacity * 3 // 4:
            capacity *= 2

        def bucket(broker: int) -> int:
            h = broker & 0xFFFFFFFF
            return (h ^ (h >> 16)) & (capacity - 1)

        return sorted(isr, key=lambda b: (bucket(b), isr.index(b)))

    def _schedule(self) -> None:
        super()._schedule()
        if self._active and self._lag_timer is None:
            self._lag_timer = self.clock.call_later(self.lag_ms // 2, self._on_lag_check, "ISR lag check")

    def _may_rejoin_at(self, p: PartitionState, leo: int) -> bool:
        return leo >= p.epoch_start_offset  # Partition.isFollowerInSync

    def _hw_offsets(self, p: PartitionState, now: int) -> list[int]:
        isr = p.isr
        hw = p.high_watermark
        for r, leo in zip(p.replicas, p.leo, strict=True):
            if leo <= hw and r in isr:
                # An in-sync replica has nothing above the high watermark: the lowest cannot be above it
                # (a leader's append while its followers have not fetched, as every commit's is).
                return []
        if len(isr) < self._min_insync(p):
            return []
        joinable = self._brokers()[1]
        caught_up = p.caught_up
        return [
            leo
            for i, (r, leo) in enumerate(zip(p.replicas, p.leo, strict=True))
            if r in isr or (r in joinable and now - caught_up[i] <= self.lag_ms)
        ]

    def _min_insync(self, p: PartitionState) -> int:
        """The topic's ``min.insync.replicas`` as its leader's broker has it (changes take effect at once),
        at most the replica count (:meth:`Cluster.min_insync_replicas`)."""
        return self.cluster.min_insync_replicas(p)

    def _builder(self, p: PartitionState) -> PartitionChangeBuilder:
        """A leader's AlterPartition, with the eligible leader replicas kept (as the controller has the
        topic's ``min.insync.replicas``) when they are on."""
        builder = super()._builder(p)
        if self.config.elr_version >= 1:
            builder.set_eligible_leader_replicas(
                int(self.cluster.topic_config(p.topic, MIN_INSYNC_REPLICAS, None))
            )
        return builder

    def _on_lag_check(self) -> None:
        self._lag_timer = None
        coasting = self._coasting
        if coasting:
            self._catch_up_brokers()
            serving = self._coast_sets[0]
            # A coasting partition whose replicas all serve has every follower at its leader's log end
            # offset: none lags, it may coast on.
            self.settle([p for p, _ in coasting.values() if not serving.issuperset(p.replicas)])
        now = self.clock.now()
        for key, p in list(self._active.items()):
            if key in coasting or p.leader == NO_LEADER or p.topic not in self.cluster.topics:
                continue
            leader_leo = p.leo[p.replicas.index(p.leader)]
            # Replica.isCaughtUp: at the leader's log end offset, or caught up at most
            # replica.lag.time.max.ms ago; only a follower that is neither leaves.
            lagging = [
                r
                for i, r in enumerate(p.replicas)
                if r in p.isr
                and r != p.leader
                and p.leo[i] != leader_leo
                and now - p.caught_up[i] > self.lag_ms
            ]
            if lagging:
                isr = self._asked_isr([r for r in p.isr if r not in lagging])
                cause = f"broker(s) {lagging} not caught up for replica.lag.time.max.ms={self.lag_ms}"
                self._write(self._builder(p).set_target_isr(isr), cause)
                self._update_hw(p, now, "ISR shrink")
        self._schedule()


class FluvioReplication(Replication):
    """Fluvio's SC and SPUs: the live replica set loses only offline SPUs (no time-based removal; with
    ``simulator.election.fluvio.lrs.max.lag.records`` set, also followers more records than that behind
    their leader, Fluvio's ``ReplicaStatus::leader_lag``); a follower rejoins at the high watermark.

    The high watermark is the lowest log end offset over every replica of the assignment, in the live
    replica set or not, as Fluvio's leader SPU computes it (``LeaderReplicaState::update_states_from_followers``
    calls ``compute_hw`` with ``in_sync_replica``, which ``LeaderReplicaState::new`` sets to the number of
    replicas the SC assigned, and its followers' offsets as they last reported them): it does not move
    while any replica, an offline one too, lacks the records, whatever the live replica set holds. Fluvio
    has no minimum of in-sync replicas that its leader reads (``ReplicationConfig::min_in_sync_replicas``
    is never read there); ``docs/election-policies.md`` has the rule and its sources."""

    def _may_rejoin_at(self, p: PartitionState, leo: int) -> bool:
        max_lag = self.config.fluvio_lrs_max_lag_records
        return max_lag is None or p.leo[p.replicas.index(p.leader)] - leo <= max_lag

    def _hw_offsets(self, p: PartitionState, now: int) -> list[int]:
        return p.leo

    def _acts_at_ticks(self) -> bool:
        return self.config.fluvio_lrs_max_lag_records is not None

    def _shrink_by_records(self, p: PartitionState) -> None:
        max_lag = self.config.fluvio_lrs_max_lag_records
        if max_lag is None:
            return
        leader_leo = p.leo[p.replicas.index(p.leader)]
        lagging = [
            r
            for i, r in enumerate(p.replicas)
            if r in p.isr and r != p.leader and leader_leo - p.leo[i] > max_lag
        ]
        if lagging:
            isr = [r for r in p.isr if r not in lagging]
            cause = f"broker(s) {lagging} more than simulator.election.fluvio.lrs.max.lag.records={max_lag} records behind"
            self._write(self._builder(p).set_target_isr(isr), cause)
