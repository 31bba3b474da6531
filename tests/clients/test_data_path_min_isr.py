"""min.insync.replicas and the high watermark as real clients see them: with two of three replicas down
an acks=all producer (kafka-python, confluent-kafka) is refused with NOT_ENOUGH_REPLICAS while acks=1 is
still appended (Kafka's ``Partition.appendRecordsToLeader``); and a follower that copies late holds the
high watermark, so a consumer reads nothing beyond it until the follower catches up."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import NotEnoughReplicasError

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.clients.data_path_support import new_topic, readable, start_cluster

CLIENT = "kafka-python"


@pytest.fixture(scope="module")
def cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    with start_cluster() as server:
        yield server
        wire_log.assert_clean(server)


def _kafka_python(server: ServerThread, acks: int | str) -> KafkaProducer:
    # retries=0: NOT_ENOUGH_REPLICAS is retriable, and the test wants the broker's answer itself.
    return KafkaProducer(
        bootstrap_servers=server.bootstrap,
        acks=acks,
        retries=0,
        enable_idempotence=False,
        max_block_ms=10_000,
        request_timeout_ms=5000,
    )


def _confluent_send(server: ServerThread, topic: str, value: bytes) -> KafkaError | None:
    """One record with acks=all and no retries: librdkafka's delivery error (None: delivered)."""
    producer = Producer(
        {
            "bootstrap.servers": server.bootstrap,
            "acks": "all",
            "retries": 0,
            "enable.idempotence": False,
            "message.timeout.ms": 10_000,
            "socket.timeout.ms": 5000,
        }
    )
    outcome: list[KafkaError | None] = []
    producer.produce(topic, value=value, partition=0, on_delivery=lambda error, _: outcome.append(error))
    assert producer.flush(15) == 0
    [error] = outcome
    return error


def test_acks_all_is_refused_with_two_of_three_replicas_down_and_acks_1_is_not(cluster: ServerThread) -> None:
    topic = new_topic(cluster, [[0, 1, 2]], min_insync_replicas="2")
    producer = _kafka_python(cluster, "all")
    assert producer.send(topic, value=b"before", partition=0).get(10).offset == 0
    cluster.stop_broker(1, "crash")
    cluster.stop_broker(2, "crash")
    cluster.wait_until(lambda: cluster.partition_state(topic, 0).isr == (0,), timeout=10)
    with pytest.raises(NotEnoughReplicasError):
        producer.send(topic, value=b"refused", partition=0).get(10)
    producer.close(5)
    error = _confluent_send(cluster, topic, b"refused too")
    assert error is not None and error.code() == KafkaError.NOT_ENOUGH_REPLICAS
    leader_only = _kafka_python(cluster, 1)
    assert leader_only.send(topic, value=b"acks=1", partition=0).get(10).offset == 1
    leader_only.close(5)
    cluster.start_broker(1)
    cluster.wait_until(lambda: cluster.partition_state(topic, 0).isr == (0, 1), timeout=10)
    assert _confluent_send(cluster, topic, b"after") is None  # two in sync again: min.insync.replicas met
    cluster.start_broker(2)
    cluster.wait_until(lambda: cluster.partition_state(topic, 0).isr == (0, 1, 2), timeout=10)
    assert [value for _, _, value in readable(cluster, topic, 0)] == [b"before", b"acks=1", b"after"]


def _poll(consumer: KafkaConsumer, want: int, seconds: float) -> list[tuple[int, bytes]]:
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + seconds
    while len(got) < want and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            got += [(r.offset, r.value) for r in records]
    return got


def test_a_slow_follower_holds_the_high_watermark_and_the_consumer_waits_for_it(
    cluster: ServerThread,
) -> None:
    topic = new_topic(cluster, [[0, 1, 2]])
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False, request_timeout_ms=5000
    )
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    producer = _kafka_python(cluster, 1)
    first = [producer.send(topic, value=b"a%d" % i, partition=0).get(10).offset for i in range(5)]
    assert _poll(consumer, 5, 10) == [(i, b"a%d" % i) for i in range(5)]
    # Broker 1 copies 20 s late: it stays in the ISR (replica.lag.time.max.ms is 30 s) and holds the
    # high watermark at 5 while the leader appends five more.
    cluster.set_replication(1, delay_ms=20_000)
    later = [producer.send(topic, value=b"b%d" % i, partition=0).get(10).offset for i in range(5)]
    assert (first, later) == (list(range(5)), list(range(5, 10)))
    cluster.wait_until(lambda: cluster.partition_state(topic, 0).log_end_offsets[2] == 10, timeout=10)
    assert _poll(consumer, 1, 1.0) == []  # stalled: nothing above the high watermark is served
    state = cluster.partition_state(topic, 0)
    assert (state.high_watermark, state.log_end_offsets, state.isr) == (5, {0: 10, 1: 5, 2: 10}, (0, 1, 2))
    cluster.set_replication(1, delay_ms=0)  # broker 1 catches up: the high watermark moves to 10
    assert _poll(consumer, 5, 10) == [(5 + i, b"b%d" % i) for i in range(5)]
    assert cluster.partition_state(topic, 0).high_watermark == 10
    producer.close(5)
    consumer.close()
