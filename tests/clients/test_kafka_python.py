"""kafka-python's KafkaAdminClient administers topics on the simulator."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient, NewPartitions
from kafka.errors import InvalidTopicError, UnknownTopicOrPartitionError

from controller.embedded import ServerThread

CLIENT = "kafka-python"


def admin_for(server: ServerThread, timeout_ms: int = 10000) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=server.bootstrap,
        client_id="placement-sim-tests",
        request_timeout_ms=timeout_ms,
        bootstrap_timeout_ms=timeout_ms,
    )


@pytest.fixture(scope="module")
def admin(cluster: ServerThread) -> Iterator[KafkaAdminClient]:
    client = admin_for(cluster)
    yield client
    client.close()


def test_create_several_topics_one_invalid(admin: KafkaAdminClient, cluster: ServerThread):
    result = admin.create_topics(
        {
            "kp-orders": {"num_partitions": 6, "replication_factor": 3},
            "kp bad name": {"num_partitions": 1, "replication_factor": 1},
            "kp-events": {"num_partitions": 2, "replication_factor": 2},
        },
        raise_errors=False,
    )
    by_name = {t["name"]: t for t in result["topics"]}
    assert [by_name[n]["error_code"] for n in ("kp-orders", "kp bad name", "kp-events")] == [0, 17, 0]
    assert by_name["kp bad name"]["error_message"] == (
        "Topic name is invalid: 'kp bad name' contains one or more characters other than ASCII alphanumerics, "
        "'.', '_' and '-'"
    )
    assert (by_name["kp-orders"]["num_partitions"], by_name["kp-orders"]["replication_factor"]) == (6, 3)
    with pytest.raises(InvalidTopicError):
        admin.create_topics({"kp bad name": {"num_partitions": 1, "replication_factor": 1}})
    assert {"kp-orders", "kp-events"} <= set(admin.list_topics())
    assert "kp bad name" not in admin.list_topics()


def test_describe_topics_shows_the_placers_assignment(admin: KafkaAdminClient, cluster: ServerThread):
    admin.create_topics({"kp-described": {"num_partitions": 4, "replication_factor": 3}})
    [topic] = admin.describe_topics(["kp-described"])
    assert topic["error_code"] == 0 and topic["name"] == "kp-described"
    server_side = cluster.call(lambda: cluster.server.controller.cluster.topics["kp-described"])
    assert str(server_side.topic_id) == str(topic["topic_id"])
    assert [
        (p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
        for p in topic["partitions"]
    ] == [(p.index, p.replicas[0], p.replicas, p.replicas) for p in server_side.partitions]
    racks = {b.id: b.rack for b in cluster.config.brokers}
    assert all(len({racks[r] for r in p["replica_nodes"]}) == 3 for p in topic["partitions"])


def test_describe_cluster_lists_every_broker_listener(admin: KafkaAdminClient, cluster: ServerThread):
    described = admin.describe_cluster()
    assert (described["cluster_id"], described["controller_id"]) == ("placement-sim", 0)
    brokers = {b["broker_id"]: (f"{b['host']}:{b['port']}", b["rack"]) for b in described["brokers"]}
    assert brokers == {i: (cluster.brokers[i], f"rack-{i % 3 + 1}") for i in range(6)}


def test_create_partitions_then_delete(admin: KafkaAdminClient, cluster: ServerThread):
    admin.create_topics({"kp-grow": {"num_partitions": 2, "replication_factor": 2}})
    admin.create_partitions({"kp-grow": NewPartitions(total_count=5)})
    [topic] = admin.describe_topics(["kp-grow"])
    assert sorted(p["partition_index"] for p in topic["partitions"]) == [0, 1, 2, 3, 4]
    refused = admin.create_partitions({"kp-grow": NewPartitions(total_count=3)}, raise_errors=False)
    [result] = refused.results
    assert (result.error_code, result.error_message) == (
        37,
        "The topic kp-grow currently has 5 partition(s); 3 would not be an increase.",
    )
    admin.delete_topics(["kp-grow"])
    assert "kp-grow" not in admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics(["kp-grow"])


def test_a_failing_plugin_reports_1001_with_the_servers_message(picky_cluster: ServerThread):
    client = admin_for(picky_cluster)
    try:
        result = client.create_topics(
            {
                "reject-kp": {"num_partitions": 3, "replication_factor": 2},
                "accept-kp": {"num_partitions": 3, "replication_factor": 2},
            },
            raise_errors=False,
        )
    finally:
        client.close()
    by_name = {t["name"]: t for t in result["topics"]}
    assert by_name["accept-kp"]["error_code"] == 0
    assert by_name["reject-kp"]["error_code"] == 1001
    assert by_name["reject-kp"]["error_message"].endswith(
        "PickyPlacer: no room for topic reject-kp (partitions from 0)"
    )


def test_every_request_decoded_cleanly(admin: KafkaAdminClient, cluster, picky_cluster, wire_log):
    """Runs last: everything kafka-python sent in this module decoded without unknown tagged fields."""
    for server in (cluster, picky_cluster):
        wire_log.assert_clean(server)
