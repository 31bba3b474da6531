"""Manual replica assignments: Kafka's rules and messages (``ReplicationControlManager``), as the real
Kafka answers them in the differential tests."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.placement.api import UsableBroker
from controller.placement.manual import check_assignment, check_new_partitions, check_replica_map
from protocol.codes import ErrorCode
from protocol.errors import Refusal

BROKERS = {i: UsableBroker(i, None, i == 3) for i in range(8)}  # broker 3 is fenced


def problem(fn, *args) -> str:
    with pytest.raises(Refusal) as info:
        fn(*args)
    assert info.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    return info.value.message


def test_a_valid_map_comes_back_in_partition_order():
    assert check_replica_map([(1, [1, 2, 0]), (0, [0, 1, 2])], BROKERS) == [[0, 1, 2], [1, 2, 0]]


@pytest.mark.parametrize(
    ("partitions", "message"),
    [
        ([(0, [0]), (0, [1])], "Found multiple manual partition assignments for partition 0"),
        ([(0, [0]), (2, [2])], "partitions should be a consecutive 0-based integer sequence"),
        ([(1, [0])], "partitions should be a consecutive 0-based integer sequence"),
        ([(0, []), (1, [1])], "The manual partition assignment includes an empty replica list."),
        (
            [(0, [1, 2]), (1, [1])],
            "The manual partition assignment includes a partition with 1 replica(s), but this is not "
            "consistent with previous partitions, which have 2 replica(s).",
        ),
        ([(0, [2, 1, 2])], "The manual partition assignment includes the broker 2 more than once."),
        (
            [(0, [9, 1, -1])],
            "The manual partition assignment includes broker -1, but no such broker is registered.",
        ),
        (
            [(0, [1, 2]), (1, [3])],
            "The manual partition assignment includes a partition with 1 replica(s), but this is not "
            "consistent with previous partitions, which have 2 replica(s).",
        ),
        (
            [(0, [3])],
            "All brokers specified in the manual partition assignment for partition 0 are fenced or in "
            "controlled shutdown.",
        ),
    ],
)
def test_kafkas_rules_and_messages(partitions, message):
    assert problem(check_replica_map, partitions, BROKERS) == message


def test_the_smallest_unknown_or_repeated_broker_is_named():
    assert problem(check_assignment, [9, 7, 1], BROKERS, None) == (
        "The manual partition assignment includes broker 9, but no such broker is registered."
    )
    assert problem(check_assignment, [5, 5, 1, 1], BROKERS, None) == (
        "The manual partition assignment includes the broker 1 more than once."
    )
    check_assignment([3, 0], BROKERS, 2)  # a fenced follower is fine


def test_new_partitions_need_one_assignment_each_with_the_topics_replication_factor():
    assert check_new_partitions([[1, 2], [2, 0]], 3, 5, 2, BROKERS) == [[1, 2], [2, 0]]
    assert problem(check_new_partitions, [[1, 2]], 3, 6, 2, BROKERS) == (
        "Attempted to add 3 additional partition(s), but only 1 assignment(s) were specified."
    )
    assert problem(check_new_partitions, [[1, 2, 0]], 3, 4, 2, BROKERS) == (
        "The manual partition assignment includes a partition with 3 replica(s), but this is not "
        "consistent with previous partitions, which have 2 replica(s)."
    )
    assert problem(check_new_partitions, [[1, 2], [3, 3]], 3, 5, 2, BROKERS) == (
        "The manual partition assignment includes the broker 3 more than once."
    )
    assert problem(check_new_partitions, [[0, 1], [3]], 3, 5, 1, BROKERS) == (
        "The manual partition assignment includes a partition with 2 replica(s), but this is not "
        "consistent with previous partitions, which have 1 replica(s)."
    )
    assert problem(check_new_partitions, [[3]], 4, 5, 1, BROKERS) == (
        "All brokers specified in the manual partition assignment for partition 4 are fenced or in "
        "controlled shutdown."
    )


@st.composite
def replica_maps(draw) -> list[tuple[int, list[int]]]:
    rf = draw(st.integers(1, 5))
    count = draw(st.integers(1, 8))
    live = [b for b in range(8) if b != 3]
    return [(i, draw(st.permutations(live))[:rf]) for i in range(count)]


@settings(max_examples=150, deadline=None)
@given(replica_maps(), st.randoms())
def test_every_well_formed_map_is_accepted_in_any_order(partitions, rng):
    shuffled = list(partitions)
    rng.shuffle(shuffled)
    assert check_replica_map(shuffled, BROKERS) == [rs for _, rs in partitions]


@settings(max_examples=150, deadline=None)
@given(replica_maps(), st.data())
def test_breaking_any_rule_is_refused(partitions, data):
    index = data.draw(st.integers(0, len(partitions) - 1))
    pid, replicas = partitions[index]
    broken = list(partitions)
    rules = ["id", "repeat", "unknown", "empty"] + (["length"] if len(partitions) > 1 else [])
    how = data.draw(st.sampled_from(rules))
    if how == "id":
        broken[index] = (pid + len(partitions) + data.draw(st.integers(0, 3)), replicas)
    elif how == "repeat":
        broken[index] = (pid, [*replicas, replicas[0]])
    elif how == "unknown":
        broken[index] = (pid, [*replicas[:-1], data.draw(st.sampled_from([-1, 8, 99]))])
    elif how == "empty":
        broken[index] = (pid, [])
    else:
        broken[index] = (pid, [*replicas, next(b for b in range(8) if b not in replicas)])
    with pytest.raises(Refusal):
        check_replica_map(broken, BROKERS)
