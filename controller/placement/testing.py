"""A conformance kit for replica placers, built on hypothesis.

``check_placer(placer)`` generates clusters (no racks, flat racks, multi-level rack paths such as
``/dc1/r2``, brokers with and without racks, fenced brokers, odd and sparse ids, ``broker_ids``
subsets) and placement specs, runs the placer on them and checks what the server relies on:

- **shape**: one replica list per partition, each of ``num_replicas`` broker ids;
- **distinct replicas** within a partition;
- **known brokers**: only brokers of the cluster, and only those in ``broker_ids`` when it is given;
- **unfenced leader**: the first replica of every partition is an unfenced broker;
- **exceptions**: only :class:`InvalidReplicationFactorError` and :class:`ReplicaPlacementError`, and
  only when justified (see below);
- **determinism**: two fresh placers configured with the same ``simulator.seed`` give the same
  results for the same sequence of calls;
- **rack spread**, for placers that declare ``rack_aware = True``: on balanced clusters (every
  usable broker unfenced, every rack the same size, rack paths forming a uniform tree) and without
  ``force_simple``, every partition spans ``min(num_replicas, racks)`` racks.

Returning ``None`` (defer to the default placer) is always accepted. ``place`` may be ``async``.

When an exception is justified:

- ``num_replicas <= 0`` or more than the usable brokers: the placer must raise
  ``InvalidReplicationFactorError`` (or defer), whatever its preconditions: check it first;
- no usable broker is unfenced: it must refuse with either exception (or defer);
- fewer unfenced usable brokers than ``num_replicas``: either exception is accepted, and so is a
  placement that puts followers on fenced brokers;
- otherwise ``InvalidReplicationFactorError`` is a failure, and ``ReplicaPlacementError`` is accepted
  only where the placer has declared a precondition that the call does not meet. A placer declares
  its preconditions with an optional method::

      def unmet_precondition(self, spec: PlacementSpec, cluster: ClusterView) -> str | None:
          '''Why this call falls outside what the placer supports, or None when it must place.'''

  (or ``check_placer(..., preconditions=fn)`` with a function of the same shape). A placer that
  raises ``ReplicaPlacementError`` where its preconditions hold fails the check. Ready-made
  preconditions: :func:`every_broker_has_a_rack` and :func:`racks_are_paths`.

Usable from a plugin's own pytest suite: ``check_placer`` raises :class:`PlacerCheckError` (an
``AssertionError``) describing the smallest failing example hypothesis found; with
``raise_on_failure=False`` it returns a :class:`CheckReport` instead (the CLI prints that). Runs are
derandomized (the same examples every time) unless ``seed`` is given. Do not call it from inside
another ``@given`` test.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import dataclasses
import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    ReplicaPlacementError,
    UsableBroker,
)
from controller.placement.java_random import SEED_KEY

__all__ = [
    "CheckReport",
    "Failure",
    "PlacementCase",
    "PlacerCheckError",
    "Precondition",
    "check_placer",
    "clusters",
    "every_broker_has_a_rack",
    "placement_cases",
    "placement_problems",
    "placement_specs",
    "rack_spread_applies",
    "racks_are_paths",
]

log = logging.getLogger(__name__)

#: A declared precondition: why a call falls outside what the placer supports, or None.
Precondition = Callable[[PlacementSpec, ClusterView], "str | None"]

PlacerSource = Any  # a placer instance, a placer class, a zero-argument factory or a loader name

_PRECONDITION_METHOD = "unmet_precondition"


# --------------------------------------------------------------------------- preconditions


def every_broker_has_a_rack(spec: PlacementSpec, cluster: ClusterView) -> str | None:
    """Rack mode (some usable broker has a rack) needs every usable broker to have one."""
    usable = cluster.usable(spec)
    missing = [b.id for b in usable if b.rack is None]
    if missing and len(missing) < len(usable):
        return f"brokers {missing} have no rack while others have one"
    return None


def racks_are_paths(spec: PlacementSpec, cluster: ClusterView) -> str | None:
    """Multi-level racks: every usable broker's rack is a path starting with ``/``."""
    bad = sorted({repr(b.rack) for b in cluster.usable(spec) if b.rack is None or not b.rack.startswith("/")})
    if bad:
        return f"racks {', '.join(bad)} do not start with '/'"
    return None


# --------------------------------------------------------------------------- what a result must satisfy


def placement_problems(spec: PlacementSpec, cluster: ClusterView, result: object) -> list[tuple[str, str]]:
    """Everything wrong with a placement result, as ``(check, explanation)`` pairs; empty when valid.

    Checks shape, distinct replicas, known brokers within ``broker_ids`` and an unfenced leader.
    """
    if isinstance(result, str | bytes) or not isinstance(result, Sequence):
        return [("shape", f"returned {type(result).__name__}, not a sequence of replica lists")]
    if len(result) != spec.num_partitions:
        return [("shape", f"returned {len(result)} replica list(s) for {spec.num_partitions} partition(s)")]
    brokers = {b.id: b for b in cluster.brokers}
    usable = {b.id for b in cluster.usable(spec)}
    problems: list[tuple[str, str]] = []
    for index, replicas in enumerate(result):
        where = f"partition {spec.start_partition + index}"
        if isinstance(replicas, str | bytes) or not isinstance(replicas, Sequence):
            problems.append(("shape", f"{where}: {replicas!r} is not a sequence of broker ids"))
            continue
        if len(replicas) != spec.num_replicas:
            problems.append(
                (
                    "shape",
                    f"{where}: {len(replicas)} replica(s) {list(replicas)}, expected {spec.num_replicas}",
                )
            )
            continue
        if not all(isinstance(r, Integral) and not isinstance(r, bool) for r in replicas):
            problems.append(("shape", f"{where}: replicas {list(replicas)!r} are not all integers"))
            continue
        repeated = sorted({r for r in replicas if list(replicas).count(r) > 1})
        if repeated:
            problems.append(
                ("distinct replicas", f"{where}: broker(s) {repeated} appear twice in {list(replicas)}")
            )
        unknown = [r for r in replicas if r not in brokers]
        if unknown:
            problems.append(("known brokers", f"{where}: unknown broker(s) {unknown} in {list(replicas)}"))
        outside = [r for r in replicas if r in brokers and r not in usable]
        if outside:
            problems.append(
                (
                    "known brokers",
                    f"{where}: broker(s) {outside} are not in broker_ids {list(spec.broker_ids or ())}",
                )
            )
        leader = replicas[0] if replicas else None
        if leader in brokers and brokers[leader].fenced:
            problems.append(("unfenced leader", f"{where}: leader {leader} is fenced ({list(replicas)})"))
    return problems


def _rack_tree_is_uniform(racks: set[str]) -> bool:
    paths = [tuple(r.strip("/").split("/")) for r in racks]
    depth = len(paths[0])
    if any(len(p) != depth for p in paths):
        return False
    for level in range(depth - 1):
        children: dict[tuple[str, ...], set[str]] = {}
        for p in paths:
            children.setdefault(p[: level + 1], set()).add(p[level + 1])
        if len({len(c) for c in children.values()}) > 1:
            return False
    return True


def rack_spread_applies(spec: PlacementSpec, cluster: ClusterView) -> bool:
    """Whether the kit checks rack spread for this call (for placers declaring ``rack_aware``).

    Yes when ``force_simple`` is off, every usable broker is unfenced, every rack (brokers without a
    rack count as one) holds the same number of usable brokers, and ``/`` rack paths form a uniform
    tree (all the same depth, every node of a level with the same number of children).
    """
    usable = cluster.usable(spec)
    if spec.force_simple or not usable or any(b.fenced for b in usable):
        return False
    sizes = Counter(b.rack for b in usable)
    if len(set(sizes.values())) != 1:
        return False
    named = {r for r in sizes if r is not None}
    if named and all(r.startswith("/") for r in named) and None not in sizes:
        return _rack_tree_is_uniform(named)
    return True


def _rack_spread_problems(
    spec: PlacementSpec, cluster: ClusterView, result: Sequence[Sequence[int]]
) -> list[str]:
    rack_of = {b.id: b.rack for b in cluster.usable(spec)}
    wanted = min(spec.num_replicas, len(set(rack_of.values())))
    problems = []
    for index, replicas in enumerate(result):
        racks = {rack_of[r] for r in replicas}
        if len(racks) < wanted:
            problems.append(
                f"partition {spec.start_partition + index}: replicas {list(replicas)} span {len(racks)} rack(s) "
                f"{sorted(racks, key=str)}, expected {wanted}"
            )
    return problems


# --------------------------------------------------------------------------- generated cases


@dataclass(frozen=True)
class PlacementCase:
    """One generated example: a cluster, a sequence of calls on one placer, and the seed configured."""

    cluster: ClusterView
    specs: tuple[PlacementSpec, ...]
    seed: int


_FLAT_RACK_NAMES = [
    "r1",
    "r2",
    "r3",
    "rack-a",
    "rack-b",
    "1",
    "2",
    "10",
    "Aa",
    "BB",
    "az-é",
    "机架",
    "zone/x",
]
_BROKER_IDS = st.one_of(st.integers(0, 12), st.integers(13, 2_000), st.integers(2_001, 2**31 - 1))


def _paths(depth: int, fanout: Sequence[int]) -> list[str]:
    paths = [""]
    for level in range(depth):
        names = ["dc", "r", "h"][level] if level < 3 else f"l{level}"
        paths = [f"{p}/{names}{i + 1}" for p in paths for i in range(fanout[level])]
    return paths


@st.composite
def clusters(draw: st.DrawFn, max_brokers: int = 12) -> ClusterView:
    """Clusters of 1..``max_brokers`` brokers with unique, unordered, sometimes large ids.

    Rack layouts: none, flat names (including names whose Java hash codes collide and non-ASCII
    ones), ``/`` paths one to three levels deep, a mix of brokers with and without racks, and
    balanced layouts (equal racks, nobody fenced) where rack spread is checked.
    """
    layout = draw(st.sampled_from(["none", "flat", "paths", "mixed", "balanced-flat", "balanced-paths"]))
    if layout.startswith("balanced"):
        if layout == "balanced-flat":
            rack_pool = draw(st.lists(st.sampled_from(_FLAT_RACK_NAMES), min_size=1, max_size=4, unique=True))
        else:
            depth = draw(st.integers(1, 3))
            fanout = draw(st.lists(st.integers(1, 3), min_size=depth, max_size=depth))
            rack_pool = _paths(depth, fanout)
            if len(rack_pool) > max_brokers:
                rack_pool = rack_pool[:1]
        per_rack = draw(st.integers(1, max(1, max_brokers // len(rack_pool))))
        racks: list[str | None] = [r for r in rack_pool for _ in range(per_rack)]
        racks = draw(st.permutations(racks))
        fenced = [False] * len(racks)
    else:
        n = draw(st.integers(1, max_brokers))
        if layout == "none":
            racks = [None] * n
        elif layout == "paths":
            depth = draw(st.integers(1, 3))
            pool = _paths(depth, [2, 2, 2])
            racks = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
        else:
            pool = draw(st.lists(st.sampled_from(_FLAT_RACK_NAMES), min_size=1, max_size=4, unique=True))
            choices: list[str | None] = [*pool, None] if layout == "mixed" else list(pool)
            racks = draw(st.lists(st.sampled_from(choices), min_size=n, max_size=n))
        fenced = draw(st.lists(st.integers(0, 3).map(lambda x: x == 3), min_size=n, max_size=n))
    ids = draw(st.lists(_BROKER_IDS, min_size=len(racks), max_size=len(racks), unique=True))
    brokers = tuple(UsableBroker(id=i, rack=r, fenced=f) for i, r, f in zip(ids, racks, fenced, strict=True))
    assignments: dict[tuple[str, int], tuple[int, ...]] = {}
    if draw(st.booleans()):
        for p in range(draw(st.integers(1, 6))):
            topic = draw(st.sampled_from(["existing", "other"]))
            replicas = draw(
                st.lists(st.sampled_from(ids), min_size=1, max_size=min(3, len(ids)), unique=True)
            )
            assignments[(topic, p)] = tuple(replicas)
    return ClusterView(brokers=brokers, assignments=assignments)


@st.composite
def placement_specs(draw: st.DrawFn, cluster: ClusterView, max_partitions: int = 40) -> PlacementSpec:
    """Specs for ``cluster``: mostly feasible replication factors, sometimes zero, negative or too large."""
    ids = [b.id for b in cluster.brokers]
    broker_ids = draw(
        st.none() | st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids), unique=True).map(tuple)
    )
    usable = len(ids) if broker_ids is None else len(broker_ids)
    num_replicas = draw(
        st.one_of(
            st.integers(1, usable),
            st.integers(1, usable),
            st.integers(1, min(usable, 3)),
            st.integers(-1, usable + 2),
        )
    )
    return PlacementSpec(
        start_partition=draw(st.integers(0, 100)),
        num_partitions=draw(st.integers(1, max_partitions)),
        num_replicas=num_replicas,
        topic=draw(st.none() | st.sampled_from(["t", "orders", "existing", "tópico"])),
        broker_ids=broker_ids,
        force_simple=draw(st.integers(0, 7).map(lambda x: x == 7)),
    )


@st.composite
def placement_cases(draw: st.DrawFn, max_brokers: int = 12, max_calls: int = 3) -> PlacementCase:
    """A cluster, 1..``max_calls`` specs to place one after the other, and a ``simulator.seed``."""
    cluster = draw(clusters(max_brokers=max_brokers))
    specs = draw(st.lists(placement_specs(cluster), min_size=1, max_size=max_calls))
    return PlacementCase(cluster=cluster, specs=tuple(specs), seed=draw(st.integers(0, 2**63 - 1)))


def _explicit_cases() -> list[PlacementCase]:
    """Hand-picked examples every run ends with: layouts a real cluster has."""
    three_racks = tuple(UsableBroker(i, f"rack-{i % 3 + 1}", False) for i in range(6))
    kafka_racks = (
        UsableBroker(11, "1", False),
        UsableBroker(10, "1", False),
        UsableBroker(30, "3", False),
        UsableBroker(31, "3", False),
        UsableBroker(21, "2", False),
        UsableBroker(20, "2", True),
    )
    dcs = tuple(UsableBroker(i, f"/dc{i % 3 + 1}/r{i // 3 % 2 + 1}", False) for i in range(12))
    no_racks = tuple(UsableBroker(i, None, i == 2) for i in range(5))
    return [
        PlacementCase(
            ClusterView(three_racks), (PlacementSpec(0, 12, 3), PlacementSpec(0, 5, 2, topic="t")), 1
        ),
        PlacementCase(ClusterView(kafka_racks), (PlacementSpec(0, 9, 4), PlacementSpec(3, 2, 1)), 2),
        PlacementCase(
            ClusterView(dcs), (PlacementSpec(0, 20, 3), PlacementSpec(0, 4, 3, broker_ids=(0, 1, 2, 3))), 3
        ),
        PlacementCase(
            ClusterView(no_racks),
            (PlacementSpec(0, 10, 3), PlacementSpec(0, 2, 0), PlacementSpec(0, 1, 6)),
            4,
        ),
    ]


# --------------------------------------------------------------------------- running a placer


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
        from controller.placement.loader import resolve_placer_class

        cls = resolve_placer_class(placer)
        if cls.__module__.startswith("_placement_sim_plugin_"):  # loaded from a file: no module path
            return cls, f"{placer} ({cls.__qualname__})"
        return cls, f"{placer} ({cls.__module__}.{cls.__qualname__})"
    if isinstance(placer, type):
        return placer, f"{placer.__module__}.{placer.__qualname__}"
    if callable(placer) and not callable(getattr(placer, "place", None)):
        return placer, getattr(placer, "__qualname__", repr(placer))
    template = copy.deepcopy(placer)
    cls = type(placer)
    return (lambda: copy.deepcopy(template)), f"{cls.__module__}.{cls.__qualname__}"


class _Violation(AssertionError):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.describe())
        self.failure = failure


@dataclass(frozen=True)
class Failure:
    """The first check that failed, on the smallest example hypothesis found."""

    placer: str
    check: str
    message: str
    case: PlacementCase
    outcomes: tuple[str, ...] = ()
    configs: Mapping[str, str] = field(default_factory=dict)
    #: False for the hand-picked layouts the kit ends with: hypothesis shrinks only what it generates.
    shrunk: bool = True
    note: str = ""

    def describe(self) -> str:
        lines = [
            f"placer {self.placer} failed the {self.check!r} check: {self.message}",
            "smallest failing example:" if self.shrunk else "failing example (a hand-picked layout):",
            f"  configs: {dict(self.configs)!r}",
            "  brokers:",
        ]
        for b in self.case.cluster.brokers:
            lines.append(f"    id={b.id:<11} rack={b.rack!r}{'  fenced' if b.fenced else ''}")
        if self.case.cluster.assignments:
            lines.append(f"  existing assignments: {dict(self.case.cluster.assignments)!r}")
        for n, spec in enumerate(self.case.specs, 1):
            lines.append(f"  call {n}: place({spec!r}, cluster)")
            if n <= len(self.outcomes):
                lines.append(f"          -> {self.outcomes[n - 1]}")
        lines.append(f"  cluster = {self.case.cluster!r}")
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)


@dataclass
class CheckReport:
    """What ``check_placer`` found: pass or the failure, and what the examples exercised."""

    placer: str
    failure: Failure | None
    examples: int = 0
    stats: Counter[str] = field(default_factory=Counter)

    @property
    def passed(self) -> bool:
        return self.failure is None

    def describe(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        head = f"{self.placer}: {verdict} ({self.examples} example(s) passed every check)"
        s = self.stats
        lines = [
            head,
            f"  calls: {s['calls']}, placements checked: {s['placed']}, deferred: {s['deferred']}, "
            f"refused: {s['refused']} (of which for declared preconditions: {s['refused_precondition']})",
            f"  rack spread checked on {s['rack_spread']} placement(s)"
            if s["rack_aware"]
            else "  rack spread not checked (the placer does not declare rack_aware = True)",
        ]
        if self.failure is not None:
            lines.append(self.failure.describe())
        return "\n".join(lines)


class PlacerCheckError(AssertionError):
    """A placer failed the conformance kit; the message shows the smallest failing example."""

    def __init__(self, report: CheckReport) -> None:
        super().__init__(report.describe())
        self.report = report


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
        declared = getattr(placer, _PRECONDITION_METHOD, None)
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
                    f"(declare one with {_PRECONDITION_METHOD}(spec, cluster))",
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
            check = problems[0][0]
            return check, "; ".join(m for c, m in problems if c == check)
        self.stats["placed"] += 1
        if getattr(placer, "rack_aware", False) and rack_spread_applies(spec, cluster):
            self.stats["rack_spread"] += 1
            spread = _rack_spread_problems(spec, cluster, outcome.result)
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
    configs: Mapping[str, str] | None = None,
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
    case_runner = _CaseRunner(factory, label, configs or {}, extra, stats, runner)

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
            for case in _explicit_cases():
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
