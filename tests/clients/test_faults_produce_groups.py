"""Request faults against producing and consuming real clients (the faults' own tests, with admin clients,
are in test_faults_real_clients.py):

- the commit gap: a Produce is applied, then its connection is closed before the answer (a disconnect
  fault with the after-handling action). The idempotent producer (confluent-kafka with
  enable.idempotence, kafka-python's default) sends the batch again with the same producer id and
  sequences; the leader finds it among the producer's last batches and answers with the original
  offsets, appending nothing: the log, and a consumer, hold every record exactly once.
- DescribeProducers (61), asked by kafka-python's admin: the producers' state the leader (and a follower)
  keeps, which the retry above was checked against.
- a black-holed consumer: its client id gets no answers, so its heartbeats stop reaching the coordinator,
  which ends its session after session.timeout.ms; the other members take its partitions.

One real-clock server for the module, replicating every 10 ms.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaAdminClient, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from controller.embedded import ServerThread
from protocol.codes import ApiKey
from tests.clients.data_path_support import new_topic, readable, start_cluster
from tests.clients.group_members import (
    HEARTBEAT_INTERVAL_MS,
    MEMBERS,
    SESSION_TIMEOUT_MS,
    STEP_RECORDS,
    Member,
)
from tests.clients.test_groups_mixed_clients import HALF, PARTITIONS, Feed, read_by_all, until
from tests.support.groups import disjoint_and_complete

CLIENT = "faults with produce and groups"
TIMEOUT_S = 10
RECORDS = 50


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with start_cluster(**{"group.initial.rebalance.delay.ms": 0}) as started:
        yield started


@pytest.fixture(autouse=True)
def no_faults_left(server: ServerThread) -> Iterator[None]:
    yield
    server.faults.clear()


def produce_confluent(server: ServerThread, topic: str, client_id: str) -> list[tuple[int, bytes]]:
    """(offset, value) of every record as the producer's delivery reports give them."""
    delivered: list[tuple[int, bytes]] = []

    def report(error, message) -> None:  # type: ignore[no-untyped-def]
        assert error is None, error
        delivered.append((message.offset(), message.value()))

    producer = Producer(
        {
            "bootstrap.servers": server.bootstrap,
            "client.id": client_id,
            "enable.idempotence": True,
            "linger.ms": 50,
            "socket.timeout.ms": TIMEOUT_S * 1000,
            "message.timeout.ms": TIMEOUT_S * 3000,
            "log_level": 0,
        }
    )
    for i in range(RECORDS):
        producer.produce(topic, value=b"v%d" % i, partition=0, on_delivery=report)
    assert producer.flush(TIMEOUT_S * 3) == 0
    return delivered


def produce_kafka_python(server: ServerThread, topic: str, client_id: str) -> list[tuple[int, bytes]]:
    producer = KafkaProducer(
        bootstrap_servers=server.bootstrap,
        client_id=client_id,
        linger_ms=50,
        request_timeout_ms=TIMEOUT_S * 1000,
    )
    try:
        assert producer.config["enable_idempotence"] and producer.config["acks"] == -1
        futures = [producer.send(topic, value=b"v%d" % i, partition=0) for i in range(RECORDS)]
        producer.flush(TIMEOUT_S * 3)
        return [(f.get(TIMEOUT_S).offset, b"v%d" % i) for i, f in enumerate(futures)]
    finally:
        producer.close(TIMEOUT_S)


PRODUCERS = {"confluent-kafka": produce_confluent, "kafka-python": produce_kafka_python}


def consume_all(server: ServerThread, topic: str) -> list[tuple[int, bytes]]:
    """(offset, value) of everything a consumer reads from partition 0, until nothing more comes."""
    consumer = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": f"reader-{topic}",
            "enable.auto.commit": False,
            "socket.timeout.ms": TIMEOUT_S * 1000,
            "log_level": 0,
        }
    )
    got: list[tuple[int, bytes]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        quiet = 0
        while quiet < 5:  # five empty half-second polls after the last record: nothing more is there
            batch = [m for m in consumer.consume(100, 0.5) if m.error() is None]
            got += [(m.offset(), m.value()) for m in batch]
            quiet = 0 if batch else quiet + 1
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("client", list(PRODUCERS))
def test_a_produce_applied_then_disconnected_is_retried_and_answered_as_a_duplicate(
    server: ServerThread, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    topic = new_topic(server, [[0, 1, 2]])
    client_id = f"idempotent-{client}"
    closes = server.stats["closed:fault"]
    fault = server.faults.disconnect_on(ApiKey.PRODUCE, after=True, client=client_id).once()
    with caplog.at_level(logging.DEBUG, logger="controller.handlers.produce"):
        delivered = PRODUCERS[client](server, topic, client_id)
    assert fault.fired == 1 and server.stats["closed:fault"] - closes == 1
    expected = [(i, b"v%d" % i) for i in range(RECORDS)]
    assert sorted(delivered) == expected  # every record acknowledged once, at consecutive offsets
    # The first Produce (the one the fault closed) came again and was answered as what it was.
    duplicates = [r.getMessage() for r in caplog.records if "retried duplicate" in r.getMessage()]
    assert len(duplicates) == 1, duplicates
    assert re.search(
        rf"\(sequences 0-(\d+)\) at {topic}-0, answered with its original offsets 0-\1$", duplicates[0]
    )
    assert [(o, v) for o, _, v in readable(server, topic, 0)] == expected  # nothing appended twice
    assert consume_all(server, topic) == expected


@pytest.mark.parametrize("victim_label", list(MEMBERS))
def test_a_black_holed_consumer_is_evicted_by_its_session_timeout(
    server: ServerThread, victim_label: str
) -> None:
    """The victim's application stops calling its client (so that it does not fail on the unanswered
    requests); what kept it in the group is the client's own background heartbeat, which the black hole
    swallows. The coordinator ends its session after session.timeout.ms of the cluster's clock, the others
    rebalance and read its partitions from its last commit; then the fault is cleared."""
    topic = new_topic(server, [[i % 3, (i + 1) % 3, (i + 2) % 3] for i in range(PARTITIONS)])
    group = f"holed-{victim_label}"
    feed = Feed(server, topic)
    members: list[Member] = []
    try:
        for i, label in enumerate(MEMBERS):
            members.append(
                MEMBERS[label](server.bootstrap, group, topic, f"{label}-{i}", tolerant=True).run()
            )
        until(
            server,
            group,
            members,
            lambda: disjoint_and_complete([set(m.partitions) for m in members], PARTITIONS),
        )
        # Produced once every member has its partitions: had the others read everything before the
        # last one joined (librdkafka starts slower under load), that one would have nothing to read.
        feed.produce(HALF)
        [victim] = [m for m in members if m.label == victim_label]
        until(server, group, members, lambda: len(victim.read) >= STEP_RECORDS)
        victim.pause()
        stayed = [m for m in members if m is not victim]
        state = server.group_state(group)
        assert state is not None
        [victim_id] = [mid for mid, m in state["members"].items() if m["client_id"] == victim.name]
        hole = server.faults.blackhole_client(victim.name)
        holed_at = server.now()
        until(
            server,
            group,
            stayed,
            lambda: (
                disjoint_and_complete([set(m.partitions) for m in stayed], PARTITIONS)
                and len(read_by_all(members)) >= len(feed.acked)
            ),
        )
        state = server.group_state(group)
        assert state is not None and victim_id not in state["members"]
        assert sorted(m["client_id"] for m in state["members"].values()) == sorted(m.name for m in stayed)
        [expired] = [
            e
            for e in server.events()
            if e.kind == "group" and e.cause == f"member {victim_id} session expired"
        ]
        assert expired.time - holed_at >= SESSION_TIMEOUT_MS - HEARTBEAT_INTERVAL_MS
        assert hole.fired >= 1  # its heartbeats (at least) went unanswered
        for m in stayed:
            m.pause()
            m.check()
        got = read_by_all(members)
        assert sorted((p, o) for p, o, _ in got) == sorted(feed.acked)  # each record once
        assert {(p, o): v for p, o, v in got} == feed.acked
        assert victim.failed_commits == []  # it committed what it read before it went quiet
    finally:
        server.faults.clear()
        for m in members:
            m.close()


def test_kafka_python_admin_describes_the_idempotent_producers_of_a_partition(server: ServerThread) -> None:
    """DescribeProducers (61): kafka-python's admin asks the leader (and, with broker_id, a follower) what
    it keeps of the two idempotent producers that wrote to the partition."""
    topic = new_topic(server, [[0, 1, 2]])
    before = int(time.time() * 1000)
    for client, produce in PRODUCERS.items():
        produce(server, topic, f"described-{client}")
    after = int(time.time() * 1000)
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
    try:
        tp = KafkaTopicPartition(topic, 0)
        server.wait_until(lambda: server.partition_state(topic, 0).high_watermark == 2 * RECORDS, TIMEOUT_S)
        by_leader = admin.describe_producers([tp])[tp].active_producers
        by_follower = admin.describe_producers([tp], broker_id=2)[tp].active_producers
    finally:
        admin.close()
    assert by_leader == by_follower and len(by_leader) == 2
    assert len({p.producer_id for p in by_leader}) == 2
    for p in by_leader:
        assert (
            p.producer_epoch,
            p.last_sequence,
            p.coordinator_epoch,
            p.current_transaction_start_offset,
        ) == (
            0,
            RECORDS - 1,
            -1,
            -1,
        )
        assert before <= p.last_timestamp <= after
