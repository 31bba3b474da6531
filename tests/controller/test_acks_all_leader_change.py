"""An acks=all Produce whose leader changes in the loop turn of its append is answered
NOT_LEADER_OR_FOLLOWER (Kafka's ``DelayedProduce`` completes with it when the partition is no longer led
by the broker that appended), never with the offset that the new leader then gives to another record.

The waiter is registered at the append itself and compares leader epochs when it completes: an election
that lands between the append and the moment the Produce's answer starts waiting cannot leave a waiter
that the new leader's high watermark satisfies. The race is made exact with the project's own client: the
election is started by the append itself, before the handler has returned."""

from __future__ import annotations

import asyncio
from typing import Any

from controller.embedded import ServerThread
from controller.records.batch import client_batch
from controller.records.records import iter_records
from protocol.client import KafkaClient
from protocol.codes import ErrorCode

QUIET = {"auto.leader.rebalance.enable": "false", "simulator.replication.tick.ms": 100}


def _produce(value: bytes, acks: int) -> dict[str, Any]:
    return {
        "Acks": acks,
        "TimeoutMs": 30_000,
        "TopicData": [
            {"Name": "t", "PartitionData": [{"Index": 0, "Records": client_batch([(None, value)], 0)}]}
        ],
    }


def _leader_on_one_with_zero_in_sync(server: ServerThread) -> None:
    """Broker 1 leads t-0, broker 0 (the preferred leader) is back in the ISR: a preferred election moves
    the leadership to 0."""
    server.call(lambda: server.server.controller.cluster.add_topic("t", [[0, 1, 2]]))
    server.stop_broker(0, "controlled")  # the leadership moves to 1 at once
    server.advance(3_000)  # broker 0 stops at its next heartbeat
    server.start_broker(0)
    server.advance(3_000)  # registered, unfenced, back in the ISR
    state = server.partition_state("t", 0)
    assert (state.leader, sorted(state.isr)) == (1, [0, 1, 2])


def _elect_at_next_append(server: ServerThread) -> None:
    """The next append to t-0 starts a preferred election in the same loop turn, before the Produce
    handler has returned its answer."""
    data_path = server.server.controller.data_path
    append = data_path.append

    def append_then_elect(*args: Any, **kwargs: Any) -> Any:
        appended = append(*args, **kwargs)
        data_path.append = append
        asyncio.ensure_future(server.dynamics.elect("t", 0, "preferred"))
        return appended

    data_path.append = append_then_elect


def _values(server: ServerThread) -> list[tuple[int, bytes | None]]:
    def read() -> list[tuple[int, bytes | None]]:
        p = server.server.controller.cluster.partition("t", 0)
        log = server.server.controller.data_path.log_of(p, p.leader)
        out = []
        for batch in log.read(log.log_start_offset, p.high_watermark, 1 << 30):
            out += [(r.offset, r.value) for r in iter_records(batch.render())]
        return out

    result: list[tuple[int, bytes | None]] = server.call(read)
    return result


async def test_a_leader_change_in_the_turn_of_the_append_answers_not_leader_or_follower() -> None:
    with ServerThread.start(
        brokers=[(0, None), (1, None), (2, None)], clock="virtual", properties=QUIET
    ) as server:
        _leader_on_one_with_zero_in_sync(server)
        server.call(lambda: _elect_at_next_append(server))
        first = await asyncio.wait_for(KafkaClient.connect(server.brokers[1]), 10)
        second = await asyncio.wait_for(KafkaClient.connect(server.brokers[0]), 10)
        try:
            answer = asyncio.ensure_future(first.send("ProduceRequest", _produce(b"first", -1), version=9))
            for _ in range(500):  # the election the append started completes on the server's loop
                if server.partition_state("t", 0).leader == 0:
                    break
                await asyncio.sleep(0.01)
            assert server.partition_state("t", 0).leader == 0
            # Another producer writes to the new leader, whose log ends where broker 1 appended "first".
            other = await asyncio.wait_for(
                second.send("ProduceRequest", _produce(b"second", 1), version=9), 10
            )
            assert other["Responses"][0]["PartitionResponses"][0]["BaseOffset"] == 0
            for _ in range(3):
                await asyncio.to_thread(server.advance, 100)  # followers copy: the high watermark passes 0
            response = await asyncio.wait_for(answer, 10)
        finally:
            await first.close()
            await second.close()
        entry = response["Responses"][0]["PartitionResponses"][0]
        # Before the fix: NONE at offset 0, which holds "second"; "first" is nowhere and no loss says so.
        assert (entry["ErrorCode"], entry["BaseOffset"]) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
        assert server.partition_state("t", 0).high_watermark == 1
        assert _values(server) == [(0, b"second")]
        assert server.lost_records() == []  # "first" was never acknowledged
