"""One consumer group of three different clients (confluent-kafka, kafka-python, aiokafka) reading one
topic that an acks=all producer feeds: each member commits synchronously after processing what it read;
one member leaves with close() and the others take its partitions from the committed offsets. What the
group read is exactly what the producer had acknowledged, and no (partition, offset) is read twice.

Each test leaves with a different client; see tests/clients/group_members.py for how each is driven.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Producer, TopicCollection
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer

from controller.embedded import ServerThread
from controller.groups.durable import OFFSETS_TOPIC
from protocol.client import BlockingClient
from tests.clients.group_members import MEMBERS, STEP_RECORDS, TIMEOUT_S, Member
from tests.clients.test_groups_confluent_kafka import create
from tests.support.groups import disjoint_and_complete, group_cluster, wait_for

CLIENT = "mixed group"
PARTITIONS = 6
#: Records produced before the member leaves, and as many after.
HALF = 300
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with group_cluster() as started:
        yield started


class Feed:
    """An acks=all producer; ``acked`` is every (partition, offset) -> value the cluster acknowledged."""

    def __init__(self, server: ServerThread, topic: str) -> None:
        self.topic = topic
        self.producer = Producer(
            {"bootstrap.servers": server.bootstrap, "acks": "all", "linger.ms": 5, "log_level": 0}
        )
        self.acked: dict[tuple[int, int], bytes] = {}
        self._count = itertools.count()

    def produce(self, n: int) -> None:
        def delivered(error, message) -> None:  # type: ignore[no-untyped-def]
            assert error is None, error
            self.acked[(message.partition(), message.offset())] = message.value()

        for _ in range(n):
            i = next(self._count)
            self.producer.produce(
                self.topic, value=b"r%d" % i, partition=i % PARTITIONS, on_delivery=delivered
            )
        assert self.producer.flush(TIMEOUT_S) == 0


def read_by_all(members: list[Member]) -> list[tuple[int, int, bytes]]:
    return [r for m in members for r in m.read]


def until(server: ServerThread, group: str, members: list[Member], condition: Callable[[], bool]) -> None:
    """Waits for ``condition``, re-raising what a member's thread raised; a timeout reports each member's
    assignment and reads and the group as the server has it."""

    def check() -> bool:
        for m in members:
            m.check()
        return bool(condition())

    try:
        wait_for(check, TIMEOUT)
    except AssertionError as exc:
        mine = "; ".join(f"{m.name}: {sorted(m.partitions)} read {len(m.read)}" for m in members)
        raise AssertionError(f"{exc}: {mine}; server: {server.group_state(group)}") from None


@pytest.mark.parametrize("leaver", list(MEMBERS))
def test_no_record_is_read_twice_across_a_clean_rebalance(server: ServerThread, leaver: str) -> None:
    topic, group = f"feed-{leaver}", f"mixed-{leaver}"
    create(AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000}), topic, PARTITIONS)
    feed = Feed(server, topic)
    members: list[Member] = []
    try:
        for i, label in enumerate(MEMBERS):
            members.append(MEMBERS[label](server.bootstrap, group, topic, f"{label}-{i}").run())
        until(
            server,
            group,
            members,
            lambda: disjoint_and_complete([set(m.partitions) for m in members], PARTITIONS),
        )
        # Produced once every member has its partitions: had the others read everything before the
        # last one joined (librdkafka starts slower under load), that one would have nothing to read.
        feed.produce(HALF)
        state = server.group_state(group)
        assert state is not None and state["protocol"] == "roundrobin"
        assert sorted(m["client_id"] for m in state["members"].values()) == sorted(m.name for m in members)
        [leaving] = [m for m in members if m.label == leaver]
        # The leaver reads some of its partitions' records (not all: it reads STEP_RECORDS a step) and leaves.
        until(server, group, members, lambda: len(leaving.read) >= STEP_RECORDS)
        leaving.close()
        left_partitions = leaving.partitions
        stayed = [m for m in members if m is not leaving]
        before = {m.name: len(m.read) for m in stayed}
        feed.produce(HALF)
        until(
            server,
            group,
            members,
            lambda: (
                disjoint_and_complete([set(m.partitions) for m in stayed], PARTITIONS)
                and len(read_by_all(members)) >= len(feed.acked)
            ),
        )
        time.sleep(0.5)  # the members go on reading: a duplicate would arrive now
        for m in stayed:
            m.pause()
            m.check()
        got = read_by_all(members)
        twice = [k for k, n in Counter((p, o) for p, o, _ in got).items() if n > 1]
        assert twice == []
        assert len(feed.acked) == 2 * HALF
        assert {(p, o): v for p, o, v in got} == feed.acked
        # The others took the leaver's partitions from where it had committed.
        assert left_partitions
        for p in left_partitions:
            taken = [o for m in stayed for q, o, _ in m.read[before[m.name] :] if q == p]
            mine = [o for q, o, _ in leaving.read if q == p]
            assert min(taken) == (max(mine) + 1 if mine else 0) == leaving.committed.get(p, 0)
        assert server.committed_offsets(group) == {
            (topic, p): 2 * HALF // PARTITIONS for p in range(PARTITIONS)
        }
        state = server.group_state(group)
        assert state is not None and state["state"] == "Stable"
        assert sorted(m["client_id"] for m in state["members"].values()) == sorted(m.name for m in stayed)
    finally:
        for m in members:
            m.close()


def test_consumer_offsets_is_an_internal_topic_to_every_client(server: ServerThread) -> None:
    """Metadata answers IsInternal for __consumer_offsets (Kafka's Topic.isInternal): kafka-python's
    consumer leaves it out of topics() (and so out of pattern subscriptions), its admin and librdkafka's
    describe it as internal; an ordinary topic is not."""
    create(AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000}), "plain", 1)
    with BlockingClient.connect(server.bootstrap, request_timeout=TIMEOUT_S) as client:
        client.send("FindCoordinatorRequest", {"Key": "any", "KeyType": 0}, version=3)  # makes the topic
        answer = client.send("MetadataRequest", {"Topics": None, "AllowAutoTopicCreation": False}, version=12)
    internal = {t["Name"]: t["IsInternal"] for t in answer["Topics"]}
    assert internal[OFFSETS_TOPIC] is True and internal["plain"] is False
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
    try:
        topics = consumer.topics()
        assert "plain" in topics and OFFSETS_TOPIC not in topics
        assert OFFSETS_TOPIC in admin.list_topics()  # kafka-python's admin lists every topic
        described = {t["name"]: t["is_internal"] for t in admin.describe_topics([OFFSETS_TOPIC, "plain"])}
        assert described == {OFFSETS_TOPIC: True, "plain": False}
    finally:
        consumer.close()
        admin.close()
    librdkafka = AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000})
    futures = librdkafka.describe_topics(TopicCollection([OFFSETS_TOPIC, "plain"]), request_timeout=TIMEOUT_S)
    assert {name: f.result(TIMEOUT_S).is_internal for name, f in futures.items()} == {
        OFFSETS_TOPIC: True,
        "plain": False,
    }
