"""confluent-kafka's AdminClient (librdkafka) through a broker failure: Metadata before and after the
session timeout, and ElectLeaders' answers.

``list_topics`` gives the brokers Metadata lists and each partition's leader, replicas, ISR and error;
librdkafka reads the leader epoch but the Python classes do not carry it (``PartitionMetadata`` has
``id``, ``leader``, ``replicas``, ``isrs`` and ``error``), so these tests check leaders and ISRs.

``elect_leaders(ElectionType, [TopicPartition, ...])`` returns a future whose result maps each
TopicPartition to None (a leader was elected) or to a KafkaError with the partition's code (ELECTION_NOT_NEEDED
included); the future itself does not raise for partition errors. confluent-kafka 2.16.1 fails with
SystemError when ``elect_leaders`` is given ``request_timeout`` or ``operation_timeout``, so the calls
here are bounded by ``socket.timeout.ms`` and ``result(timeout)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from controller.embedded import ServerThread
from tests.clients.conftest import FAILOVER_LAYOUT, SESSION_TIMEOUT_MS
from tests.clients.test_confluent_kafka import Handle, admin_for

CLIENT = "confluent-kafka"
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def failover_handle(failover_cluster: ServerThread) -> Iterator[Handle]:
    held = Handle(admin_for(failover_cluster))
    yield held
    held.destroy()


@pytest.fixture(scope="module")
def election_handle(election_cluster: ServerThread) -> Iterator[Handle]:
    held = Handle(admin_for(election_cluster))
    yield held
    held.destroy()


def metadata(admin: AdminClient) -> tuple[list[int], dict[str, tuple[object, ...]]]:
    """The brokers Metadata lists, and ``topic-partition`` -> (leader, ISR, error name or None)."""
    listing = admin.list_topics(timeout=TIMEOUT)
    return sorted(listing.brokers), {
        f"{name}-{i}": (p.leader, p.isrs, p.error.name() if p.error is not None else None)
        for name, topic in sorted(listing.topics.items())
        for i, p in sorted(topic.partitions.items())
    }


def elect(admin: AdminClient, kind: ElectionType, *partitions: tuple[str, int]) -> dict[str, int | None]:
    """``topic-partition`` -> None (elected) or the partition's error code."""
    result = admin.elect_leaders(kind, [TopicPartition(t, p) for t, p in partitions]).result(TIMEOUT)
    assert all(error is None or isinstance(error, KafkaError) for error in result.values())
    return {f"{tp.topic}-{tp.partition}": None if e is None else e.code() for tp, e in result.items()}


def test_a_crashed_broker_is_listed_and_leads_until_its_session_times_out(
    failover_cluster: ServerThread, failover_handle: Handle
):
    server, admin = failover_cluster, failover_handle.client
    assert admin is not None
    futures = admin.create_topics([NewTopic("orders", 3, 3), NewTopic("solo", 1, 1)], request_timeout=TIMEOUT)
    assert [futures[t].result(TIMEOUT) for t in ("orders", "solo")] == [None, None]
    listing = admin.list_topics(timeout=TIMEOUT).topics
    placed = {t: [p.replicas for _, p in sorted(listing[t].partitions.items())] for t in FAILOVER_LAYOUT}
    assert placed == FAILOVER_LAYOUT
    healthy = (
        [0, 1, 2],
        {
            "orders-0": (0, [0, 1, 2], None),
            "orders-1": (1, [1, 2, 0], None),
            "orders-2": (2, [2, 0, 1], None),
            "solo-0": (1, [1], None),
        },
    )
    assert metadata(admin) == healthy
    server.stop_broker(1, "crash")
    server.advance(SESSION_TIMEOUT_MS - 1)
    assert metadata(admin) == healthy  # not fenced yet: listed, and still the leader
    server.advance(1)
    assert metadata(admin) == (
        [0, 2],
        {
            "orders-0": (0, [0, 2], None),
            "orders-1": (2, [2, 0], None),
            "orders-2": (2, [2, 0], None),
            "solo-0": (-1, [], "LEADER_NOT_AVAILABLE"),  # its last in-sync replica left for the ELR
        },
    )


def partition_0(admin, topic):
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[0]


def test_a_crashed_leader_is_replaced_after_the_session_timeout():
    """The README's example, as a user would write it."""
    with ServerThread.start(brokers=[(0, "a"), (1, "b"), (2, "c")], clock="virtual") as server:
        admin = AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000})
        admin.create_topics([NewTopic("orders", 1, 3)])["orders"].result(10)
        before = partition_0(admin, "orders")
        server.stop_broker(before.leader, "crash")
        assert partition_0(admin, "orders").leader == before.leader  # not fenced yet: still the leader
        server.advance(9000)  # broker.session.timeout.ms: fenced, and its partitions fail over
        after = partition_0(admin, "orders")
        survivors = [r for r in before.replicas if r != before.leader]
        assert (after.leader, after.isrs) == (survivors[0], survivors)  # the first in-sync replica leads
        del admin  # librdkafka stops when its handle goes: before the server does


def test_preferred_elections(election_cluster: ServerThread, election_handle: Handle):
    admin = election_handle.client
    assert admin is not None
    answers = elect(
        admin,
        ElectionType.PREFERRED,
        ("home", 0),
        ("moved", 0),
        ("gone", 0),
        ("back", 0),
        ("home", 3),
        ("nope", 0),
    )
    assert answers == {
        "home-0": KafkaError.ELECTION_NOT_NEEDED,
        "moved-0": KafkaError.PREFERRED_LEADER_NOT_AVAILABLE,
        "gone-0": KafkaError.PREFERRED_LEADER_NOT_AVAILABLE,
        "back-0": None,
        "home-3": KafkaError.UNKNOWN_TOPIC_OR_PART,
        "nope-0": KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
    assert metadata(admin)[1]["back-0"] == (2, [0, 2], None)


def test_unclean_elections(election_cluster: ServerThread, election_handle: Handle):
    admin = election_handle.client
    assert admin is not None
    assert metadata(admin)[1]["stale-0"] == (-1, [], "LEADER_NOT_AVAILABLE")
    answers = elect(
        admin, ElectionType.UNCLEAN, ("home", 0), ("moved", 0), ("gone", 0), ("stale", 0), ("home", 3)
    )
    assert answers == {
        "home-0": KafkaError.ELECTION_NOT_NEEDED,
        "moved-0": KafkaError.ELECTION_NOT_NEEDED,
        "gone-0": KafkaError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        "stale-0": None,
        "home-3": KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
    assert metadata(admin)[1]["stale-0"] == (4, [4], None)  # 4 was not in the ISR: it is now alone in it


def test_every_request_decoded_cleanly(failover_cluster, election_cluster, wire_log):
    """Runs last: everything librdkafka sent in this module decoded without unknown tagged fields."""
    for server in (failover_cluster, election_cluster):
        wire_log.assert_clean(server)
