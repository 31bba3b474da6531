"""kafka-python's KafkaAdminClient administers a classic group whose members are kafka-python consumers:
list_groups, describe_groups (state, members, their subscriptions and assignments as Kafka shows them),
list_group_offsets, delete_group_offsets (GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes to the
topic, UNKNOWN_TOPIC_OR_PARTITION for a partition the topic lacks), alter_group_offsets on the empty group,
and delete_groups (NON_EMPTY_GROUP while members remain, then the group and its offsets are gone).

kafka-python 3.0 names these ``list_groups`` / ``describe_groups`` / ``list_group_offsets`` /
``delete_groups`` / ``delete_group_offsets`` (earlier releases: ``list_consumer_groups`` and so on).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import GroupSubscribedToTopicError, NoError, UnknownTopicOrPartitionError
from kafka.structs import OffsetAndMetadata

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog, kafka_python_admin
from tests.support.groups import coordinator_of, disjoint_and_complete, group_cluster, wait_for

CLIENT = "kafka-python group admin"
ADMIN_ID = "placement-sim-tests"
TIMEOUT = 20.0
GROUP, TOPIC = "audit", "ledger"


@pytest.fixture(scope="module")
def server(wire_log: WireLog) -> Iterator[ServerThread]:
    """Three brokers, real clock, ``group.initial.rebalance.delay.ms=0`` (tests/support/groups.py)."""
    with group_cluster() as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: ServerThread) -> Iterator[KafkaAdminClient]:
    with kafka_python_admin(server, ADMIN_ID) as client:
        yield client


def consumer(server: ServerThread, name: str) -> KafkaConsumer:
    return KafkaConsumer(
        TOPIC,
        bootstrap_servers=server.bootstrap,
        group_id=GROUP,
        client_id=name,
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        request_timeout_ms=7000,
    )


def assigned(c: KafkaConsumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def offsets(committed: dict[int, int]) -> dict[TopicPartition, OffsetAndMetadata]:
    return {TopicPartition(TOPIC, p): OffsetAndMetadata(o, f"m{p}", -1) for p, o in committed.items()}


def test_a_group_of_kafka_python_consumers_is_listed_described_and_deleted_once_empty(
    server: ServerThread, admin: KafkaAdminClient, wire_log: WireLog
) -> None:
    [created] = admin.create_topics([NewTopic(TOPIC, 4, 3)])["topics"]
    assert (created["name"], created["error_code"]) == (TOPIC, 0)
    members = [consumer(server, f"k{i}") for i in range(2)]
    try:
        wait_for(
            lambda: disjoint_and_complete([assigned(c) for c in members], 4),
            TIMEOUT,
            lambda: [c.poll(timeout_ms=50) for c in members],
        )
        # The range assignor (kafka-python's first) orders members by id: k0-... before k1-...
        assert [sorted(assigned(c)) for c in members] == [[0, 1], [2, 3]]
        members[0].commit(offsets({0: 10, 1: 11}))
        members[1].commit(offsets({2: 22, 3: 23}))

        assert [g for g in admin.list_groups() if g["group_id"] == GROUP] == [
            {"group_id": GROUP, "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"}
        ]
        assert GROUP in {g["group_id"] for g in admin.list_groups(states_filter=["Stable"])}
        assert GROUP not in {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])}

        described = admin.describe_groups([GROUP])[GROUP]
        # Asked for them (kafka-python asks), without an authorizer every operation on a group, as Kafka
        assert sorted(described.pop("authorized_operations")) == sorted(
            ["READ", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"]
        )
        ids = [m.pop("member_id") for m in described["members"]]
        assert [i.split("-", 1)[0] for i in ids] == ["k0", "k1"]
        assert described == {
            "error": None,
            "group_id": GROUP,
            "group_state": "Stable",
            "protocol_type": "consumer",
            "protocol_data": "range",
            "members": [
                {
                    "client_id": name,
                    "client_host": "/127.0.0.1",
                    "group_instance_id": None,
                    "member_metadata": {"topics": [TOPIC], "user_data": ""},
                    "member_assignment": {
                        "assigned_partitions": [{"topic": TOPIC, "partitions": partitions}],
                        "user_data": "",
                    },
                }
                for name, partitions in (("k0", [0, 1]), ("k1", [2, 3]))
            ],
        }
        assert admin.list_group_offsets(GROUP) == {GROUP: offsets({0: 10, 1: 11, 2: 22, 3: 23})}

        assert admin.delete_groups([GROUP]) == {GROUP: "NonEmptyGroupError"}
        assert admin.delete_group_offsets(GROUP, [TopicPartition(TOPIC, 0)]) == {
            TopicPartition(TOPIC, 0): GroupSubscribedToTopicError
        }
    finally:
        for c in members:
            c.close()  # each leaves the group

    empty = admin.describe_groups([GROUP])[GROUP]
    assert (empty["group_state"], empty["protocol_data"], empty["members"]) == ("Empty", "", [])
    assert admin.delete_group_offsets(GROUP, [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 9)]) == {
        TopicPartition(TOPIC, 0): NoError,
        TopicPartition(TOPIC, 9): UnknownTopicOrPartitionError,  # ledger has 4 partitions
    }
    assert admin.alter_group_offsets(GROUP, offsets({3: 30})) == {TopicPartition(TOPIC, 3): NoError}
    assert admin.list_group_offsets(GROUP) == {GROUP: offsets({1: 11, 2: 22, 3: 30})}
    assert server.committed_offsets(GROUP) == {(TOPIC, 1): 11, (TOPIC, 2): 22, (TOPIC, 3): 30}

    assert admin.delete_groups([GROUP, "nobody"]) == {GROUP: "OK", "nobody": "GroupIdNotFoundError"}
    assert server.group_state(GROUP) is None and server.committed_offsets(GROUP) == {}
    assert GROUP not in {g["group_id"] for g in admin.list_groups()}
    gone = admin.describe_groups([GROUP], group_coordinator_id=coordinator_of(server, GROUP))[GROUP]
    # A group that is gone is Dead; DescribeGroups v6 adds GROUP_ID_NOT_FOUND (KIP-1043), as Kafka answers.
    version = [v for api, v, client in wire_log.requests if api == 15 and client == ADMIN_ID][-1]
    error = f"[Error 69] GroupIdNotFoundError: Group {GROUP} not found." if version >= 6 else None
    assert (gone["error"], gone["group_state"], gone["members"]) == (error, "Dead", [])


def test_every_request_decoded_cleanly(server: ServerThread, wire_log: WireLog) -> None:
    wire_log.assert_clean(server)
    used = {api for api, _, client in wire_log.requests if client == ADMIN_ID}
    assert {9, 15, 16, 42, 47} <= used
