"""Hypothesis strategies for the conformance kit: clusters, placement specs and whole cases.

Usable on their own in a plugin's property tests::

    from hypothesis import given
    from controller.placement.testing import clusters, placement_specs

    @given(data=st.data())
    def test_my_placer(data):
        cluster = data.draw(clusters())
        spec = data.draw(placement_specs(cluster))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from controller.placement.api import ClusterView, PlacementSpec, UsableBroker

__all__ = ["PlacementCase", "clusters", "explicit_cases", "placement_cases", "placement_specs"]


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


def explicit_cases() -> list[PlacementCase]:
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
