"""LegacyReplicaPlacer: Kafka's AdminUtils and AdminRackAwareTest expectations, reproduced exactly."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    ReplicaPlacementError,
    UsableBroker,
)
from controller.placement.builtin.java_random import SEED_KEY, JavaRandom
from controller.placement.builtin.legacy import (
    FIXED_START_INDEX_KEY,
    LegacyReplicaPlacer,
    assign_rack_aware,
    assign_rack_unaware,
    place_rack_unaware,
    rack_alternated_broker_list,
    replica_index,
)
from controller.placement.loader import PlacerLoadError, load_placer

RACKS_1_3_3_2_2_1 = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
RACKS_1_2_2_3_3_1 = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


def cluster_of(racks: Mapping[int, str | None], fenced: frozenset[int] = frozenset()) -> ClusterView:
    return ClusterView(tuple(UsableBroker(i, rack, i in fenced) for i, rack in racks.items()))


def spec(partitions: int, rf: int, start: int = 0, **kw: object) -> PlacementSpec:
    return PlacementSpec(start_partition=start, num_partitions=partitions, num_replicas=rf, **kw)  # type: ignore[arg-type]


def test_replica_index() -> None:
    assert replica_index(2, 2, 0, 3) == 0
    assert replica_index(2, 2, 1, 3) == 1


def test_rack_unaware_fixed_start_index() -> None:
    """AdminUtils' own example: brokers 0..4, 10 partitions x RF 3, fixedStartIndex 0."""
    placer = LegacyReplicaPlacer(fixed_start_index=0)
    result = placer.place(spec(10, 3), cluster_of(dict.fromkeys(range(5))))
    assert dict(enumerate(result)) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
    }  # fmt: skip


def test_rack_alternated_broker_list() -> None:
    assert rack_alternated_broker_list(RACKS_1_3_3_2_2_1) == [0, 3, 1, 5, 4, 2]
    without_5 = {k: v for k, v in RACKS_1_3_3_2_2_1.items() if k != 5}
    assert rack_alternated_broker_list(without_5) == [0, 3, 1, 4, 2]


def test_rack_aware_fixed_start_index() -> None:
    """AdminRackAwareTest: 7 partitions x RF 3, fixedStartIndex 0, startPartitionId 0."""
    placer = LegacyReplicaPlacer(fixed_start_index=0)
    result = placer.place(spec(7, 3), cluster_of(RACKS_1_3_3_2_2_1))
    assert dict(enumerate(result)) == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


def distribution_ok(
    result: list[list[int]],
    racks: Mapping[int, str],
    rf: int,
    *,
    rack_aware: bool = True,
    leaders: bool = True,
    replicas: bool = True,
) -> None:
    """AdminRackAwareTest's checkReplicaDistribution."""
    brokers = len(racks)
    partitions = len(result)
    assert all(len(set(r)) == len(r) == rf for r in result)
    if rack_aware:
        assert [len({racks[b] for b in r}) for r in result] == [rf] * partitions
    if leaders:
        assert sorted(Counter(r[0] for r in result).values()) == [partitions // brokers] * brokers
    if replicas:
        assert (
            sorted(Counter(b for r in result for b in r).values()) == [partitions * rf // brokers] * brokers
        )


@pytest.mark.parametrize("seed", range(5))
def test_admin_rack_aware_distributions(seed: int) -> None:
    """AdminRackAwareTest's distribution tests, with fixed and seeded random start indexes."""
    rnd = JavaRandom(seed)
    distribution_ok(assign_rack_aware(6, 3, RACKS_1_2_2_3_3_1, rnd, 2, 0), RACKS_1_2_2_3_3_1, 3)
    distribution_ok(assign_rack_aware(6, 3, RACKS_1_2_2_3_3_1, rnd), RACKS_1_2_2_3_3_1, 3)
    distribution_ok(
        assign_rack_aware(13, 3, RACKS_1_2_2_3_3_1, rnd, 0, 0),
        RACKS_1_2_2_3_3_1,
        3,
        leaders=False,
        replicas=False,
    )
    uneven = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    distribution_ok(assign_rack_aware(12, 3, uneven, rnd), uneven, 3, replicas=False)
    distribution_ok(assign_rack_aware(12, 2, RACKS_1_2_2_3_3_1, rnd), RACKS_1_2_2_3_3_1, 2)
    expansion = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    distribution_ok(assign_rack_aware(12, 2, expansion, rnd, start_partition=12), expansion, 2)
    distribution_ok(assign_rack_aware(6, 2, RACKS_1_2_2_3_3_1, rnd), RACKS_1_2_2_3_3_1, 2)
    three = {0: "rack1", 1: "rack2", 4: "rack3"}
    distribution_ok(assign_rack_aware(3, 2, three, rnd), three, 2)
    large = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
             6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3"}  # fmt: skip
    distribution_ok(assign_rack_aware(96, 3, large, rnd), large, 3)


@pytest.mark.parametrize("seed", range(5))
def test_more_and_fewer_replicas_than_racks_and_a_single_rack(seed: int) -> None:
    rnd = JavaRandom(seed)
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    more = assign_rack_aware(6, 5, racks, rnd)
    assert all(len(r) == 5 and len({racks[b] for b in r}) == 3 for r in more)
    fewer = assign_rack_aware(6, 2, racks, rnd)
    assert all(len(r) == 2 and len({racks[b] for b in r}) == 2 for r in fewer)
    single = dict.fromkeys(range(6), "rack1")
    one_rack = assign_rack_aware(6, 3, single, rnd)
    assert all(len(r) == 3 for r in one_rack)
    assert sorted(Counter(r[0] for r in one_rack).values()) == [1] * 6


def test_skip_broker_with_replica_already_assigned() -> None:
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    distribution_ok(
        assign_rack_aware(6, 4, racks, JavaRandom(0), fixed_start_index=2), racks, 4,
        rack_aware=False, leaders=False, replicas=False,
    )  # fmt: skip


def test_random_start_index_and_shift_are_two_draws_of_the_seeded_generator() -> None:
    rnd = JavaRandom(9)
    start, shift = rnd.next_int(5), rnd.next_int(5)
    result = load_placer("legacy", {SEED_KEY: "9"}).place(spec(10, 3), cluster_of(dict.fromkeys(range(5))))
    assert result[0][0] == start
    assert result[0][1] == (start + 1 + shift % 4) % 5


def test_start_partition_is_kafkas_start_partition_id() -> None:
    placer = LegacyReplicaPlacer(fixed_start_index=0)
    cluster = cluster_of(dict.fromkeys(range(5)))
    whole = placer.place(spec(10, 3), cluster)
    added = placer.place(spec(4, 3, start=6), cluster)
    # Leaders follow the partition id; the follower shift restarts at the start index, as in Kafka.
    assert [r[0] for r in added] == [r[0] for r in whole[6:]]
    assert added == [[1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1]]
    assert placer.place(spec(2, 3, start=10), cluster) == [[0, 2, 3], [1, 3, 4]]


def test_fixed_start_index_from_configs_and_seed() -> None:
    cluster = cluster_of(dict.fromkeys(range(5)))
    placer = load_placer("legacy", {FIXED_START_INDEX_KEY: "0"})
    assert placer.place(spec(3, 3), cluster) == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    same_a = load_placer("legacy", {SEED_KEY: "3"})
    same_b = load_placer("legacy", {SEED_KEY: "3"})
    assert [same_a.place(spec(5, 2), cluster) for _ in range(3)] == [
        same_b.place(spec(5, 2), cluster) for _ in range(3)
    ]
    with pytest.raises(PlacerLoadError, match="simulator.placer.legacy.fixed.start.index must be an integer"):
        load_placer("legacy", {FIXED_START_INDEX_KEY: "first"})


@pytest.mark.parametrize(
    ("partitions", "rf", "error", "message"),
    [
        (0, 1, ReplicaPlacementError, "Number of partitions must be larger than 0."),
        (1, 0, InvalidReplicationFactorError, "Replication factor must be larger than 0."),
        (1, 4, InvalidReplicationFactorError, "Replication factor: 4 larger than available brokers: 3."),
    ],
)
def test_errors_with_kafkas_wording(partitions: int, rf: int, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as raised:
        LegacyReplicaPlacer().place(spec(partitions, rf), cluster_of({0: None, 1: None, 2: None}))
    assert str(raised.value) == message


def test_rack_mode_needs_every_broker_to_have_a_rack() -> None:
    cluster = cluster_of({0: "a", 1: None, 2: "b"})
    placer = LegacyReplicaPlacer()
    with pytest.raises(ReplicaPlacementError) as raised:
        placer.place(spec(2, 2), cluster)
    assert str(raised.value) == "Not all brokers have rack information for replica rack aware assignment."
    assert placer.unmet_precondition(spec(2, 2), cluster) == str(raised.value)
    assert placer.unmet_precondition(spec(2, 2, force_simple=True), cluster) is None
    assert len(placer.place(spec(2, 2, force_simple=True), cluster)) == 2


def test_force_simple_is_the_rack_unaware_mode() -> None:
    cluster = cluster_of(RACKS_1_3_3_2_2_1)
    placer = LegacyReplicaPlacer(fixed_start_index=0)
    assert placer.place(spec(3, 3, force_simple=True), cluster) == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    assert place_rack_unaware(spec(3, 3), cluster, JavaRandom(0), fixed_start_index=0) == [
        [0, 1, 2],
        [1, 2, 3],
        [2, 3, 4],
    ]


def test_uses_only_unfenced_brokers_of_broker_ids_sorted_by_id() -> None:
    cluster = ClusterView(tuple(UsableBroker(i, None, i == 3) for i in (5, 3, 9, 1, 7)))
    placer = LegacyReplicaPlacer(fixed_start_index=0)
    result = placer.place(spec(4, 2, broker_ids=(9, 1, 3, 7)), cluster)
    assert result == [[1, 7], [7, 9], [9, 1], [1, 9]]
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 3"):
        placer.place(spec(1, 4, broker_ids=(9, 1, 3, 7)), cluster)


def test_place_rack_unaware_draws_from_the_given_generator() -> None:
    cluster = cluster_of(dict.fromkeys(range(7)))
    first, second = JavaRandom(4), JavaRandom(4)
    calls = [place_rack_unaware(spec(5, 3), cluster, first) for _ in range(3)]
    assert calls == [place_rack_unaware(spec(5, 3), cluster, second) for _ in range(3)]
    check = JavaRandom(4)
    start, shift = check.next_int(7), check.next_int(7)
    assert calls[0][0] == [start, (start + 1 + shift % 6) % 7, (start + 1 + (shift + 1) % 6) % 7]


def test_assign_rack_unaware_keeps_the_given_broker_order() -> None:
    assert assign_rack_unaware(3, 2, [5, 1, 3], JavaRandom(0), fixed_start_index=0) == [
        [5, 1],
        [1, 3],
        [3, 5],
    ]
