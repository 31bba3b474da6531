"""The sweep grid: which cluster shapes, workloads, seeds and placers a sweep evaluates.

A grid is a TOML or JSON document (the two carry the same keys):

``seeds``
    An integer ``N`` (seeds ``0 .. N-1``) or a list of integers. Every (cluster shape, workload) pair
    is run once per seed; the seed picks the fenced brokers, draws the workload and seeds the placers
    (``simulator.seed``).
``placers``
    Placer names as ``replica.placer.class.name`` takes them (``striped``, ``legacy``, ``fluvio``,
    ``fluvio-fair``, ``multi-level``, ``package.module.Class``, ``package.module:Class``, ``file.py``).
    ``--placers`` on the command line replaces this list.
``placer_configs``
    A table of server properties every placer's ``configure()`` receives (values are strings).
``failures``
    Failure kinds every (scenario, placer) run goes through, simulated by the controller's own
    dynamics and election code (:mod:`placement_sim.pipeline.failover`): ``none``, ``broker``,
    ``rack``, ``dc``, ``rolling``, ``slow-follower``. Default: none simulated (``[]``).
    ``--failures`` on the command line replaces this list.
``election_policies``
    Election policies as ``simulator.election.policy`` takes them (``kafka``, ``fluvio``,
    ``package.module.Class``, ``file.py``); each failure runs under each. Default ``["kafka"]``.
    ``--policies`` on the command line replaces this list.
``produce_load``
    Records per second per partition produced on every topic during the failure simulations (the
    replication model's ``produce_load``), so that followers lag for real. Default 100.
``[report]``
    ``scenario``: the scenario whose leaders per broker the report plots.
``[[clusters]]``
    A family of cluster shapes. Each family has a unique ``name`` and exactly one layout key; every
    list is an axis and the family expands to the cross product of its axes:

    - ``brokers = [3, 6]``: brokers without rack labels;
    - ``racks = [3, 4]`` with ``brokers_per_rack = [2, 3]``: balanced racks ``rack-a``, ``rack-b``, ...;
    - ``rack_sizes = [[1, 2, 3], [4, 1, 5]]``: explicit (unbalanced) layouts, brokers per rack;
    - ``levels = [[3, 2]]`` with ``brokers_per_rack = [2]``: multi-level racks (KIP-879 paths), here 3
      data centres x 2 racks, racks ``/dc-1/rack-1`` ...; ``level_names`` renames the levels.

    ``fenced_share = [0.0, 0.2]`` (optional axis, default ``[0.0]``) fences that share of the brokers
    (rounded, at least one broker stays unfenced), chosen per seed. Broker ids count from 0, rack by
    rack in the order the layout lists them.
``[[workloads]]``
    A sequence of placement requests drawn per seed: ``topics`` topic creations (``partitions`` and
    ``replication_factor`` drawn per topic) interleaved with ``partition_additions`` additions of
    ``added_partitions`` partitions to a topic created before. A distribution is an integer, a list of
    integers (drawn uniformly) or a table ``{ values = [...], weights = [...] }``.
"""

from __future__ import annotations

import json
import logging
import math
import random
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from controller.placement.loader import BUILTIN_PLACERS
from controller.plugins.properties import property_text
from placement_sim.pipeline.failover import FAILURE_KINDS, FailoverPlan

log = logging.getLogger(__name__)

__all__ = [
    "ClusterFamily",
    "Distribution",
    "Grid",
    "GridError",
    "WorkloadSpec",
    "grid_from_mapping",
    "load_grid",
    "parse_grid",
]

DEFAULT_LEVEL_NAMES = ("dc", "rack", "row", "host")
DEFAULT_PRODUCE_LOAD = 100.0
_LAYOUT_KEYS = ("brokers", "racks", "rack_sizes", "levels")
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


class GridError(ValueError):
    """The grid document is malformed; the message names the offending key."""


@dataclass(frozen=True)
class Distribution:
    """A discrete distribution of positive integers: uniform over ``values`` unless weighted."""

    values: tuple[int, ...]
    weights: tuple[float, ...] | None = None

    def draw(self, rng: random.Random) -> int:
        if len(self.values) == 1:
            return self.values[0]
        if self.weights is None:
            return self.values[rng.randrange(len(self.values))]
        return rng.choices(self.values, weights=self.weights)[0]


@dataclass(frozen=True)
class ClusterFamily:
    """Cluster shapes spanned by axes; exactly one of the layout fields is set."""

    name: str
    brokers: tuple[int, ...] = ()
    racks: tuple[int, ...] = ()
    rack_sizes: tuple[tuple[int, ...], ...] = ()
    levels: tuple[tuple[int, ...], ...] = ()
    brokers_per_rack: tuple[int, ...] = ()
    level_names: tuple[str, ...] = DEFAULT_LEVEL_NAMES
    fenced_share: tuple[float, ...] = (0.0,)

    @property
    def layout(self) -> str:
        """Which layout key the family uses."""
        for key in _LAYOUT_KEYS:
            if getattr(self, key):
                return key
        raise GridError(f"cluster family {self.name!r} has no layout")

    @property
    def shape_count(self) -> int:
        layout = self.layout
        count = len(getattr(self, layout)) * len(self.fenced_share)
        if layout in ("racks", "levels"):
            count *= len(self.brokers_per_rack)
        return count


@dataclass(frozen=True)
class WorkloadSpec:
    """Topic creations and partition additions, drawn per seed."""

    name: str
    topics: int
    partitions: Distribution
    replication_factor: Distribution
    partition_additions: int = 0
    added_partitions: Distribution = field(default_factory=lambda: Distribution((1,)))


@dataclass(frozen=True)
class Grid:
    """A parsed, validated grid."""

    clusters: tuple[ClusterFamily, ...]
    workloads: tuple[WorkloadSpec, ...]
    seeds: tuple[int, ...]
    placers: tuple[str, ...] = tuple(BUILTIN_PLACERS)
    placer_configs: Mapping[str, str] = field(default_factory=dict)
    report_scenario: str | None = None
    failures: tuple[str, ...] = ()
    election_policies: tuple[str, ...] = ("kafka",)
    produce_load: float = DEFAULT_PRODUCE_LOAD

    @property
    def shape_count(self) -> int:
        return sum(f.shape_count for f in self.clusters)

    @property
    def scenario_count(self) -> int:
        """Scenarios: cluster shapes x workloads x seeds."""
        return self.shape_count * len(self.workloads) * len(self.seeds)

    @property
    def run_count(self) -> int:
        """(scenario, placer) runs."""
        return self.scenario_count * len(self.placers)

    def with_placers(self, placers: Sequence[str]) -> Grid:
        return replace(self, placers=_placer_list(placers, "--placers"))

    def with_failures(self, failures: Sequence[str]) -> Grid:
        return replace(self, failures=_failure_list(failures, "--failures"))

    def with_policies(self, policies: Sequence[str]) -> Grid:
        return replace(self, election_policies=_name_list(policies, "--policies", "election policy"))

    @property
    def failover_plan(self) -> FailoverPlan:
        """What each run simulates: the failure kinds x the election policies under the produce load."""
        return FailoverPlan(self.failures, self.election_policies, self.produce_load)

    @property
    def failover_count(self) -> int:
        """Failure simulations at most (a kind that does not apply to a cluster is skipped)."""
        return self.run_count * len(self.failures) * len(self.election_policies)

    def with_seeds(self, count: int) -> Grid:
        if count <= 0:
            raise GridError(f"the number of seeds must be positive, got {count}")
        return replace(self, seeds=tuple(range(count)))

    def to_json(self) -> dict[str, Any]:
        """The grid as a JSON-able document that :func:`grid_from_mapping` reads back unchanged."""
        return {
            "seeds": list(self.seeds),
            "placers": list(self.placers),
            "placer_configs": dict(self.placer_configs),
            "report": {"scenario": self.report_scenario} if self.report_scenario else {},
            "failures": list(self.failures),
            "election_policies": list(self.election_policies),
            "produce_load": self.produce_load,
            "clusters": [family_document(f) for f in self.clusters],
            "workloads": [workload_document(w) for w in self.workloads],
        }


def family_document(family: ClusterFamily) -> dict[str, Any]:
    """A cluster family in the grid's own form (what a grid file holds under ``[[clusters]]``)."""
    doc: dict[str, Any] = {"name": family.name}
    layout = family.layout
    doc[layout] = [list(x) if isinstance(x, tuple) else x for x in getattr(family, layout)]
    if layout in ("racks", "levels"):
        doc["brokers_per_rack"] = list(family.brokers_per_rack)
    if layout == "levels" and family.level_names != DEFAULT_LEVEL_NAMES:
        doc["level_names"] = list(family.level_names)
    doc["fenced_share"] = list(family.fenced_share)
    return doc


def _distribution_document(dist: Distribution) -> Any:
    if dist.weights is None:
        return list(dist.values)
    return {"values": list(dist.values), "weights": list(dist.weights)}


def workload_document(w: WorkloadSpec) -> dict[str, Any]:
    """A workload in the grid's own form (what a grid file holds under ``[[workloads]]``)."""
    return {
        "name": w.name,
        "topics": w.topics,
        "partitions": _distribution_document(w.partitions),
        "replication_factor": _distribution_document(w.replication_factor),
        "partition_additions": w.partition_additions,
        "added_partitions": _distribution_document(w.added_partitions),
    }


# --- parsing ------------------------------------------------------------------------------------


def load_grid(path: str | Path) -> Grid:
    """Reads a grid file (``.toml`` or ``.json``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GridError(f"cannot read grid file {path}: {exc.strerror or exc}") from None
    fmt = "json" if path.suffix.lower() == ".json" else "toml"
    return parse_grid(text, fmt, source=str(path))


def parse_grid(text: str, fmt: str = "toml", source: str = "<grid>") -> Grid:
    """Parses a grid document in ``fmt`` (``toml`` or ``json``)."""
    try:
        if fmt == "json":
            data = json.loads(text)
        elif fmt == "toml":
            data = tomllib.loads(text)
        else:
            raise GridError(f"unknown grid format {fmt!r} (toml or json)")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GridError(f"{source}: not valid {fmt.upper()}: {exc}") from None
    if not isinstance(data, dict):
        raise GridError(f"{source}: the grid must be a table/object at the top level")
    try:
        return grid_from_mapping(data)
    except GridError as exc:
        raise GridError(f"{source}: {exc}") from None


def grid_from_mapping(data: Mapping[str, Any]) -> Grid:
    """Validates a grid document already parsed into dicts and lists."""
    known = {
        "seeds",
        "placers",
        "placer_configs",
        "report",
        "clusters",
        "workloads",
        "failures",
        "election_policies",
        "produce_load",
    }
    _no_unknown(data, known, "the grid")
    clusters = tuple(_family(f, f"clusters[{i}]") for i, f in enumerate(_table_list(data, "clusters")))
    workloads = tuple(_workload(w, f"workloads[{i}]") for i, w in enumerate(_table_list(data, "workloads")))
    _unique([f.name for f in clusters], "clusters", "cluster family name")
    _unique([w.name for w in workloads], "workloads", "workload name")
    seeds = _seeds(data.get("seeds", 1))
    placers = _placer_list(data.get("placers", list(BUILTIN_PLACERS)), "placers")
    configs = data.get("placer_configs", {})
    if not isinstance(configs, Mapping) or not all(
        isinstance(v, str | int | float | bool) for v in configs.values()
    ):
        raise GridError("placer_configs: must be a table of text, number or boolean values")
    configs = {key: property_text(value) for key, value in configs.items()}  # as a properties file: 0, true
    report = data.get("report", {})
    if not isinstance(report, Mapping):
        raise GridError("report: must be a table")
    _no_unknown(report, {"scenario"}, "report")
    scenario = report.get("scenario")
    if scenario is not None and not isinstance(scenario, str):
        raise GridError("report.scenario: must be a scenario id string")
    failures = _failure_list(data.get("failures", []), "failures", empty=True)
    policies = _name_list(data.get("election_policies", ["kafka"]), "election_policies", "election policy")
    load = data.get("produce_load", DEFAULT_PRODUCE_LOAD)
    if isinstance(load, bool) or not isinstance(load, int | float) or not 0 <= load < math.inf:
        raise GridError(f"produce_load: must be a non-negative number of records per second, got {load!r}")
    return Grid(clusters, workloads, seeds, placers, dict(configs), scenario, failures, policies, float(load))


def _no_unknown(data: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        raise GridError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")


def _table_list(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = data.get(key)
    if not isinstance(items, list) or not items:
        raise GridError(f"{key}: at least one [[{key}]] entry is required")
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise GridError(f"{key}[{i}]: must be a table")
    return items


def _unique(values: Sequence[Any], where: str, what: str) -> None:
    seen: set[Any] = set()
    for v in values:
        if v in seen:
            raise GridError(f"{where}: {what} {v!r} appears twice")
        seen.add(v)


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or not set(value) <= _NAME_CHARS:
        raise GridError(
            f"{where}: must be a non-empty name of letters, digits, '-', '_' or '.', got {value!r}"
        )
    return value


def _int(value: Any, where: str, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise GridError(f"{where}: must be an integer >= {minimum}, got {value!r}")
    return value


def _axis(value: Any, where: str, item: Any) -> tuple[Any, ...]:
    """A non-empty list of distinct values, each checked by ``item(value, where)``."""
    if not isinstance(value, list) or not value:
        raise GridError(f"{where}: must be a non-empty list, got {value!r}")
    out = tuple(item(v, f"{where}[{i}]") for i, v in enumerate(value))
    _unique(out, where, "value")
    return out


def _int_list(value: Any, where: str, minimum: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise GridError(f"{where}: must be a non-empty list of integers, got {value!r}")
    return tuple(_int(v, f"{where}[{i}]", minimum) for i, v in enumerate(value))


def _share(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value < 1.0:
        raise GridError(f"{where}: must be a number in [0, 1), got {value!r}")
    return float(value)


def _family(data: Mapping[str, Any], where: str) -> ClusterFamily:
    _no_unknown(data, {"name", *_LAYOUT_KEYS, "brokers_per_rack", "level_names", "fenced_share"}, where)
    name = _name(data.get("name"), f"{where}.name")
    present = [k for k in _LAYOUT_KEYS if k in data]
    if len(present) != 1:
        raise GridError(
            f"{where} ({name}): exactly one layout key of {', '.join(_LAYOUT_KEYS)} is required, "
            f"got {', '.join(present) or 'none'}"
        )
    layout = present[0]
    fields: dict[str, Any] = {"name": name}
    if layout == "brokers":
        fields["brokers"] = _axis(data["brokers"], f"{where}.brokers", lambda v, w: _int(v, w, 1))
    elif layout == "racks":
        fields["racks"] = _axis(data["racks"], f"{where}.racks", lambda v, w: _int(v, w, 1))
    elif layout == "rack_sizes":
        fields["rack_sizes"] = _axis(
            data["rack_sizes"], f"{where}.rack_sizes", lambda v, w: _int_list(v, w, 1)
        )
    else:
        fields["levels"] = _axis(data["levels"], f"{where}.levels", lambda v, w: _int_list(v, w, 1))
    if layout in ("racks", "levels"):
        if "brokers_per_rack" not in data:
            raise GridError(f"{where}.brokers_per_rack: required with {layout}")
        fields["brokers_per_rack"] = _axis(
            data["brokers_per_rack"], f"{where}.brokers_per_rack", lambda v, w: _int(v, w, 1)
        )
    elif "brokers_per_rack" in data:
        raise GridError(f"{where}.brokers_per_rack: only used with racks or levels")
    if "level_names" in data:
        if layout != "levels":
            raise GridError(f"{where}.level_names: only used with levels")
        fields["level_names"] = _axis(data["level_names"], f"{where}.level_names", _name)
        deepest = max(len(x) for x in fields["levels"])
        if len(fields["level_names"]) < deepest:
            raise GridError(f"{where}.level_names: {deepest} names needed for the deepest level layout")
    elif layout == "levels":
        deepest = max(len(x) for x in fields["levels"])
        fields["level_names"] = DEFAULT_LEVEL_NAMES + tuple(
            f"level{i + 1}" for i in range(len(DEFAULT_LEVEL_NAMES), deepest)
        )
    if "fenced_share" in data:
        fields["fenced_share"] = _axis(data["fenced_share"], f"{where}.fenced_share", _share)
    return ClusterFamily(**fields)


def _distribution(value: Any, where: str) -> Distribution:
    if isinstance(value, int) and not isinstance(value, bool):
        return Distribution((_int(value, where, 1),))
    if isinstance(value, list):
        return Distribution(_int_list(value, where, 1))
    if isinstance(value, Mapping):
        _no_unknown(value, {"values", "weights"}, where)
        values = _int_list(value.get("values"), f"{where}.values", 1)
        weights = value.get("weights")
        if weights is None:
            return Distribution(values)
        if not isinstance(weights, list) or len(weights) != len(values):
            raise GridError(f"{where}.weights: must be a list as long as values ({len(values)})")
        for i, w in enumerate(weights):
            if isinstance(w, bool) or not isinstance(w, int | float) or w < 0 or not math.isfinite(w):
                raise GridError(f"{where}.weights[{i}]: must be a non-negative number, got {w!r}")
        if sum(weights) <= 0:
            raise GridError(f"{where}.weights: at least one weight must be positive")
        return Distribution(values, tuple(float(w) for w in weights))
    raise GridError(f"{where}: must be an integer, a list of integers or {{values, weights}}, got {value!r}")


def _workload(data: Mapping[str, Any], where: str) -> WorkloadSpec:
    known = {"name", "topics", "partitions", "replication_factor", "partition_additions", "added_partitions"}
    _no_unknown(data, known, where)
    for key in ("topics", "partitions", "replication_factor"):
        if key not in data:
            raise GridError(f"{where}.{key}: required")
    return WorkloadSpec(
        name=_name(data.get("name"), f"{where}.name"),
        topics=_int(data["topics"], f"{where}.topics", 1),
        partitions=_distribution(data["partitions"], f"{where}.partitions"),
        replication_factor=_distribution(data["replication_factor"], f"{where}.replication_factor"),
        partition_additions=_int(data.get("partition_additions", 0), f"{where}.partition_additions", 0),
        added_partitions=_distribution(data.get("added_partitions", 1), f"{where}.added_partitions"),
    )


def family_from_document(data: Mapping[str, Any]) -> ClusterFamily:
    """The inverse of :func:`family_document` (validated like a grid file's family)."""
    return _family(data, f"clusters[{data.get('name')!r}]")


def workload_from_document(data: Mapping[str, Any]) -> WorkloadSpec:
    """The inverse of :func:`workload_document` (validated like a grid file's workload)."""
    return _workload(data, f"workloads[{data.get('name')!r}]")


def _seeds(value: Any) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        return tuple(range(_int(value, "seeds", 1)))
    if isinstance(value, list) and value:
        seeds = tuple(_int(v, f"seeds[{i}]", 0) for i, v in enumerate(value))
        _unique(seeds, "seeds", "seed")
        return seeds
    raise GridError(f"seeds: must be a positive count or a non-empty list of seeds, got {value!r}")


def _placer_list(value: Any, where: str) -> tuple[str, ...]:
    return _name_list(value, where, "placer")


def _name_list(value: Any, where: str, noun: str, empty: bool = False) -> tuple[str, ...]:
    """Plugin names (placers, election policies, failure kinds): a list, or one comma-separated string."""
    if isinstance(value, str):
        value = [p for p in value.split(",")] if value.strip() else []
    if not isinstance(value, list | tuple) or (not value and not empty):
        raise GridError(f"{where}: must be a non-empty list of {noun} names")
    names = tuple(str(p).strip() for p in value)
    if any(not n for n in names):
        raise GridError(f"{where}: empty {noun} name in {list(value)!r}")
    _unique(names, where, noun)
    return names


def _failure_list(value: Any, where: str, empty: bool = False) -> tuple[str, ...]:
    kinds = _name_list(value, where, "failure kind", empty)
    for kind in kinds:
        if kind not in FAILURE_KINDS:
            raise GridError(f"{where}: unknown failure kind {kind!r} (one of {', '.join(FAILURE_KINDS)})")
    return kinds
