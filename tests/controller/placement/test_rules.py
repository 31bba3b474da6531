"""The rules a placer's result must satisfy: the fast set-based pass agrees with the full list of problems."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.placement.api import ClusterView, PlacementSpec, UsableBroker
from controller.placement.rules import first_problem, placement_problems

BROKERS = (
    UsableBroker(0, "a", False),
    UsableBroker(1, "b", False),
    UsableBroker(2, "c", True),
    UsableBroker(3, "a", False),
    UsableBroker(5, "b", False),
)

entries = st.one_of(
    st.integers(-1, 7),
    st.sampled_from([True, False, 1.0, "1", None, (1,), [1]]),
)


def detailed(replicas, spec):
    """The reference: the first of every problem the rules list."""
    problems = placement_problems(spec, ClusterView(BROKERS), replicas)
    return problems[0].message if problems else None


def validate_placement(replicas, spec, brokers):
    """What the server answers with: the fast check's first problem."""
    problem = first_problem(spec, ClusterView(brokers), replicas)
    return problem.message if problem else None


@settings(max_examples=400, deadline=None)
@given(
    num_partitions=st.integers(1, 4),
    rf=st.integers(1, 3),
    start=st.integers(0, 5),
    broker_ids=st.none() | st.sets(st.sampled_from([0, 1, 2, 3, 5]), min_size=1).map(tuple),
    data=st.data(),
)
def test_fast_validation_agrees_with_the_detailed_checks(num_partitions, rf, start, broker_ids, data):
    spec = PlacementSpec(start, num_partitions, rf, broker_ids=broker_ids)
    rows = st.lists(entries, min_size=0, max_size=4) | st.lists(st.integers(0, 5), min_size=rf, max_size=rf)
    replicas = data.draw(st.lists(rows, min_size=num_partitions - 1, max_size=num_partitions + 1))
    assert validate_placement(replicas, spec, BROKERS) == detailed(replicas, spec)


def test_a_valid_placement_passes_and_each_fault_is_named():
    spec = PlacementSpec(10, 2, 3)
    assert validate_placement([[0, 1, 2], [1, 3, 5]], spec, BROKERS) is None
    assert validate_placement([[0, 1, 2], [1, True, 5]], spec, BROKERS) == (
        "partition 11 has a replica that is not a broker id: True"
    )
    assert (
        validate_placement([[0, 1, 1], [1, 3, 5]], spec, BROKERS)
        == "partition 10 repeats broker(s) [1]: [0, 1, 1]"
    )
    assert validate_placement([[0, 1, 4], [1, 3, 5]], spec, BROKERS) == (
        "partition 10 names unknown broker(s) [4]: [0, 1, 4]"
    )
    assert validate_placement([[2, 1, 0], [1, 3, 5]], spec, BROKERS) == (
        "partition 10 has fenced broker 2 as its leader: [2, 1, 0]"
    )
    only = PlacementSpec(0, 1, 2, broker_ids=(0, 1))
    assert (
        validate_placement([[0, 3]], only, BROKERS) == "partition 0 uses broker(s) [3] outside NodeId [0, 1]"
    )
    assert (
        validate_placement([[0, 1]], PlacementSpec(0, 2, 2), BROKERS) == "returned 1 partition(s), expected 2"
    )


def test_every_problem_is_listed_with_the_check_it_fails():
    spec = PlacementSpec(0, 3, 3, broker_ids=(0, 1, 2, 3))
    problems = placement_problems(spec, ClusterView(BROKERS), [[2, 2, 4], [0, 1], [5, 0, 1]])
    assert [(p.check, p.partition) for p in problems] == [
        ("distinct replicas", 0),
        ("known brokers", 0),
        ("unfenced leader", 0),
        ("shape", 1),
        ("known brokers", 2),
    ]
    assert problems[1].message == "partition 0 names unknown broker(s) [4]: [2, 2, 4]"
    assert problems[4].message == "partition 2 uses broker(s) [5] outside NodeId [0, 1, 2, 3]"
