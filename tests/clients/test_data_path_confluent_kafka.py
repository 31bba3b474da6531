"""confluent-kafka (librdkafka) on the data path: an idempotent producer with acks=all, and a consumer that
assigns partitions itself. A librdkafka consumer needs a group.id; with assign() and no commits it finds
its coordinator (FindCoordinator, as every librdkafka consumer does at start) but joins no group: Fetch
and ListOffsets carry its records. Through a leader crash (clean election) the producer continues and nothing it was
told was delivered is lost."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from controller.embedded import ServerThread
from protocol.codes import ApiKey
from tests.clients.conftest import WireLog
from tests.clients.data_path_support import (
    BULK,
    BULK_REPLICAS,
    PARTITIONS,
    UNCLEAN,
    bulk_record,
    by_partition,
    codecs_stored,
    crash_leader_until,
    end_offset_for_epoch,
    expected_by_partition,
    lost_offsets,
    new_topic,
    readable,
    start_cluster,
    wait_until_the_leader_alone_commits,
)

CLIENT = "confluent-kafka"


@pytest.fixture(scope="module")
def cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    with start_cluster() as server:
        yield server
        wire_log.assert_clean(server)


def _producer(server: ServerThread) -> Producer:
    return Producer(
        {
            "bootstrap.servers": server.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 30_000,
            "socket.timeout.ms": 5000,
        }
    )


def _consume(server: ServerThread, topic: str, partitions: int, count: int) -> list[tuple[int, int, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "socket.timeout.ms": 5000,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append((message.partition(), message.offset(), message.value()))
        return got
    finally:
        consumer.close()


def test_what_is_read_is_exactly_what_was_delivered_in_order(cluster: ServerThread) -> None:
    topic = new_topic(cluster, [[0, 1, 2], [1, 2, 0]])
    producer = _producer(cluster)
    delivered: list[tuple[int, int, bytes]] = []
    errors = []

    def report(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is not None:
            errors.append(error)
        else:
            delivered.append((message.partition(), message.offset(), message.value()))

    for i in range(200):
        producer.produce(topic, value=b"v%d" % i, partition=i % 2, on_delivery=report)
    assert producer.flush(20) == 0
    assert errors == []
    assert sorted(delivered) == [(p, o, b"v%d" % (2 * o + p)) for p in range(2) for o in range(100)]
    got = _consume(cluster, topic, 2, 200)
    assert sorted(got) == sorted(delivered)
    for partition in range(2):
        offsets = [o for p, o, _ in got if p == partition]
        assert offsets == sorted(offsets)
    assert cluster.stats["requests:11"] == 0  # an assign()ed consumer joins no group (no JoinGroup)


def test_a_leader_crash_with_a_clean_election_loses_nothing_delivered(cluster: ServerThread) -> None:
    topic = new_topic(cluster, [[0, 1, 2]])
    producer = _producer(cluster)
    delivered: list[tuple[int, bytes]] = []
    errors = []

    def report(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is not None:
            errors.append(error)
        else:
            delivered.append((message.offset(), message.value()))

    for i in range(100):
        producer.produce(topic, value=b"v%d" % i, on_delivery=report)
    assert producer.flush(20) == 0
    cluster.stop_broker(0, "crash")
    for i in range(100, 200):
        producer.produce(topic, value=b"v%d" % i, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == []
    state = cluster.partition_state(topic, 0)
    assert state.leader in (1, 2) and state.leader_epoch == 1
    read = [(offset, value) for offset, _, value in readable(cluster, topic, 0)]
    assert read == sorted(delivered)
    assert [value for _, value in read] == [b"v%d" % i for i in range(200)]
    assert cluster.lost_records() == []
    cluster.start_broker(0)


def test_a_consumer_reading_through_a_leader_crash_gets_every_delivered_record_once(
    cluster: ServerThread,
) -> None:
    topic = new_topic(cluster, [[2, 0, 1]])
    producer = _producer(cluster)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "socket.timeout.ms": 5000,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[tuple[int, bytes]] = []
    errors = []

    def report(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is not None:
            errors.append(error)

    try:
        deadline = time.monotonic() + 60
        for i in range(150):
            producer.produce(topic, value=b"v%d" % i, on_delivery=report)
            if i == 50:
                producer.flush(20)
                cluster.stop_broker(2, "crash")
            message = consumer.poll(0.01)
            if message is not None and message.error() is None:
                got.append((message.offset(), message.value()))
        assert producer.flush(60) == 0
        while len(got) < 150 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append((message.offset(), message.value()))
    finally:
        consumer.close()
        cluster.start_broker(2)
    assert errors == []
    assert got == [(i, b"v%d" % i) for i in range(150)]


def _acks_1_producer(server: ServerThread) -> Producer:
    return Producer(
        {
            "bootstrap.servers": server.bootstrap,
            "acks": 1,
            "enable.idempotence": False,
            "linger.ms": 0,
            "message.timeout.ms": 10_000,
            "socket.timeout.ms": 5000,
        }
    )


def _deliver(producer: Producer, topic: str, values: list[bytes]) -> list[int]:
    """Each value produced and flushed on its own (a batch each); the offsets delivered."""
    offsets: list[int] = []

    def report(error, message) -> None:  # type: ignore[no-untyped-def]
        assert error is None, error
        offsets.append(message.offset())

    for value in values:
        producer.produce(topic, value=value, partition=0, on_delivery=report)
        assert producer.flush(10) == 0
    return offsets


def test_acks_1_records_an_unclean_election_loses_are_reported_and_librdkafka_detects_the_truncation(
    wire_log: WireLog,
) -> None:
    """acks=1, a follower behind: the leader crashes and the lagging follower is elected uncleanly. What
    lost_records() reports is exactly what a consumer no longer finds; a librdkafka consumer that had read
    past the new end validates its position with OffsetForLeaderEpoch (KIP-320): with
    auto.offset.reset=error it gets a "log truncation detected" error, otherwise it seeks to the end the
    leader answered and reads on from there."""
    with start_cluster(**UNCLEAN) as server:
        topic = new_topic(server, [[0, 1]], unclean_leader_election_enable="true")
        producer = _acks_1_producer(server)
        first = _deliver(producer, topic, [b"a%d" % i for i in range(5)])
        server.wait_until(lambda: server.partition_state(topic, 0).high_watermark == 5, timeout=10)
        server.set_replication(1, records_per_s=0)  # the follower stops copying
        later = _deliver(producer, topic, [b"b%d" % i for i in range(7)])
        assert (first, later) == (list(range(5)), list(range(5, 12)))  # acknowledged by the leader alone
        wait_until_the_leader_alone_commits(server, topic, 12)
        consumers = {
            reset: Consumer(
                {
                    "bootstrap.servers": server.bootstrap,
                    "group.id": "unused",
                    "enable.auto.commit": False,
                    "auto.offset.reset": reset,
                    "socket.timeout.ms": 5000,
                    "topic.metadata.refresh.interval.ms": 500,
                }
            )
            for reset in ("error", "latest")
        }
        try:
            for consumer in consumers.values():
                consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
                got = []
                deadline = time.monotonic() + 10
                while len(got) < 12 and time.monotonic() < deadline:
                    message = consumer.poll(0.2)
                    if message is not None:
                        assert message.error() is None, message.error()
                        got.append((message.offset(), message.value()))
                assert got == list(enumerate([b"a%d" % i for i in range(5)] + [b"b%d" % i for i in range(7)]))
            crash_leader_until(server, topic, 0, 1)

            lost = server.lost_records()
            assert [(r.first_offset, r.last_offset, r.acks, r.producer_id) for r in lost] == [
                (o, o, 1, -1) for o in later
            ]
            assert {r.cause for r in lost} == {"unclean election: leader 1 elected with epoch 1"}
            assert [offset for offset, _, _ in readable(server, topic, 0)] == first
            assert lost_offsets(server, topic) == later
            assert end_offset_for_epoch(server, topic, 0) == (0, 0, 5)

            asked = len(wire_log.requests)
            strict = consumers["error"]
            error = None
            deadline = time.monotonic() + 15
            while error is None and time.monotonic() < deadline:
                message = strict.poll(0.2)
                if message is not None:
                    assert message.error() is not None, (message.offset(), message.value())
                    error = message.error()
            assert error is not None
            # librdkafka resets to INVALID (auto.offset.reset=error) and reports it as an offset reset.
            assert error.code() == KafkaError._AUTO_OFFSET_RESET
            assert error.str().startswith(
                "Partition log truncation detected at offset 12 (leader epoch 0): "
                "broker end offset is 5 (offset leader epoch 0). Reset to INVALID."
            )

            # The other consumer seeks to 5, where the new leader's log goes on.
            [offset] = _deliver(_acks_1_producer(server), topic, [b"c0"])
            assert offset == 5
            lenient = consumers["latest"]
            message = None
            deadline = time.monotonic() + 15
            while message is None and time.monotonic() < deadline:
                message = lenient.poll(0.2)
            assert message is not None and message.error() is None
            assert (message.offset(), message.value()) == (5, b"c0")
            validations = [r for r in wire_log.requests[asked:] if r[0] == ApiKey.OFFSET_FOR_LEADER_EPOCH]
            assert validations  # both learnt the new end from the leader's OffsetForLeaderEpoch answer
        finally:
            for consumer in consumers.values():
                consumer.close()


@pytest.mark.parametrize("codec", ["gzip", "lz4"])
def test_ten_thousand_keyed_records_with_headers_compressed_come_back_identical(
    cluster: ServerThread, codec: str
) -> None:
    topic = new_topic(cluster, BULK_REPLICAS)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": codec,
            "message.timeout.ms": 30_000,
            "socket.timeout.ms": 5000,
        }
    )
    errors = []

    def report(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is not None:
            errors.append(error)

    for i in range(BULK):
        partition, key, value, headers = bulk_record(i)
        producer.produce(
            topic, key=key, value=value, headers=headers, partition=partition, on_delivery=report
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "socket.timeout.ms": 5000,
        }
    )
    got = []
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 30
        while len(got) < BULK and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.2):
                assert message.error() is None, message.error()
                got.append(
                    (message.partition(), message.offset(), message.key(), message.value(), message.headers())
                )
    finally:
        consumer.close()
    assert codecs_stored(cluster, topic) == {codec}
    assert len(got) == BULK
    assert by_partition(got) == expected_by_partition()
