"""Placement requests as the controller answers them: checks, the placer call, and result validation.

One piece of code for every RPC that places replicas (CreateReplicaPlacement, CreateTopics,
CreatePartitions). Failures are :class:`PlacementFailure` carrying the error name of the wire error
table in ``schemas/errors.json`` and a message for the client.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.cluster import Cluster
from controller.config import MAX_REPLICAS, ServerConfig
from controller.placement.api import ClusterView, PlacementSpec, UsableBroker
from controller.placement.loader import DEFAULT_PLACER, load_placer
from controller.placement.runner import (
    InlineRunner,
    PlacerOutcome,
    PlacerTimedOut,
    ProcessRunner,
    start_runner,
)

log = logging.getLogger(__name__)

__all__ = ["PlacementFailure", "PlacementRequest", "PlacementService", "validate_placement"]


class PlacementFailure(Exception):
    """A placement request that cannot be answered with replicas: ``error`` is the wire error name.

    ``kind`` says what went wrong on the placer's side, when it was the placer: the class of the
    exception it raised, ``MalformedPlacement``, ``Deferred`` or ``TimedOut``; None when the request
    itself was refused.
    """

    def __init__(self, error: str, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.kind = kind


@dataclass(frozen=True)
class PlacementRequest:
    num_partitions: int
    replication_factor: int
    node_ids: tuple[int, ...] = ()
    force_simple: bool = False
    topic: str | None = None
    start_partition: int = 0
    timeout_ms: int = 60000


def validate_placement(replicas: Any, spec: PlacementSpec, brokers: Sequence[UsableBroker]) -> str | None:
    """What exactly is wrong with a placer's result, or None when it is a valid placement of ``spec``."""
    if len(replicas) != spec.num_partitions:
        return f"returned {len(replicas)} partition(s), expected {spec.num_partitions}"
    # The common case, a valid placement, with set operations; the first partition that fails them is
    # explained by the checks below, in their order.
    rf = spec.num_replicas
    allowed = {b.id for b in brokers}
    if spec.broker_ids is not None:
        allowed.intersection_update(spec.broker_ids)
    leaders = {b.id for b in brokers if not b.fenced}
    kinds: set[type] = set()
    for rs in replicas:
        kinds.update(map(type, rs))
        try:
            valid = len(rs) == rf and rs[0] in leaders and allowed.issuperset(rs) and len(set(rs)) == rf
        except (TypeError, IndexError):  # unhashable entries, no replicas at all
            valid = False
        if not valid:
            break
    else:
        if kinds <= {int}:
            return None
    # Something is wrong (a value such as True or 1.0 passes the set operations as a broker id, hence
    # the check of the types): the detailed checks name the first partition at fault.
    by_id = {b.id: b for b in brokers}
    for offset, rs in enumerate(replicas):
        problem = _partition_problem(spec.start_partition + offset, rs, spec, by_id)
        if problem is not None:
            return problem
    return None


def _partition_problem(
    partition: int, rs: Sequence[Any], spec: PlacementSpec, by_id: Mapping[int, UsableBroker]
) -> str | None:
    if len(rs) != spec.num_replicas:
        return f"partition {partition} has {len(rs)} replica(s), expected {spec.num_replicas}: {list(rs)}"
    for r in rs:
        if type(r) is not int:
            return f"partition {partition} has a replica that is not a broker id: {r!r}"
    dupes = sorted(b for b, n in Counter(rs).items() if n > 1)
    if dupes:
        return f"partition {partition} repeats broker(s) {dupes}: {list(rs)}"
    unknown = [r for r in rs if r not in by_id]
    if unknown:
        return f"partition {partition} names unknown broker(s) {unknown}: {list(rs)}"
    if spec.broker_ids is not None:
        outside = [r for r in rs if r not in spec.broker_ids]
        if outside:
            return f"partition {partition} uses broker(s) {outside} outside NodeId {sorted(spec.broker_ids)}"
    if rs and by_id[rs[0]].fenced:
        return f"partition {partition} has fenced broker {rs[0]} as its leader: {list(rs)}"
    return None


class PlacementService:
    """Answers placement requests with the configured placer, the default placer and the simple placer."""

    def __init__(
        self,
        config: ServerConfig,
        cluster: Cluster,
        runner: InlineRunner | ProcessRunner,
        default: InlineRunner,
        simple: InlineRunner,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.runner = runner
        self.default = default
        self.simple = simple

    @classmethod
    async def start(cls, config: ServerConfig, cluster: Cluster) -> PlacementService:
        """Loads the configured placer once (isolated as configured) plus the built-in fallbacks."""
        props = config.placer_properties()
        runner = await start_runner(config.placer, props, config.isolation, config.placer_start_ms / 1000)
        default = InlineRunner(load_placer(DEFAULT_PLACER, props))
        simple = InlineRunner(load_placer("legacy", props))
        return cls(config, cluster, runner, default, simple)

    @property
    def placer_label(self) -> str:
        return self.runner.label

    async def close(self) -> None:
        for runner in (self.runner, self.default, self.simple):
            await runner.close()

    def check(self, request: PlacementRequest) -> None:
        """The request-level checks of the error table, before any placer runs."""
        if request.num_partitions <= 0:
            raise PlacementFailure(
                "INVALID_PARTITIONS",
                f"Number of partitions was set to an invalid non-positive value: {request.num_partitions}.",
            )
        if request.start_partition < 0:
            raise PlacementFailure(
                "INVALID_REQUEST", f"StartPartition must not be negative: {request.start_partition}."
            )
        if request.timeout_ms <= 0:
            raise PlacementFailure("INVALID_REQUEST", f"timeoutMs must be positive: {request.timeout_ms}.")
        if request.node_ids:
            repeated = sorted(b for b, n in Counter(request.node_ids).items() if n > 1)
            if repeated:
                raise PlacementFailure("INVALID_REQUEST", f"NodeId repeats broker id(s) {repeated}.")
            unknown = sorted(b for b in request.node_ids if self.cluster.broker(b) is None)
            if unknown:
                raise PlacementFailure(
                    "INVALID_REQUEST", f"NodeId names unregistered broker id(s) {unknown}."
                )
        total = request.num_partitions * max(request.replication_factor, 0)
        if total > self.config.max_replicas:
            raise PlacementFailure(
                "POLICY_VIOLATION",
                f"{request.num_partitions} partition(s) x replication factor {request.replication_factor} = "
                f"{total} replicas exceeds the limit of {self.config.max_replicas} ({MAX_REPLICAS}).",
            )

    async def place(self, request: PlacementRequest, cluster: ClusterView | None = None) -> list[list[int]]:
        """Replica lists for partitions start_partition.., leader first; or PlacementFailure."""
        self.check(request)
        view = cluster if cluster is not None else self.cluster.view()
        spec = PlacementSpec(
            start_partition=request.start_partition,
            num_partitions=request.num_partitions,
            num_replicas=request.replication_factor,
            topic=request.topic,
            broker_ids=tuple(request.node_ids) if request.node_ids else None,
            force_simple=request.force_simple,
        )
        runner = self.simple if request.force_simple else self.runner
        timeout = request.timeout_ms / 1000
        try:
            outcome = await runner.place(spec, view, timeout)
            if outcome.kind == "none" and runner is not self.default:
                log.debug("placer %s deferred to the default placer", outcome.label)
                outcome = await self.default.place(spec, view, timeout)
        except PlacerTimedOut:
            raise PlacementFailure(
                "REQUEST_TIMED_OUT",
                f"The placer {runner.label} did not answer within timeoutMs={request.timeout_ms}.",
                "TimedOut",
            ) from None
        return self._accept(outcome, spec, view)

    def _accept(self, outcome: PlacerOutcome, spec: PlacementSpec, view: ClusterView) -> list[list[int]]:
        usable = view.usable(spec)
        rf = spec.num_replicas
        if outcome.kind == "raised":
            if outcome.exc_kind == "invalid_rf":
                raise PlacementFailure("INVALID_REPLICATION_FACTOR", outcome.message, outcome.exc_type)
            prefix = "" if outcome.exc_kind == "placement" else "unexpected error: "
            raise PlacementFailure(
                "REPLICA_PLACEMENT_FAILED", f"{outcome.label}: {prefix}{outcome.message}", outcome.exc_type
            )
        if rf <= 0:
            raise PlacementFailure(
                "INVALID_REPLICATION_FACTOR",
                f"Invalid replication factor {rf}: the replication factor must be positive.",
            )
        if rf > len(usable):
            raise PlacementFailure(
                "INVALID_REPLICATION_FACTOR",
                f"The target replication factor of {rf} cannot be reached because only {len(usable)} broker(s) "
                "are registered.",
            )
        if outcome.kind == "none":
            raise PlacementFailure(
                "REPLICA_PLACEMENT_FAILED", f"{outcome.label}: the default placer deferred too", "Deferred"
            )
        if outcome.kind == "bad":
            raise PlacementFailure(
                "REPLICA_PLACEMENT_FAILED", f"{outcome.label} {outcome.message}", "MalformedPlacement"
            )
        assert outcome.replicas is not None
        problem = validate_placement(outcome.replicas, spec, view.brokers)
        if problem is not None:
            raise PlacementFailure(
                "REPLICA_PLACEMENT_FAILED", f"{outcome.label} {problem}", "MalformedPlacement"
            )
        return outcome.replicas
