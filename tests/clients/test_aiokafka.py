"""aiokafka's AIOKafkaAdminClient creates topics and describes the cluster on the simulator."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from controller.embedded import ServerThread

CLIENT = "aiokafka"


@pytest.fixture
async def admin(cluster: ServerThread) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


async def test_create_topics(admin: AIOKafkaAdminClient, cluster: ServerThread):
    response = await admin.create_topics(
        [NewTopic("ak-orders", 6, 3), NewTopic("ak-refused", 0, 1), NewTopic("ak-events", 2, 2)]
    )
    errors = {topic: (code, message) for topic, code, message in response.topic_errors}
    assert errors == {
        "ak-orders": (0, None),
        "ak-refused": (37, "Number of partitions was set to an invalid non-positive value."),
        "ak-events": (0, None),
    }
    topics = cluster.call(lambda: dict(cluster.server.controller.cluster.topics))
    assert [len(p.replicas) for p in topics["ak-orders"].partitions] == [3] * 6
    assert "ak-refused" not in topics
    assert {t["topic"] for t in await admin.describe_topics(["ak-orders", "ak-events"])} == {
        "ak-orders",
        "ak-events",
    }


async def test_describe_cluster(admin: AIOKafkaAdminClient, cluster: ServerThread):
    described = await admin.describe_cluster()
    assert (described["cluster_id"], described["controller_id"]) == ("placement-sim", 0)
    brokers = {b["node_id"]: (f"{b['host']}:{b['port']}", b["rack"]) for b in described["brokers"]}
    assert brokers == {i: (cluster.brokers[i], f"rack-{i % 3 + 1}") for i in range(6)}


async def test_a_failing_plugin_reports_1001_with_the_servers_message(picky_cluster: ServerThread):
    client = AIOKafkaAdminClient(bootstrap_servers=picky_cluster.bootstrap, request_timeout_ms=10000)
    await client.start()
    try:
        response = await client.create_topics([NewTopic("reject-ak", 3, 2), NewTopic("accept-ak", 3, 2)])
    finally:
        await client.close()
    errors = {topic: (code, message) for topic, code, message in response.topic_errors}
    assert errors["accept-ak"] == (0, None)
    code, message = errors["reject-ak"]
    assert code == 1001
    assert message.endswith("PickyPlacer: no room for topic reject-ak (partitions from 0)")


def test_every_request_decoded_cleanly(cluster, picky_cluster, wire_log):
    """Runs last: everything aiokafka sent in this module decoded without unknown tagged fields."""
    for server in (cluster, picky_cluster):
        wire_log.assert_clean(server)
