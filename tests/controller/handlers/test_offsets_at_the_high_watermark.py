"""What a client sees of a leader's records above the high watermark (appended, not yet committed):
ListOffsets LATEST answers the high watermark, never the leader's log end, and a lookup by timestamp never
names an offset at or above it; DeleteRecords refuses an offset above it, and the log start it moves
moves on every replica. On a virtual clock, with the project's own client: the followers copy nothing
while the records above the high watermark are looked at."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from protocol.client import BlockingClient
from protocol.codes import ErrorCode
from tests.controller.records.batches import build


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread.start(
        brokers=[(0, None), (1, None), (2, None)],
        clock="virtual",
        properties={"auto.leader.rebalance.enable": "false", "replica.lag.time.max.ms": 60_000},
    ) as running:
        running.call(lambda: running.server.controller.cluster.add_topic("t", [[0, 1, 2]]))
        yield running


def _produce(client: BlockingClient, records: bytes) -> int:
    response = client.send(
        "ProduceRequest",
        {
            "Acks": 1,
            "TimeoutMs": 1000,
            "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": records}]}],
        },
        version=9,
    )
    [partition] = response["Responses"][0]["PartitionResponses"]
    assert partition["ErrorCode"] == ErrorCode.NONE
    return int(partition["BaseOffset"])


def _list_offsets(client: BlockingClient, timestamp: int) -> tuple[int, int, int]:
    response = client.send(
        "ListOffsetsRequest",
        {
            "ReplicaId": -1,
            "IsolationLevel": 0,
            "Topics": [
                {
                    "Name": "t",
                    "Partitions": [{"PartitionIndex": 0, "Timestamp": timestamp, "CurrentLeaderEpoch": -1}],
                }
            ],
        },
        version=7,
    )
    [p] = response["Topics"][0]["Partitions"]
    return p["ErrorCode"], p["Offset"], p["Timestamp"]


def _delete(client: BlockingClient, offset: int) -> tuple[int, int]:
    response = client.send(
        "DeleteRecordsRequest",
        {
            "TimeoutMs": 1000,
            "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "Offset": offset}]}],
        },
        version=2,
    )
    [d] = response["Topics"][0]["Partitions"]
    return d["ErrorCode"], d["LowWatermark"]


def _committed_two_then_three_above(server: ServerThread, client: BlockingClient, now: int) -> None:
    """Offsets 0-1 committed (timestamps now-5000, now-4000), 2-4 on the leader alone (now-3000 ...)."""
    _produce(client, build([(now - 5000, b"a", b"v", []), (now - 4000, b"b", b"v", [])]))
    server.advance(100)  # copied: committed
    for follower in (1, 2):
        server.set_replication(follower, records_per_s=0)
    _produce(client, build([(now - 3000 + 1000 * i, b"c%d" % i, b"v", []) for i in range(3)]))
    state = server.partition_state("t", 0)
    assert (state.high_watermark, state.log_end_offsets) == (2, {0: 5, 1: 2, 2: 2})


def test_list_offsets_never_names_an_offset_at_or_above_the_high_watermark(server: ServerThread) -> None:
    now = server.server.controller.data_path.now_ms()
    with BlockingClient.connect(server.brokers[0]) as client:
        _committed_two_then_three_above(server, client, now)
        assert _list_offsets(client, -1) == (ErrorCode.NONE, 2, -1)  # LATEST: the high watermark, not 5
        assert _list_offsets(client, now - 4000) == (ErrorCode.NONE, 1, now - 4000)
        # The first record at or after now-3500 is offset 2, at the high watermark: not committed yet.
        assert _list_offsets(client, now - 3500) == (ErrorCode.NONE, -1, -1)
        assert _list_offsets(client, -3) == (ErrorCode.NONE, -1, -1)  # the max timestamp is above it too
        for follower in (1, 2):
            server.set_replication(follower, records_per_s=None)
        server.advance(100)
        assert _list_offsets(client, -1) == (ErrorCode.NONE, 5, -1)
        assert _list_offsets(client, now - 3500) == (ErrorCode.NONE, 2, now - 3000)


def test_delete_records_stops_at_the_high_watermark_and_moves_every_replicas_log_start(
    server: ServerThread,
) -> None:
    now = server.server.controller.data_path.now_ms()
    with BlockingClient.connect(server.brokers[0]) as client:
        _committed_two_then_three_above(server, client, now)
        assert _delete(client, 3) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)  # above the high watermark (2)
        assert _delete(client, 1) == (ErrorCode.NONE, 1)

        def starts() -> dict[int, int]:
            p = server.server.controller.cluster.partition("t", 0)
            data_path = server.server.controller.data_path
            return {b: data_path.log_of(p, b).log_start_offset for b in p.replicas}

        assert server.call(starts) == {0: 1, 1: 1, 2: 1}
        assert _delete(client, -1) == (ErrorCode.NONE, 2)  # -1: the high watermark
        assert server.call(starts) == {0: 2, 1: 2, 2: 2}
