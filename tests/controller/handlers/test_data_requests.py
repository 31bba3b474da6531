"""Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords and InitProducerId on the wire, with
the project's own client (exact fields) and raw frames (acks=0). One server for the module; each test
makes its own topic."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from controller.embedded import ServerThread
from controller.records.records import iter_records
from controller.topic_admin import NewTopic
from protocol.client import BlockingClient
from protocol.codes import ErrorCode
from tests.controller.records.batches import NOW, build
from tests.support.rawwire import raw_connect, read_response, request_frame

_names = (f"d{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(
        brokers=[(1, None), (2, None), (3, None)],
        properties={"simulator.replication.tick.ms": 10, "auto.leader.rebalance.enable": "false"},
    ) as running:
        yield running


def _topic(server: ServerThread, rf: int = 3, **configs: str) -> str:
    name = next(_names)
    admin = server.server.controller.topic_admin
    [result] = server._on_loop(
        admin.create_topics(
            [NewTopic(name, 1, rf, configs={k.replace("_", "."): v for k, v in configs.items()})]
        )
    )
    assert result.error is None, result.message
    return name


def _client(server: ServerThread, broker: int | None = None) -> BlockingClient:
    address = server.bootstrap if broker is None else server.brokers[broker]
    return BlockingClient.connect(address, request_timeout=10.0)


def _produce(
    client: BlockingClient,
    topic: str,
    records: bytes,
    acks: int = 1,
    version: int = 9,
    timeout_ms: int = 5000,
) -> dict[str, Any]:
    response = client.send(
        "ProduceRequest",
        {
            "Acks": acks,
            "TimeoutMs": timeout_ms,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": records}]}],
        },
        version=version,
    )
    [topic_response] = response["Responses"]
    [partition] = topic_response["PartitionResponses"]
    return partition


def _fetch(
    client: BlockingClient,
    topic: str,
    offset: int,
    version: int = 11,
    wait_ms: int = 0,
    epoch: int = -1,
    isolation: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    response = client.send(
        "FetchRequest",
        {
            "ReplicaId": -1,
            "IsolationLevel": isolation,
            "MaxWaitMs": wait_ms,
            "MinBytes": 1,
            "MaxBytes": 1 << 20,
            "Topics": [
                {
                    "Topic": topic,
                    "Partitions": [
                        {
                            "Partition": 0,
                            "FetchOffset": offset,
                            "PartitionMaxBytes": 1 << 20,
                            "CurrentLeaderEpoch": epoch,
                            **extra,
                        }
                    ],
                }
            ],
        },
        version=version,
    )
    [topic_response] = response["Responses"]
    [partition] = topic_response["Partitions"]
    return partition


def _leader(server: ServerThread, topic: str) -> int:
    return server.partition_state(topic, 0).leader


def _keys(records: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.key) for r in iter_records(records)]


def test_acks_1_appends_at_the_leader_and_a_fetch_reads_it_back_below_the_high_watermark(server) -> None:
    topic = _topic(server)
    with _client(server, _leader(server, topic)) as client:
        first = _produce(client, topic, build(3))
        second = _produce(client, topic, build(2))
        assert (first["ErrorCode"], first["BaseOffset"], second["BaseOffset"]) == (0, 0, 3)
        server.wait_until(lambda: server.partition_state(topic, 0).high_watermark == 5, timeout=10)
        fetched = _fetch(client, topic, 0)
        assert (fetched["ErrorCode"], fetched["HighWatermark"], fetched["LastStableOffset"]) == (0, 5, 5)
        assert _keys(fetched["Records"]) == [(0, b"k0"), (1, b"k1"), (2, b"k2"), (3, b"k0"), (4, b"k1")]
        assert _keys(_fetch(client, topic, 3)["Records"]) == [(3, b"k0"), (4, b"k1")]
        assert _fetch(client, topic, 5)["Records"] == b""
        out_of_range = _fetch(client, topic, 6)
        assert (out_of_range["ErrorCode"], out_of_range["HighWatermark"]) == (
            ErrorCode.OFFSET_OUT_OF_RANGE,
            -1,
        )


def test_acks_all_is_answered_once_the_high_watermark_covers_the_batch(server) -> None:
    topic = _topic(server)
    with _client(server, _leader(server, topic)) as client:
        answer = _produce(client, topic, build(4), acks=-1)
        assert (answer["ErrorCode"], answer["BaseOffset"]) == (0, 0)
        state = server.partition_state(topic, 0)
        assert state.high_watermark >= 4
        assert min(state.log_end_offsets.values()) >= 4


def test_acks_all_with_a_minimum_above_the_replica_count_is_written(server) -> None:
    # A minimum above the replica count is the replica count (Kafka's Partition.effectiveMinIsr: Kafka 4.4
    # writes a one-replica topic with min.insync.replicas=5, as the differential benchmark found). The
    # refusal below the minimum: tests/clients/test_data_path_min_isr.py and tests/controller/faults/.
    topic = _topic(server, rf=1, min_insync_replicas="4")
    with _client(server, _leader(server, topic)) as client:
        written = _produce(client, topic, build(1), acks=-1)
        assert (written["ErrorCode"], written["BaseOffset"]) == (ErrorCode.NONE, 0)
        assert _fetch(client, topic, 0)["HighWatermark"] == 1


def test_a_broker_that_does_not_lead_answers_not_leader_with_the_current_leader(server) -> None:
    topic = _topic(server)
    state = server.partition_state(topic, 0)
    other = next(b for b in (1, 2, 3) if b != state.leader)
    with _client(server, other) as client:
        response = client.send(
            "ProduceRequest",
            {
                "Acks": 1,
                "TimeoutMs": 1000,
                "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": build(1)}]}],
            },
            version=10,
        )
        [partition] = response["Responses"][0]["PartitionResponses"]
        assert partition["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert partition["CurrentLeader"] == {"LeaderId": state.leader, "LeaderEpoch": state.leader_epoch}
        host, port = server.brokers[state.leader].split(":")
        assert response["NodeEndpoints"] == [
            {"NodeId": state.leader, "Host": host, "Port": int(port), "Rack": None}
        ]
        fetched = _fetch(client, topic, 0, version=10)  # no client metadata: the leader alone serves it
        assert fetched["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    outsider_topic = _topic(server, rf=1)
    leader = server.partition_state(outsider_topic, 0).leader
    with _client(server, next(b for b in (1, 2, 3) if b != leader)) as client:
        fetched = _fetch(client, outsider_topic, 0, version=12)  # a broker that holds no replica
        assert fetched["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert fetched["CurrentLeader"] == {"LeaderId": leader, "LeaderEpoch": 0}


def test_a_consumers_fetch_v11_reaching_a_follower_is_served_from_its_log(server) -> None:
    topic = _topic(server, rf=2)
    state = server.partition_state(topic, 0)
    follower = next(b for b in state.replicas if b != state.leader)
    with _client(server, state.leader) as client:
        assert _produce(client, topic, build(3))["ErrorCode"] == 0
    server.wait_until(lambda: server.partition_state(topic, 0).high_watermark == 3, timeout=10)
    with _client(server, follower) as client:
        fetched = _fetch(client, topic, 0, version=11)
        assert (fetched["ErrorCode"], fetched["HighWatermark"], fetched["PreferredReadReplica"]) == (0, 3, -1)
        assert _keys(fetched["Records"]) == [(0, b"k0"), (1, b"k1"), (2, b"k2")]
        assert _fetch(client, topic, 1, version=12)["ErrorCode"] == ErrorCode.NONE
        assert _fetch(client, topic, 0, version=10)["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_acks_0_is_never_answered_and_a_refused_one_closes_the_connection(server) -> None:
    topic = _topic(server)
    produce = {
        "Acks": 0,
        "TimeoutMs": 1000,
        "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": build(2)}]}],
    }
    with raw_connect(server.brokers[_leader(server, topic)]) as sock:
        sock.sendall(request_frame(0, 9, produce, correlation_id=7))
        sock.sendall(request_frame(3, 1, {"Topics": [{"Name": topic}]}, correlation_id=8))
        frame = read_response(sock)
        assert (
            frame is not None and struct.unpack_from(">i", frame)[0] == 8
        )  # the Metadata answer comes first
    server.wait_until(
        lambda: server.partition_state(topic, 0).log_end_offsets[_leader(server, topic)] == 2, timeout=10
    )
    unknown = {
        **produce,
        "TopicData": [{"Name": "no-such-topic", "PartitionData": [{"Index": 0, "Records": build(1)}]}],
    }
    with raw_connect(server.bootstrap) as sock:
        sock.sendall(request_frame(0, 9, unknown, correlation_id=9))
        assert read_response(sock) is None
    # A request refused as a whole (a transactional batch without a transactional id) closes it too, as
    # Kafka 4.4 does (the differential tests found it).
    stray = {
        **produce,
        "TopicData": [
            {
                "Name": topic,
                "PartitionData": [{"Index": 0, "Records": build(1, producer=(7, 0, 0), transactional=True)}],
            }
        ],
    }
    with raw_connect(server.brokers[_leader(server, topic)]) as sock:
        sock.sendall(request_frame(0, 9, stray, correlation_id=10))
        assert read_response(sock) is None


def test_invalid_acks_and_stray_transactional_batches_are_refused_as_kafka_refuses_them(server) -> None:
    topic = _topic(server)

    def produce(transactional_id: str | None, records: bytes, partitions=(0,)) -> list[tuple[int, int]]:
        response = client.send(
            "ProduceRequest",
            {
                "TransactionalId": transactional_id,
                "Acks": -1,
                "TimeoutMs": 1000,
                "TopicData": [
                    {"Name": topic, "PartitionData": [{"Index": i, "Records": records} for i in partitions]}
                ],
            },
            version=9,
            timeout=10,
        )
        return [(p["Index"], p["ErrorCode"]) for p in response["Responses"][0]["PartitionResponses"]]

    with _client(server) as client:
        # A partition that does not exist is told so first, then invalid acks (Kafka's order).
        response = client.send(
            "ProduceRequest",
            {
                "Acks": 2,
                "TimeoutMs": 1000,
                "TopicData": [
                    {"Name": topic, "PartitionData": [{"Index": i, "Records": build(1)} for i in (0, 99)]}
                ],
            },
            version=9,
        )
        codes = [(p["Index"], p["ErrorCode"]) for p in response["Responses"][0]["PartitionResponses"]]
        assert codes == [(0, ErrorCode.INVALID_REQUIRED_ACKS), (99, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        # The form of the records (ProduceRequest.validateRecords) before the acks: a batch of magic 1.
        magic1 = bytearray(build(1))
        magic1[16] = 1
        response = client.send(
            "ProduceRequest",
            {
                "Acks": 2,
                "TimeoutMs": 1000,
                "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": bytes(magic1)}]}],
            },
            version=9,
        )
        [answer] = response["Responses"][0]["PartitionResponses"]
        assert (answer["ErrorCode"], answer["ErrorMessage"]) == (
            ErrorCode.INVALID_RECORD,
            "Produce requests with version 9 are only allowed to contain record batches with magic version 2",
        )
        # Transactional batches without a transactional id: Kafka refuses the whole request.
        stray = build(1, producer=(7, 0, 0), transactional=True)
        assert produce(None, stray, (0, 99)) == [
            (0, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            (99, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        ]
        # A TransactionalId on a request of plain batches is no transaction: the batch is appended.
        assert produce("tx", build(1)) == [(0, ErrorCode.NONE)]
        assert server.transactions() == {}


def test_idempotent_producers_get_new_ids_and_retried_batches_their_original_offsets(server) -> None:
    topic = _topic(server)
    with _client(server) as client:
        ids = [
            client.send(
                "InitProducerIdRequest", {"TransactionalId": None, "TransactionTimeoutMs": 1000}, version=v
            )
            for v in (0, 5)
        ]
        assert [(i["ErrorCode"], i["ProducerEpoch"]) for i in ids] == [(0, 0), (0, 0)]
        producer_id = ids[1]["ProducerId"]
        assert producer_id == ids[0]["ProducerId"] + 1
        batch = build(3, producer=(producer_id, 0, 0))
        assert _produce(client, topic, batch)["BaseOffset"] == 0
        assert _produce(client, topic, build(2, producer=(producer_id, 0, 3)))["BaseOffset"] == 3
        retried = _produce(client, topic, batch)
        assert (retried["ErrorCode"], retried["BaseOffset"]) == (0, 0)
        gap = _produce(client, topic, build(1, producer=(producer_id, 0, 9)))
        assert gap["ErrorCode"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        server.wait_until(lambda: server.partition_state(topic, 0).high_watermark == 5, timeout=10)
        assert [o for o, _ in _keys(_fetch(client, topic, 0)["Records"])] == [0, 1, 2, 3, 4]


def test_fetch_checks_the_clients_leader_epoch_and_finds_a_diverging_one(server) -> None:
    topic = _topic(server)
    with _client(server) as client:
        _produce(client, topic, build(2), acks=-1)
        epoch = server.partition_state(topic, 0).leader_epoch
        assert _fetch(client, topic, 0, epoch=epoch)["ErrorCode"] == 0
        assert _fetch(client, topic, 0, epoch=epoch + 1)["ErrorCode"] == ErrorCode.UNKNOWN_LEADER_EPOCH
        # v12+: the leader is named for a fenced epoch, not for one it does not know (as Kafka 4.4).
        ahead = _fetch(client, topic, 0, version=12, epoch=epoch + 1)
        assert (ahead["ErrorCode"], ahead["CurrentLeader"]["LeaderId"]) == (
            ErrorCode.UNKNOWN_LEADER_EPOCH,
            -1,
        )
        diverging = _fetch(client, topic, 5, version=12, epoch=epoch, LastFetchedEpoch=epoch)
        assert diverging["DivergingEpoch"] == {"Epoch": epoch, "EndOffset": 2}
        assert diverging["Records"] == b""
        # An empty read, read_committed too: no AbortedTransactions list (null), as Kafka 4.4 answers;
        # a read_committed read that reads has one.
        committed = _fetch(client, topic, 5, version=12, epoch=epoch, isolation=1, LastFetchedEpoch=epoch)
        assert (committed["DivergingEpoch"], committed["AbortedTransactions"]) == (
            {"Epoch": epoch, "EndOffset": 2},
            None,
        )
        assert _fetch(client, topic, 0, version=12, epoch=epoch, isolation=1)["AbortedTransactions"] == []
        # An epoch past the leader's latest is unknown to its cache: Kafka answers it undefined.
        unknown_epoch = _fetch(client, topic, 1, version=12, epoch=epoch, LastFetchedEpoch=epoch + 3)
        assert unknown_epoch["DivergingEpoch"] == {"Epoch": -1, "EndOffset": -1}
        assert unknown_epoch["ErrorCode"] == ErrorCode.OFFSET_OUT_OF_RANGE  # its end offset is undefined
        assert _fetch(client, topic, 1, version=12, epoch=epoch, LastFetchedEpoch=epoch)[
            "DivergingEpoch"
        ] == {
            "Epoch": -1,
            "EndOffset": -1,
        }  # no divergence: the default


def test_a_long_poll_is_answered_when_records_arrive(server) -> None:
    topic = _topic(server)
    leader = _leader(server, topic)
    with _client(server, leader) as consumer, _client(server, leader) as producer:
        import threading

        result: dict[str, Any] = {}
        waiting = threading.Thread(target=lambda: result.update(_fetch(consumer, topic, 0, wait_ms=8000)))
        waiting.start()
        server.wait_until(lambda: server.stats["requests:1"] >= 1, timeout=10)
        _produce(producer, topic, build(2), acks=-1)
        waiting.join(10)
        assert _keys(result["Records"]) == [(0, b"k0"), (1, b"k1")]


def test_list_offsets_answers_latest_earliest_max_timestamp_and_by_timestamp(server) -> None:
    topic = _topic(server)
    entries = [(1_000 + 10 * i, b"k%d" % i, b"v", []) for i in range(3)]
    now = server.server.controller.data_path.now_ms()
    with _client(server) as client:
        _produce(client, topic, build([(now - 1000 + t, k, v, h) for t, k, v, h in entries]), acks=-1)
        _produce(client, topic, build([(now - 2000, b"old", b"v", [])]), acks=-1)

        def lookup(timestamp: int) -> tuple[int, int, int]:
            response = client.send(
                "ListOffsetsRequest",
                {
                    "ReplicaId": -1,
                    "IsolationLevel": 0,
                    "Topics": [
                        {
                            "Name": topic,
                            "Partitions": [
                                {"PartitionIndex": 0, "Timestamp": timestamp, "CurrentLeaderEpoch": -1}
                            ],
                        }
                    ],
                },
                version=7,
            )
            [p] = response["Topics"][0]["Partitions"]
            return p["ErrorCode"], p["Offset"], p["Timestamp"]

        assert lookup(-1) == (0, 4, -1)
        assert lookup(-2) == (0, 0, -1)
        assert lookup(-3) == (0, 2, now - 1000 + 1020)
        assert lookup(now - 1000 + 1005) == (0, 1, now - 1000 + 1010)
        assert lookup(now + 10_000) == (0, -1, -1)


def test_offset_for_leader_epoch_and_delete_records(server) -> None:
    topic = _topic(server)
    with _client(server) as client:
        _produce(client, topic, build(3), acks=-1)
        _produce(client, topic, build(3), acks=-1)
        epoch = server.partition_state(topic, 0).leader_epoch
        response = client.send(
            "OffsetForLeaderEpochRequest",
            {
                "ReplicaId": -1,
                "Topics": [
                    {
                        "Topic": topic,
                        "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": epoch, "LeaderEpoch": epoch}],
                    }
                ],
            },
            version=4,
        )
        [p] = response["Topics"][0]["Partitions"]
        assert (p["ErrorCode"], p["LeaderEpoch"], p["EndOffset"]) == (0, epoch, 6)

        def delete(offset: int) -> tuple[int, int]:
            answer = client.send(
                "DeleteRecordsRequest",
                {
                    "TimeoutMs": 1000,
                    "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": 0, "Offset": offset}]}],
                },
                version=2,
            )
            [d] = answer["Topics"][0]["Partitions"]
            return d["ErrorCode"], d["LowWatermark"]

        assert delete(7) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
        assert delete(3) == (0, 3)
        assert _fetch(client, topic, 2)["ErrorCode"] == ErrorCode.OFFSET_OUT_OF_RANGE
        assert _keys(_fetch(client, topic, 3)["Records"])[0] == (3, b"k0")
        assert delete(-1) == (0, 6)
    # A compacted topic's records cannot be deleted, whatever the offset (Kafka checks the policy first);
    # an empty policy (nothing cleaned) is no compacted topic: Kafka 4.4 deletes its records.
    for policy, offset, expected in (("compact", 5, (ErrorCode.POLICY_VIOLATION, -1)), ("", 0, (0, 0))):
        named = _topic(server, cleanup_policy=policy)
        with _client(server, _leader(server, named)) as client:
            answer = client.send(
                "DeleteRecordsRequest",
                {
                    "TimeoutMs": 1000,
                    "Topics": [{"Name": named, "Partitions": [{"PartitionIndex": 0, "Offset": offset}]}],
                },
                version=2,
            )
        [d] = answer["Topics"][0]["Partitions"]
        assert (d["ErrorCode"], d["LowWatermark"]) == expected, policy


@pytest.fixture(scope="module")
def virtual() -> Iterator[ServerThread]:
    with ServerThread.start(
        brokers=[(1, None), (2, None), (3, None)],
        clock="virtual",
        properties={"auto.leader.rebalance.enable": "false"},
    ) as running:
        yield running


def _produce_in_background(client: BlockingClient, topic: str, timeout_ms: int) -> tuple[Any, dict[str, Any]]:
    import threading

    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.update(_produce(client, topic, build(1), acks=-1, timeout_ms=timeout_ms))
    )
    thread.start()
    return thread, result


def test_acks_all_times_out_on_the_cluster_clock_when_followers_do_not_copy(virtual) -> None:
    topic = _topic(virtual)
    for follower in (2, 3):
        virtual.set_replication(follower, records_per_s=0)
    with _client(virtual, _leader(virtual, topic)) as client:
        thread, result = _produce_in_background(client, topic, timeout_ms=1000)
        virtual.wait_until(lambda: virtual.partition_state(topic, 0).log_end_offsets[1] == 1, timeout=10)
        virtual.advance(999)
        assert thread.is_alive()  # still waiting: the timeout is virtual time
        virtual.advance(1)
        thread.join(10)
        assert (result["ErrorCode"], result["BaseOffset"]) == (ErrorCode.REQUEST_TIMED_OUT, -1)
    for follower in (2, 3):
        virtual.set_replication(follower, records_per_s=None)
    virtual.advance(100)


def test_acks_all_is_answered_at_the_tick_of_the_last_followers_copy(virtual) -> None:
    """The answer needs no clock time past the replication tick at which the last follower copies the
    batch: it goes out at that tick, as the high watermark reaches the batch's end."""
    topic = _topic(virtual)
    leader = _leader(virtual, topic)
    with _client(virtual, leader) as client:
        thread, result = _produce_in_background(client, topic, timeout_ms=60_000)
        virtual.wait_until(lambda: virtual.partition_state(topic, 0).log_end_offsets[leader] == 1, timeout=10)
        state = virtual.partition_state(topic, 0)
        assert (state.high_watermark, sorted(state.log_end_offsets.values())) == (0, [0, 0, 1])
        assert thread.is_alive()  # no clock time has passed: nobody copied, the answer waits
        virtual.advance(100)  # one tick of simulator.replication.tick.ms: both followers copy
        thread.join(10)
        assert not thread.is_alive()
        assert (result["ErrorCode"], result["BaseOffset"]) == (0, 0)
        state = virtual.partition_state(topic, 0)
        assert (state.high_watermark, sorted(state.log_end_offsets.values())) == (1, [1, 1, 1])
        fetched = _fetch(client, topic, 0)  # a consumer reads the acknowledged record back
        assert (fetched["ErrorCode"], fetched["HighWatermark"]) == (0, 1)
        assert _keys(fetched["Records"]) == [(0, b"k0")]


def test_acks_all_answers_not_leader_when_leadership_moves_while_it_waits(virtual) -> None:
    topic = _topic(virtual)
    for follower in (2, 3):
        virtual.set_replication(follower, records_per_s=0)
    leader = _leader(virtual, topic)
    with _client(virtual, leader) as client:
        thread, result = _produce_in_background(client, topic, timeout_ms=60_000)
        virtual.wait_until(lambda: virtual.partition_state(topic, 0).log_end_offsets[leader] == 1, timeout=10)
        virtual.stop_broker(leader, "isolate")  # still answers its clients; the controller fences it
        virtual.advance(9000)
        thread.join(10)
        assert result["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert virtual.partition_state(topic, 0).leader != leader
    virtual.start_broker(leader)
    for follower in (2, 3):
        virtual.set_replication(follower, records_per_s=None)
    virtual.advance(3000)


def test_after_an_election_latest_is_not_available_until_the_high_watermark_reaches_the_new_epoch(
    virtual,
) -> None:
    topic = _topic(virtual)
    leader = _leader(virtual, topic)
    copying, stalled = [r for r in virtual.partition_state(topic, 0).replicas if r != leader]
    virtual.set_replication(stalled, records_per_s=0)  # in the ISR, but copies nothing: the HW stays
    with _client(virtual, leader) as client:
        _produce(client, topic, build(2))
    virtual.advance(100)
    before = virtual.partition_state(topic, 0)
    assert (before.log_end_offsets, before.high_watermark) == ({leader: 2, copying: 2, stalled: 0}, 0)
    virtual.stop_broker(leader, "isolate")
    virtual.advance(9000)
    after = virtual.partition_state(topic, 0)
    assert (after.leader, after.leader_epoch) == (copying, before.leader_epoch + 1)

    def latest(client: BlockingClient) -> tuple[int, int]:
        response = client.send(
            "ListOffsetsRequest",
            {
                "ReplicaId": -1,
                "IsolationLevel": 0,
                "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": 0, "Timestamp": -1}]}],
            },
            version=7,
        )
        [p] = response["Topics"][0]["Partitions"]
        return p["ErrorCode"], p["Offset"]

    with _client(virtual, copying) as client:
        assert latest(client) == (ErrorCode.OFFSET_NOT_AVAILABLE, -1)
        assert (
            _fetch(client, topic, 0, epoch=before.leader_epoch)["ErrorCode"] == ErrorCode.FENCED_LEADER_EPOCH
        )
        virtual.set_replication(stalled, records_per_s=None)
        virtual.advance(100)
        assert latest(client) == (0, 2)
    virtual.start_broker(leader)
    virtual.advance(3000)


def test_the_synthetic_workload_is_read_as_null_records_beside_client_batches(server) -> None:
    topic = _topic(server)
    with _client(server, _leader(server, topic)) as client:
        _produce(client, topic, build(2), acks=-1)
        server.produce_load(topic, 1000)
        server.wait_until(lambda: server.partition_state(topic, 0).high_watermark >= 20, timeout=10)
        server.produce_load(topic, 0)
        appended = _produce(client, topic, build(1), acks=-1)
        records = list(iter_records(_fetch(client, topic, 0)["Records"]))
    offsets = [r.offset for r in records]
    assert offsets == list(range(appended["BaseOffset"] + 1))
    assert [(r.key, r.value) for r in records[2:-1]] == [(None, None)] * (appended["BaseOffset"] - 2)
    assert (records[0].key, records[-1].key) == (b"k0", b"k0")


def test_a_long_poll_on_the_virtual_clock_is_answered_without_the_clock_moving(virtual) -> None:
    topic = _topic(virtual)
    now = virtual.now()
    with _client(virtual, _leader(virtual, topic)) as client:
        answer = _fetch(client, topic, 0, wait_ms=200)  # MaxWaitMs of real time bounds it too
    assert (answer["ErrorCode"], answer["Records"]) == (0, b"")
    assert virtual.now() == now


def test_produce_v13_and_fetch_v13_name_topics_by_id(server) -> None:
    import uuid

    topic = _topic(server)
    topic_id = server.call(lambda: server.server.controller.cluster.topics[topic].topic_id)
    unknown = uuid.UUID(int=1)
    with _client(server) as client:

        def produce(ident: uuid.UUID) -> dict[str, Any]:
            response = client.send(
                "ProduceRequest",
                {
                    "Acks": -1,
                    "TimeoutMs": 5000,
                    "TopicData": [{"TopicId": ident, "PartitionData": [{"Index": 0, "Records": build(2)}]}],
                },
                version=13,
            )
            [t] = response["Responses"]
            return {"TopicId": t["TopicId"], **t["PartitionResponses"][0]}

        def fetch(ident: uuid.UUID) -> dict[str, Any]:
            response = client.send(
                "FetchRequest",
                {
                    "MaxWaitMs": 0,
                    "MinBytes": 1,
                    "MaxBytes": 1 << 20,
                    "Topics": [
                        {
                            "TopicId": ident,
                            "Partitions": [{"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 1 << 20}],
                        }
                    ],
                },
                version=13,
            )
            [t] = response["Responses"]
            return {"TopicId": t["TopicId"], **t["Partitions"][0]}

        produced = produce(topic_id)
        assert (produced["TopicId"], produced["ErrorCode"], produced["BaseOffset"]) == (topic_id, 0, 0)
        assert produce(unknown)["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_ID
        fetched = fetch(topic_id)
        assert (fetched["TopicId"], fetched["HighWatermark"]) == (topic_id, 2)
        assert _keys(fetched["Records"]) == [(0, b"k0"), (1, b"k1")]
        assert fetch(unknown)["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_long_polls_on_an_idle_partition_leave_no_waits_behind(virtual) -> None:
    topic = _topic(virtual)
    with _client(virtual, _leader(virtual, topic)) as client:
        for _ in range(100):
            assert _fetch(client, topic, 0, wait_ms=1)["Records"] == b""

    def waits() -> int:
        return len(virtual.server.controller.data_path._watchers.get((topic, 0), []))

    assert virtual.call(waits) == 0


def _alter(client: BlockingClient, resource_type: int, name: str, key: str, value: str | None) -> None:
    operation = 0 if value is not None else 1  # SET, DELETE
    answer = client.send(
        "IncrementalAlterConfigsRequest",
        {
            "Resources": [
                {
                    "ResourceType": resource_type,
                    "ResourceName": name,
                    "Configs": [{"Name": key, "ConfigOperation": operation, "Value": value}],
                }
            ],
            "ValidateOnly": False,
        },
        version=1,
    )
    assert [(r["ErrorCode"], r["ErrorMessage"]) for r in answer["Responses"]] == [(0, None)]


def test_topic_and_broker_configs_altered_at_run_time_apply_to_the_next_produce(server) -> None:
    topic, other = _topic(server), _topic(server)
    with _client(server, _leader(server, topic)) as client:
        assert _produce(client, topic, build(3))["ErrorCode"] == 0
        _alter(client, 2, topic, "max.message.bytes", "20")  # the topic's own
        assert _produce(client, topic, build(3))["ErrorCode"] == ErrorCode.MESSAGE_TOO_LARGE
    with _client(server, _leader(server, other)) as client:
        assert _produce(client, other, build(3))["ErrorCode"] == 0
        _alter(client, 4, "", "message.max.bytes", "20")  # every broker's default: the topic's synonym
        try:
            assert _produce(client, other, build(3))["ErrorCode"] == ErrorCode.MESSAGE_TOO_LARGE
        finally:
            _alter(client, 4, "", "message.max.bytes", None)
        assert _produce(client, other, build(3))["ErrorCode"] == 0


def _describe_producers(client: BlockingClient, topics: dict[str, list[int]]) -> list[dict[str, Any]]:
    response = client.send(
        "DescribeProducersRequest",
        {"Topics": [{"Name": t, "PartitionIndexes": ps} for t, ps in topics.items()]},
        version=0,
    )
    return [{"topic": t["Name"], **p} for t in response["Topics"] for p in t["Partitions"]]


def test_describe_producers_lists_each_producers_state_from_any_replica(server) -> None:
    topic, quiet, single = _topic(server), _topic(server), _topic(server, rf=1)
    with _client(server) as client:
        ids = [
            client.send(
                "InitProducerIdRequest", {"TransactionalId": None, "TransactionTimeoutMs": 1000}, version=4
            )["ProducerId"]
            for _ in range(2)
        ]
        assert _produce(client, topic, build(3, producer=(ids[0], 0, 0)))["ErrorCode"] == 0
        assert _produce(client, topic, build(2, producer=(ids[0], 0, 3)))["ErrorCode"] == 0
        assert _produce(client, topic, build(1, producer=(ids[1], 0, 0)))["ErrorCode"] == 0
        assert _produce(client, topic, build(1))["ErrorCode"] == 0  # no producer id: not listed
        server.wait_until(lambda: server.partition_state(topic, 0).high_watermark == 7, timeout=10)
        expected = [
            {
                "ProducerId": pid,
                "ProducerEpoch": 0,
                "LastSequence": last,
                "LastTimestamp": NOW,
                "CoordinatorEpoch": -1,
                "CurrentTxnStartOffset": -1,
            }
            for pid, last in ((ids[0], 4), (ids[1], 0))
        ]
        answer = _describe_producers(client, {topic: [0, 1], quiet: [0], "nope": [0]})
        assert [(a["topic"], a["PartitionIndex"], a["ErrorCode"], a["ActiveProducers"]) for a in answer] == [
            (topic, 0, 0, expected),
            (topic, 1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
            (quiet, 0, 0, []),
            ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
        ]
    state = server.partition_state(topic, 0)
    for broker in state.replicas:  # a follower answers from its own copy of the log, as the leader does
        with _client(server, broker) as client:
            [answer] = _describe_producers(client, {topic: [0]})
            assert (answer["ErrorCode"], answer["ActiveProducers"]) == (0, expected)
    [holder] = server.partition_state(single, 0).replicas
    other = next(b for b in server.brokers if b != holder)
    with _client(server, other) as client:
        [answer] = _describe_producers(client, {single: [0]})
        assert answer["ErrorCode"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
