"""Runs one scenario's workload through one placer, the way the controller answers it, and scores it.

This is the single piece of code that evaluates a (scenario, placer) pair. The Spark job calls it on
the executors and the single-process path calls it in a loop, so both give the same results by
construction.

Each run gets a fresh placer, loaded by the server's loader and configured with the grid's
``placer_configs`` plus ``simulator.seed`` = the scenario's seed. Requests go through the server's
:class:`~controller.topic_admin.TopicAdmin` (CreateTopics and CreatePartitions as the server performs
them: topic checks, the placement service's request checks, deferral to the default placer, result
validation, the error table and its messages) in workload order against a :class:`~controller.cluster.Cluster`,
so the placer's ``ClusterView`` carries every assignment made so far and a stateful placer sees its
calls in order. The final assignments are scored by :func:`controller.placement.metrics.compute_metrics`,
and, when the grid asks for failures, go through them on the controller's own dynamics and election
code (:func:`placement_sim.pipeline.failover.simulate_failovers`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from controller.cluster import Cluster
from controller.config import ISOLATION, PLACER, SEED, ServerConfig
from controller.placement.metrics import PlacementMetrics, compute_metrics, rack_levels
from controller.placement.service import PlacementService
from controller.topic_admin import NewPartitions, NewTopic, TopicAdmin
from placement_sim.pipeline.failover import FailoverPlan, FailoverRun, simulate_failovers
from placement_sim.pipeline.scenarios import ScenarioSpec, brokers_for, operations_for

log = logging.getLogger(__name__)

__all__ = [
    "Failure",
    "Placement",
    "RackLoss",
    "RunResult",
    "placer_properties",
    "rack_losses",
    "run_scenario",
]


@dataclass(frozen=True)
class Placement:
    """The replicas of one partition, leader first."""

    topic: str
    partition: int
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class Failure:
    """A request the controller answered with an error instead of replicas."""

    op: int
    topic: str
    error_code: int
    error: str
    message: str


@dataclass(frozen=True)
class RackLoss:
    """The metrics library's figures for losing every broker of one rack at once.

    ``scope`` says what kind of rack it is: ``rack`` for a broker's own (deepest) rack, ``dc`` for the
    top level of multi-level rack paths (a data centre), ``level<k>`` for the levels in between.
    """

    rack: str
    scope: str
    lost_brokers: int
    offline_partitions: int
    moved_leaders: int
    max_leaders: int


@dataclass(frozen=True)
class RunResult:
    """What one (scenario, placer) run produced."""

    scenario: ScenarioSpec
    placer: str
    operations: int
    skipped: int
    placements: tuple[Placement, ...]
    failures: tuple[Failure, ...]
    metrics: Mapping[str, float | int]
    rack_losses: tuple[RackLoss, ...]
    details: str
    seconds: float
    #: Requests refused because the placer does not apply to the cluster (PlacerNotApplicableError), and
    #: the placer's reason for the first of them ("" when it applied to every request).
    not_applicable_requests: int = 0
    not_applicable: str = ""
    #: The failure simulations of the placement (one per applicable failure kind x election policy).
    failovers: tuple[FailoverRun, ...] = ()


def placer_properties(placer: str, seed: int, configs: Mapping[str, str]) -> dict[str, str]:
    """The server properties of a run: the grid's, plus the placer, its seed and inline execution."""
    return {**configs, PLACER: placer, SEED: str(seed), ISOLATION: "inline"}


async def _run_workload(
    scenario: ScenarioSpec, config: ServerConfig, cluster: Cluster
) -> tuple[int, list[Failure], list[str]]:
    """What the workload skipped and what failed, and the reasons of the requests the placer does not
    apply to (they fail too)."""
    failures: list[Failure] = []
    not_applicable: list[str] = []
    skipped = 0
    service = await PlacementService.start(config.placer_setup(), config.placement_limits(), cluster.view)
    admin = TopicAdmin(config, cluster, service)
    try:
        for index, op in enumerate(operations_for(scenario.workload, scenario.seed)):
            topic = cluster.topics.get(op.topic)
            if op.kind == "add":
                if topic is None:
                    skipped += 1  # the topic's creation failed: nothing to add partitions to
                    continue
                [result] = await admin.create_partitions(
                    [NewPartitions(op.topic, len(topic.partitions) + op.num_partitions)]
                )
            else:
                [result] = await admin.create_topics(
                    [NewTopic(op.topic, op.num_partitions, op.replication_factor)]
                )
            if result.error is not None:
                failures.append(
                    Failure(index, op.topic, int(result.error), result.error.name, result.message or "")
                )
                if result.not_applicable is not None:
                    not_applicable.append(result.not_applicable)
    finally:
        await service.close()
    return skipped, failures, not_applicable


def rack_losses(metrics: PlacementMetrics) -> tuple[RackLoss, ...]:
    """The library's rack failures, one per rack at every level, each labelled with its scope."""
    own = set(metrics.racks)
    losses = []
    for f in metrics.rack_failures:
        depth = len(rack_levels(f.rack))
        scope = "rack" if f.rack in own else ("dc" if depth == 1 else f"level{depth}")
        losses.append(
            RackLoss(f.rack, scope, len(f.lost_brokers), f.offline_partitions, f.moved_leaders, f.max_leaders)
        )
    return tuple(losses)


def run_scenario(
    scenario: ScenarioSpec,
    placer: str,
    configs: Mapping[str, str] | None = None,
    plan: FailoverPlan | None = None,
) -> RunResult:
    """Runs ``scenario``'s workload through ``placer`` and computes its placement metrics, then the
    failures of ``plan`` on the placement.

    Raises :class:`~controller.placement.loader.PlacerLoadError` when the placer cannot be loaded;
    everything a placer does wrong while placing is recorded as a :class:`Failure`.
    """
    brokers = brokers_for(scenario.shape, scenario.seed)
    config = ServerConfig.from_properties(placer_properties(placer, scenario.seed, configs or {}))
    cluster = Cluster(brokers, seed=scenario.seed)
    started = time.perf_counter()
    skipped, failures, not_applicable = asyncio.run(_run_workload(scenario, config, cluster))
    seconds = time.perf_counter() - started
    assignments = cluster.view().assignments
    metrics = compute_metrics(brokers, assignments)
    placements = tuple(
        Placement(topic, partition, tuple(rs)) for (topic, partition), rs in assignments.items()
    )
    if failures:
        log.debug("%s with %s: %d request(s) failed", scenario.scenario, placer, len(failures))
    failovers = (
        simulate_failovers(
            scenario.scenario, scenario.seed, brokers, assignments, metrics, configs or {}, plan
        )
        if plan is not None and assignments  # a run that placed nothing says nothing about failures
        else ()
    )
    return RunResult(
        scenario=scenario,
        placer=placer,
        operations=len(operations_for(scenario.workload, scenario.seed)),
        skipped=skipped,
        placements=placements,
        failures=tuple(failures),
        metrics=metrics.summary(),
        rack_losses=rack_losses(metrics),
        details=json.dumps(metrics.to_dict(), sort_keys=True, separators=(",", ":")),
        seconds=seconds,
        not_applicable_requests=len(not_applicable),
        not_applicable=not_applicable[0] if not_applicable else "",
        failovers=failovers,
    )
