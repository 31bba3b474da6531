"""The share-partition state machine (controller.share.partition) alone: acquisition in offset order
within the in-flight limit, each acknowledge type, locks that end, the delivery count limit, the start
offset, all-or-nothing acknowledgements, and what is persisted and loaded again."""

from __future__ import annotations

from controller.share.partition import Acquired, RecordState, SharePartition, ShareState, StateBatch
from protocol.codes import ErrorCode

ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4


def fresh(start: int = 0) -> tuple[SharePartition, list]:
    archived: list = []
    return SharePartition(
        "g", "t", 0, ShareState(start, 0, 0), leader=1, leader_epoch=0, on_archived=archived.append
    ), archived


def test_acquires_in_order_within_the_record_limit_and_the_lock_limit() -> None:
    sp, _ = fresh()
    assert sp.acquire("a", high_watermark=10, max_records=4, max_in_flight=6, deadline=100) == [
        Acquired(0, 3, 1)
    ]
    assert sp.acquire("b", high_watermark=10, max_records=4, max_in_flight=6, deadline=100) == [
        Acquired(4, 5, 1)
    ]
    assert (
        sp.acquire("b", high_watermark=10, max_records=4, max_in_flight=6, deadline=100) == []
    )  # 6 in flight
    assert sp.in_flight() == 6


def test_whole_batches_unless_strict() -> None:
    sp, _ = fresh()
    batch_end = lambda offset: (offset // 5 + 1) * 5  # noqa: E731 - batches of five records
    assert sp.acquire("a", 20, 2, 100, 100, batch_end) == [Acquired(0, 4, 1)]
    assert sp.acquire("a", 20, 2, 100, 100, batch_end, strict=True) == [Acquired(5, 6, 1)]


def test_each_acknowledge_type_and_the_start_offset() -> None:
    sp, archived = fresh()
    sp.acquire("a", 5, 5, 100, deadline=100)
    assert sp.acknowledge(
        "a", [(0, 0, [ACCEPT]), (1, 1, [REJECT]), (2, 2, [RELEASE]), (3, 4, [RENEW])], 5, 300, 10
    ) == (
        ErrorCode.NONE,
        None,
    )
    assert sp.start_offset == 2  # past the accepted 0 and the rejected 1
    assert sp.state_of(2) == (RecordState.AVAILABLE, 1, None)
    assert sp.state_of(3) == (RecordState.ACQUIRED, 1, "a")
    assert sp.next_deadline() == 300  # renewed
    assert [(a.first_offset, a.cause) for a in archived] == [(1, "rejected by its member")]
    assert sp.acquire("b", 5, 5, 100, deadline=400) == [Acquired(2, 2, 2)]  # released: delivered again


def test_an_acknowledgement_is_all_or_nothing() -> None:
    sp, _ = fresh()
    sp.acquire("a", 3, 3, 100, deadline=100)
    error, message = sp.acknowledge("b", [(0, 0, [ACCEPT])], 5, 100, 0)
    assert error is ErrorCode.INVALID_RECORD_STATE and "offset 0" in (message or "")
    error, _ = sp.acknowledge("a", [(0, 1, [ACCEPT]), (5, 5, [ACCEPT])], 5, 100, 0)
    assert error is ErrorCode.INVALID_RECORD_STATE
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1, "a") and sp.start_offset == 0
    assert sp.acknowledge("a", [(0, 2, [ACCEPT, REJECT])], 5, 100, 0)[0] is ErrorCode.INVALID_REQUEST
    # An unknown type anywhere in a range (one type for the range, or one per offset) changes nothing.
    for types in ([9], [ACCEPT, 7, ACCEPT]):
        assert sp.acknowledge("a", [(0, 2, types)], 5, 100, 0) == (
            ErrorCode.INVALID_REQUEST,
            f"Invalid acknowledge type: {types[-2] if len(types) > 1 else types[0]}",
        )
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1, "a") and sp.state_of(2) == (
        RecordState.ACQUIRED,
        1,
        "a",
    )
    # Per-offset types apply each to its own offset.
    assert sp.acknowledge("a", [(0, 2, [ACCEPT, RELEASE, ACCEPT])], 5, 100, 0) == (ErrorCode.NONE, None)
    assert sp.state_of(1) == (RecordState.AVAILABLE, 1, None) and sp.start_offset == 1


def test_locks_end_and_the_delivery_limit_archives() -> None:
    sp, archived = fresh()
    sp.acquire("a", 2, 2, 100, deadline=100)
    assert not sp.expire(99, delivery_limit=2)
    assert sp.expire(100, delivery_limit=2)
    assert sp.state_of(0) == (RecordState.AVAILABLE, 1, None)
    assert sp.acquire("b", 2, 2, 100, deadline=200) == [Acquired(0, 1, 2)]
    assert sp.expire(200, delivery_limit=2)
    assert sp.start_offset == 2 and sp.in_flight() == 0
    assert [(a.first_offset, a.last_offset, a.delivery_count, a.cause) for a in archived] == [
        (0, 1, 2, "lock ended at the delivery count limit")
    ]


def test_a_member_s_records_are_released_when_it_goes() -> None:
    sp, _ = fresh()
    sp.acquire("a", 3, 3, 100, deadline=100)
    assert sp.release("a", delivery_limit=5, now=0)
    assert sp.acquire("b", 3, 3, 100, deadline=100) == [Acquired(0, 2, 2)]


def test_persisted_state_loads_acquired_records_as_available() -> None:
    sp, _ = fresh(start=10)
    sp.acquire("a", 20, 6, 100, deadline=100)
    sp.acknowledge("a", [(11, 11, [ACCEPT]), (12, 12, [REJECT])], 5, 100, 0)
    state = sp.snapshot()
    assert state == ShareState(
        10,
        0,
        0,
        (
            StateBatch(10, 10, RecordState.AVAILABLE, 1),
            StateBatch(11, 11, RecordState.ACKNOWLEDGED, 1),
            StateBatch(12, 12, RecordState.ARCHIVED, 1),
            StateBatch(13, 15, RecordState.AVAILABLE, 1),
        ),
    )
    loaded = SharePartition("g", "t", 0, state, leader=2, leader_epoch=1)
    assert loaded.acquire("b", 20, 3, 100, deadline=100) == [Acquired(10, 10, 2), Acquired(13, 14, 2)]
    assert loaded.state_of(11) == (RecordState.ACKNOWLEDGED, 1, None)


def test_an_undone_acknowledgement_restores_the_records() -> None:
    sp, _ = fresh()
    sp.acquire("a", 3, 3, 100, deadline=100)
    saved = sp.save([(0, 1, [ACCEPT])])
    sp.acknowledge("a", [(0, 1, [ACCEPT])], 5, 100, 0)
    assert sp.start_offset == 2
    sp.restore(*saved)
    assert sp.start_offset == 0 and sp.state_of(0) == (RecordState.ACQUIRED, 1, "a")


def test_an_acquisition_comes_as_runs_of_one_delivery_count_in_a_row() -> None:
    sp, _ = fresh()
    assert sp.acquire("a", 5, 5, 100, deadline=100) == [Acquired(0, 4, 1)]
    assert sp.acknowledge("a", [(0, 4, [ACCEPT, RELEASE, RENEW, RELEASE, RELEASE])], 5, 100, 0) == (
        ErrorCode.NONE,
        None,
    )
    # 1, 3 and 4 delivered again (count 2), 2 still held by "a", 5 and 6 new (count 1).
    assert sp.acquire("b", 7, 10, 100, deadline=200) == [
        Acquired(1, 1, 2),
        Acquired(3, 4, 2),
        Acquired(5, 6, 1),
    ]
