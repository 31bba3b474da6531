"""The ``multi-level`` placer: KIP-879 rings per rack-tree node, even spread from the top level down."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    ReplicaPlacementError,
    UsableBroker,
)
from controller.placement.builtin.java_random import JavaRandom
from controller.placement.builtin.multi_level import MultiLevelReplicaPlacer, rack_path
from controller.placement.loader import load_placer
from controller.placement.testing import check_placer


class FirstChild:
    """A random source that always draws 0: every ring starts at its first child."""

    def next_int(self, bound: int | None = None) -> int:
        return 0


def cluster_of(racks: dict[int, str], fenced: tuple[int, ...] = ()) -> ClusterView:
    return ClusterView(tuple(UsableBroker(i, rack, i in fenced) for i, rack in racks.items()))


def spec(partitions: int, rf: int, **kwargs: object) -> PlacementSpec:
    return PlacementSpec(0, partitions, rf, **kwargs)  # type: ignore[arg-type]


TWO_DCS = {0: "/dc1/r1", 1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc1/r2", 4: "/dc2/r3", 5: "/dc2/r3"}
# The KIP's example: 3 data centres with 2 racks each (2 brokers per rack).
KIP_DCS = {i: f"/DC{i % 3 + 1}/R{i // 3 % 2 + 1}" for i in range(12)}


def test_rings_walked_by_hand() -> None:
    # Every ring starts at its first child. p0: leader dc1/r1/0; followers go to dc2 (no replica
    # there yet), then back to dc1 but to its unused rack r2. Later partitions continue the rings.
    placer = MultiLevelReplicaPlacer(random=FirstChild())
    result = placer.place(spec(4, 3), cluster_of(TWO_DCS))
    assert result == [[0, 4, 2], [4, 0, 3], [2, 5, 1], [5, 2, 0]]


def test_kip_example_spreads_over_data_centres_then_racks() -> None:
    placer = load_placer("multi-level", {"simulator.seed": "7"})
    result = placer.place(spec(60, 3), cluster_of(KIP_DCS))
    for replicas in result:
        assert len({KIP_DCS[b].split("/")[1] for b in replicas}) == 3
    six = load_placer("multi-level", {"simulator.seed": "7"}).place(spec(12, 6), cluster_of(KIP_DCS))
    for replicas in six:
        assert len({KIP_DCS[b] for b in replicas}) == 6  # all six racks, two per data centre


def test_balanced_tree_gives_every_broker_the_same_load() -> None:
    result = MultiLevelReplicaPlacer(JavaRandom(3)).place(spec(120, 3), cluster_of(KIP_DCS))
    assert set(Counter(r[0] for r in result).values()) == {10}
    assert set(Counter(b for r in result for b in r).values()) == {30}


def test_leaders_rotate_when_rf_equals_the_number_of_racks() -> None:
    racks = {i: f"/rack-{i % 3 + 1}" for i in range(6)}
    result = MultiLevelReplicaPlacer(JavaRandom(1)).place(spec(6, 3), cluster_of(racks))
    assert sorted(r[0] for r in result) == [0, 1, 2, 3, 4, 5]


def test_spread_prefers_a_new_rack_then_the_emptier_data_centre() -> None:
    racks = {0: "/d1/r1", 1: "/d1/r1", 2: "/d1/r2", 3: "/d2/r3", 4: "/d2/r3"}
    for seed in range(20):
        for replicas in MultiLevelReplicaPlacer(JavaRandom(seed)).place(spec(10, 3), cluster_of(racks)):
            assert sorted({racks[b] for b in replicas}) == ["/d1/r1", "/d1/r2", "/d2/r3"]


def test_adding_partitions_continues_the_rings() -> None:
    cluster = cluster_of(KIP_DCS)
    at_once = MultiLevelReplicaPlacer(JavaRandom(11)).place(spec(10, 3), cluster)
    placer = MultiLevelReplicaPlacer(JavaRandom(11))
    first = placer.place(spec(4, 3, topic="t"), cluster)
    then = placer.place(PlacementSpec(4, 6, 3, topic="t"), cluster)
    assert first + then == at_once


def test_same_seed_same_result_and_the_seed_matters() -> None:
    cluster = cluster_of(KIP_DCS)

    def run(seed: str) -> list[list[int]]:
        return load_placer("multi-level", {"simulator.seed": seed}).place(spec(12, 3), cluster)

    assert run("5") == run("5")
    assert len({str(run(str(seed))) for seed in range(8)}) > 1


def test_racks_that_are_prefixes_of_other_racks() -> None:
    racks = {0: "/dc1", 1: "/dc1/r1", 2: "/dc1/r1", 3: "/dc2/", 4: "//dc2//r2"}
    assert rack_path("//dc2//r2") == "/dc2/r2"
    result = MultiLevelReplicaPlacer(FirstChild()).place(spec(6, 4), cluster_of(racks))
    for replicas in result:
        assert len(set(replicas)) == 4
        assert len({rack_path(racks[b]) for b in replicas}) == 4  # /dc1, /dc1/r1, /dc2, /dc2/r2


@pytest.mark.parametrize("rack", [None, "dc1/r1", "rack-1"])
def test_a_rack_that_is_not_a_path_fails(rack: str | None) -> None:
    racks: dict[int, str | None] = {0: "/dc1/r1", 1: rack, 2: "/dc2/r1"}
    cluster = ClusterView(tuple(UsableBroker(i, r, False) for i, r in racks.items()))
    with pytest.raises(ReplicaPlacementError, match=f"starting with '/'.*broker 1 has {rack!r}"):
        MultiLevelReplicaPlacer(FirstChild()).place(spec(1, 2), cluster)


def test_kafka_wording_for_replication_factor_errors() -> None:
    placer = MultiLevelReplicaPlacer(FirstChild())
    cluster = cluster_of({0: "/a", 1: "/b"}, fenced=(1,))
    with pytest.raises(
        InvalidReplicationFactorError, match=r"^Invalid replication factor 0: the replication"
    ):
        placer.place(spec(1, 0), cluster)
    with pytest.raises(InvalidReplicationFactorError, match=r"^The target replication factor of 3 cannot be reached because only 2 broker\(s\) are registered or some brokers have all their log directories cordoned\.$"):  # fmt: skip
        placer.place(spec(1, 3), cluster)
    with pytest.raises(
        InvalidReplicationFactorError,
        match=r"^All brokers are currently fenced, or have all their log directories cordoned\.$",
    ):
        placer.place(spec(1, 1), cluster_of({0: "/a"}, fenced=(0,)))


def test_fenced_brokers_never_lead_and_follow_only_where_needed() -> None:
    racks = {0: "/a", 1: "/a", 2: "/b", 3: "/b", 4: "/c"}
    placer = MultiLevelReplicaPlacer(JavaRandom(2))
    # Broker 4 is the only broker of rack /c: it is needed for the spread, so it follows (never leads).
    result = placer.place(spec(12, 3), cluster_of(racks, fenced=(4,)))
    assert all(r[0] != 4 for r in result)
    assert all(4 in r for r in result)
    # Broker 1 shares rack /a with unfenced broker 0: it gets nothing while RF can do without it.
    result = placer.place(spec(12, 3), cluster_of(racks, fenced=(1,)))
    assert all(1 not in r for r in result)
    # Two of three brokers fenced, RF 3: both follow.
    result = placer.place(spec(4, 3), cluster_of({0: "/a", 1: "/a", 2: "/b"}, fenced=(1, 2)))
    assert all(r[0] == 0 and sorted(r) == [0, 1, 2] for r in result)


def test_broker_ids_subset() -> None:
    placer = MultiLevelReplicaPlacer(JavaRandom(4))
    result = placer.place(spec(10, 2, broker_ids=(0, 2, 4)), cluster_of(TWO_DCS))
    assert all(set(r) <= {0, 2, 4} and len(set(r)) == 2 for r in result)
    # Brokers outside the subset may have any rack: they are not looked at.
    cluster = ClusterView((*cluster_of(TWO_DCS).brokers, UsableBroker(9, "no-slash", False)))
    assert len(placer.place(spec(3, 2, broker_ids=(0, 4)), cluster)) == 3


tree_racks = st.lists(
    st.lists(st.sampled_from(["dc1", "dc2", "dc3", "r1", "r2", "r3"]), min_size=0, max_size=3).map(
        lambda parts: "/" + "/".join(parts)
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=80, deadline=None)
@given(racks=tree_racks, data=st.data())
def test_distinct_unfenced_leader_and_min_rf_racks(racks: list[str], data: st.DataObject) -> None:
    fenced = data.draw(st.lists(st.booleans(), min_size=len(racks), max_size=len(racks)))
    if all(fenced):
        fenced[0] = False
    brokers = tuple(
        UsableBroker(i * 3 + 1, rack, f) for i, (rack, f) in enumerate(zip(racks, fenced, strict=True))
    )
    rf = data.draw(st.integers(1, len(brokers)))
    seed = data.draw(st.integers(0, 1000))
    result = MultiLevelReplicaPlacer(JavaRandom(seed)).place(spec(9, rf), ClusterView(brokers))
    by_id = {b.id: b for b in brokers}
    all_racks = {rack_path(b.rack or "") for b in brokers}
    assert len(result) == 9
    for replicas in result:
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert not by_id[replicas[0]].fenced
        assert len({rack_path(by_id[b].rack or "") for b in replicas}) == min(rf, len(all_racks))


def test_passes_the_conformance_kit() -> None:
    report = check_placer("multi-level", max_examples=150)
    assert report.passed, report.describe()
