"""Placement requests as the controller answers them: the request checks, the placer call, the result check.

One piece of code for everything that places replicas: the wire RPCs (CreateReplicaPlacement,
CreateTopics, CreatePartitions), the ``place`` and ``compare`` commands and the sweep pipeline. A
request is a :class:`~controller.placement.api.PlacementSpec` (what the placer is given) and its
``timeoutMs``; the service is given the limits requests are held to and a way to see the cluster as it
is now, never the server's configuration or state. Failures are :class:`PlacementFailure`, a
:class:`~protocol.errors.Refusal` with the error code and the message the client gets.

One path places and checks, :meth:`PlacementService._placing`; :meth:`PlacementService.place` runs it
awaiting the placers, :meth:`PlacementService.place_now` runs it without waiting when nothing has to be
waited for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from typing import Any

from controller.placement import rules
from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    PlacerNotApplicableError,
)

# The placers every service loads as its fallbacks (DEFAULT_PLACER, SIMPLE_PLACER) are imported with it,
# as the rest of a server's code is, not at each server's start.
from controller.placement.builtin import legacy as _legacy  # noqa: F401
from controller.placement.builtin import striped as _striped  # noqa: F401
from controller.placement.loader import DEFAULT_PLACER, PLACERS, SIMPLE_PLACER, load_placer
from controller.placement.settings import PlacementLimits, PlacerSetup
from controller.plugins.isolation import InlineRunner, PluginError, Reason, Runner, start_runner
from protocol.codes import ErrorCode
from protocol.errors import Refusal

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_TIMEOUT_MS", "PlacementFailure", "PlacementService"]

#: The timeout a placement gets when the client sends none.
DEFAULT_TIMEOUT_MS = 60000


class PlacementFailure(Refusal):
    """A placement request that cannot be answered with replicas: the code and message the client gets.

    ``kind`` says what went wrong on the placer's side, when it was the placer: the class of the
    exception it raised, ``MalformedPlacement``, ``Deferred``, ``TimedOut``, ``WorkerExited`` or
    ``OutOfMemory``; None when the request itself was refused. ``not_applicable`` is the placer's reason
    when it raised :class:`~controller.placement.api.PlacerNotApplicableError` (it does not apply to the
    cluster), else None.
    """

    message: str

    def __init__(
        self, code: ErrorCode, message: str, kind: str | None = None, not_applicable: str | None = None
    ) -> None:
        super().__init__(code, message)
        self.kind = kind
        self.not_applicable = not_applicable


_KIND_OF_REASON = {
    Reason.MALFORMED: "MalformedPlacement",
    Reason.TIMED_OUT: "TimedOut",
    Reason.WORKER_EXITED: "WorkerExited",
    Reason.OUT_OF_MEMORY: "OutOfMemory",
}

#: One placer call the path asks its runner for: the runner, and its arguments.
_Call = tuple[Runner, tuple[PlacementSpec, ClusterView]]


class PlacementService:
    """Answers placement requests with the configured placer, the default placer and the simple placer."""

    def __init__(
        self,
        limits: PlacementLimits,
        view: Callable[[], ClusterView],
        runner: Runner,
        default: Runner,
        simple: Runner,
    ) -> None:
        """``view`` gives the cluster as it is at the time of a request."""
        self.limits = limits
        self.view = view
        self.runner = runner
        self.default = default
        self.simple = simple

    @classmethod
    async def start(
        cls, placer: PlacerSetup, limits: PlacementLimits, view: Callable[[], ClusterView]
    ) -> PlacementService:
        """Loads the configured placer once (isolated as configured) plus the built-in fallbacks."""
        props = placer.properties
        runner = await start_runner(
            PLACERS,
            placer.name,
            props,
            placer.isolation,
            placer.start_timeout_ms / 1000,
            placer.max_memory_mb,
        )
        default = InlineRunner(PLACERS, load_placer(DEFAULT_PLACER, props))
        simple = InlineRunner(PLACERS, load_placer(SIMPLE_PLACER, props))
        return cls(limits, view, runner, default, simple)

    @property
    def placer_label(self) -> str:
        return self.runner.label

    async def close(self) -> None:
        for runner in (self.runner, self.default, self.simple):
            await runner.close()

    def check(self, spec: PlacementSpec, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        """The request-level checks of the error table, before any placer runs; PlacementFailure."""
        registered = (b.id for b in self.view().brokers)
        refusal = rules.request_refusal(spec, timeout_ms, registered, self.limits.max_replicas)
        if refusal is not None:
            raise PlacementFailure(refusal.code, refusal.message or refusal.code.message)

    async def place(
        self,
        spec: PlacementSpec,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        cluster: ClusterView | None = None,
        deadline: float | None = None,
    ) -> list[list[int]]:
        """Replica lists for partitions ``spec.start_partition``.., leader first; or PlacementFailure.

        ``cluster`` is the cluster to place on (by default the service's view of it now). ``deadline``
        (event-loop time) bounds the placer's run; by default the request's ``timeoutMs`` from now.
        Callers placing several topics for one request pass one deadline for all of them.
        """
        if deadline is None:
            deadline = asyncio.get_running_loop().time() + self.limits.capped_timeout_ms(timeout_ms) / 1000
        size = _size(spec)
        placing = self._placing(spec, timeout_ms, cluster)
        call = next(placing)
        while True:
            runner, args = call
            try:
                result = await runner.call(args, deadline, size)
            except PluginError as error:
                call = _resume(placing, error=error)
            else:
                call = _resume(placing, result=result)
            if not isinstance(call, tuple):
                return call

    def place_now(self, spec: PlacementSpec, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> list[list[int]] | None:
        """:meth:`place`'s answer without waiting, when the placers it may call are built-ins and the
        request is small (no worker, no thread, no timer: nothing to wait for); None when it has to be
        awaited (then call :meth:`place`). Raises PlacementFailure as :meth:`place` does."""
        size = _size(spec)
        placing = self._placing(spec, timeout_ms, None)
        call = next(placing)
        if not (call[0].can_call_now(size) and self.default.can_call_now(size)):
            placing.close()
            return None
        while True:
            runner, args = call
            try:
                result = runner.call_now(args)
            except PluginError as error:
                call = _resume(placing, error=error)
            else:
                call = _resume(placing, result=result)
            if not isinstance(call, tuple):
                return call

    def _placing(
        self, spec: PlacementSpec, timeout_ms: int, cluster: ClusterView | None
    ) -> Generator[_Call, Any, list[list[int]]]:
        """The one path of a placement: the request checks, the placer, the default placer when it defers,
        and the checks of what came back. It yields each placer call to make and is sent its result
        (checked by the runner: :attr:`~controller.plugins.loader.PluginKind.check`), or thrown the
        PluginError it raised; it returns the replica lists or raises PlacementFailure."""
        self.check(spec, timeout_ms)
        view = cluster if cluster is not None else self.view()
        runner = self.simple if spec.force_simple else self.runner
        try:
            replicas = yield runner, (spec, view)
            if replicas is None and runner is not self.default:
                log.debug("placer %s deferred to the default placer", runner.label)
                runner = self.default
                replicas = yield runner, (spec, view)
        except PluginError as error:
            raise self._failure(error, spec, timeout_ms, view) from None
        problem = rules.replication_factor_problem(spec.num_replicas, len(view.usable(spec)))
        if problem is not None:  # refused whatever the placer did about it
            raise PlacementFailure(ErrorCode.INVALID_REPLICATION_FACTOR, problem)
        if replicas is None:
            raise PlacementFailure(
                ErrorCode.REPLICA_PLACEMENT_FAILED,
                f"{runner.label}: the default placer deferred too",
                "Deferred",
            )
        return replicas  # type: ignore[no-any-return]

    def _failure(
        self, error: PluginError, spec: PlacementSpec, timeout_ms: int, view: ClusterView
    ) -> PlacementFailure:
        if error.reason is Reason.TIMED_OUT:
            honoured = self.limits.capped_timeout_ms(timeout_ms)
            setting = self.limits.request_max_timeout_ms.setting
            within = (
                f"timeoutMs={timeout_ms}"
                if honoured == timeout_ms
                else f"{honoured} ms (timeoutMs={timeout_ms}, capped by {setting})"
            )
            return PlacementFailure(
                ErrorCode.REQUEST_TIMED_OUT,
                f"The placer {error.label} did not answer within {within}.",
                "TimedOut",
            )
        if error.reason is Reason.DECLARED and error.declared == InvalidReplicationFactorError.__name__:
            return PlacementFailure(ErrorCode.INVALID_REPLICATION_FACTOR, error.message, error.exc_type)
        # A request that could never be placed is answered as such, whatever the placer did about it.
        problem = rules.replication_factor_problem(spec.num_replicas, len(view.usable(spec)))
        if problem is not None and error.reason is Reason.MALFORMED:
            return PlacementFailure(ErrorCode.INVALID_REPLICATION_FACTOR, problem)
        if error.reason is Reason.MALFORMED:
            return PlacementFailure(
                ErrorCode.REPLICA_PLACEMENT_FAILED, f"{error.label} {error.message}", "MalformedPlacement"
            )
        prefix = "" if error.reason in (Reason.DECLARED, Reason.OUT_OF_MEMORY) else "unexpected error: "
        return PlacementFailure(
            ErrorCode.REPLICA_PLACEMENT_FAILED,
            f"{error.label}: {prefix}{error.message}",
            error.exc_type or _KIND_OF_REASON.get(error.reason),
            not_applicable=error.message if error.declared == PlacerNotApplicableError.__name__ else None,
        )


def _size(spec: PlacementSpec) -> int:
    """How big a placement is, for the choice of running it off the event loop: replica slots."""
    return spec.num_partitions * max(spec.num_replicas, 1)


def _resume(
    placing: Generator[_Call, Any, list[list[int]]], result: Any = None, error: PluginError | None = None
) -> _Call | list[list[int]]:
    """Hands a placer call's result (or error) to the placing path: its next call, or the replica lists."""
    try:
        return placing.throw(error) if error is not None else placing.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
