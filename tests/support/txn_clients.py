"""What the real-client transaction tests share: a three-broker cluster on the real clock whose crashed
brokers are fenced after 2 s, a transactional id's coordinator, and reading topics back as a
read_committed confluent-kafka consumer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from controller.coordinator_topic import coordinator_partition
from controller.embedded import ServerThread
from controller.topic_names import GROUP_METADATA_TOPIC_NAME
from controller.transactions.state_log import TRANSACTION_STATE_TOPIC
from protocol.client import BlockingClient

BROKERS = [(0, "a"), (1, "b"), (2, "c")]
PROPERTIES: dict[str, Any] = {
    "group.initial.rebalance.delay.ms": 0,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
}
TIMEOUT = 30.0


@contextmanager
def txn_cluster(**properties: Any) -> Iterator[ServerThread]:
    with ServerThread.start(brokers=BROKERS, seed=7, properties={**PROPERTIES, **properties}) as server:
        yield server


def create(server: ServerThread, topic: str, partitions: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000})
    for future in admin.create_topics([NewTopic(topic, partitions, 3)], request_timeout=5).values():
        future.result(TIMEOUT)


def coordinator_of(server: ServerThread, transactional_id: str) -> int:
    """The broker leading the transactional id's ``__transaction_state`` partition."""
    return server.partition_state(TRANSACTION_STATE_TOPIC, coordinator_partition(transactional_id, 50)).leader


def group_apart_from(server: ServerThread, transactional_id: str, prefix: str) -> str:
    """A group id (``prefix-N``) whose coordinator is not the transactional id's (both internal topics made
    first), so that a test can crash the transaction coordinator's broker and leave the group's."""
    with BlockingClient.connect(server.bootstrap) as client:
        for key_type, key in ((1, transactional_id), (0, prefix)):
            answer = client.send(
                "FindCoordinatorRequest", {"Key": key, "KeyType": key_type}, version=3, timeout=10
            )
            assert answer["ErrorCode"] == 0, answer
    txn = coordinator_of(server, transactional_id)
    for n in range(100):
        group = f"{prefix}-{n}"
        if server.partition_state(GROUP_METADATA_TOPIC_NAME, coordinator_partition(group, 50)).leader != txn:
            return group
    raise AssertionError("every group's coordinator is the transaction coordinator")


def read_committed(
    server: ServerThread, topic: str, partitions: int, expected: int, quiet_s: float = 1.5
) -> list[tuple[int, bytes]]:
    """Every record a read_committed confluent-kafka consumer gets from the start of ``topic``: (partition,
    value), in the order read per partition; reads until ``expected`` records came and then ``quiet_s``
    pass without more (so that an extra record would be seen), at most TIMEOUT seconds."""
    consumer = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": f"reader-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "socket.timeout.ms": 5000,
            "log_level": 0,
        }
    )
    got: list[tuple[int, bytes]] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + TIMEOUT
        quiet_until = None
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got.append((message.partition(), message.value()))
                quiet_until = None
                continue
            if len(got) >= expected:
                quiet_until = quiet_until or time.monotonic() + quiet_s
                if time.monotonic() >= quiet_until:
                    break
    finally:
        consumer.close()
    return got
