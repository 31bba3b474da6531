"""The ``fluvio`` placer reproduces Fluvio's computed replica assignment and its own tests exactly."""

from __future__ import annotations

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
from controller.placement.builtin.fluvio import FluvioReplicaPlacer, rack_sequence
from controller.placement.loader import load_placer
from controller.placement.testing import check_placer


def brokers(*ids: int, rack: str | None = None) -> tuple[UsableBroker, ...]:
    return tuple(UsableBroker(i, rack, False) for i in ids)


def racked(**racks: tuple[int, ...]) -> tuple[UsableBroker, ...]:
    return tuple(UsableBroker(i, name, False) for name, ids in racks.items() for i in ids)


def place(
    cluster: tuple[UsableBroker, ...], partitions: int, rf: int, start_index: int = 0, **spec_args: object
) -> list[list[int]]:
    placer = FluvioReplicaPlacer(start_index=start_index)
    spec = PlacementSpec(start_partition=0, num_partitions=partitions, num_replicas=rf, **spec_args)  # type: ignore[arg-type]
    return [list(r) for r in placer.place(spec, ClusterView(cluster))]


# The table of Fluvio's "Replica Assignment" documentation: 5 SPUs, 3 replicas, partitions 0..15.
DOCUMENTED_TABLE = [
    [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
    [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2],
    [0, 3, 4], [1, 4, 0], [2, 0, 1], [3, 1, 2], [4, 2, 3],
    [0, 1, 2],
]  # fmt: skip


def test_seed_table_15_partitions_plus_one() -> None:
    assert place(brokers(0, 1, 2, 3, 4), 16, 3) == DOCUMENTED_TABLE


def test_21_partitions_rf3_repeat_with_period_15() -> None:
    expected = DOCUMENTED_TABLE[:15] + [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1], [0, 2, 3]]
    assert place(brokers(0, 1, 2, 3, 4), 21, 3) == expected


@pytest.mark.parametrize(
    ("ids", "partitions", "rf", "start", "expected"),
    [
        ((0, 1, 2, 4, 5000), 4, 1, 8, [[4], [5000], [0], [1]]),
        ((0, 1, 2, 3, 4), 4, 2, 3, [[3, 4], [4, 0], [0, 2], [1, 3]]),
        ((0, 1, 2, 3, 4), 4, 3, 12, [[2, 0, 1], [3, 1, 2], [4, 2, 3], [0, 1, 2]]),
        ((0, 1, 2, 3, 4), 4, 4, 10, [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 0], [3, 4, 0, 1]]),
        (
            (0, 1, 3, 4, 5002),
            4,
            5,
            14,
            [[5002, 0, 1, 3, 4], [0, 1, 3, 4, 5002], [1, 3, 4, 5002, 0], [3, 4, 5002, 0, 1]],
        ),
    ],
)
def test_fluvio_rack_unaware_expectations(
    ids: tuple[int, ...], partitions: int, rf: int, start: int, expected: list[list[int]]
) -> None:
    assert place(brokers(*ids), partitions, rf, start) == expected


def test_seed_chaining_next_run_starts_where_last_stopped() -> None:
    placer = FluvioReplicaPlacer()
    cluster = ClusterView(brokers(0, 1, 2, 3, 4))
    first = placer.place(PlacementSpec(0, 9, 3, topic="a"), cluster)  # indexes 0..8
    assert first[-1] == [3, 0, 1]
    second = placer.place(PlacementSpec(0, 2, 3, topic="b"), cluster)
    assert second[0] == [
        4,
        1,
        2,
    ]  # chained runs, as Fluvio's documentation has them: the next starts at index 9
    assert placer.next_index == 11


def test_start_index_and_ignore_rack_properties() -> None:
    placer = load_placer(
        "fluvio",
        {"simulator.placer.fluvio.start.index": "12", "simulator.placer.fluvio.ignore.rack": "true"},
    )
    cluster = ClusterView(racked(r1=(0, 1), r2=(2, 3), r3=(4,)))
    assert placer.place(PlacementSpec(0, 4, 3), cluster) == [[2, 0, 1], [3, 1, 2], [4, 2, 3], [0, 1, 2]]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("simulator.placer.fluvio.start.index", "-1"),
        ("simulator.placer.fluvio.start.index", "x"),
        ("simulator.placer.fluvio.ignore.rack", "maybe"),
    ],
)
def test_bad_properties_name_the_key(key: str, value: str) -> None:
    with pytest.raises(Exception, match=key.replace(".", r"\.")):
        load_placer("fluvio", {key: value})


@pytest.mark.parametrize(
    ("racks", "expected"),
    [
        ({"r1": [0, 1, 2], "r2": [3, 4], "r3": [5]}, [0, 4, 5, 1, 3, 2]),
        ({"r1": [0, 1, 2], "r2": [3, 4, 5], "r3": [6, 7], "r4": [8, 9]}, [0, 4, 6, 8, 1, 5, 9, 2, 3, 7]),
        (
            {"rack-a": [0, 1, 2], "rack-b": [3, 4, 5], "rack-c": [6, 7, 8], "rack-d": [9, 10, 11]},
            [0, 4, 8, 9, 1, 5, 6, 10, 2, 3, 7, 11],
        ),
        ({"rack-a": [0], "rack-b": [1, 2], "rack-c": [3, 4, 5]}, [3, 2, 0, 4, 1, 5]),
    ],
)
def test_rack_sequences(racks: dict[str, list[int]], expected: list[int]) -> None:
    assert rack_sequence(racks) == expected


def test_racks_of_equal_size_keep_rack_name_order_whatever_the_broker_order() -> None:
    """Fluvio sorts racks by size with a stable sort over its name-ordered rack map."""
    assert rack_sequence({"r4": [9, 8], "r2": [5, 4, 3], "r3": [7, 6], "r1": [2, 1, 0]}) == [
        0, 4, 6, 8, 1, 5, 9, 2, 3, 7,
    ]  # fmt: skip
    cluster = racked(r4=(9, 8), r3=(7, 6), r2=(5, 4, 3), r1=(2, 1, 0))
    assert place(cluster, 2, 3) == [[0, 4, 6], [4, 6, 8]]


def test_seed_example_1_balanced_racks() -> None:
    cluster = racked(**{"rack-a": (0, 1, 2), "rack-b": (3, 4, 5), "rack-c": (6, 7, 8), "rack-d": (9, 10, 11)})
    assert place(cluster, 12, 4) == [
        [0, 4, 8, 9], [4, 8, 9, 1], [8, 9, 1, 5], [9, 1, 5, 6],
        [1, 5, 6, 10], [5, 6, 10, 2], [6, 10, 2, 3], [10, 2, 3, 7],
        [2, 3, 7, 11], [3, 7, 11, 0], [7, 11, 0, 4], [11, 0, 4, 8],
    ]  # fmt: skip


def test_seed_example_2_unbalanced_racks() -> None:
    cluster = racked(**{"rack-a": (0,), "rack-b": (1, 2), "rack-c": (3, 4, 5)})
    assert place(cluster, 6, 3) == [[3, 2, 0], [2, 0, 4], [0, 4, 1], [4, 1, 5], [1, 5, 3], [5, 3, 2]]


def test_fluvio_9_partitions_3_racks_of_3() -> None:
    cluster = racked(r1=(0, 1, 2), r2=(3, 4, 5), r3=(6, 7, 8))
    assert place(cluster, 9, 3) == [
        [0, 4, 8], [4, 8, 1], [8, 1, 5], [1, 5, 6], [5, 6, 2], [6, 2, 3], [2, 3, 7], [3, 7, 0], [7, 0, 4],
    ]  # fmt: skip


def test_rack_mode_needs_a_rack_on_every_broker() -> None:
    cluster = (*racked(r1=(0, 1), r2=(2,)), UsableBroker(3, None, False))
    with pytest.raises(ReplicaPlacementError, match=r"SPU\(s\) without a rack: 3"):
        place(cluster, 2, 2)


def test_too_few_spus_uses_fluvio_wording() -> None:
    with pytest.raises(InvalidReplicationFactorError, match="^need 2 more SPU$"):
        place(brokers(0, 1, 2), 1, 5)
    with pytest.raises(InvalidReplicationFactorError, match="replication factor must be greater than 0"):
        place(brokers(0, 1, 2), 1, 0)
    with pytest.raises(ReplicaPlacementError, match="partition must be greater than 0"):
        place(brokers(0, 1, 2), 0, 1)


def test_fenced_brokers_get_no_replica_and_count_as_missing() -> None:
    cluster = (*brokers(0, 1, 2, 3), UsableBroker(4, None, True))
    result = place(cluster, 8, 3)
    assert result[:4] == [[0, 1, 2], [1, 2, 3], [2, 3, 0], [3, 0, 1]]
    assert all(4 not in replicas for replicas in result)
    with pytest.raises(InvalidReplicationFactorError, match="need 1 more SPU"):
        place(cluster, 1, 5)


def test_broker_ids_subset() -> None:
    assert place(brokers(0, 1, 2, 3, 4, 5), 3, 2, broker_ids=(5, 1, 3)) == [[1, 3], [3, 5], [5, 1]]


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.integers(0, 10_000), min_size=1, max_size=12, unique=True),
    racks=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=12, max_size=12),
    use_racks=st.booleans(),
    data=st.data(),
)
def test_every_partition_has_distinct_known_brokers(
    ids: list[int], racks: list[str], use_racks: bool, data: st.DataObject
) -> None:
    cluster = tuple(UsableBroker(i, racks[n] if use_racks else None, False) for n, i in enumerate(ids))
    rf = data.draw(st.integers(1, len(ids)))
    partitions = data.draw(st.integers(1, 40))
    start = data.draw(st.integers(0, 100))
    result = place(cluster, partitions, rf, start)
    assert len(result) == partitions
    for replicas in result:
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(ids)


def test_passes_the_conformance_kit() -> None:
    report = check_placer("fluvio", max_examples=150)
    assert report.passed, report.describe()
