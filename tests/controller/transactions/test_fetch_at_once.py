"""``simulator.replication.fetch.at.once``: followers copy a leader's append at once, as a Kafka leader
answers its followers' waiting fetches right after an append, not at the next replication tick. Pinned
on a virtual clock (where it is off by default) by moving the clock by nothing: whatever completes then
waited for no tick. A transaction's EndTxn is answered once PrepareCommit is replicated, and its
markers and CompleteCommit follow in the same instant; a follower that copies with a delay still waits
for the ticks, and so does everything with the setting off."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.embedded import ServerThread
from protocol.codes import ErrorCode
from tests.controller.transactions.test_failures import (
    TOPIC,
    TXN,
    make_topic,
    open_transaction,
    read_committed,
)
from tests.support.transactions import Wire, virtual_cluster

AT_ONCE = "simulator.replication.fetch.at.once"


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(4) as executor:
        yield executor


def end_in_no_time(server: ServerThread, wire: Wire, producer: tuple[int, int]) -> ErrorCode | None:
    """EndTxn (commit), the clock moved by 0 ms: its answer's error, None when it was not answered."""
    future = wire.later(
        "EndTxnRequest",
        {"TransactionalId": TXN, "ProducerId": producer[0], "ProducerEpoch": producer[1], "Committed": True},
        3,
    )
    time.sleep(0.2)  # the request reaches the server
    before = server.now()
    server.advance(0)
    time.sleep(0.2)
    assert server.now() == before
    return ErrorCode(future.result(10)["ErrorCode"]) if future.done() else None


def test_a_transaction_ends_in_no_time_when_followers_fetch_at_once(pool: ThreadPoolExecutor) -> None:
    with virtual_cluster(**{AT_ONCE: "true"}) as server:
        wire = Wire(server, pool)
        try:
            make_topic(wire)
            producer = open_transaction(server, wire, pool, [0, 1, 2])
            assert end_in_no_time(server, wire, producer) == ErrorCode.NONE
            state = server.transactions()[TXN]
            assert (state["state"], state["pending_markers"]) == ("CompleteCommit", [])
            for p in range(3):
                partition = server.partition_state(TOPIC, p)
                assert partition.high_watermark == 2  # the batch and its marker, on every replica
                assert sorted(partition.log_end_offsets.values()) == [2, 2, 2]
                assert read_committed(server, pool, p) == [b"v%d" % p]
        finally:
            wire.close()


@pytest.mark.parametrize("setting", ["false", "auto"])
def test_without_it_followers_copy_at_the_tick(pool: ThreadPoolExecutor, setting: str) -> None:
    with virtual_cluster(**{AT_ONCE: setting}) as server:
        wire = Wire(server, pool)
        try:
            make_topic(wire)
            producer = open_transaction(server, wire, pool, [0, 1, 2])
            assert end_in_no_time(server, wire, producer) is None  # PrepareCommit waits for a tick
            assert server.transactions()[TXN]["state"] == "Ongoing"
        finally:
            wire.close()


def test_a_follower_with_a_copy_delay_still_waits_for_the_ticks(pool: ThreadPoolExecutor) -> None:
    with virtual_cluster(**{AT_ONCE: "true"}) as server:
        wire = Wire(server, pool)
        try:
            make_topic(wire)
            producer = open_transaction(server, wire, pool, [0, 1, 2])
            for broker in server.brokers:
                server.set_replication(broker, delay_ms=50)
            assert end_in_no_time(server, wire, producer) is None
            assert server.transactions()[TXN]["state"] == "Ongoing"
            server.advance(1_000)
            assert server.transactions()[TXN]["state"] == "CompleteCommit"
        finally:
            wire.close()
