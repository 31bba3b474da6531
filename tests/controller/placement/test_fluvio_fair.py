"""The ``fluvio-fair`` placer reproduces Fluvio's load-weighted partition scheduler."""

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
from controller.placement.builtin.fluvio_fair import FluvioFairReplicaPlacer
from controller.placement.loader import load_placer
from controller.placement.testing import check_placer


def spus(*ids: int, fenced: tuple[int, ...] = ()) -> tuple[UsableBroker, ...]:
    return tuple(UsableBroker(i, None, i in fenced) for i in ids)


def place(
    cluster: ClusterView, partitions: int, rf: int, start_partition: int = 0, **spec_args: object
) -> list[list[int]]:
    spec = PlacementSpec(start_partition, partitions, rf, **spec_args)  # type: ignore[arg-type]
    return [list(r) for r in FluvioFairReplicaPlacer().place(spec, cluster)]


def test_fluvio_scheduler_test_with_preloaded_partitions() -> None:
    cluster = ClusterView(
        spus(0, 1, 2, 3),
        {("t1", 0): (0, 1, 2), ("t1", 1): (1, 2), ("t2", 0): (0, 3)},
    )
    assert place(cluster, 5, 3) == [[2, 0, 1], [3, 0, 1], [1, 3, 0], [2, 3, 0], [3, 2, 1]]


@pytest.mark.parametrize(
    ("ids", "partitions", "rf", "expected"),
    [
        ((0, 1), 2, 1, [[0], [1]]),
        ((0, 1), 4, 1, [[0], [1], [0], [1]]),
        ((0, 1, 2, 4, 10), 4, 1, [[0], [1], [2], [4]]),
    ],
)
def test_fluvio_scheduler_tests_on_an_empty_cluster(
    ids: tuple[int, ...], partitions: int, rf: int, expected: list[list[int]]
) -> None:
    assert place(ClusterView(spus(*ids)), partitions, rf) == expected


def test_not_enough_spus_for_the_followers() -> None:
    with pytest.raises(InvalidReplicationFactorError, match="^need 1 more SPU$"):
        place(ClusterView(spus(0, 1)), 4, 3)
    with pytest.raises(InvalidReplicationFactorError, match="replication factor must be greater than 0"):
        place(ClusterView(spus(0, 1)), 4, 0)
    with pytest.raises(ReplicaPlacementError, match="partition must be greater than 0"):
        place(ClusterView(spus(0, 1)), 0, 1)


def test_fenced_spus_are_skipped_but_their_load_is_not_forgotten() -> None:
    cluster = ClusterView(spus(0, 1, 2, 3, fenced=(0,)), {("old", 0): (1, 2)})
    assert place(cluster, 3, 2) == [[2, 1], [3, 1], [1, 3]]


def test_no_state_between_calls_the_view_is_the_record() -> None:
    placer = load_placer("fluvio-fair")
    cluster = ClusterView(spus(0, 1, 2))
    first = placer.place(PlacementSpec(0, 2, 2, topic="a"), cluster)
    assert first == [[0, 1], [1, 0]]
    assert placer.place(PlacementSpec(0, 2, 2, topic="b"), cluster) == first
    after_a = ClusterView(cluster.brokers, {("a", 0): (0, 1), ("a", 1): (1, 0)})
    assert placer.place(PlacementSpec(0, 1, 2, topic="b"), after_a) == [[2, 0]]


def test_partitions_being_replaced_are_not_counted() -> None:
    cluster = ClusterView(spus(0, 1, 2), {("t", 0): (0, 1), ("t", 1): (1, 2)})
    # Placing t/1 again: only t/0 counts (leader 0, follower 1).
    assert place(cluster, 1, 2, topic="t", start_partition=1) == [[1, 0]]
    # Adding t/2: both existing partitions count.
    assert place(cluster, 1, 2, topic="t", start_partition=2) == [[2, 0]]


def test_broker_ids_subset() -> None:
    cluster = ClusterView(spus(0, 1, 2, 3, 4))
    assert place(cluster, 3, 2, broker_ids=(4, 2)) == [[2, 4], [4, 2], [2, 4]]


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.integers(0, 5000), min_size=1, max_size=10, unique=True),
    data=st.data(),
)
def test_leaders_and_followers_stay_within_one_of_each_other(ids: list[int], data: st.DataObject) -> None:
    rf = data.draw(st.integers(1, len(ids)))
    partitions = data.draw(st.integers(1, 50))
    result = place(ClusterView(spus(*ids)), partitions, rf)
    leaders = Counter(r[0] for r in result)
    assert max(leaders[i] for i in ids) - min(leaders[i] for i in ids) <= 1
    for replicas in result:
        assert len(set(replicas)) == rf and set(replicas) <= set(ids)


def test_passes_the_conformance_kit() -> None:
    report = check_placer("fluvio-fair", max_examples=150)
    assert report.passed, report.describe()
