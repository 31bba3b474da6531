"""Placement requests as the controller answers them: the request checks, the placer call, the result check.

One piece of code for everything that places replicas: the wire RPCs (CreateReplicaPlacement,
CreateTopics, CreatePartitions), the ``place`` and ``compare`` commands and the sweep pipeline. Failures
are :class:`PlacementFailure`, carrying the error name of the wire error table in
``schemas/errors.json`` and the message the client gets.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.cluster import Cluster
from controller.config import ISOLATION, MAX_REPLICAS, PLACER, REQUEST_MAX_TIMEOUT_MS, ServerConfig
from controller.offload import off_loop
from controller.placement import rules
from controller.placement.api import ClusterView, PlacementSpec, UsableBroker
from controller.placement.loader import DEFAULT_PLACER, PLACERS, SIMPLE_PLACER, load_placer
from controller.plugins.isolation import InlineRunner, PluginError, Reason, Runner, start_runner

log = logging.getLogger(__name__)

__all__ = ["PlacementFailure", "PlacementRequest", "PlacementService"]


class PlacementFailure(Exception):
    """A placement request that cannot be answered with replicas: ``error`` is the wire error name.

    ``kind`` says what went wrong on the placer's side, when it was the placer: the class of the
    exception it raised, ``MalformedPlacement``, ``Deferred``, ``TimedOut``, ``WorkerExited`` or
    ``OutOfMemory``; None when the request itself was refused.
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


def _spec(request: PlacementRequest) -> PlacementSpec:
    return PlacementSpec(
        start_partition=request.start_partition,
        num_partitions=request.num_partitions,
        num_replicas=request.replication_factor,
        topic=request.topic,
        broker_ids=tuple(request.node_ids) if request.node_ids else None,
        force_simple=request.force_simple,
    )


_KIND_OF_REASON = {
    Reason.MALFORMED: "MalformedPlacement",
    Reason.TIMED_OUT: "TimedOut",
    Reason.WORKER_EXITED: "WorkerExited",
    Reason.OUT_OF_MEMORY: "OutOfMemory",
}


class PlacementService:
    """Answers placement requests with the configured placer, the default placer and the simple placer."""

    def __init__(
        self, config: ServerConfig, cluster: Cluster, runner: Runner, default: Runner, simple: Runner
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
        runner = await start_runner(
            PLACERS,
            config.placer,
            props,
            config.isolation,
            config.placer_start_ms / 1000,
            config.placer_max_memory_mb,
        )
        default = InlineRunner(PLACERS, load_placer(DEFAULT_PLACER, props))
        simple = InlineRunner(PLACERS, load_placer(SIMPLE_PLACER, props))
        return cls(config, cluster, runner, default, simple)

    @classmethod
    async def in_process(
        cls, placer: str, configs: Mapping[str, str], brokers: Sequence[UsableBroker]
    ) -> PlacementService:
        """A service for ``placer`` on ``brokers``, inline in this process, as ``place``, ``compare`` and the
        sweep use it: configured with ``configs`` (server properties, ``simulator.seed`` among them).

        Raises ConfigError for malformed properties and PlacerLoadError for a placer that cannot be loaded.
        """
        config = ServerConfig.from_properties({**configs, PLACER: placer, ISOLATION: "inline"})
        return await cls.start(config, Cluster(brokers, seed=config.seed))

    @property
    def placer_label(self) -> str:
        return self.runner.label

    async def close(self) -> None:
        for runner in (self.runner, self.default, self.simple):
            await runner.close()

    def check(self, request: PlacementRequest) -> None:
        """The request-level checks of the error table, before any placer runs."""
        refusal = rules.request_refusal(
            request.num_partitions,
            request.replication_factor,
            request.node_ids,
            request.start_partition,
            request.timeout_ms,
            (b.id for b in self.cluster.brokers),
            self.config.max_replicas,
            MAX_REPLICAS,
        )
        if refusal is not None:
            raise PlacementFailure(refusal.error, refusal.message)

    async def place(
        self, request: PlacementRequest, cluster: ClusterView | None = None, deadline: float | None = None
    ) -> list[list[int]]:
        """Replica lists for partitions start_partition.., leader first; or PlacementFailure.

        ``deadline`` (event-loop time) bounds the placer's run; by default the request's ``timeoutMs``
        from now. Callers placing several topics for one request pass one deadline for all of them.
        """
        self.check(request)
        view = cluster if cluster is not None else self.cluster.view()
        spec = _spec(request)
        if deadline is None:
            deadline = (
                asyncio.get_running_loop().time() + self.config.capped_timeout_ms(request.timeout_ms) / 1000
            )
        runner = self.simple if request.force_simple else self.runner
        size = request.num_partitions * max(request.replication_factor, 1)
        try:
            replicas = await runner.call((spec, view), deadline, size)
            if replicas is None and runner is not self.default:
                log.debug("placer %s deferred to the default placer", runner.label)
                runner = self.default
                replicas = await runner.call((spec, view), deadline, size)
        except PluginError as error:
            raise self._failure(error, request, spec, view) from None
        self._usable(runner, spec, view, replicas)
        found = await off_loop(size, rules.first_problem, spec, view.brokers, replicas)
        return self._checked(runner, found, replicas)

    def place_now(self, request: PlacementRequest) -> list[list[int]] | None:
        """:meth:`place`'s answer without waiting, when the placers it may call are built-ins and the
        request is small (no worker, no thread, no timer: nothing to wait for); None when it has to be
        awaited (then call :meth:`place`). Raises PlacementFailure as :meth:`place` does."""
        self.check(request)
        runner = self.simple if request.force_simple else self.runner
        size = request.num_partitions * max(request.replication_factor, 1)
        if not (runner.can_call_now(size) and self.default.can_call_now(size)):
            return None
        view = self.cluster.view()
        spec = _spec(request)
        try:
            replicas = runner.call_now((spec, view))
            if replicas is None and runner is not self.default:
                log.debug("placer %s deferred to the default placer", runner.label)
                runner = self.default
                replicas = runner.call_now((spec, view))
        except PluginError as error:
            raise self._failure(error, request, spec, view) from None
        self._usable(runner, spec, view, replicas)
        return self._checked(runner, rules.first_problem(spec, view.brokers, replicas), replicas)

    @staticmethod
    def _usable(runner: Runner, spec: PlacementSpec, view: ClusterView, replicas: Any) -> None:
        """Refuses what no placer could place, and a placement the default placer deferred too."""
        problem = rules.replication_factor_problem(spec.num_replicas, len(view.usable(spec)))
        if problem is not None:
            raise PlacementFailure("INVALID_REPLICATION_FACTOR", problem)
        if replicas is None:
            raise PlacementFailure(
                "REPLICA_PLACEMENT_FAILED", f"{runner.label}: the default placer deferred too", "Deferred"
            )

    @staticmethod
    def _checked(runner: Runner, found: rules.Problem | None, replicas: list[list[int]]) -> list[list[int]]:
        if found is not None:
            raise PlacementFailure(
                "REPLICA_PLACEMENT_FAILED", f"{runner.label} {found.message}", "MalformedPlacement"
            )
        return replicas

    def _failure(
        self, error: PluginError, request: PlacementRequest, spec: PlacementSpec, view: ClusterView
    ) -> PlacementFailure:
        if error.reason is Reason.TIMED_OUT:
            honoured = self.config.capped_timeout_ms(request.timeout_ms)
            within = (
                f"timeoutMs={request.timeout_ms}"
                if honoured == request.timeout_ms
                else f"{honoured} ms (timeoutMs={request.timeout_ms}, capped by {REQUEST_MAX_TIMEOUT_MS})"
            )
            return PlacementFailure(
                "REQUEST_TIMED_OUT", f"The placer {error.label} did not answer within {within}.", "TimedOut"
            )
        if error.reason is Reason.DECLARED and error.declared == "InvalidReplicationFactorError":
            return PlacementFailure("INVALID_REPLICATION_FACTOR", error.message, error.exc_type)
        # A request that could never be placed is answered as such, whatever the placer did about it.
        problem = rules.replication_factor_problem(spec.num_replicas, len(view.usable(spec)))
        if problem is not None and error.reason is Reason.MALFORMED:
            return PlacementFailure("INVALID_REPLICATION_FACTOR", problem)
        if error.reason is Reason.MALFORMED:
            return PlacementFailure(
                "REPLICA_PLACEMENT_FAILED", f"{error.label} {error.message}", "MalformedPlacement"
            )
        prefix = "" if error.reason in (Reason.DECLARED, Reason.OUT_OF_MEMORY) else "unexpected error: "
        return PlacementFailure(
            "REPLICA_PLACEMENT_FAILED",
            f"{error.label}: {prefix}{error.message}",
            error.exc_type or _KIND_OF_REASON.get(error.reason),
        )
