"""Manual replica assignments: Fluvio's replica-map rules and messages (``PartitionMaps::valid_partition_map``),
plus Kafka's broker checks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.placement.api import UsableBroker
from controller.placement.manual import check_brokers, check_new_partitions, check_replica_map
from protocol.codes import ErrorCode
from protocol.errors import Refusal

BROKERS = {i: UsableBroker(i, None, i == 3) for i in range(5)}  # broker 3 is fenced


def problem(fn, *args) -> str:
    with pytest.raises(Refusal) as info:
        fn(*args)
    assert info.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    return info.value.message


def test_a_valid_map_comes_back_in_partition_order():
    assert check_replica_map([(0, [0, 1, 2]), (1, [1, 2, 0])]) == [[0, 1, 2], [1, 2, 0]]


@pytest.mark.parametrize(
    ("partitions", "message"),
    [
        ([], "no assigned partitions found"),
        ([(1, [0]), (2, [2])], "assigned partitions must start with id 0"),
        ([(0, [0]), (2, [2])], "assigned partition ids must be in sequence and without gaps"),
        ([(0, [0]), (2, [2]), (1, [1])], "assigned partition ids must be in sequence and without gaps"),
        ([(0, [0]), (1, [1]), (1, [1])], "assigned partition ids must be in sequence and without gaps"),
        ([(0, []), (1, [1])], "assigned replicas must have at least one spu id"),
        ([(0, [1, 2]), (1, [1])], "all assigned replicas must have the same number of spu ids: 2"),
        ([(0, [1, 2]), (1, [1, 1])], "duplicate spu ids found in assigned partition with id: 1"),
        ([(0, [3, 1, 2, 3])], "duplicate spu ids found in assigned partition with id: 0"),
        ([(0, [1, 2]), (1, [1, -2])], "invalid spu id: -2 in assigned partition with id: 1"),
    ],
)
def test_fluvio_rules_and_messages(partitions, message):
    assert problem(check_replica_map, partitions) == message


def test_unknown_brokers_are_named_in_order_of_appearance():
    assert problem(check_brokers, [[0, 1], [7, 9], [9, 2]], BROKERS) == "invalid spu id: 7"


def test_a_partition_needs_an_unfenced_replica():
    message = problem(check_brokers, [[0, 1], [3]], BROKERS, 4)
    assert message == (
        "All brokers specified in the manual partition assignment for partition 5 are fenced or in controlled "
        "shutdown."
    )
    check_brokers([[3, 0]], BROKERS)  # a fenced follower is fine


def test_new_partitions_need_one_assignment_each():
    assert check_new_partitions([[1, 2], [2, 0]], 3, 5, 2) == [[1, 2], [2, 0]]
    assert problem(check_new_partitions, [[1, 2]], 3, 6, 2) == (
        "Attempted to add 3 additional partition(s), but only 1 assignment(s) were specified."
    )
    assert problem(check_new_partitions, [], 3, 4, 2) == (
        "Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified."
    )


def test_new_partitions_keep_the_topics_replication_factor():
    assert problem(check_new_partitions, [[1, 2, 0]], 3, 4, 2) == (
        "all assigned replicas must have the same number of spu ids: 2"
    )
    assert problem(check_new_partitions, [[1, 2], [0, 0]], 3, 5, 2) == (
        "duplicate spu ids found in assigned partition with id: 4"
    )
    assert problem(check_new_partitions, [[]], 3, 4, 2) == "assigned replicas must have at least one spu id"


@st.composite
def replica_maps(draw) -> list[tuple[int, list[int]]]:
    rf = draw(st.integers(1, 5))
    count = draw(st.integers(1, 8))
    return [(i, draw(st.permutations(range(8)))[:rf]) for i in range(count)]


@settings(max_examples=150, deadline=None)
@given(replica_maps())
def test_every_well_formed_map_is_accepted_as_given(partitions):
    assert check_replica_map(partitions) == [rs for _, rs in partitions]


@settings(max_examples=150, deadline=None)
@given(replica_maps(), st.data())
def test_breaking_any_rule_is_refused(partitions, data):
    index = data.draw(st.integers(0, len(partitions) - 1))
    pid, replicas = partitions[index]
    broken = list(partitions)
    rules = ["id", "repeat", "negative"] + (
        ["length"] if len(partitions) > 1 else []
    )  # one partition sets it
    how = data.draw(st.sampled_from(rules))
    if how == "id":
        broken[index] = (pid + data.draw(st.integers(1, 3)), replicas)
    elif how == "repeat":
        broken[index] = (pid, [*replicas, replicas[0]])  # a repeat (and, past the first, a length change)
    elif how == "negative":
        broken[index] = (pid, [*replicas[:-1], -1 - replicas[-1]])
    else:
        broken[index] = (pid, [*replicas, 99])
    with pytest.raises(Refusal):
        check_replica_map(broken)
