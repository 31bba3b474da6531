"""StripedReplicaPlacer: Kafka's StripedReplicaPlacerTest expectations, reproduced exactly.

With ``continue_offsets`` the placer follows KAFKA-14437's proposal (apache/kafka#12943); the tests
of that pull request (``testPlaceShiftsInitialOffsets*``, ``testTryGetPrevious*Offset``) are
reproduced too, and without it the same calls give Kafka's answers.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from controller.config import SETTINGS_BY_KEY, ConfigError, ServerConfig
from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    UsableBroker,
)
from controller.placement.builtin.java_random import SEED_KEY, JavaRandom, MockRandom
from controller.placement.builtin.striped import (
    CONTINUE_OFFSETS_KEY,
    BrokerList,
    RackLayout,
    RackList,
    StripedReplicaPlacer,
    last_used_brokers,
    previous_broker_offset,
    previous_rack_offset,
    topic_partitions,
)
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


def place_more(
    placer: StripedReplicaPlacer,
    partitions: int,
    rf: int,
    brokers: list[UsableBroker],
    existing: dict[int, list[int]],
    start_partition: int | None = None,
) -> list[list[int]]:
    """Places ``partitions`` more of topic "topic", whose partitions so far are ``existing`` (id -> replicas).

    Kafka's tests hand the placer a list of existing assignments; here they are the topic's entries
    in the cluster's assignments, as CreatePartitions sees them.
    """
    start = (max(existing) + 1 if existing else 0) if start_partition is None else start_partition
    assignments = {("topic", p): tuple(replicas) for p, replicas in existing.items()}
    return placer.place(
        PlacementSpec(start_partition=start, num_partitions=partitions, num_replicas=rf, topic="topic"),
        ClusterView(tuple(brokers), assignments),
    )


def continuing() -> StripedReplicaPlacer:
    return StripedReplicaPlacer(MockRandom(), continue_offsets=True)


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
    assert str(error.value) == "All brokers are currently fenced, or have all their log directories cordoned."


def test_not_enough_brokers() -> None:
    with pytest.raises(InvalidReplicationFactorError) as error:
        place(StripedReplicaPlacer(MockRandom()), 1, 3, [b(11, "1"), b(10, "1")])
    assert (
        str(error.value)
        == "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered or some brokers have all their log directories cordoned."
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


TWELVE_WITHOUT_RACKS = [b(i) for i in range(12)]
THREE_RACKS_OF_FOUR = [b(i, str(i // 4 + 1)) for i in range(12)]
FOUR_RACKS_OF_ONE = [b(i, str(i + 1)) for i in range(4)]


def test_place_shifts_initial_offsets_rack_unaware() -> None:
    """Kafka's testPlaceShiftsInitialOffsetsRackUnaware (KAFKA-14437), every call."""
    first = place_more(continuing(), 2, 3, TWELVE_WITHOUT_RACKS, {})
    assert first == [[7, 8, 9], [8, 9, 10]]
    existing = dict(enumerate(first))
    # Two partitions more: they carry on where partition 1 stopped.
    next_two = place_more(continuing(), 2, 3, TWELVE_WITHOUT_RACKS, existing)
    assert next_two == [[9, 10, 11], [10, 11, 0]]
    # Four more, wrapping round to broker 0. (Kafka's test passes start partition 2 here; the placer
    # does not look at it.)
    existing.update(enumerate(next_two, start=2))
    next_four = place_more(continuing(), 4, 3, TWELVE_WITHOUT_RACKS, existing, start_partition=2)
    assert next_four == [[11, 0, 1], [0, 1, 2], [1, 2, 3], [2, 3, 4]]


def test_place_shifts_initial_offsets_rack_aware() -> None:
    """Kafka's testPlaceShiftsInitialOffsetsRackAware (KAFKA-14437), every call."""
    first = place_more(continuing(), 2, 3, THREE_RACKS_OF_FOUR, {})
    assert first == [[6, 8, 2], [9, 3, 7]]
    more = place_more(continuing(), 2, 3, THREE_RACKS_OF_FOUR, dict(enumerate(first)))
    assert more == [[0, 4, 10], [5, 11, 1]]
    # Four partitions x RF 3 on 12 brokers: every broker got one replica.
    assert len({r for replicas in first + more for r in replicas}) == len(THREE_RACKS_OF_FOUR)


def test_place_shifts_initial_offsets_rack_aware_and_uses_unused_racks() -> None:
    """Kafka's testPlaceShiftsInitialOffsetsRackAwareAndUsesUnusedRacks (KAFKA-14437), every call.

    As in Kafka's test, each later call sees only the partition the call before it added.
    """
    first = place_more(continuing(), 1, 2, FOUR_RACKS_OF_ONE, {})
    assert first == [[0, 1]]
    second = place_more(continuing(), 1, 2, FOUR_RACKS_OF_ONE, {0: first[0]})
    assert second == [[1, 2]]
    third = place_more(continuing(), 1, 2, FOUR_RACKS_OF_ONE, {1: second[0]})
    assert third == [[2, 3]]
    fourth = place_more(continuing(), 1, 2, FOUR_RACKS_OF_ONE, {2: third[0]})
    assert fourth == [[3, 0]]
    # The whole history gives the same: only the latest partitions decide.
    history = {0: first[0], 1: second[0], 2: third[0]}
    assert place_more(continuing(), 1, 2, FOUR_RACKS_OF_ONE, history) == [[3, 0]]


def test_without_continue_offsets_the_same_calls_give_kafkas_fresh_offsets() -> None:
    """Kafka's placer (3.0 to 4.x, trunk) ignores the existing partitions: every call starts afresh.

    So the follow-up calls of the three tests above give what their first calls give.
    """
    for placer in (StripedReplicaPlacer(MockRandom()), StripedReplicaPlacer(MockRandom(), False)):
        assert place_more(placer, 2, 3, TWELVE_WITHOUT_RACKS, {}) == [[7, 8, 9], [8, 9, 10]]
    existing = {0: [7, 8, 9], 1: [8, 9, 10]}
    assert place_more(StripedReplicaPlacer(MockRandom()), 2, 3, TWELVE_WITHOUT_RACKS, existing) == [
        [7, 8, 9],
        [8, 9, 10],
    ]
    existing.update({2: [9, 10, 11], 3: [10, 11, 0]})
    assert place_more(StripedReplicaPlacer(MockRandom()), 4, 3, TWELVE_WITHOUT_RACKS, existing) == [
        [7, 8, 9],
        [8, 9, 10],
        [9, 10, 11],
        [10, 11, 0],
    ]
    racked = {0: [6, 8, 2], 1: [9, 3, 7]}
    assert place_more(StripedReplicaPlacer(MockRandom()), 2, 3, THREE_RACKS_OF_FOUR, racked) == [
        [6, 8, 2],
        [9, 3, 7],
    ]
    for existing_one in ({0: [0, 1]}, {1: [1, 2]}, {2: [2, 3]}):
        assert place_more(StripedReplicaPlacer(MockRandom()), 1, 2, FOUR_RACKS_OF_ONE, existing_one) == [
            [0, 1]
        ]


# Kafka's testTryGetPreviousBrokerOffset and testTryGetPreviousRackOffset use this map.
BROKER_RACKS = {i: str(i // 4 + 1) for i in range(12)}
UNFENCED_RACK_1 = [0, 1, 2, 3]
UNFENCED_RACK_2 = [4, 5, 6, 7]
UNFENCED_RACK_3 = [8, 9, 10, 11]


def test_try_get_previous_broker_offset() -> None:
    """Kafka's testTryGetPreviousBrokerOffset (KAFKA-14437), every case."""
    # No existing partitions.
    assert previous_broker_offset(BROKER_RACKS, [], "1", UNFENCED_RACK_1) is None
    # The rack's broker in the last partition.
    assert previous_broker_offset(BROKER_RACKS, [[0, 1, 2], [1, 2, 0]], "1", UNFENCED_RACK_1) == 1
    # The same, but the rack's brokers are fenced (not among the unfenced ones).
    assert previous_broker_offset(BROKER_RACKS, [[0, 1, 2], [1, 2, 0]], "1", []) is None
    # The rack's broker in the third partition from the end.
    existing = [[0, 1, 2], [1, 2, 0], [4, 5, 6], [5, 6, 7]]
    assert previous_broker_offset(BROKER_RACKS, existing, "1", UNFENCED_RACK_1) == 1
    # The rack's broker in the last partition, not as its first replica.
    assert previous_broker_offset(BROKER_RACKS, [[4, 5, 1]], "1", UNFENCED_RACK_1) == 1
    assert previous_broker_offset(BROKER_RACKS, [[1, 2, 0], [0, 5, 6], [0, 1, 2]], "2", UNFENCED_RACK_2) == 1
    # No existing partition used the rack.
    assert previous_broker_offset(BROKER_RACKS, existing, "3", UNFENCED_RACK_3) is None


def test_try_get_previous_rack_offset() -> None:
    """Kafka's testTryGetPreviousRackOffset (KAFKA-14437), every case."""
    racks = ["1", "2", "3"]
    # No existing partitions.
    assert previous_rack_offset(BROKER_RACKS, [], racks) is None
    # The last leader's rack is not among the racks (here: only the absent rack).
    assert previous_rack_offset(BROKER_RACKS, [[6, 8, 2], [9, 3, 7]], [None]) is None
    # The last leader (9) is in rack "3".
    assert previous_rack_offset(BROKER_RACKS, [[6, 8, 2], [9, 3, 7]], racks) == 2
    # The last leader is not a usable broker.
    assert previous_rack_offset({}, [[6, 8, 2], [9, 3, 7]], racks) is None


def test_last_used_brokers_skips_brokers_that_are_not_usable() -> None:
    assert last_used_brokers(BROKER_RACKS, [[0, 4, 8], [99, 5, 1]]) == {"2": 5, "1": 1, "3": 8}
    assert last_used_brokers({7: None, 3: "a"}, [[3], [100, 7]]) == {None: 7, "a": 3}
    assert last_used_brokers(BROKER_RACKS, []) == {}


def test_the_previous_broker_is_found_among_the_brokers_in_the_order_they_came() -> None:
    """KAFKA-14437 looks the broker up before the rack's list is sorted, then applies the index to the
    sorted list: with brokers that do not come sorted, the continuation is not "the next broker id".

    Rack "r" has unfenced brokers 30, 10, 20 in that order. Partition 0 used 10, which is index 1 as they
    came; sorted ([10, 20, 30]) the next offset is 2, so the next partition leads with 30, not 20.
    """
    brokers = [b(30, "r"), b(10, "r"), b(20, "r")]
    layout = RackLayout(brokers)
    assert layout.positions() == ({30: "r", 10: "r", 20: "r"}, {30: 0, 10: 1, 20: 2})
    assert place_more(continuing(), 3, 1, brokers, {0: [10]}) == [[30], [10], [20]]
    assert place_more(continuing(), 3, 1, [b(10, "r"), b(20, "r"), b(30, "r")], {0: [10]}) == [
        [20],
        [30],
        [10],
    ]


def test_a_fenced_or_missing_broker_means_a_random_offset_for_its_rack() -> None:
    """The rack whose last used broker is fenced now draws its offset, as does a rack nobody used;
    a leader that is no longer a usable broker means a random starting rack."""
    brokers = [b(0, "a"), b(1, "a"), b(2, "b"), b(3, "b"), b(4, "c", fenced=True), b(5, "c")]
    existing = {0: [4, 0, 2]}
    rnd = RecordingRandom(8)
    RackList(rnd, brokers, existing=list(existing.values()))
    # HashMap order a, b, c: a and b continue (nothing drawn), c's fenced list draws (1), its unfenced list
    # too (1) because its last used broker, 4, is fenced; the starting rack follows rack c.
    assert rnd.bounds == [1, 1]
    rnd = RecordingRandom(8)
    RackList(rnd, brokers, existing=[[9, 0, 2]])  # the leader, 9, is not a usable broker
    assert rnd.bounds == [1, 1, 3]


def test_continuation_looks_only_at_the_topics_partitions_in_partition_order() -> None:
    assignments = {
        ("other", 5): (3, 4),
        ("topic", 2): (9, 1),
        ("topic", 0): (5, 6),
        ("topic", 1): (7, 8),
        ("topic", 3): (),
    }
    assert topic_partitions(assignments, "topic") == [(5, 6), (7, 8), (9, 1)]
    assert topic_partitions(assignments, None) == []
    assert topic_partitions(assignments, "new") == []
    assert topic_partitions({}, "topic") == []


def test_continuing_without_existing_partitions_draws_like_kafka() -> None:
    """A new topic, a spec without a topic, or another topic's partitions: the draws are Kafka's."""
    brokers = tuple(b(i, f"r{i % 3}", fenced=i == 4) for i in range(9))
    assignments = {("other", 0): (1, 2, 3), ("other", 1): (2, 3, 4)}
    for topic in ("topic", None):
        spec = PlacementSpec(start_partition=0, num_partitions=40, num_replicas=3, topic=topic)
        expected = StripedReplicaPlacer(JavaRandom(9)).place(spec, ClusterView(brokers))
        placer = StripedReplicaPlacer(JavaRandom(9), continue_offsets=True)
        assert placer.place(spec, ClusterView(brokers, assignments)) == expected


def test_continuation_honours_the_broker_subset() -> None:
    """Only the usable brokers (the request's subset) count: a leader outside it means a random rack."""
    brokers = tuple(b(i, f"r{i % 3}") for i in range(9))
    view = ClusterView(brokers, {("topic", 0): (0, 1, 2), ("topic", 1): (4, 5, 3)})
    spec = PlacementSpec(
        start_partition=2, num_partitions=3, num_replicas=2, topic="topic", broker_ids=(0, 1, 2, 3)
    )
    rnd = RecordingRandom(4)
    placed = StripedReplicaPlacer(rnd, continue_offsets=True).place(spec, view)
    # Racks r0 {0, 3}, r1 {1}, r2 {2}: every rack continues; the last leader, 4, is outside the subset.
    assert rnd.bounds == [3]
    assert {r for replicas in placed for r in replicas} <= {0, 1, 2, 3}
    expected = RackList(
        JavaRandom(4), [b(i, f"r{i % 3}") for i in (0, 1, 2, 3)], existing=[[0, 1, 2], [4, 5, 3]]
    )
    assert placed == expected.place_partitions(2, 3)


def test_rack_list_all_brokers_fenced() -> None:
    rack_list = RackList(MockRandom(), [b(0, fenced=True), b(1, fenced=True), b(2, fenced=True)])
    assert rack_list.num_total_brokers == 3
    assert rack_list.num_unfenced_brokers == 0
    assert rack_list.rack_names == [None]
    with pytest.raises(
        InvalidReplicationFactorError,
        match=r"^All brokers are currently fenced, or have all their log directories cordoned\.$",
    ):
        rack_list.place(3)


def test_rack_list_not_enough_brokers() -> None:
    rack_list = RackList(MockRandom(), [b(11, "1"), b(10, "1")])
    with pytest.raises(InvalidReplicationFactorError) as error:
        rack_list.place(3)
    assert (
        str(error.value)
        == "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered or some brokers have all their log directories cordoned."
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


CONTINUE_CASES = json.loads((Path(__file__).parent / "data" / "striped_continue_reference.json").read_text())


@pytest.mark.parametrize("case", CONTINUE_CASES, ids=lambda case: f"seed={case['seed']}")
def test_continued_placements_match_the_jvm(case: dict) -> None:
    """A topic's first placement, then more partitions on a changed cluster (brokers gone, fenced,
    unfenced, added, in a new order; some cases with hand-made assignments naming unknown brokers),
    continued as KAFKA-14437 proposed: the same placements as a JVM run (data/StripedReference.java,
    ``continue`` mode)."""
    brokers = [b(broker_id, rack, fenced) for broker_id, rack, fenced in case["brokers"]]
    existing = dict(enumerate(case["existing"]))
    placer = StripedReplicaPlacer(JavaRandom(case["seed"]), continue_offsets=True)
    if "error" in case:
        with pytest.raises(InvalidReplicationFactorError) as error:
            place_more(placer, case["partitions"], case["rf"], brokers, existing)
        assert str(error.value) == case["error"]
    else:
        assert place_more(placer, case["partitions"], case["rf"], brokers, existing) == case["result"]


def test_continue_offsets_property() -> None:
    """``simulator.placer.striped.continue.offsets``: false (Kafka's behaviour) unless set to true."""
    existing = {0: [7, 8, 9], 1: [8, 9, 10]}
    kafkas, proposed = [[7, 8, 9], [8, 9, 10]], [[9, 10, 11], [10, 11, 0]]
    for configs, expected in (
        ({}, kafkas),
        ({CONTINUE_OFFSETS_KEY: "false"}, kafkas),
        ({CONTINUE_OFFSETS_KEY: " "}, kafkas),
        ({CONTINUE_OFFSETS_KEY: "true"}, proposed),
        ({CONTINUE_OFFSETS_KEY: " TRUE "}, proposed),
    ):
        placer = StripedReplicaPlacer(MockRandom())
        placer.configure(configs)
        assert place_more(placer, 2, 3, TWELVE_WITHOUT_RACKS, existing) == expected, configs
    on = StripedReplicaPlacer(MockRandom(), continue_offsets=True)
    on.configure({SEED_KEY: "1"})  # absent: the constructor's choice stands
    assert on.continue_offsets is True
    with pytest.raises(
        ConfigError, match=r"simulator\.placer\.striped\.continue\.offsets: 'yes' is not true or false"
    ):
        StripedReplicaPlacer().configure({CONTINUE_OFFSETS_KEY: "yes"})
    assert load_placer("striped", {CONTINUE_OFFSETS_KEY: "true"}).continue_offsets is True
    assert load_placer("striped", {}).continue_offsets is False


def test_continue_offsets_is_a_known_server_setting() -> None:
    setting = SETTINGS_BY_KEY[CONTINUE_OFFSETS_KEY]
    assert (setting.attr, setting.default) == (None, "false")
    ServerConfig.from_properties({CONTINUE_OFFSETS_KEY: "true"})  # not an unknown simulator.* key
    with pytest.raises(ConfigError, match="simulator.placer.striped.continue.offsets"):
        ServerConfig.from_properties({"simulator.placer.striped.continue.offset": "true"})
