"""Kafka's Java Admin client (kafka-clients, the pinned 4.x release) across what the simulator serves: the
cluster, topics, configs, offsets and deleted records, producers, groups and their offsets, log
directories, a reassignment and a preferred leader election, each answered as Kafka answers it."""

from __future__ import annotations

from harness.java_clients import JavaProgram
from tests.clients.conftest import WireLog
from tests.clients.java_support import java_cluster

CLIENT = "Java Admin"


def test_the_admin_client_across_the_simulator(wire_log: WireLog) -> None:
    with java_cluster() as server:
        with JavaProgram("AdminTour", [server.bootstrap]) as program:
            program.finish(timeout=240)
    got = {e["event"]: e for e in program.events}
    # Admin.describeTopics asks DescribeTopicPartitions (apiKey 75) of a broker that serves it, as of
    # Kafka 3.8, not Metadata; the answers below are its.
    asked = {key for key, _, client in wire_log.requests if client and client.startswith("adminclient")}
    assert 75 in asked, sorted(asked)

    assert got["cluster"]["brokers"] == [[0, "a"], [1, "b"], [2, "c"]] and got["cluster"]["controller"] == 0
    assert got["create again"]["error"] == "TopicExistsException: Topic 'tour' already exists."
    assert got["create rf 4"]["error"] == (
        "InvalidReplicationFactorException: Unable to replicate the partition 4 time(s): The target replication "
        "factor of 4 cannot be reached because only 3 broker(s) are registered or some brokers have all their "
        "log directories cordoned."
    )
    assert got["list topics"]["names"] == ["tour", "tour-configs"]
    partitions = got["describe topic"]["partitions"]
    assert [p["partition"] for p in partitions] == [0, 1, 2, 3]  # 3 created, one added
    assert all(sorted(p["replicas"]) == [0, 1, 2] and p["isr"] == p["replicas"] for p in partitions)
    assert all(p["leader"] == p["replicas"][0] for p in partitions)

    configs = got["topic configs"]
    assert configs["retention.ms"] == {"value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert configs["cleanup.policy"] == {"value": "delete", "source": "DEFAULT_CONFIG"}  # the SET undone
    assert got["broker configs"]["num.partitions"] == {"value": "1", "source": "DEFAULT_CONFIG"}

    assert {k: got["offsets"][k] for k in ("earliest", "latest", "max timestamp", "by time")} == {
        "earliest": 0,
        "latest": 10,
        "max timestamp": 9,
        "by time": 0,
    }
    assert (
        got["producers"]["count"] == 1 and got["producers"]["last sequence"] == 9
    )  # one idempotent producer
    assert got["deleted records"]["earliest"] == 4

    assert got["list groups"]["groups"] == ["tour-group"]
    assert (got["describe group"]["state"], got["describe group"]["members"]) == ("Empty", 0)
    assert (got["group offsets"]["offset"], got["group offsets"]["metadata"]) == (7, "seven")
    assert got["altered offsets"]["offset"] == 9
    assert got["deleted offsets"]["offsets"] == 0
    assert got["deleted group"]["groups"] == []

    every = [f"/tmp/kafka-logs:tour-{p}" for p in range(4)]
    assert got["log dirs"]["replicas"] == {"0": every, "1": every, "2": every}

    reassigned = got["reassigned"]
    assert reassigned["to"] == reassigned["from"][::-1]
    assert reassigned["ongoing"] == 0  # every target in sync already: completed at once, as in Kafka
    after = got["after reassignment"]
    assert after["replicas"] == reassigned["to"] and after["leader"] == reassigned["from"][0]
    # The preferred election moves the leader to the new first replica; partition 0 needed none.
    elected = got["elected"]
    assert elected["outcome"] == {"tour-0": "ElectionNotNeededException", "tour-1": "elected"}
    assert elected["leader"] == reassigned["to"][0]
    assert got["deleted topics"]["names"] == []
