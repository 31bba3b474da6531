"""confluent-kafka's ShareConsumer (KIP-932, librdkafka's share consumer) against the simulator: consume and
accept, release and redelivery, a lock that ends, reject and the delivery count limit, two consumers
splitting one partition, and the share coordinator's broker crashing mid-stream. Every test reads back
what the consumers got, and checks the server's own accounts: no accepted record delivered again, every
record given up on reported (archived with its cause), no acceptance lost.

The server runs on the real clock with a 1 s record lock (``group.share.record.lock.duration.ms`` and its
minimum, as confluent-kafka-python's own suite sets them) and 2 s broker sessions, so a failover takes
seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from controller.embedded import ServerThread
from controller.share.coordinator import SHARE_STATE_TOPIC, share_key
from tests.support.groups import BROKERS

PROPERTIES = {
    "group.share.record.lock.duration.ms": 1000,
    "group.share.min.record.lock.duration.ms": 1000,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "share.coordinator.state.topic.num.partitions": 3,
}
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=BROKERS, seed=7, properties=PROPERTIES) as started:
        yield started


def admin(server: ServerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap})


def new_topic(server: ServerThread, name: str, partitions: int = 1, rf: int = 3) -> None:
    client = admin(server)  # kept until its answers came: a collected client cancels them
    for future in client.create_topics([NewTopic(name, partitions, rf)]).values():
        future.result(TIMEOUT)


def set_group_config(server: ServerThread, group: str, name: str, value: str) -> None:
    resource = ConfigResource(
        ConfigResource.Type.GROUP,
        group,
        incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)],
    )
    client = admin(server)
    for future in client.incremental_alter_configs([resource]).values():
        future.result(TIMEOUT)


def produce(server: ServerThread, topic: str, values: list[bytes], partition: int | None = None) -> None:
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", "linger.ms": 0})
    for value in values:
        if partition is None:
            producer.produce(topic, value=value)
        else:
            producer.produce(topic, value=value, partition=partition)
        producer.flush(TIMEOUT)  # one batch per record: records can be acquired one by one
    assert producer.flush(TIMEOUT) == 0


def consumer(server: ServerThread, group: str, explicit: bool = False) -> ShareConsumer:
    conf: dict[str, Any] = {"bootstrap.servers": server.bootstrap, "group.id": group}
    if explicit:
        conf["share.acknowledgement.mode"] = "explicit"
    return ShareConsumer(conf)


def poll_until(c: ShareConsumer, want: int, timeout: float = TIMEOUT) -> list[Any]:
    """Polls until ``want`` records arrived in one or more polls (implicit mode accepts each batch at the
    next poll); the records."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got += [m for m in c.poll(0.5) if m.error() is None]
    return got


def first_batch(c: ShareConsumer, timeout: float = TIMEOUT) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        batch = [m for m in c.poll(0.5) if m.error() is None]
        if batch:
            return batch
    return []


def share(server: ServerThread) -> Any:
    return server.server.controller.share


def start_offset(server: ServerThread, group: str, topic: str, partition: int = 0) -> int | None:
    def read() -> int | None:
        offsets = share(server).start_offsets(group)
        found = offsets.get((topic, partition))
        return found[0] if found is not None else None

    return server.call(read)


def archived(server: ServerThread, group: str) -> list[Any]:
    return server.call(lambda: [a for a in share(server).archived if a.group == group])


def values(messages: list[Any]) -> list[bytes]:
    return [m.value() for m in messages]


def test_consume_and_accept(server: ServerThread) -> None:
    topic, group = "orders", "orders-workers"
    new_topic(server, topic)
    set_group_config(server, group, "share.auto.offset.reset", "earliest")
    produce(server, topic, [b"order-%d" % i for i in range(10)])
    c = consumer(server, group, explicit=True)
    try:
        c.subscribe([topic])
        got = poll_until(c, 10)
        assert sorted(values(got)) == [b"order-%d" % i for i in range(10)]
        assert {m.delivery_count() for m in got} == {1}
        for m in got:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        result = c.commit_sync(TIMEOUT)
        assert all(tp.error is None for tp in result) and all(e is None for e in result.values())
        assert start_offset(server, group, topic) == 10
        assert poll_until(c, 1, timeout=2.0) == []  # accepted: never delivered again
    finally:
        c.close()


def test_release_is_delivered_again_with_its_count(server: ServerThread) -> None:
    topic, group = "jobs", "jobs-workers"
    new_topic(server, topic)
    set_group_config(server, group, "share.auto.offset.reset", "earliest")
    produce(server, topic, [b"job-%d" % i for i in range(3)])
    c = consumer(server, group, explicit=True)
    try:
        c.subscribe([topic])
        got = poll_until(c, 3)
        assert values(got) == [b"job-0", b"job-1", b"job-2"]
        c.acknowledge(got[0], AcknowledgeType.ACCEPT)
        c.acknowledge(got[1], AcknowledgeType.RELEASE)
        c.acknowledge(got[2], AcknowledgeType.ACCEPT)
        c.commit_sync(TIMEOUT)
        again = first_batch(c)
        assert [(m.offset(), m.value(), m.delivery_count()) for m in again] == [(1, b"job-1", 2)]
        c.acknowledge(again[0], AcknowledgeType.ACCEPT)
        c.commit_sync(TIMEOUT)
        assert start_offset(server, group, topic) == 3
    finally:
        c.close()


def test_a_topic_made_again_under_its_name_starts_with_fresh_deliveries(server: ServerThread) -> None:
    """The old topic's records, still locked when the topic is deleted and made again, are released after
    (the consumer closes): their state stays the old topic's, and the new topic's records come at delivery
    count 1 (confluent-kafka-python's test_topic_recreate_resumes_with_fresh_delivery found them at 2)."""
    topic, group = "recreated", "recreated-workers"
    new_topic(server, topic)
    set_group_config(server, group, "share.auto.offset.reset", "earliest")
    set_group_config(server, group, "share.record.lock.duration.ms", "30000")
    produce(server, topic, [b"before-%d" % i for i in range(3)])
    old = consumer(server, group, explicit=True)
    try:
        old.subscribe([topic])
        assert values(poll_until(old, 3)) == [b"before-%d" % i for i in range(3)]  # locked, not acknowledged
        client = admin(server)
        for future in client.delete_topics([topic]).values():
            future.result(TIMEOUT)
        server.wait_until(lambda: topic not in server.server.controller.cluster.topics, TIMEOUT)
        new_topic(server, topic)
    finally:
        old.close()  # its records are released now, after the topic was made again
    produce(server, topic, [b"after-%d" % i for i in range(3)])
    c = consumer(server, group, explicit=True)
    try:
        c.subscribe([topic])
        got = poll_until(c, 3)
        assert [(m.value(), m.delivery_count()) for m in got] == [(b"after-%d" % i, 1) for i in range(3)]
    finally:
        c.close()


def test_a_lock_that_ends_gives_the_records_to_another_member(server: ServerThread) -> None:
    topic, group = "emails", "emails-workers"
    new_topic(server, topic)
    set_group_config(server, group, "share.auto.offset.reset", "earliest")
    produce(server, topic, [b"mail-%d" % i for i in range(4)])
    slow = consumer(server, group, explicit=True)
    other = consumer(server, group, explicit=True)
    try:
        slow.subscribe([topic])
        held = poll_until(slow, 4)
        assert len(held) == 4  # acquired, never acknowledged: the 1 s locks end
        other.subscribe([topic])
        got = poll_until(other, 4, timeout=TIMEOUT)
        assert sorted((m.value(), m.delivery_count()) for m in got) == [(b"mail-%d" % i, 2) for i in range(4)]
        for m in got:
            other.acknowledge(m, AcknowledgeType.ACCEPT)
        other.commit_sync(TIMEOUT)
        assert start_offset(server, group, topic) == 4
    finally:
        other.close()
        slow.close()


def test_reject_and_the_delivery_count_limit_archive_and_report(server: ServerThread) -> None:
    topic, group = "payments", "payments-workers"
    new_topic(server, topic)
    set_group_config(server, group, "share.auto.offset.reset", "earliest")
    set_group_config(server, group, "share.delivery.count.limit", "2")
    produce(server, topic, [b"bad", b"flaky"])
    c = consumer(server, group, explicit=True)
    try:
        c.subscribe([topic])
        got = poll_until(c, 2)
        c.acknowledge(got[0], AcknowledgeType.REJECT)
        c.acknowledge(got[1], AcknowledgeType.RELEASE)
        c.commit_sync(TIMEOUT)
        again = first_batch(c)
        assert [(m.value(), m.delivery_count()) for m in again] == [(b"flaky", 2)]
        c.acknowledge(again[0], AcknowledgeType.RELEASE)  # the second delivery of two: archived
        c.commit_sync(TIMEOUT)
        assert poll_until(c, 1, timeout=2.0) == []
        assert start_offset(server, group, topic) == 2
        reported = [
            (a.first_offset, a.last_offset, a.delivery_count, a.cause) for a in archived(server, group)
        ]
        assert reported == [
            (0, 0, 1, "rejected by its member"),
            (1, 1, 2, "released at the delivery count limit"),
        ]
    finally:
        c.close()


def test_read_committed_archives_aborted_transactions(server: ServerThread) -> None:
    """``share.isolation.level=read_committed``: the records of an aborted transaction are archived as
    they are acquired (reported with their cause), never delivered; the committed one after them is."""
    topic, group = "ledger", "ledger-workers"
    new_topic(server, topic)
    set_group_config(server, group, "share.auto.offset.reset", "earliest")
    set_group_config(server, group, "share.isolation.level", "read_committed")
    producer = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": "ledger-writer"})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"aborted-%d" % i)
    assert producer.flush(TIMEOUT) == 0
    producer.abort_transaction(TIMEOUT)
    producer.begin_transaction()
    producer.produce(topic, value=b"committed-0")
    producer.commit_transaction(TIMEOUT)
    c = consumer(server, group, explicit=True)
    try:
        c.subscribe([topic])
        got = poll_until(c, 1)
        assert [(m.value(), m.delivery_count()) for m in got] == [(b"committed-0", 1)]
        c.acknowledge(got[0], AcknowledgeType.ACCEPT)
        c.commit_sync(TIMEOUT)
        assert poll_until(c, 1, timeout=2.0) == []
        reported = [
            (a.first_offset, a.last_offset, a.delivery_count, a.cause) for a in archived(server, group)
        ]
        # The two markers (3: the abort's, 5: the commit's) are acknowledged by the client as gaps.
        assert reported == [
            (0, 2, 1, "aborted transaction"),
            (3, 3, 1, "acknowledged as a gap"),
            (5, 5, 1, "acknowledged as a gap"),
        ]
        assert start_offset(server, group, topic) == 6  # past the commit's marker at 5
    finally:
        c.close()


def test_two_consumers_split_one_partition(server: ServerThread) -> None:
    topic, group, count = "tickets", "tickets-desk", 40
    new_topic(server, topic)
    set_group_config(server, group, "share.auto.offset.reset", "earliest")
    # Implicit acknowledgements ride on the next poll's fetch, which may wait on a long poll first: locks
    # longer than the suite's 1 s, so that no record is handed on for a slow acknowledgement.
    set_group_config(server, group, "share.record.lock.duration.ms", "15000")
    one, two = consumer(server, group), consumer(server, group)
    try:
        one.subscribe([topic])
        two.subscribe([topic])
        for _ in range(6):  # both join before the records come
            one.poll(0.2)
            two.poll(0.2)
        produce(server, topic, [b"t-%d" % i for i in range(count)])
        got: list[list[Any]] = [[], []]
        deadline = time.monotonic() + TIMEOUT
        while sum(map(len, got)) < count and time.monotonic() < deadline:
            for c, bucket in zip((one, two), got, strict=True):
                bucket += [m for m in c.poll(0.2) if m.error() is None]
        offsets = [{m.offset() for m in bucket} for bucket in got]
        assert offsets[0].isdisjoint(offsets[1])
        assert offsets[0] | offsets[1] == set(range(count))
        described = server.call(lambda: share(server).groups.groups[group])
        assert sorted(len(m.assignment) for m in described.members.values()) == [
            1,
            1,
        ]  # both hold partition 0
    finally:
        one.close()
        two.close()


def test_share_coordinator_broker_crash(server: ServerThread) -> None:
    """The broker leading the group's ``__share_group_state`` partition crashes after half the records were
    accepted: the state fails over with the partition (RF 3, a clean election), the consumer goes on, and
    no accepted record is delivered again."""
    topic, group, count = "invoices", "invoices-workers", 20
    new_topic(server, topic)
    set_group_config(server, group, "share.auto.offset.reset", "earliest")
    produce(server, topic, [b"inv-%d" % i for i in range(count)])
    c = consumer(server, group, explicit=True)
    accepted: list[int] = []
    try:
        c.subscribe([topic])
        first = poll_until(c, count // 2)
        for m in first[: count // 2]:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
            accepted.append(m.offset())
        for m in first[count // 2 :]:
            c.acknowledge(m, AcknowledgeType.RELEASE)
        c.commit_sync(TIMEOUT)
        topic_id = server.call(lambda: server.server.controller.cluster.topics[topic].topic_id)
        index = server.call(lambda: share(server).coordinator.partition_of(share_key(group, topic_id, 0)))
        victim = server.partition_state(SHARE_STATE_TOPIC, index).leader
        server.stop_broker(victim, "crash")
        deadline = time.monotonic() + TIMEOUT
        while (
            server.partition_state(SHARE_STATE_TOPIC, index).leader == victim and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        rest: list[Any] = []
        deadline = time.monotonic() + TIMEOUT
        while len(rest) < count - len(accepted) and time.monotonic() < deadline:
            batch = [m for m in c.poll(0.5) if m.error() is None]
            for m in batch:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            if batch:
                c.commit_sync(TIMEOUT)
            rest += batch
        again = {m.offset() for m in rest} & set(accepted)
        assert again == set(), f"accepted records delivered again: {sorted(again)}"
        assert {m.offset() for m in rest} | set(accepted) == set(range(count))
        assert start_offset(server, group, topic) == count
        assert server.call(lambda: list(share(server).lost_acknowledgements)) == []
    finally:
        c.close()
        server.start_broker(victim)
