"""Scenarios: concrete cluster shapes, their brokers, and the placement requests of a workload.

A scenario is (cluster shape, workload, seed). Cluster families expand to shapes with
:func:`expand_family`, the one piece of code both the Spark job (on the executors) and the
single-process path use. Brokers and operations are derived from the shape, the workload and the
seed alone, so a scenario id is enough to reproduce a run anywhere.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from controller.placement.api import UsableBroker
from placement_sim.pipeline.grid import ClusterFamily, Grid, WorkloadSpec

__all__ = [
    "ClusterShape",
    "Operation",
    "ScenarioSpec",
    "brokers_for",
    "expand_family",
    "iter_scenarios",
    "operations_for",
    "rack_letters",
    "scenario_id",
    "shapes_of",
]


@dataclass(frozen=True)
class ClusterShape:
    """One concrete cluster layout: racks in order with their broker counts, and the fenced share.

    A rack of ``None`` holds brokers without a rack label.
    """

    name: str
    family: str
    racks: tuple[tuple[str | None, int], ...]
    fenced_share: float = 0.0

    @property
    def broker_count(self) -> int:
        return sum(n for _, n in self.racks)

    @property
    def rack_count(self) -> int:
        return sum(1 for rack, _ in self.racks if rack is not None)

    def to_json(self) -> str:
        return json.dumps(
            {
                "name": self.name,
                "family": self.family,
                "racks": self.racks,
                "fenced_share": self.fenced_share,
            },
            separators=(",", ":"),
        )

    @staticmethod
    @lru_cache(maxsize=4096)
    def from_json(text: str) -> ClusterShape:
        data = json.loads(text)
        racks = tuple((rack, int(n)) for rack, n in data["racks"])
        return ClusterShape(data["name"], data["family"], racks, float(data["fenced_share"]))


@dataclass(frozen=True)
class Operation:
    """One placement request: create ``topic`` or add partitions to it."""

    kind: str  # "create" or "add"
    topic: str
    num_partitions: int
    replication_factor: int  # for "add": the topic's factor as drawn at creation


@dataclass(frozen=True)
class ScenarioSpec:
    """One scenario: what the runner needs to reproduce it."""

    scenario: str
    shape: ClusterShape
    workload: WorkloadSpec
    seed: int


def scenario_id(shape: str, workload: str, seed: int) -> str:
    """``shape/workload/s<seed>``: unique within a grid."""
    return f"{shape}/{workload}/s{seed}"


def rack_letters(index: int) -> str:
    """``a``, ``b``, ... ``z``, ``aa``, ``ab``, ... for rack index 0, 1, ..."""
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return letters


def _fenced_suffix(share: float) -> str:
    return f"-fenced{share:g}" if share > 0 else ""


def expand_family(family: ClusterFamily) -> list[ClusterShape]:
    """Every shape of a family: the cross product of its axes, in axis order."""
    layout = family.layout
    shapes: list[ClusterShape] = []
    if layout == "brokers":
        for n, share in itertools.product(family.brokers, family.fenced_share):
            shapes.append(
                ClusterShape(f"{family.name}-{n}{_fenced_suffix(share)}", family.name, ((None, n),), share)
            )
    elif layout == "racks":
        for r, per, share in itertools.product(family.racks, family.brokers_per_rack, family.fenced_share):
            racks = tuple((f"rack-{rack_letters(i)}", per) for i in range(r))
            name = f"{family.name}-{r}x{per}{_fenced_suffix(share)}"
            shapes.append(ClusterShape(name, family.name, racks, share))
    elif layout == "rack_sizes":
        for sizes, share in itertools.product(family.rack_sizes, family.fenced_share):
            racks = tuple((f"rack-{rack_letters(i)}", n) for i, n in enumerate(sizes))
            name = f"{family.name}-{'-'.join(map(str, sizes))}{_fenced_suffix(share)}"
            shapes.append(ClusterShape(name, family.name, racks, share))
    else:
        for levels, per, share in itertools.product(
            family.levels, family.brokers_per_rack, family.fenced_share
        ):
            paths = [
                "/" + "/".join(f"{family.level_names[d]}-{i + 1}" for d, i in enumerate(index))
                for index in itertools.product(*(range(n) for n in levels))
            ]
            name = f"{family.name}-{'x'.join(map(str, levels))}x{per}{_fenced_suffix(share)}"
            shapes.append(ClusterShape(name, family.name, tuple((p, per) for p in paths), share))
    return shapes


def shapes_of(grid: Grid) -> list[ClusterShape]:
    """All cluster shapes of a grid, family by family."""
    return [shape for family in grid.clusters for shape in expand_family(family)]


def iter_scenarios(grid: Grid) -> Iterator[ScenarioSpec]:
    """Every scenario of the grid (shapes x workloads x seeds), for the single-process path."""
    for shape in shapes_of(grid):
        for workload in grid.workloads:
            for seed in grid.seeds:
                yield ScenarioSpec(scenario_id(shape.name, workload.name, seed), shape, workload, seed)


def _rng(*parts: Any) -> random.Random:
    # String seeds are hashed with SHA-512 by random.Random: stable across processes and platforms.
    return random.Random("/".join(str(p) for p in parts))


@lru_cache(maxsize=1024)
def brokers_for(shape: ClusterShape, seed: int) -> tuple[UsableBroker, ...]:
    """The shape's brokers (ids from 0, rack by rack) with ``round(share x n)`` of them fenced.

    At least one broker stays unfenced. Which brokers are fenced depends on the shape and the seed.
    """
    brokers: list[tuple[int, str | None]] = []
    for rack, count in shape.racks:
        first = len(brokers)
        brokers.extend((first + i, rack) for i in range(count))
    n = len(brokers)
    fenced_count = min(int(shape.fenced_share * n + 0.5), n - 1) if shape.fenced_share > 0 else 0
    fenced = set(_rng("fenced", shape.name, seed).sample(range(n), fenced_count)) if fenced_count else set()
    return tuple(UsableBroker(i, rack, i in fenced) for i, rack in brokers)


@lru_cache(maxsize=1024)
def operations_for(workload: WorkloadSpec, seed: int) -> tuple[Operation, ...]:
    """The workload's requests for ``seed``: the first is a creation; additions target earlier topics."""
    rng = _rng("workload", workload.name, seed)
    kinds = ["create"] * (workload.topics - 1) + ["add"] * workload.partition_additions
    rng.shuffle(kinds)
    kinds.insert(0, "create")
    ops: list[Operation] = []
    created: list[tuple[str, int]] = []
    for kind in kinds:
        if kind == "create":
            topic = f"topic-{len(created)}"
            rf = workload.replication_factor.draw(rng)
            ops.append(Operation("create", topic, workload.partitions.draw(rng), rf))
            created.append((topic, rf))
        else:
            topic, rf = created[rng.randrange(len(created))]
            ops.append(Operation("add", topic, workload.added_partitions.draw(rng), rf))
    return tuple(ops)
