"""confluent-kafka (librdkafka) consumers in a classic group: subscribe, disjoint assignments covering every
partition, explicit commits, a consumer leaving, the coordinator's broker crashing; and the admin API.

Records are not consumed here: this module is about the group protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from controller.embedded import ServerThread
from tests.support.groups import (
    BROKERS,
    GROUP_PROPERTIES,
    coordinator_of,
    disjoint_and_complete,
    group_cluster,
    wait_for,
)

CLIENT = "confluent-kafka groups"
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with group_cluster() as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: ServerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000})


def create(admin: AdminClient, topic: str, partitions: int) -> None:
    for future in admin.create_topics([NewTopic(topic, partitions, 3)], request_timeout=5).values():
        future.result(TIMEOUT)


def consumer(server: ServerThread, group: str, name: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "client.id": name,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "enable.auto.commit": False,
            "socket.timeout.ms": 5000,
            "log_level": 0,
        }
    )


def assigned(c: Consumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def poll_all(consumers: list[Consumer]) -> None:
    for c in consumers:
        c.poll(0.05)


def test_subscribers_share_the_partitions_commit_and_take_over_from_one_that_leaves(
    server: ServerThread, admin: AdminClient
) -> None:
    create(admin, "orders", 6)
    consumers = [consumer(server, "shop", f"c{i}") for i in range(3)]
    try:
        for c in consumers:
            c.subscribe(["orders"])
        wait_for(
            lambda: disjoint_and_complete([assigned(c) for c in consumers], 6),
            TIMEOUT,
            lambda: poll_all(consumers),
        )
        state = server.group_state("shop")
        assert state is not None and state["state"] == "Stable" and len(state["members"]) == 3
        first = consumers[0]
        mine = sorted(assigned(first))
        done = first.commit(offsets=[TopicPartition("orders", p, 100 + p) for p in mine], asynchronous=False)
        assert [(tp.partition, tp.offset, tp.error) for tp in done] == [(p, 100 + p, None) for p in mine]
        assert server.committed_offsets("shop") == {("orders", p): 100 + p for p in mine}
        committed = first.committed([TopicPartition("orders", p) for p in mine], timeout=TIMEOUT)
        assert [tp.offset for tp in committed] == [100 + p for p in mine]
        leaving = consumers.pop()
        leaving.close()
        wait_for(
            lambda: disjoint_and_complete([assigned(c) for c in consumers], 6),
            TIMEOUT,
            lambda: poll_all(consumers),
        )
        state = server.group_state("shop")
        assert state is not None and len(state["members"]) == 2
    finally:
        for c in consumers:
            c.close()


def test_the_admin_client_lists_describes_reads_offsets_and_deletes_groups(
    server: ServerThread, admin: AdminClient
) -> None:
    create(admin, "ledger", 2)
    c = consumer(server, "audit", "a0")
    try:
        c.subscribe(["ledger"])
        wait_for(lambda: assigned(c) == {0, 1}, TIMEOUT, lambda: c.poll(0.05))
        c.commit(offsets=[TopicPartition("ledger", 0, 7), TopicPartition("ledger", 1, 9)], asynchronous=False)
        listed = admin.list_consumer_groups(request_timeout=5).result(TIMEOUT)
        assert "audit" in {g.group_id for g in listed.valid} and not listed.errors
        [described] = [f.result(TIMEOUT) for f in admin.describe_consumer_groups(["audit"]).values()]
        assert described.state is ConsumerGroupState.STABLE
        assert [m.client_id for m in described.members] == ["a0"]
        assert described.coordinator.id == coordinator_of(server, "audit")
        assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == {0, 1}
        deleting = admin.delete_consumer_groups(["audit"], request_timeout=5)["audit"]
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            deleting.result(TIMEOUT)
    finally:
        c.close()
    [offsets] = [
        f.result(TIMEOUT)
        for f in admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("audit")]).values()
    ]
    assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == [(0, 7), (1, 9)]
    admin.delete_consumer_groups(["audit"], request_timeout=5)["audit"].result(TIMEOUT)
    assert server.group_state("audit") is None and server.committed_offsets("audit") == {}


def test_committed_offsets_survive_the_coordinators_broker_crashing(
    server: ServerThread, admin: AdminClient
) -> None:
    create(admin, "payments", 3)
    c = consumer(server, "billing", "b0")
    old = -1
    try:
        c.subscribe(["payments"])
        wait_for(lambda: assigned(c) == {0, 1, 2}, TIMEOUT, lambda: c.poll(0.05))
        c.commit(offsets=[TopicPartition("payments", p, 50 + p) for p in range(3)], asynchronous=False)
        old = coordinator_of(server, "billing")
        server.stop_broker(old, "crash")
        wait_for(lambda: coordinator_of(server, "billing") not in (old, -1), TIMEOUT)
        new = coordinator_of(server, "billing")
        committed = c.committed([TopicPartition("payments", p) for p in range(3)], timeout=TIMEOUT)
        assert [tp.offset for tp in committed] == [50, 51, 52]
        c.commit(offsets=[TopicPartition("payments", 0, 60)], asynchronous=False)
        assert server.committed_offsets("billing") == {
            ("payments", 0): 60,
            ("payments", 1): 51,
            ("payments", 2): 52,
        }
        state = server.group_state("billing")
        assert state is not None and state["coordinator"] == new
        assert server.lost_commits() == []
    finally:
        c.close()
        if old != -1:
            server.start_broker(old)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def forced() -> Iterator[ServerThread]:
    """A server whose apiKey 68 is CreateReplicaPlacement for every connection (``simulator.apikey.68``)."""
    properties = {**GROUP_PROPERTIES, "simulator.apikey.68": "CreateReplicaPlacement"}
    with ServerThread.start(brokers=BROKERS, seed=5, properties=properties) as started:
        yield started


def test_with_apikey_68_forced_to_create_replica_placement_librdkafka_refuses_kip_848_itself(
    forced: ServerThread,
) -> None:
    """With apiKey 68 forced to be CreateReplicaPlacement, librdkafka (which names itself in ApiVersions)
    is not offered 68 at all (v0 would read to it as ConsumerGroupHeartbeat v0): it refuses
    ``group.protocol=consumer`` itself and no request on 68 reaches the server."""
    server = forced
    lines = _Lines()
    client_log = logging.getLogger("librdkafka-kip848")
    client_log.addHandler(lines)
    client_log.setLevel(logging.DEBUG)
    server_log = _Lines()
    logging.getLogger("controller").addHandler(server_log)
    before = server.stats
    c = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": "next-gen",
            "group.protocol": "consumer",
            "socket.timeout.ms": 5000,
            "debug": "cgrp",
            "logger": client_log,
        }
    )
    try:
        c.subscribe(["orders"])
        wait_for(
            lambda: any(
                "ConsumerGroupHeartbeatRequest not supported by broker" in line for line in lines.lines
            ),
            TIMEOUT,
            lambda: c.poll(0.05),
        )
    finally:
        c.close()
        client_log.removeHandler(lines)
        logging.getLogger("controller").removeHandler(server_log)
    after = server.stats
    assert after["requests:68"] == before["requests:68"]
    # no connection closed for what it sent (a client's own close or reset, of this module's other
    # tests' clients too, is not the server refusing a request)
    ends = {"closed:client", "closed:client reset", "closed:connection error"}
    assert not {k for k in after if k.startswith("closed:") and after[k] != before[k] and k not in ends}
    assert not [line for line in server_log.lines if "decode" in line.lower() or "malformed" in line.lower()]
    assert server.group_state("next-gen") is None


def test_a_group_consumes_commits_and_a_new_member_resumes_from_the_committed_offsets(
    server: ServerThread, admin: AdminClient
) -> None:
    create(admin, "events", 2)
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", "log_level": 0})
    for i in range(10):
        producer.produce("events", key=str(i).encode(), value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(TIMEOUT) == 0

    def read(count: int) -> list[tuple[int, int, bytes]]:
        c = Consumer(
            {
                "bootstrap.servers": server.bootstrap,
                "group.id": "readers",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "socket.timeout.ms": 5000,
                "log_level": 0,
            }
        )
        got: list[tuple[int, int, bytes]] = []
        try:
            c.subscribe(["events"])

            def poll() -> None:
                m = c.poll(0.05)
                if m is not None and m.error() is None:
                    got.append((m.partition(), m.offset(), m.value()))

            wait_for(lambda: len(got) >= count, TIMEOUT, poll)
            c.commit(asynchronous=False)
        finally:
            c.close()
        return got

    first = read(6)
    committed = server.committed_offsets("readers")
    for p in (0, 1):
        mine = [o for q, o, _ in first if q == p]
        assert committed.get(("events", p), 0) == (max(mine) + 1 if mine else 0)
    rest = read(10 - len(first))
    assert sorted(v for _, _, v in first + rest) == sorted(f"v{i}".encode() for i in range(10))
    for p, offset, _ in rest:  # the second member starts where the first committed
        assert offset >= committed.get(("events", p), 0)
