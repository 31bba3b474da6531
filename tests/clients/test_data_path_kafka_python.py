"""kafka-python's producer (its defaults: idempotent, acks=all) and consumer (assign, no group) on the data
path: what is read equals exactly what was acknowledged, in order; through a leader crash with a clean
election nothing acknowledged is lost; through an unclean one the loss is what lost_records() says."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import LogTruncationError

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

CLIENT = "kafka-python"

TIMEOUTS = {"request_timeout_ms": 5000}


@pytest.fixture(scope="module")
def cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    with start_cluster(**{"auto.create.topics.enable": "true"}) as server:
        yield server
        wire_log.assert_clean(server)


def _producer(server: ServerThread, **config: object) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=server.bootstrap, max_block_ms=10_000, linger_ms=5, **TIMEOUTS, **config
    )


def _consume(
    server: ServerThread, topic: str, partitions: int, count: int
) -> list[tuple[int, int, bytes, bytes]]:
    consumer = KafkaConsumer(
        bootstrap_servers=server.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
        **TIMEOUTS,
    )
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        got = []
        for message in consumer:
            got.append((message.partition, message.offset, message.key, message.value))
            if len(got) == count:
                break
        return got
    finally:
        consumer.close()


def test_what_is_read_is_exactly_what_was_acknowledged_in_order(cluster: ServerThread) -> None:
    topic = new_topic(cluster, [[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    producer = _producer(cluster)
    futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3) for i in range(300)]
    producer.flush(10)
    acknowledged = sorted(
        (f.get(5).partition, f.get(5).offset, b"k%d" % i, b"v%d" % i) for i, f in enumerate(futures)
    )
    producer.close(5)
    assert [(p, o) for p, o, _, _ in acknowledged] == [(p, o) for p in range(3) for o in range(100)]
    got = _consume(cluster, topic, 3, 300)
    assert sorted(got) == acknowledged
    for partition in range(3):  # each partition's records arrive in offset order
        offsets = [o for p, o, _, _ in got if p == partition]
        assert offsets == sorted(offsets)


def test_a_producer_creates_its_topic_through_metadata_when_auto_creation_is_on(
    cluster: ServerThread,
) -> None:
    producer = _producer(cluster)
    offsets = [producer.send("auto-created", value=b"v%d" % i).get(10).offset for i in range(3)]
    producer.close(5)
    assert offsets == [0, 1, 2]
    assert [value for _, _, value in readable(cluster, "auto-created", 0)] == [b"v0", b"v1", b"v2"]


def test_a_leader_crash_with_a_clean_election_loses_nothing_acknowledged(cluster: ServerThread) -> None:
    topic = new_topic(cluster, [[0, 1, 2]])
    producer = _producer(cluster, retries=100, retry_backoff_ms=100)
    acknowledged: list[tuple[int, bytes]] = []
    failed: list[BaseException] = []
    halfway = threading.Event()

    def send_all() -> None:
        for i in range(200):
            future = producer.send(topic, value=b"v%d" % i)
            try:
                acknowledged.append((future.get(20).offset, b"v%d" % i))
            except Exception as exc:  # noqa: BLE001 - kept for the assertion
                failed.append(exc)
            if i == 60:
                halfway.set()

    sender = threading.Thread(target=send_all)
    sender.start()
    assert halfway.wait(30)
    cluster.stop_broker(0, "crash")  # fenced after the session timeout; 1 or 2 leads from the ISR
    sender.join(120)
    producer.close(5)
    state = cluster.partition_state(topic, 0)
    assert state.leader in (1, 2) and state.leader_epoch == 1
    assert failed == []
    assert len(acknowledged) == 200
    read = [(offset, value) for offset, _, value in readable(cluster, topic, 0)]
    assert read == sorted(acknowledged)  # every acknowledged record, once, in order
    assert [value for _, value in read] == [b"v%d" % i for i in range(200)]
    assert cluster.lost_records() == []
    cluster.start_broker(0)


def test_an_unclean_election_loses_exactly_what_lost_records_reports() -> None:
    with start_cluster(**{"replica.lag.time.max.ms": 400}) as server:
        topic = new_topic(server, [[0, 1]], unclean_leader_election_enable="true")
        producer = _producer(server)
        first = [producer.send(topic, value=b"a%d" % i).get(10).offset for i in range(5)]
        # The follower stops copying: the next acks=all answer waits until it leaves the ISR
        # (replica.lag.time.max.ms), then the leader alone commits.
        server.set_replication(1, records_per_s=0)
        later = [producer.send(topic, value=b"b%d" % i).get(10).offset for i in range(7)]
        assert server.partition_state(topic, 0).isr == (0,)
        producer.close(5)
        assert (first, later) == (list(range(5)), list(range(5, 12)))  # acknowledged with acks=all
        server.stop_broker(0, "crash")
        server.wait_until(lambda: server.partition_state(topic, 0).leader == 1, timeout=10)
        lost = server.lost_records()
        assert {(r.topic, r.partition, r.leader_epoch) for r in lost} == {(topic, 0, 0)}
        assert all(
            r.cause == "unclean election: leader 1 elected with epoch 1" and r.acks == -1 for r in lost
        )
        lost_offsets = sorted(o for r in lost for o in range(r.first_offset, r.last_offset + 1))
        read = [offset for offset, _, _ in readable(server, topic, 0)]
        assert read + lost_offsets == first + later  # what was acknowledged: readable, or reported lost
        assert lost_offsets == later


def test_a_consumer_reading_through_a_leader_crash_gets_every_acknowledged_record_once(
    cluster: ServerThread,
) -> None:
    topic = new_topic(cluster, [[1, 2, 0]])
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        consumer_timeout_ms=20_000,
        **TIMEOUTS,
    )
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    producer = _producer(cluster, retries=100, retry_backoff_ms=100)
    sent: list[bytes] = []

    def produce() -> None:
        for i in range(150):
            producer.send(topic, value=b"v%d" % i).get(20)
            sent.append(b"v%d" % i)
            if i == 50:
                cluster.stop_broker(1, "crash")

    sender = threading.Thread(target=produce)
    sender.start()
    got = []
    try:
        for message in consumer:
            got.append((message.offset, message.value))
            if len(got) == 150:
                break
    finally:
        sender.join(120)
        producer.close(5)
        consumer.close()
        cluster.start_broker(1)
    assert len(sent) == 150
    assert got == [(i, b"v%d" % i) for i in range(150)]


def test_acks_1_records_an_unclean_election_loses_are_reported_and_the_consumer_detects_the_truncation(
    wire_log: WireLog,
) -> None:
    """acks=1, a follower behind: the leader crashes and the lagging follower is elected uncleanly. What
    lost_records() reports is exactly what a consumer no longer finds, and a consumer that had read past
    the new end learns it through OffsetForLeaderEpoch: without a reset policy kafka-python raises
    LogTruncationError naming the end the leader answered; with one it seeks there (KIP-320)."""
    with start_cluster(**UNCLEAN) as server:
        topic = new_topic(server, [[0, 1]], unclean_leader_election_enable="true")
        producer = _producer(server, acks=1, enable_idempotence=False)
        first = [producer.send(topic, value=b"a%d" % i).get(10).offset for i in range(5)]
        server.wait_until(lambda: server.partition_state(topic, 0).high_watermark == 5, timeout=10)
        server.set_replication(1, records_per_s=0)  # the follower stops copying
        later = [producer.send(topic, value=b"b%d" % i).get(10).offset for i in range(7)]
        producer.close(5)
        assert (first, later) == (list(range(5)), list(range(5, 12)))  # acknowledged by the leader alone
        assert server.lost_records() == []
        wait_until_the_leader_alone_commits(server, topic, 12)
        tp = TopicPartition(topic, 0)
        strict = KafkaConsumer(
            bootstrap_servers=server.bootstrap, group_id=None, auto_offset_reset="none", **TIMEOUTS
        )
        resetting = KafkaConsumer(
            bootstrap_servers=server.bootstrap, group_id=None, auto_offset_reset="earliest", **TIMEOUTS
        )
        try:
            for consumer in (strict, resetting):
                consumer.assign([tp])
                consumer.seek_to_beginning()
                values = []
                for _ in range(50):
                    values += [m.value for m in consumer.poll(200).get(tp, [])]
                    if len(values) == 12:
                        break
                assert values == [b"a%d" % i for i in range(5)] + [b"b%d" % i for i in range(7)]
                assert consumer.position(tp) == 12
            crash_leader_until(server, topic, 0, 1)
            assert server.partition_state(topic, 0).leader_epoch == 1

            lost = server.lost_records()
            assert [(r.topic, r.first_offset, r.last_offset, r.acks, r.producer_id) for r in lost] == [
                (topic, o, o, 1, -1) for o in later
            ]
            assert {r.cause for r in lost} == {"unclean election: leader 1 elected with epoch 1"}
            read = [offset for offset, _, _ in readable(server, topic, 0)]
            assert read == first and lost_offsets(server, topic) == later  # lost: what is not readable
            assert end_offset_for_epoch(server, topic, 0) == (0, 0, 5)  # epoch 0 now ends at 5

            asked = len(wire_log.requests)
            with pytest.raises(LogTruncationError) as raised:
                for _ in range(50):
                    strict.poll(200)
            [(where, divergent)] = raised.value.divergent_offsets.items()
            assert (where, divergent.offset, divergent.leader_epoch) == (tp, 5, 0)
            for _ in range(50):
                resetting.poll(200)
                if resetting.position(tp) == 5:
                    break
            assert resetting.position(tp) == 5  # seeks to where the leader's log diverged
            validations = [r for r in wire_log.requests[asked:] if r[0] == ApiKey.OFFSET_FOR_LEADER_EPOCH]
            assert validations  # the truncation was learnt from the leader's OffsetForLeaderEpoch answer
        finally:
            strict.close()
            resetting.close()


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_ten_thousand_keyed_records_with_headers_compressed_come_back_identical(
    cluster: ServerThread, codec: str
) -> None:
    topic = new_topic(cluster, BULK_REPLICAS)
    producer = _producer(cluster, compression_type=codec)
    futures = []
    for i in range(BULK):
        partition, key, value, headers = bulk_record(i)
        futures.append(producer.send(topic, key=key, value=value, headers=headers, partition=partition))
    producer.flush(30)
    assert all(f.succeeded() for f in futures)
    producer.close(5)
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
        **TIMEOUTS,
    )
    got = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        for message in consumer:
            got.append((message.partition, message.offset, message.key, message.value, message.headers))
            if len(got) == BULK:
                break
    finally:
        consumer.close()
    assert codecs_stored(cluster, topic) == {codec}
    assert len(got) == BULK
    assert by_partition(got) == expected_by_partition()
