"""StripedReplicaPlacer: Kafka's StripedReplicaPlacerTest expectations, reproduced exactly."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    UsableBroker,
)
from controller.placement.builtin.java_random import SEED_KEY, JavaRandom, MockRandom
from controller.placement.builtin.striped import BrokerList, RackList, StripedReplicaPlacer
from controller.placement.loader import load_placer


def b(broker_id: int, rack: str | None = None, fenced: bool = False) -> UsableBroker:
    return UsableBroker(id=broker_id, rack=rack, fenced=fenced)


def place(
    placer: StripedReplicaPlacer, partitions: int, rf: int, brokers: list[UsableBroker]
) -> list[list[int]]:
    return placer.place(
        PlacementSpec(start_partition=0, num_partitions=partitions, num_replicas=rf),
        ClusterView(tuple(brokers)),
    )


def test_broker_list() -> None:
    assert BrokerList().size == 0
    assert BrokerList().next(1) == -1
    brokers = BrokerList().add(0).add(1).add(2).add(3)
    assert brokers.size == 4
    assert [brokers.next(0) for _ in range(6)] == [0, 1, 2, 3, -1, -1]
    assert [brokers.next(1) for _ in range(5)] == [1, 2, 3, 0, -1]


def test_avoid_fenced_replica_if_possible_on_single_rack() -> None:
    rack_list = RackList(MockRandom(), [b(3), b(1, fenced=True), b(0), b(4), b(2)])
    assert rack_list.num_total_brokers == 5
    assert rack_list.num_unfenced_brokers == 4
    assert rack_list.rack_names == [None]
    with pytest.raises(InvalidReplicationFactorError):
        rack_list.place(0)
    with pytest.raises(InvalidReplicationFactorError):
        rack_list.place(-1)
    assert [rack_list.place(4) for _ in range(5)] == [
        [3, 4, 0, 2],
        [4, 0, 2, 3],
        [0, 2, 3, 4],
        [2, 3, 4, 0],
        [0, 4, 3, 2],
    ]


def test_multi_partition_topic_placement_on_single_unfenced_broker() -> None:
    assert place(StripedReplicaPlacer(MockRandom()), 3, 1, [b(0), b(1, fenced=True)]) == [[0], [0], [0]]


def test_placement_on_fenced_replica_on_single_rack() -> None:
    rack_list = RackList(MockRandom(), [b(3), b(1, fenced=True), b(2)])
    assert rack_list.num_total_brokers == 3
    assert rack_list.num_unfenced_brokers == 2
    assert rack_list.rack_names == [None]
    assert [rack_list.place(3) for _ in range(4)] == [[3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]]


def test_rack_list_with_multiple_racks() -> None:
    rack_list = RackList(
        MockRandom(), [b(11, "1"), b(10, "1"), b(30, "3"), b(31, "3"), b(21, "2"), b(20, "2", True)]
    )
    assert rack_list.num_total_brokers == 6
    assert rack_list.num_unfenced_brokers == 5
    assert rack_list.rack_names == ["1", "2", "3"]
    assert [rack_list.place(4) for _ in range(3)] == [[11, 21, 31, 10], [21, 30, 10, 20], [31, 11, 21, 30]]


def test_rack_list_with_invalid_racks() -> None:
    rack_list = RackList(
        MockRandom(),
        [
            b(11, "1"),
            b(10, "1"),
            b(30, "3", True),
            b(31, "3", True),
            b(20, "2", True),
            b(21, "2", True),
            b(41, "4"),
            b(40, "4", True),
        ],
    )
    assert rack_list.num_total_brokers == 8
    assert rack_list.num_unfenced_brokers == 3
    assert rack_list.rack_names == ["1", "2", "3", "4"]
    assert [rack_list.place(4) for _ in range(3)] == [[41, 11, 21, 30], [10, 20, 31, 41], [41, 21, 30, 11]]


def test_all_brokers_fenced() -> None:
    with pytest.raises(InvalidReplicationFactorError) as error:
        place(StripedReplicaPlacer(MockRandom()), 1, 1, [b(11, "1", True), b(10, "1", True)])
    assert str(error.value) == "All brokers are currently fenced."


def test_not_enough_brokers() -> None:
    with pytest.raises(InvalidReplicationFactorError) as error:
        place(StripedReplicaPlacer(MockRandom()), 1, 3, [b(11, "1"), b(10, "1")])
    assert (
        str(error.value)
        == "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."
    )


def test_non_positive_replication_factor() -> None:
    with pytest.raises(InvalidReplicationFactorError) as error:
        place(StripedReplicaPlacer(MockRandom()), 1, 0, [b(11, "1"), b(10, "1")])
    assert str(error.value) == "Invalid replication factor 0: the replication factor must be positive."


def test_successful_placement() -> None:
    result = place(StripedReplicaPlacer(MockRandom()), 5, 3, [b(0), b(3), b(2), b(1)])
    assert result == [[2, 3, 0], [3, 0, 1], [0, 1, 2], [1, 2, 3], [1, 0, 2]]


def test_even_distribution() -> None:
    result = place(StripedReplicaPlacer(MockRandom()), 200, 2, [b(0), b(1), b(2), b(3)])
    counts = Counter(tuple(replicas) for replicas in result)
    assert counts == {
        (0, 1): 14, (0, 2): 22, (0, 3): 14,
        (1, 0): 17, (1, 2): 17, (1, 3): 16,
        (2, 0): 13, (2, 1): 17, (2, 3): 20,
        (3, 0): 20, (3, 1): 19, (3, 2): 11,
    }  # fmt: skip


def test_first_placement_on_twelve_brokers_without_racks() -> None:
    """Kafka's testPlaceShiftsInitialOffsetsRackUnaware, first call (no existing partitions)."""
    result = place(StripedReplicaPlacer(MockRandom()), 2, 3, [b(i) for i in range(12)])
    assert result == [[7, 8, 9], [8, 9, 10]]


def test_first_placement_on_three_racks_of_four() -> None:
    """Kafka's testPlaceShiftsInitialOffsetsRackAware, first call (no existing partitions)."""
    result = place(StripedReplicaPlacer(MockRandom()), 2, 3, [b(i, str(i // 4 + 1)) for i in range(12)])
    assert result == [[6, 8, 2], [9, 3, 7]]


def test_first_placement_on_four_racks_of_one() -> None:
    """Kafka's testPlaceShiftsInitialOffsetsRackAwareAndUsesUnusedRacks, first call."""
    result = place(StripedReplicaPlacer(MockRandom()), 1, 2, [b(i, str(i + 1)) for i in range(4)])
    assert result == [[0, 1]]


def test_rack_list_all_brokers_fenced() -> None:
    rack_list = RackList(MockRandom(), [b(0, fenced=True), b(1, fenced=True), b(2, fenced=True)])
    assert rack_list.num_total_brokers == 3
    assert rack_list.num_unfenced_brokers == 0
    assert rack_list.rack_names == [None]
    with pytest.raises(InvalidReplicationFactorError, match=r"^All brokers are currently fenced\.$"):
        rack_list.place(3)


def test_rack_list_not_enough_brokers() -> None:
    rack_list = RackList(MockRandom(), [b(11, "1"), b(10, "1")])
    with pytest.raises(InvalidReplicationFactorError) as error:
        rack_list.place(3)
    assert (
        str(error.value)
        == "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."
    )


def test_rack_list_non_positive_replication_factor() -> None:
    rack_list = RackList(MockRandom(), [b(11, "1"), b(10, "1")])
    with pytest.raises(InvalidReplicationFactorError) as error:
        rack_list.place(-1)
    assert str(error.value) == "Invalid replication factor -1: the replication factor must be positive."


def test_placer_checks_errors_in_kafkas_order() -> None:
    placer = StripedReplicaPlacer(MockRandom())
    with pytest.raises(InvalidReplicationFactorError, match="Invalid replication factor 0"):
        place(placer, 1, 0, [b(1, fenced=True)])
    with pytest.raises(InvalidReplicationFactorError, match="All brokers are currently fenced"):
        place(placer, 1, 5, [b(1, fenced=True)])
    with pytest.raises(InvalidReplicationFactorError, match="All brokers are currently fenced"):
        place(placer, 1, 1, [])
    with pytest.raises(InvalidReplicationFactorError, match=r"only 2 broker\(s\) are registered"):
        place(placer, 1, 3, [b(1), b(2, fenced=True)])


class RecordingRandom(JavaRandom):
    """A JavaRandom that remembers the bound of every next_int call."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.bounds: list[int] = []

    def next_int(self, bound: int | None = None) -> int:
        if bound is not None:
            self.bounds.append(bound)
        return super().next_int(bound)


def test_racks_are_initialised_in_java_hashmap_order() -> None:
    """Kafka draws one offset per rack in HashMap order of the rack names, then the starting rack.

    Racks of distinct sizes make the order visible. "Aa" and "BB" share String.hashCode 2112 and the
    absent rack hashes to 0: all three land in bucket 0 and keep insertion order; "x" lands in bucket
    8 and "y" in bucket 9. That order is neither the insertion order nor the sorted one.
    """
    sizes = {"y": 1, "x": 2, "Aa": 3, None: 4, "BB": 5}
    brokers = [b(100 * i + j, rack) for i, (rack, size) in enumerate(sizes.items()) for j in range(size)]
    rnd = RecordingRandom(7)
    rack_list = RackList(rnd, brokers)
    assert rnd.bounds == [3, 4, 5, 2, 1, 5]  # Aa, None, BB, x, y; then the starting rack among 5
    assert rack_list.rack_names == [None, "Aa", "BB", "x", "y"]


def test_reshuffle_after_as_many_partitions_as_unfenced_brokers() -> None:
    """After numUnfenced partitions Kafka reshuffles: the rack names, then each rack's lists in HashMap order."""
    rnd = RecordingRandom(3)
    rack_list = RackList(rnd, [b(1, "x"), b(2, "x"), b(3, "y"), b(4, "y", True)])
    rnd.bounds.clear()
    rack_list.place_partitions(2, 3)
    assert rnd.bounds == []  # three partitions: no reshuffle yet
    rack_list.place(2)
    # rack names (2), then per rack in HashMap order ("x" then "y"): fenced list, then unfenced list
    assert rnd.bounds == [2, 2]


def test_place_partitions_equals_repeated_place() -> None:
    brokers = [b(i, f"r{i % 4}", fenced=i % 5 == 0) for i in range(17)]
    many = RackList(JavaRandom(5), brokers).place_partitions(3, 200)
    one_at_a_time = RackList(JavaRandom(5), brokers)
    assert many == [one_at_a_time.place(3) for _ in range(200)]


def test_seed_from_configure_makes_results_reproducible() -> None:
    brokers = [b(i, f"r{i % 3}") for i in range(9)]
    first = load_placer("striped", {SEED_KEY: "11"})
    second = load_placer("striped", {SEED_KEY: "11"})
    other = load_placer("striped", {SEED_KEY: "12"})
    calls = [place(first, 20, 3, brokers), place(first, 7, 2, brokers)]
    assert [place(second, 20, 3, brokers), place(second, 7, 2, brokers)] == calls
    assert [place(other, 20, 3, brokers), place(other, 7, 2, brokers)] != calls
    assert place(first, 20, 3, brokers) != calls[0]  # the generator moves on between calls


def test_one_placer_over_changing_clusters_is_a_new_rack_list_per_call() -> None:
    """Kafka builds a RackList from the usable brokers on every call, drawing from one generator."""
    base = [b(i, f"r{i % 3}") for i in range(9)]
    fenced_one = [b(i, f"r{i % 3}", fenced=i == 4) for i in range(9)]
    moved = [b(i, f"r{i % 4}") for i in range(9)]
    calls = [
        (base, None),
        (base, None),
        (fenced_one, None),
        (base, (0, 1, 2, 3, 5)),
        (moved, None),
        (base, None),
    ]
    placer = StripedReplicaPlacer(JavaRandom(21))
    rnd = JavaRandom(21)
    for brokers, subset in calls:
        spec = PlacementSpec(start_partition=0, num_partitions=7, num_replicas=3, broker_ids=subset)
        view = ClusterView(tuple(brokers))
        expected = RackList(rnd, view.usable(spec)).place_partitions(3, 7)
        assert placer.place(spec, view) == expected


def test_seeded_placer_draws_like_kafka_with_the_same_java_random() -> None:
    brokers = [b(i, f"r{i % 3}") for i in range(9)]
    configured = load_placer("striped", {SEED_KEY: "11"})
    explicit = StripedReplicaPlacer(JavaRandom(11))
    assert place(configured, 30, 3, brokers) == place(explicit, 30, 3, brokers)


def test_a_given_random_wins_over_the_configured_seed() -> None:
    placer = StripedReplicaPlacer(MockRandom())
    placer.configure({SEED_KEY: "5"})
    assert place(placer, 5, 3, [b(0), b(3), b(2), b(1)]) == [
        [2, 3, 0],
        [3, 0, 1],
        [0, 1, 2],
        [1, 2, 3],
        [1, 0, 2],
    ]


def test_honours_broker_ids_and_ignores_start_partition_and_assignments() -> None:
    brokers = tuple(b(i, f"r{i % 3}", fenced=i == 4) for i in range(9))
    spec = PlacementSpec(start_partition=0, num_partitions=30, num_replicas=3, broker_ids=(1, 2, 4, 5, 7))
    result = StripedReplicaPlacer(JavaRandom(1)).place(spec, ClusterView(brokers))
    assert {r for replicas in result for r in replicas} <= {1, 2, 4, 5, 7}
    assert all(replicas[0] != 4 for replicas in result)
    moved = PlacementSpec(
        start_partition=40, num_partitions=30, num_replicas=3, broker_ids=(7, 5, 4, 2, 1), topic="t"
    )
    with_assignments = ClusterView(brokers, assignments={("t", 0): (1, 2, 5)})
    assert StripedReplicaPlacer(JavaRandom(1)).place(moved, with_assignments) == result


def test_spreads_over_racks_and_brokers_evenly() -> None:
    brokers = [b(i, f"rack-{i % 10}") for i in range(100)]
    result = place(StripedReplicaPlacer(JavaRandom(3)), 1000, 3, brokers)
    assert all(len({r % 10 for r in replicas}) == 3 for replicas in result)
    per_broker = Counter(r for replicas in result for r in replicas)
    leaders = Counter(replicas[0] for replicas in result)
    assert set(per_broker.values()) == {30}
    assert set(leaders.values()) == {10}


JVM_CASES = json.loads((Path(__file__).parent / "data" / "striped_reference.json").read_text())


@pytest.mark.parametrize("case", JVM_CASES, ids=lambda case: f"seed={case['seed']}")
def test_matches_placements_computed_on_the_jvm(case: dict) -> None:
    """Odd rack names (hash collisions, non-ASCII, surrogates, the absent rack, up to 16 racks), fenced
    brokers and enough partitions to reshuffle: the same placements as the JVM's collections give
    (data/StripedReference.java)."""
    brokers = [b(broker_id, rack, fenced) for broker_id, rack, fenced in case["brokers"]]
    placer = StripedReplicaPlacer(JavaRandom(case["seed"]))
    if "error" in case:
        with pytest.raises(InvalidReplicationFactorError) as error:
            place(placer, case["partitions"], case["rf"], brokers)
        assert str(error.value) == case["error"]
    else:
        assert place(placer, case["partitions"], case["rf"], brokers) == case["result"]
