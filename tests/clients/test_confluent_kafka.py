"""confluent-kafka's AdminClient (librdkafka) administers topics on the simulator."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from controller.embedded import ServerThread

CLIENT = "confluent-kafka"
TIMEOUT = 10.0


def admin_for(server: ServerThread) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": server.bootstrap,
            "client.id": "placement-sim-tests",
            "socket.timeout.ms": 5000,
            "socket.connection.setup.timeout.ms": 5000,
        },
        logger=logging.getLogger("librdkafka"),  # into pytest's log capture, not stderr
    )


class Handle:
    """Holds a client so that teardown can drop the last reference: librdkafka stops when it is destroyed."""

    def __init__(self, client: AdminClient) -> None:
        self.client: AdminClient | None = client

    def destroy(self) -> None:
        self.client = None
        gc.collect()


@pytest.fixture(scope="module")
def handle(cluster: ServerThread) -> Iterator[Handle]:
    held = Handle(admin_for(cluster))
    yield held
    held.destroy()


@pytest.fixture
def admin(handle: Handle) -> AdminClient:
    assert handle.client is not None
    return handle.client


def error_of(future) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT)
    return info.value.args[0]


def test_create_topics_with_a_future_per_topic(admin: AdminClient):
    futures = admin.create_topics(
        [NewTopic("ck-orders", 6, 3), NewTopic("ck-refused", 2, 9), NewTopic("ck-events", 3, 2)],
        request_timeout=TIMEOUT,
    )
    assert futures["ck-orders"].result(TIMEOUT) is None
    assert futures["ck-events"].result(TIMEOUT) is None
    error = error_of(futures["ck-refused"])
    assert error.code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert error.str() == (
        "Unable to replicate the partition 9 time(s): The target replication factor of 9 cannot be reached "
        "because only 6 broker(s) are registered or some brokers have all their log directories cordoned."
    )
    duplicate = admin.create_topics([NewTopic("ck-orders", 1, 1)], request_timeout=TIMEOUT)
    assert error_of(duplicate["ck-orders"]).code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_list_topics_shows_partitions_with_leaders_and_replicas(admin: AdminClient, cluster: ServerThread):
    admin.create_topics([NewTopic("ck-listed", 4, 3)], request_timeout=TIMEOUT)["ck-listed"].result(TIMEOUT)
    metadata = admin.list_topics(timeout=TIMEOUT)
    assert (metadata.cluster_id, metadata.controller_id) == ("placement-sim", 0)
    assert {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()} == cluster.brokers
    topic = metadata.topics["ck-listed"]
    assert topic.error is None
    server_side = cluster.call(lambda: cluster.server.controller.cluster.topics["ck-listed"])
    assert {i: (p.leader, p.replicas, p.isrs) for i, p in topic.partitions.items()} == {
        p.index: (p.replicas[0], p.replicas, p.replicas) for p in server_side.partitions
    }


def test_create_partitions_then_delete(admin: AdminClient):
    admin.create_topics([NewTopic("ck-grow", 2, 2)], request_timeout=TIMEOUT)["ck-grow"].result(TIMEOUT)
    grown = admin.create_partitions([NewPartitions("ck-grow", 5)], request_timeout=TIMEOUT)
    assert grown["ck-grow"].result(TIMEOUT) is None
    assert len(admin.list_topics("ck-grow", timeout=TIMEOUT).topics["ck-grow"].partitions) == 5
    manual = admin.create_partitions(
        [NewPartitions("ck-grow", 7, replica_assignment=[[0, 1], [2, 2]])], request_timeout=TIMEOUT
    )
    error = error_of(manual["ck-grow"])
    assert (error.code(), error.str()) == (
        KafkaError.INVALID_REPLICA_ASSIGNMENT,
        "duplicate spu ids found in assigned partition with id: 6",
    )
    deleted = admin.delete_topics(["ck-grow"], request_timeout=TIMEOUT)
    assert deleted["ck-grow"].result(TIMEOUT) is None
    assert "ck-grow" not in admin.list_topics(timeout=TIMEOUT).topics
    again = admin.delete_topics(["ck-grow"], request_timeout=TIMEOUT)
    assert error_of(again["ck-grow"]).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_a_failing_plugin_reports_1001_with_the_servers_message(picky_cluster: ServerThread):
    held = Handle(admin_for(picky_cluster))
    futures: dict = {}
    try:
        assert held.client is not None
        futures = held.client.create_topics(
            [NewTopic("reject-ck", 3, 2), NewTopic("accept-ck", 3, 2)], request_timeout=TIMEOUT
        )
        assert futures["accept-ck"].result(TIMEOUT) is None
        error = error_of(futures["reject-ck"])
    finally:
        del futures
        held.destroy()
    assert error.code() == 1001
    assert error.str().endswith("PickyPlacer: no room for topic reject-ck (partitions from 0)")


def test_every_request_decoded_cleanly(cluster, picky_cluster, wire_log):
    """Runs last: everything librdkafka sent in this module decoded without unknown tagged fields."""
    for server in (cluster, picky_cluster):
        wire_log.assert_clean(server)
