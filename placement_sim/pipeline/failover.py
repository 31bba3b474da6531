"""Failure events run through the controller's own dynamics and election code, without a server.

For one placement (the assignments a run produced) and one (failure kind, election policy) pair, a
:class:`~controller.cluster.Cluster` is built on a :class:`~controller.clock.VirtualClock`, the
server's :class:`~controller.dynamics.Dynamics` (lifecycle, replication, the election service with the
policy loaded by the server's loader, inline) drives it, and a produce load on every topic makes the
replication model's lag real. The timeline (:class:`Timeline`), all in virtual milliseconds:

1. warm-up: the load runs, followers copy (the slow follower of ``slow-follower`` is set before);
2. the failure at ``t0`` (see :data:`FAILURE_KINDS`), then ``failure_ms`` for the controller to react;
3. recovery: the lost brokers start again, ``recovery_ms``, then a preferred-leader election for every
   partition (what Kafka's automatic rebalance does) and ``rebalance_ms`` more.

Every figure is read from the cluster's event log as the controller writes it (one event per changed
partition or broker, at its clock time), so the integrals over time are exact. The failure's target
(which broker, rack or data centre) is drawn from the scenario id and the kind alone: every placer and
policy of a scenario loses the same brokers.

Failure kinds:

- ``none``: nothing fails (a baseline: what the load and a fenced share do by themselves);
- ``broker``: one broker crashes;
- ``rack``: every broker of one rack (the deepest level of multi-level rack paths) crashes;
- ``dc``: every broker of one top-level rack of multi-level rack paths (a data centre) crashes;
- ``rolling``: every broker in id order, one at a time, shuts down cleanly (controlled shutdown) and
  starts again;
- ``slow-follower``: one broker copies ``slow_delay_ms`` behind its leaders while another crashes.

A kind that does not apply to a cluster (``rack`` without rack labels, ``dc`` without multi-level racks,
``slow-follower`` with fewer than two live brokers) gives no row.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.clock import VirtualClock
from controller.cluster import NO_LEADER, Cluster, PartitionState, Process
from controller.config import (
    CLOCK,
    ELECTION_ISOLATION,
    ELECTION_POLICY,
    REPLICATION_TICK_MS,
    SEED,
    ServerConfig,
)
from controller.dynamics import Dynamics
from controller.election.styles import start_election_service
from controller.events import EventLog
from controller.placement.api import UsableBroker
from controller.placement.metrics import PlacementMetrics, RackFailure, _rack_failure, rack_levels

__all__ = [
    "FAILURE_KINDS",
    "FailoverPlan",
    "FailoverRun",
    "Timeline",
    "failure_targets",
    "simulate_failovers",
]

FAILURE_KINDS = ("none", "broker", "rack", "dc", "rolling", "slow-follower")

#: Process states in which a broker serves nobody: partitions it leads are unavailable.
_DOWN = (Process.CRASHED, Process.STOPPED, Process.HUNG)


@dataclass(frozen=True)
class Timeline:
    """Virtual milliseconds of each phase (see the module docstring)."""

    warmup_ms: int = 4_000
    #: Longer than ``broker.session.timeout.ms`` (9 s): Kafka's controller has fenced the lost brokers.
    failure_ms: int = 12_000
    #: Longer than a heartbeat (2 s): restarted brokers are unfenced and their followers caught up.
    recovery_ms: int = 6_000
    rebalance_ms: int = 2_000
    #: ``rolling``: from a broker's controlled shutdown to its start, and from its start to the next one
    #: (the failure window is then not waited again).
    rolling_down_ms: int = 3_000
    rolling_up_ms: int = 4_000
    #: The replication model's step (``simulator.replication.tick.ms``) in the simulation: the ticks are
    #: most of a simulation's cost.
    tick_ms: int = 1_000
    #: ``slow-follower``: how far behind its leaders the slow broker copies.
    slow_delay_ms: int = 3_000


@dataclass(frozen=True)
class FailoverPlan:
    """What a sweep simulates for each (scenario, placer) run: every failure kind x election policy."""

    failures: tuple[str, ...] = ()
    policies: tuple[str, ...] = ("kafka",)
    #: Records per second per partition, on every topic (the replication model's ``produce_load``).
    produce_load: float = 100.0
    timeline: Timeline = field(default_factory=Timeline)


@dataclass(frozen=True)
class FailoverRun:
    """One failure kind under one election policy on one placement: the simulated and static figures.

    Times are virtual; ``*_partition_ms`` are partition-milliseconds (integrals over time).
    """

    failure: str
    policy: str
    target: str
    lost_brokers: int
    #: Partitions without a leader, or led by a broker that is down, integrated from the failure on.
    leaderless_partition_ms: int
    offline_worst: int
    offline_after_failure: int
    offline_end: int
    #: Partitions whose in-sync set is smaller than their replica list, integrated from the failure on.
    under_replicated_partition_ms: int
    leader_moves: int
    leader_epoch_bumps: int
    max_leaders_after_failure: int
    max_leaders_after_recovery: int
    #: Elections whose new leader's log ended below the high watermark, and the records it lacked.
    unsafe_elections: int
    records_at_risk: int
    #: From the failure to the last partition change of the failure phase.
    settle_ms: int
    #: The static formula (``controller.placement.metrics``) for the same loss; None where it has none.
    static_offline: int | None
    static_max_leaders: int | None
    static_disagrees: bool | None
    #: The election policy's errors (first one), "" when none.
    error: str = ""


# --- targets ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    label: str
    lost: tuple[int, ...]  # brokers crashed (rolling: restarted in turn)
    slow: int | None = None
    static_rack: str | None = None  # the metrics library's rack failure of the same brokers


def _rng(scenario: str, kind: str) -> random.Random:
    # String seeds are hashed with SHA-512 by random.Random: stable across processes and platforms.
    return random.Random(f"failover/{scenario}/{kind}")


def failure_targets(brokers: Sequence[UsableBroker], scenario: str, kind: str) -> _Target | None:
    """Which brokers ``kind`` takes down in ``scenario`` (None: the kind does not apply)."""
    live = [b.id for b in brokers if not b.fenced]
    if kind not in FAILURE_KINDS:
        raise ValueError(f"unknown failure kind {kind!r} (one of {', '.join(FAILURE_KINDS)})")
    if kind == "none":
        return _Target("none", ())
    if not live:
        return None
    rng = _rng(scenario, kind)
    if kind == "broker":
        b = live[rng.randrange(len(live))]
        return _Target(f"broker {b}", (b,))
    if kind == "rolling":
        return _Target(f"{len(live)} brokers in turn", tuple(live))
    if kind == "slow-follower":
        if len(live) < 2:
            return None
        crashed, slow = rng.sample(live, 2)
        return _Target(f"broker {crashed}, slow broker {slow}", (crashed,), slow)
    groups: dict[str, list[int]] = {}
    for b in brokers:
        levels = rack_levels(b.rack)
        if kind == "rack" and levels:
            groups.setdefault(levels[-1], []).append(b.id)
        elif kind == "dc" and len(levels) > 1:
            groups.setdefault(levels[0], []).append(b.id)
    names = sorted(name for name, members in groups.items() if any(m in live for m in members))
    if not names:
        return None
    name = names[rng.randrange(len(names))]
    lost = tuple(m for m in groups[name] if m in live)
    return _Target(name, lost, static_rack=name)


def _static(
    target: _Target,
    brokers: Sequence[UsableBroker],
    metrics: PlacementMetrics,
    replica_lists: Sequence[Sequence[int]],
) -> RackFailure | None:
    """The static formula's figures for the target's loss: the metrics library's rack failure of the
    same rack, or its formula (``_rack_failure``, one home) applied to the one crashed broker."""
    if target.static_rack is not None:
        return next((f for f in metrics.rack_failures if f.rack == target.static_rack), None)
    led_by: dict[int, list[Sequence[int]]] = {}
    for replicas in replica_lists:
        led_by.setdefault(replicas[0], []).append(replicas)
    fenced = {b.id for b in brokers if b.fenced}
    ids = sorted(b.id for b in brokers)
    return _rack_failure(target.label, target.lost, ids, fenced, metrics.leaders_per_broker, led_by)


# --- observation -----------------------------------------------------------------------------------


class _Observer(EventLog):
    """The cluster's event log, read as it is written: availability and churn from the failure on."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock.now, max_events=1)  # every event is read here; none needs keeping
        self.clock = clock
        self.cluster: Cluster | None = None
        self.partitions: dict[str, PartitionState] = {}
        self.leader: dict[str, int] = {}
        self.under: dict[str, bool] = {}
        self.leaders_on: Counter[int] = Counter()
        self.down: set[int] = set()
        self.leaderless = 0
        self.under_count = 0
        self.measuring = False
        self.start = 0
        self.last = 0
        self.unavailable_ms = 0
        self.under_ms = 0
        self.worst = 0
        self.moves = 0
        self.epoch_bumps = 0
        self.unsafe = 0
        self.at_risk = 0
        self.last_change = 0

    def attach(self, cluster: Cluster) -> None:
        self.cluster = cluster
        for p in cluster.partitions():
            self.partitions[p.name] = p
            self.leader[p.name] = p.leader
            self.under[p.name] = len(p.isr) < len(p.replicas)
            if p.leader == NO_LEADER:
                self.leaderless += 1
            else:
                self.leaders_on[p.leader] += 1
            self.under_count += self.under[p.name]

    @property
    def unavailable(self) -> int:
        return self.leaderless + sum(self.leaders_on[b] for b in self.down)

    def begin(self) -> None:
        self.measuring = True
        self.start = self.last = self.last_change = self.clock.now()
        self.worst = self.unavailable

    def advance_to(self, now: int) -> None:
        """Integrates the state that held since the last event up to ``now``."""
        if not self.measuring or now <= self.last:
            return
        unavailable = self.unavailable
        self.worst = max(self.worst, unavailable)
        self.unavailable_ms += (now - self.last) * unavailable
        self.under_ms += (now - self.last) * self.under_count
        self.last = now

    def most_leaders(self) -> int:
        return max((n for b, n in self.leaders_on.items() if b not in self.down), default=0)

    # EventLog ---------------------------------------------------------------------------------------

    def record(self, kind: str, subject: str, changes: list[tuple[str, Any, Any]], cause: str) -> None:
        self._seen(kind, subject, changes)
        super().record(kind, subject, changes, cause)

    def record_many(
        self, kind: str, entries: list[tuple[str | tuple[str, int], list[tuple[str, Any, Any]], str]]
    ) -> None:
        for subject, changes, _ in entries:
            name = subject if type(subject) is str else f"{subject[0]}-{subject[1]}"
            self._seen(kind, name, changes)
        super().record_many(kind, entries)

    def _seen(self, kind: str, subject: str, changes: Sequence[tuple[str, Any, Any]]) -> None:
        self.advance_to(self.clock.now())
        if kind == "broker" and self.cluster is not None:
            broker = int(subject.rsplit(" ", 1)[1])
            state = self.cluster.broker_state(broker)
            if state is not None and (state.process in _DOWN or not state.registered):
                self.down.add(broker)
            else:
                self.down.discard(broker)
        elif kind == "partition":
            self._partition(subject, changes)

    def _partition(self, name: str, changes: Sequence[tuple[str, Any, Any]]) -> None:
        p = self.partitions.get(name)
        if p is None:
            return
        if self.measuring:
            self.last_change = self.clock.now()
        hw_before = p.high_watermark
        for field_name, before, after in changes:
            if field_name == "leader":
                old = self.leader[name]
                if old == NO_LEADER:
                    self.leaderless -= 1
                else:
                    self.leaders_on[old] -= 1
                if after == NO_LEADER:
                    self.leaderless += 1
                else:
                    self.leaders_on[after] += 1
                self.leader[name] = after
            elif field_name == "isr":
                under = len(after) < len(p.replicas)
                self.under_count += under - self.under[name]
                self.under[name] = under
            elif field_name == "high_watermark":
                hw_before = before
            elif field_name == "leader_epoch" and self.measuring:
                self.epoch_bumps += after - before
        if not self.measuring:
            return
        for field_name, before, after in changes:
            if field_name == "leader" and after != NO_LEADER and after != before:
                self.moves += 1
                leo = p.leo[p.replicas.index(after)]
                if leo < hw_before:
                    self.unsafe += 1
                    self.at_risk += hw_before - leo


# --- the simulation --------------------------------------------------------------------------------


def _config(policy: str, seed: int, configs: Mapping[str, str], timeline: Timeline) -> ServerConfig:
    props = {
        **configs,
        ELECTION_POLICY: policy,
        ELECTION_ISOLATION: "inline",
        CLOCK: "virtual",
        SEED: str(seed),
        REPLICATION_TICK_MS: str(timeline.tick_ms),
    }
    return ServerConfig.from_properties(props)


async def _simulate(
    brokers: Sequence[UsableBroker],
    topics: Mapping[str, list[tuple[int, ...]]],
    kind: str,
    target: _Target,
    config: ServerConfig,
    plan: FailoverPlan,
    seed: int,
) -> tuple[dict[str, int], str]:
    tl = plan.timeline
    clock = VirtualClock(exclusive=True)  # no server: only the simulation reads the cluster
    observer = _Observer(clock)
    # The server's properties give topic configs (unclean.leader.election.enable, ...) their defaults.
    cluster = Cluster(brokers, seed=seed, events=observer, static_configs=config.properties)
    for name, replicas in topics.items():
        cluster.add_topic(name, replicas)
    observer.attach(cluster)
    elections = await start_election_service(config, cluster, clock)
    errors: list[str] = []
    dynamics = Dynamics(config, cluster, clock, elections, asyncio.Lock())
    try:
        if plan.produce_load > 0:
            for name in cluster.topics:
                await dynamics.produce_load(name, plan.produce_load)
        if target.slow is not None:
            await dynamics.set_replication(target.slow, delay_ms=tl.slow_delay_ms)
        await clock.advance(tl.warmup_ms)
        observer.begin()
        if kind == "rolling":
            for b in target.lost:
                await dynamics.stop_broker(b, "controlled")
                await clock.advance(tl.rolling_down_ms)
                await dynamics.start_broker(b)
                await clock.advance(tl.rolling_up_ms)
        else:
            for b in target.lost:
                await dynamics.stop_broker(b, "crash")
            await clock.advance(tl.failure_ms)
        observer.advance_to(clock.now())
        after_failure = {
            "offline_after_failure": observer.unavailable,
            "max_leaders_after_failure": observer.most_leaders(),
            "settle_ms": observer.last_change - observer.start,
        }
        if kind != "rolling":
            for b in target.lost:
                await dynamics.start_broker(b)
        await clock.advance(tl.recovery_ms)
        outcomes = await dynamics.elect_leaders("preferred", None)
        errors += [o.message or o.error for o in outcomes if o.error == "UNKNOWN_SERVER_ERROR" and o.message]
        await clock.advance(tl.rebalance_ms)
        observer.advance_to(clock.now())
    finally:
        await dynamics.close()
        await clock.close()
    figures = {
        **after_failure,
        "leaderless_partition_ms": observer.unavailable_ms,
        "offline_worst": observer.worst,
        "offline_end": observer.unavailable,
        "under_replicated_partition_ms": observer.under_ms,
        "leader_moves": observer.moves,
        "leader_epoch_bumps": observer.epoch_bumps,
        "max_leaders_after_recovery": observer.most_leaders(),
        "unsafe_elections": observer.unsafe,
        "records_at_risk": observer.at_risk,
    }
    return figures, errors[0] if errors else ""


async def _simulate_all(
    scenario: str,
    seed: int,
    brokers: Sequence[UsableBroker],
    assignments: Mapping[tuple[str, int], Sequence[int]],
    metrics: PlacementMetrics,
    configs: Mapping[str, str],
    plan: FailoverPlan,
) -> list[FailoverRun]:
    topics: dict[str, list[tuple[int, ...]]] = {}
    for (topic, _), replicas in assignments.items():
        topics.setdefault(topic, []).append(tuple(replicas))
    runs: list[FailoverRun] = []
    replica_lists = list(assignments.values())
    # The server's properties of each policy, parsed once for every failure kind.
    config_of = {policy: _config(policy, seed, configs, plan.timeline) for policy in plan.policies}
    for kind in plan.failures:
        target = failure_targets(brokers, scenario, kind)
        if target is None:
            continue
        static = _static(target, brokers, metrics, replica_lists) if kind not in ("none", "rolling") else None
        for policy in plan.policies:
            figures, error = await _simulate(brokers, topics, kind, target, config_of[policy], plan, seed)
            disagrees = (
                None
                if static is None
                else static.offline_partitions != figures["offline_after_failure"]
                or static.max_leaders != figures["max_leaders_after_failure"]
            )
            runs.append(
                FailoverRun(
                    failure=kind,
                    policy=policy,
                    target=target.label,
                    lost_brokers=len(target.lost),
                    static_offline=None if static is None else static.offline_partitions,
                    static_max_leaders=None if static is None else static.max_leaders,
                    static_disagrees=disagrees,
                    error=error,
                    **figures,
                )
            )
    return runs


def simulate_failovers(
    scenario: str,
    seed: int,
    brokers: Sequence[UsableBroker],
    assignments: Mapping[tuple[str, int], Sequence[int]],
    metrics: PlacementMetrics,
    configs: Mapping[str, str],
    plan: FailoverPlan,
) -> tuple[FailoverRun, ...]:
    """Every (failure kind, policy) of ``plan`` on this placement, in plan order (kinds, then policies).

    ``configs`` are server properties every simulation gets (the grid's ``placer_configs``: a topic
    default such as ``unclean.leader.election.enable`` applies). Raises PluginLoadError for a policy
    that cannot be loaded.
    """
    if not plan.failures:
        return ()
    return tuple(asyncio.run(_simulate_all(scenario, seed, brokers, assignments, metrics, configs, plan)))
