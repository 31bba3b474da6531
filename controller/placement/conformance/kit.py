"""``check_placer``: runs a placer on generated and hand-picked cases and judges every call."""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import dataclasses
import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    ReplicaPlacementError,
)
from controller.placement.builtin.java_random import SEED_KEY
from controller.placement.conformance.report import CheckReport, Failure, PlacerCheckError
from controller.placement.conformance.rules import (
    PRECONDITION_METHOD,
    Precondition,
    placement_problems,
    rack_spread_applies,
    rack_spread_problems,
)
from controller.placement.conformance.strategies import PlacementCase, explicit_cases, placement_cases
from controller.placement.loader import resolve_placer_class
from controller.plugins.loader import class_label
from controller.plugins.properties import PropertyValue, property_texts

__all__ = ["PlacerSource", "check_placer"]

log = logging.getLogger(__name__)

PlacerSource = Any  # a placer instance, a placer class, a zero-argument factory or a loader name


@dataclass(frozen=True)
class _Outcome:
    result: Any = None
    error: BaseException | None = None

    def key(self) -> tuple[object, ...]:
        if self.error is not None:
            return ("raised", type(self.error).__name__, str(self.error))
        if self.result is None:
            return ("deferred",)
        try:
            return ("placed", tuple(tuple(int(r) for r in replicas) for replicas in self.result))
        except (TypeError, ValueError):
            return ("placed", repr(self.result))

    def describe(self) -> str:
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error}"
        if self.result is None:
            return "None (deferred to the default placer)"
        try:
            return repr([list(replicas) for replicas in self.result])
        except TypeError:
            return repr(self.result)


class _AsyncRunner:
    """Runs ``async def place`` coroutines on one event loop kept for the whole check."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def resolve(self, value: object) -> object:
        if not inspect.isawaitable(value):
            return value
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(_awaited(value))

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None


async def _awaited(value: Awaitable[object]) -> object:
    return await value


def _factory_for(placer: PlacerSource) -> tuple[Callable[[], Any], str]:
    if isinstance(placer, str):
        cls = resolve_placer_class(placer)
        label = class_label(cls)
        return cls, placer if label == placer else f"{placer} ({label})"
    if isinstance(placer, type):
        return placer, class_label(placer)
    if callable(placer) and not callable(getattr(placer, "place", None)):
        return placer, getattr(placer, "__qualname__", repr(placer))
    template = copy.deepcopy(placer)
    return (lambda: copy.deepcopy(template)), class_label(type(placer))


class _Violation(AssertionError):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.describe())
        self.failure = failure


class _CaseRunner:
    def __init__(
        self,
        factory: Callable[[], Any],
        label: str,
        configs: Mapping[str, str],
        preconditions: Sequence[Precondition],
        stats: Counter[str],
        runner: _AsyncRunner,
    ) -> None:
        self.factory = factory
        self.label = label
        self.configs = dict(configs)
        self.preconditions = preconditions
        self.stats = stats
        self.runner = runner

    def _fresh(self, case: PlacementCase) -> tuple[Any, dict[str, str]]:
        configs = {**self.configs, SEED_KEY: str(case.seed)}
        try:
            placer = self.factory()
        except Exception as exc:
            raise _Violation(
                Failure(self.label, "construction", f"creating the placer raised {exc!r}", case)
            ) from exc
        configure = getattr(placer, "configure", None)
        if callable(configure):
            try:
                configure(dict(configs))
            except Exception as exc:
                raise _Violation(
                    Failure(self.label, "configure", f"configure() raised {exc!r}", case, configs=configs)
                ) from exc
        return placer, configs

    def _call(self, placer: Any, spec: PlacementSpec, cluster: ClusterView) -> _Outcome:
        try:
            return _Outcome(result=self.runner.resolve(placer.place(spec, cluster)))
        except Exception as exc:  # the kit judges every exception a placer raises
            return _Outcome(error=exc)

    def _precondition_reason(self, placer: Any, spec: PlacementSpec, cluster: ClusterView) -> str | None:
        declared = getattr(placer, PRECONDITION_METHOD, None)
        checks = [*([declared] if callable(declared) else []), *self.preconditions]
        for check in checks:
            reason = check(spec, cluster)
            if reason:
                return str(reason)
        return None

    def run(self, case: PlacementCase) -> None:
        placer, configs = self._fresh(case)
        outcomes: list[_Outcome] = []
        for n, spec in enumerate(case.specs):
            outcome = self._call(placer, spec, case.cluster)
            outcomes.append(outcome)
            problem = self._judge(placer, spec, case.cluster, outcome)
            if problem is not None:
                check, message = problem
                raise _Violation(
                    Failure(
                        self.label,
                        check,
                        f"call {n + 1}: {message}",
                        case,
                        tuple(o.describe() for o in outcomes),
                        configs,
                    )
                )
        again, _ = self._fresh(case)
        for n, (spec, first) in enumerate(zip(case.specs, outcomes, strict=True)):
            second = self._call(again, spec, case.cluster)
            if second.key() != first.key():
                raise _Violation(
                    Failure(
                        self.label,
                        "determinism",
                        f"call {n + 1}: a second placer configured with the same {SEED_KEY} "
                        f"{'raised' if second.error else 'returned'} {second.describe()}",
                        case,
                        tuple(o.describe() for o in outcomes),
                        configs,
                    )
                )
        self.stats["examples"] += 1

    def _judge(
        self, placer: Any, spec: PlacementSpec, cluster: ClusterView, outcome: _Outcome
    ) -> tuple[str, str] | None:
        self.stats["calls"] += 1
        usable = cluster.usable(spec)
        unfenced = sum(1 for b in usable if not b.fenced)
        rf = spec.num_replicas
        if outcome.error is not None:
            error = outcome.error
            if not isinstance(error, InvalidReplicationFactorError | ReplicaPlacementError):
                return (
                    "exceptions",
                    f"raised {type(error).__name__}: {error}; a placer may raise only "
                    "InvalidReplicationFactorError or ReplicaPlacementError",
                )
            self.stats["refused"] += 1
            name = type(error).__name__
            if rf <= 0 or rf > len(usable):
                if isinstance(error, InvalidReplicationFactorError):
                    return None
                return (
                    "exceptions",
                    f"raised {name}: {error}; a replication factor of {rf} with {len(usable)} usable broker(s) "
                    "calls for InvalidReplicationFactorError",
                )
            if unfenced < rf:
                return None  # no unfenced leader, or too few unfenced brokers: refusing is fine
            if isinstance(error, InvalidReplicationFactorError):
                return (
                    "exceptions",
                    f"raised {name}: {error}; but {rf} replica(s) fit on the {unfenced} unfenced usable broker(s)",
                )
            reason = self._precondition_reason(placer, spec, cluster)
            if reason is None:
                return (
                    "exceptions",
                    f"raised {name}: {error}; but the call meets every precondition the placer declares "
                    f"(declare one with {PRECONDITION_METHOD}(spec, cluster))",
                )
            self.stats["refused_precondition"] += 1
            return None
        if outcome.result is None:
            self.stats["deferred"] += 1
            return None
        if rf <= 0 or rf > len(usable):
            return (
                "exceptions",
                f"returned a placement although a replication factor of {rf} with {len(usable)} usable "
                "broker(s) calls for InvalidReplicationFactorError",
            )
        if unfenced == 0:
            return (
                "unfenced leader",
                "returned a placement although every usable broker is fenced "
                "(no leader can be unfenced: raise InvalidReplicationFactorError)",
            )
        problems = placement_problems(spec, cluster, outcome.result)
        if problems:
            check = problems[0].check
            return check, "; ".join(p.message for p in problems if p.check == check)
        self.stats["placed"] += 1
        if getattr(placer, "rack_aware", False) and rack_spread_applies(spec, cluster):
            self.stats["rack_spread"] += 1
            spread = rack_spread_problems(spec, cluster, outcome.result)
            if spread:
                return "rack spread", "; ".join(spread[:3]) + (" ..." if len(spread) > 3 else "")
        return None


def _probe_rack_aware(factory: Callable[[], Any]) -> bool:
    try:
        return bool(getattr(factory(), "rack_aware", False))
    except Exception:
        return False


def check_placer(
    placer: PlacerSource,
    *,
    max_examples: int = 100,
    seed: int | None = None,
    configs: Mapping[str, PropertyValue] | None = None,
    preconditions: Precondition | Sequence[Precondition] = (),
    raise_on_failure: bool = True,
) -> CheckReport:
    """Runs the conformance checks (see the module docstring) on a placer.

    ``placer`` is a placer class, a zero-argument factory, an instance (deep-copied for every
    fresh placer the kit needs) or a name for ``controller.placement.loader``. Every fresh placer
    gets ``configure({**configs, "simulator.seed": <generated>})``. ``seed`` picks another set of
    examples (runs are derandomized without it). ``preconditions`` adds to the placer's own
    ``unmet_precondition``.

    Raises :class:`PlacerCheckError` (an ``AssertionError``) on failure, unless
    ``raise_on_failure=False``; returns the :class:`CheckReport`.
    """
    factory, label = _factory_for(placer)
    extra = [preconditions] if callable(preconditions) else list(preconditions)
    stats: Counter[str] = Counter()
    stats["rack_aware"] = int(_probe_rack_aware(factory))
    runner = _AsyncRunner()
    # Numbers and booleans as a properties file holds them: a placer always reads text.
    case_runner = _CaseRunner(factory, label, property_texts(configs or {}), extra, stats, runner)

    def run_hypothesis() -> Failure | None:
        def check_case(case: PlacementCase) -> None:
            case_runner.run(case)

        test = given(case=placement_cases())(check_case)
        test = settings(
            max_examples=max_examples,
            deadline=None,
            database=None,
            derandomize=seed is None,
            report_multiple_bugs=False,
            print_blob=False,
            verbosity=Verbosity.quiet,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
        )(test)
        if seed is not None:
            test = hypothesis_seed(seed)(test)
        try:
            test()
            # Hand-picked layouts last: a failure there is shown as is (hypothesis shrinks only its own).
            for case in explicit_cases():
                try:
                    case_runner.run(case)
                except _Violation as violation:
                    return dataclasses.replace(violation.failure, shrunk=False)
        except _Violation as violation:
            return violation.failure
        except Flaky as flaky:  # the same example failed, then passed: the placer is not deterministic
            violations = [e for e in getattr(flaky, "exceptions", ()) if isinstance(e, _Violation)]
            if not violations:
                raise
            return dataclasses.replace(
                violations[0].failure,
                note="replaying this example gave a different outcome: the placer's results depend on "
                "something other than its configuration and its calls (unseeded randomness, shared state)",
            )
        finally:
            runner.close()
        return None

    try:
        asyncio.get_running_loop()
        in_event_loop = True
    except RuntimeError:
        in_event_loop = False
    if in_event_loop:  # called from async code: run the examples (and their event loop) in a thread
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            failure = pool.submit(run_hypothesis).result()
    else:
        failure = run_hypothesis()
    report = CheckReport(placer=label, failure=failure, examples=stats["examples"], stats=stats)
    log.info("%s", report.describe())
    if failure is not None and raise_on_failure:
        raise PlacerCheckError(report)
    return report
