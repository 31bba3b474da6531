"""The consumer group protocol (KIP-848) on the wire, on a virtual clock: which API apiKey 68 is on each
connection, ConsumerGroupHeartbeat's checks and errors with Kafka's messages, epochs and reconciliation,
static members, regular expressions, sessions and rebalance timeouts, the group configs, offsets with
member epochs, ConsumerGroupDescribe, ListGroups, DeleteGroups, and the group on a coordinator that moves."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from controller.consumer_groups.protocol import write_subscription
from controller.embedded import ServerThread
from controller.groups.durable import OFFSETS_TOPIC, coordinator_partition
from protocol.client import BlockingClient
from protocol.codes import ErrorCode

BROKERS = [(0, "a"), (1, "b"), (2, "c")]
TIMEOUT = 10.0
PROPS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.assignment.interval.ms": 0,
    "unclean.leader.election.enable": "true",
}
LIBRDKAFKA = ("librdkafka", "2.12.0")


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=BROKERS, clock="virtual", seed=11, properties=PROPS) as started:
        yield started


def answered(server: ServerThread, call: Any) -> Any:
    """``call()`` in a thread, the virtual clock moved 100 ms at a time until it returns (an answer that
    changed a group waits until its records are durable: a replication tick)."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + TIMEOUT
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(0.02)
        if thread.is_alive():
            server.advance(100)
    thread.join(0)
    if errors:
        raise errors[0]
    assert out, "no answer"
    return out[0]


class Group:
    """One consumer group, spoken to by a client that names itself librdkafka (Kafka's key space)."""

    def __init__(self, server: ServerThread, group_id: str, topics: dict[str, int]) -> None:
        self.server = server
        self.group_id = group_id
        self.admin = BlockingClient.connect(server.bootstrap, request_timeout=TIMEOUT)
        if topics:
            create_topics(self.admin, topics)
        found = self.admin.send("FindCoordinatorRequest", {"Key": group_id, "KeyType": 0}, version=3)
        assert found["ErrorCode"] == 0, found
        self.coordinator = found["NodeId"]
        self.client = BlockingClient.connect(
            server.brokers[self.coordinator], software=LIBRDKAFKA, request_timeout=TIMEOUT
        )

    def ids(self) -> dict[str, uuid.UUID]:
        metadata = self.admin.send("MetadataRequest", {"Topics": None}, version=12)
        return {t["Name"]: t["TopicId"] for t in metadata["Topics"]}

    def heartbeat(self, version: int = 1, **fields: Any) -> dict[str, Any]:
        request = {"GroupId": self.group_id, **fields}
        return answered(
            self.server, lambda: self.client.send("ConsumerGroupHeartbeatRequest", request, version=version)
        )

    def join(self, member_id: str, topics: list[str] | None = None, **fields: Any) -> dict[str, Any]:
        base = {
            "MemberId": member_id,
            "MemberEpoch": 0,
            "RebalanceTimeoutMs": 30000,
            "SubscribedTopicNames": topics,
            "TopicPartitions": [],
        }
        return self.heartbeat(**{**base, **fields})

    def close(self) -> None:
        self.client.close()
        self.admin.close()


def create_topics(client: BlockingClient, topics: dict[str, int]) -> None:
    response = client.send(
        "CreateTopicsRequest",
        {
            "Topics": [
                {"Name": n, "NumPartitions": p, "ReplicationFactor": 3, "Assignments": [], "Configs": []}
                for n, p in topics.items()
            ],
            "timeoutMs": 5000,
        },
        version=5,
    )
    assert all(t["ErrorCode"] == 0 for t in response["Topics"]), response


def parts(response: dict[str, Any], ids: dict[str, uuid.UUID]) -> dict[str, list[int]]:
    names = {v: k for k, v in ids.items()}
    assignment = response["Assignment"]
    assert assignment is not None
    return {names[t["TopicId"]]: sorted(t["Partitions"]) for t in assignment["TopicPartitions"]}


@pytest.fixture
def group(server: ServerThread) -> Iterator[Group]:
    g = Group(server, "kip848", {"orders": 4, "audit": 2})
    yield g
    g.close()


def test_apikey_68_is_consumer_group_heartbeat_only_for_clients_of_kip_848_libraries(
    server: ServerThread,
) -> None:
    with BlockingClient.connect(server.bootstrap) as ours:
        assert ours.api_versions[68] == (0, 0) and ours.api_versions[69] == (0, 1)
        placed = ours.create_replica_placement(2, 2)
        assert len(placed) == 2
    for name in ("librdkafka", "apache-kafka-java", "confluent-kafka-python", "kgo"):
        with BlockingClient.connect(server.bootstrap, software=(name, "1.0")) as theirs:
            assert theirs.api_versions[68] == (0, 1), name
    with BlockingClient.connect(server.bootstrap, software=("kafka-python", "3.0.12")) as other:
        assert other.api_versions[68] == (0, 0)


@pytest.mark.parametrize(
    ("mode", "ours", "librdkafka"),
    [("ConsumerGroupHeartbeat", (0, 1), (0, 1)), ("CreateReplicaPlacement", (0, 0), None)],
)
def test_a_setting_forces_what_apikey_68_is_for_every_connection(
    mode: str, ours: tuple[int, int], librdkafka: tuple[int, int] | None
) -> None:
    props = {**PROPS, "simulator.apikey.68": mode}
    with ServerThread.start(brokers=BROKERS, clock="virtual", properties=props) as server:
        with BlockingClient.connect(server.bootstrap) as client:
            assert client.api_versions.get(68) == ours
        with BlockingClient.connect(server.bootstrap, software=LIBRDKAFKA) as client:
            assert client.api_versions.get(68) == librdkafka
            if mode == "ConsumerGroupHeartbeat":
                response = client.send(
                    "ConsumerGroupHeartbeatRequest",
                    {"GroupId": "", "MemberId": "m", "MemberEpoch": 0},
                    version=1,
                )
                assert response["ErrorCode"] == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(
    ("fields", "version", "code", "message"),
    [
        ({"MemberId": "", "MemberEpoch": 0}, 1, ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
        ({"MemberId": "m", "MemberEpoch": 0, "InstanceId": " "}, 1, ErrorCode.INVALID_REQUEST, "InstanceId can't be empty."),
        ({"MemberId": "m", "MemberEpoch": 0}, 1, ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."),
        (
            {"MemberId": "m", "MemberEpoch": 0, "RebalanceTimeoutMs": 1000},
            1,
            ErrorCode.INVALID_REQUEST,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            {"MemberId": "m", "MemberEpoch": 0, "RebalanceTimeoutMs": 1000, "TopicPartitions": []},
            1,
            ErrorCode.INVALID_REQUEST,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        ({"MemberId": "m", "MemberEpoch": -2}, 1, ErrorCode.INVALID_REQUEST, "InstanceId can't be null."),
        ({"MemberId": "m", "MemberEpoch": -3}, 1, ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."),
        (
            {"MemberId": "m", "MemberEpoch": 0, "RebalanceTimeoutMs": 1000, "TopicPartitions": [],
             "SubscribedTopicNames": ["orders"], "ServerAssignor": "sticky"},
            1,
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
        ),
        (
            {"MemberId": "m", "MemberEpoch": 0, "RebalanceTimeoutMs": 1000, "TopicPartitions": [],
             "SubscribedTopicRegex": "orders-("},
            1,
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            "SubscribedTopicRegex `orders-(` is not a valid regular expression: missing closing ).",
        ),
        ({"MemberId": "nobody", "MemberEpoch": 3}, 1, ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group kip848 not found."),
    ],
)  # fmt: skip
def test_a_malformed_heartbeat_is_refused_with_kafkas_message(
    group: Group, fields: dict[str, Any], version: int, code: ErrorCode, message: str
) -> None:
    response = group.heartbeat(version=version, **fields)
    assert (response["ErrorCode"], response["ErrorMessage"]) == (code, message)


def test_two_members_reconcile_revocation_before_assignment(group: Group, server: ServerThread) -> None:
    ids = group.ids()
    first = group.join("m1", ["orders"])
    assert (first["ErrorCode"], first["MemberId"], first["MemberEpoch"]) == (0, "m1", 1)
    assert parts(first, ids) == {"orders": [0, 1, 2, 3]}
    assert first["HeartbeatIntervalMs"] == 5000
    second = group.join("m2", ["orders"])
    assert (second["MemberEpoch"], parts(second, ids)) == (2, {})  # its partitions are still the first's
    # The first keeps its epoch and gives up two partitions (they stay its own until it says so).
    revoke = group.heartbeat(MemberId="m1", MemberEpoch=1)
    assert (revoke["MemberEpoch"], parts(revoke, ids)) == (1, {"orders": [0, 1]})
    state = server.group_state("kip848")
    assert state is not None and state["state"] == "Reconciling"
    assert state["members"]["m1"]["pending_revocation"] == {"orders": [2, 3]}
    still = group.heartbeat(
        MemberId="m1", MemberEpoch=1, TopicPartitions=[{"TopicId": ids["orders"], "Partitions": [0, 1, 2]}]
    )
    assert (still["MemberEpoch"], still["Assignment"]) == (1, None)
    done = group.heartbeat(
        MemberId="m1", MemberEpoch=1, TopicPartitions=[{"TopicId": ids["orders"], "Partitions": [0, 1]}]
    )
    assert (done["MemberEpoch"], done["Assignment"]) == (2, None)
    got = group.heartbeat(MemberId="m2", MemberEpoch=2)
    assert (got["MemberEpoch"], parts(got, ids)) == (2, {"orders": [2, 3]})
    state = server.group_state("kip848")
    assert state is not None and state["state"] == "Stable" and state["group_epoch"] == 2
    # A heartbeat of an epoch the coordinator did not give is fenced.
    fenced = group.heartbeat(MemberId="m2", MemberEpoch=7)
    assert fenced["ErrorCode"] == ErrorCode.FENCED_MEMBER_EPOCH
    assert fenced["ErrorMessage"].startswith("The consumer group member has a greater member epoch (7)")
    unknown = group.heartbeat(MemberId="m9", MemberEpoch=2)
    assert unknown["ErrorCode"] == ErrorCode.UNKNOWN_MEMBER_ID
    # Leaving bumps the group epoch; the other member gets everything at its next heartbeat.
    left = group.heartbeat(MemberId="m2", MemberEpoch=-1)
    assert (left["ErrorCode"], left["MemberEpoch"]) == (0, -1)
    back = group.heartbeat(
        MemberId="m1", MemberEpoch=2, TopicPartitions=[{"TopicId": ids["orders"], "Partitions": [0, 1]}]
    )
    assert (back["MemberEpoch"], parts(back, ids)) == (3, {"orders": [0, 1, 2, 3]})


def test_the_range_assignor_when_members_ask_for_it(group: Group) -> None:
    ids = group.ids()
    group.join("a", ["orders", "audit"], ServerAssignor="range")
    group.join("b", ["orders", "audit"], ServerAssignor="range")
    a = group.heartbeat(MemberId="a", MemberEpoch=1, TopicPartitions=[])
    assert parts(a, ids) == {"orders": [0, 1], "audit": [0]}
    described = group.admin.send(
        "ConsumerGroupDescribeRequest",
        {"GroupIds": ["kip848"], "IncludeAuthorizedOperations": False},
        version=1,
    )
    [d] = described["Groups"]
    assert d["AssignorName"] == "range"
    target = {
        m["MemberId"]: {t["TopicName"]: t["Partitions"] for t in m["TargetAssignment"]["TopicPartitions"]}
        for m in d["Members"]
    }
    assert target == {"a": {"audit": [0], "orders": [0, 1]}, "b": {"audit": [1], "orders": [2, 3]}}


def test_consumer_group_describe_list_groups_and_delete_groups(group: Group, server: ServerThread) -> None:
    group.join("m1", ["orders"], InstanceId="i1", RackId="r1")
    described = group.admin.send(
        "ConsumerGroupDescribeRequest",
        {"GroupIds": ["kip848", "nothing", ""], "IncludeAuthorizedOperations": False},
        version=1,
    )
    d, missing, empty = described["Groups"]
    assert (d["ErrorCode"], d["GroupState"], d["GroupEpoch"], d["AssignmentEpoch"], d["AssignorName"]) == (
        0,
        "Stable",
        1,
        1,
        "uniform",
    )
    [m] = d["Members"]
    assert (m["MemberId"], m["InstanceId"], m["RackId"], m["MemberEpoch"], m["MemberType"]) == (
        "m1",
        "i1",
        "r1",
        1,
        1,
    )
    assert m["SubscribedTopicNames"] == ["orders"] and m["ClientId"] == "placement-sim-client"
    assert [t["Partitions"] for t in m["Assignment"]["TopicPartitions"]] == [[0, 1, 2, 3]]
    assert (missing["ErrorCode"], missing["ErrorMessage"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nothing not found.",
    )
    assert empty["ErrorCode"] == ErrorCode.INVALID_GROUP_ID
    listed = group.admin.send("ListGroupsRequest", {"StatesFilter": [], "TypesFilter": []}, version=5)
    assert {
        "GroupId": "kip848",
        "ProtocolType": "consumer",
        "GroupState": "Stable",
        "GroupType": "consumer",
    } in listed["Groups"]
    for types, states, found in [
        (["Consumer"], [], True),
        (["classic"], [], False),
        ([], ["stable"], True),
        ([], ["empty"], False),
    ]:
        listed = group.admin.send(
            "ListGroupsRequest", {"StatesFilter": states, "TypesFilter": types}, version=5
        )
        assert ("kip848" in {g["GroupId"] for g in listed["Groups"]}) is found, (types, states)
    # DescribeGroups (classic) sees no classic group of that id: Dead, as Kafka answers before v6.
    classic = group.admin.send(
        "DescribeGroupsRequest", {"Groups": ["kip848"], "IncludeAuthorizedOperations": False}, version=5
    )
    assert classic["Groups"][0]["GroupState"] == "Dead"
    deleted = group.admin.send("DeleteGroupsRequest", {"GroupsNames": ["kip848"]}, version=2)
    assert deleted["Results"][0]["ErrorCode"] == ErrorCode.NON_EMPTY_GROUP
    group.heartbeat(MemberId="m1", MemberEpoch=-1, InstanceId="i1")
    deleted = answered(
        server, lambda: group.admin.send("DeleteGroupsRequest", {"GroupsNames": ["kip848"]}, version=2)
    )
    assert deleted["Results"][0]["ErrorCode"] == 0
    assert server.group_state("kip848") is None


def test_offsets_are_committed_and_fetched_with_the_member_epoch(group: Group, server: ServerThread) -> None:
    ids = group.ids()
    group.join("m1", ["orders"])

    def commit(
        epoch: int, member: str = "m1", version: int = 9, partitions: tuple[int, ...] = (0,)
    ) -> list[int]:
        request = {
            "GroupId": "kip848", "GenerationIdOrMemberEpoch": epoch, "MemberId": member, "GroupInstanceId": None,
            "Topics": [{"Name": "orders", "Partitions": [
                {"PartitionIndex": p, "CommittedOffset": 10 + p, "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}
                for p in partitions
            ]}],
        }  # fmt: skip
        response = answered(
            server, lambda: group.client.send("OffsetCommitRequest", request, version=version)
        )
        return [p["ErrorCode"] for p in response["Topics"][0]["Partitions"]]

    assert commit(1) == [0]
    assert commit(2) == [ErrorCode.STALE_MEMBER_EPOCH]
    assert commit(1, member="m9") == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert commit(1, version=8) == [ErrorCode.UNSUPPORTED_VERSION]
    # m2 joins: m1 moves to epoch 3 with two partitions; a commit of epoch 1 (sent before the move) is taken
    # for the partitions m1 owned since epoch 1 and is stale for those it gave up.
    group.join("m2", ["orders"])
    group.heartbeat(MemberId="m1", MemberEpoch=1)
    moved = group.heartbeat(
        MemberId="m1", MemberEpoch=1, TopicPartitions=[{"TopicId": ids["orders"], "Partitions": [0, 1]}]
    )
    assert moved["MemberEpoch"] == 2
    assert commit(1, partitions=(0, 1, 2)) == [0, 0, ErrorCode.STALE_MEMBER_EPOCH]
    assert server.committed_offsets("kip848") == {("orders", 0): 10, ("orders", 1): 11}

    def fetch(member: str | None, epoch: int) -> tuple[int, list[int]]:
        request = {"Groups": [{"GroupId": "kip848", "MemberId": member, "MemberEpoch": epoch,
                               "Topics": [{"Name": "orders", "PartitionIndexes": [0, 1]}]}], "RequireStable": False}  # fmt: skip
        [g] = group.client.send("OffsetFetchRequest", request, version=9)["Groups"]
        return g["ErrorCode"], [p["CommittedOffset"] for t in g["Topics"] for p in t["Partitions"]]

    assert fetch("m1", 2) == (0, [10, 11])
    assert fetch(None, -1) == (0, [10, 11])  # an admin's
    assert fetch("m1", 1) == (ErrorCode.STALE_MEMBER_EPOCH, [])
    assert fetch("m7", 2) == (ErrorCode.UNKNOWN_MEMBER_ID, [])


def test_a_static_member_comes_back_with_its_partitions(group: Group, server: ServerThread) -> None:
    ids = group.ids()
    group.join("s1", ["orders"], InstanceId="box-1")
    group.join("s2", ["orders"], InstanceId="box-2")
    group.heartbeat(MemberId="s1", MemberEpoch=1)
    group.heartbeat(
        MemberId="s1", MemberEpoch=1, TopicPartitions=[{"TopicId": ids["orders"], "Partitions": [0, 1]}]
    )
    kept = group.heartbeat(MemberId="s2", MemberEpoch=2)
    assert parts(kept, ids) == {"orders": [2, 3]}
    # Another process with the same instance id while s2 is in: refused.
    taken = group.join("s2-new", ["orders"], InstanceId="box-2")
    assert taken["ErrorCode"] == ErrorCode.UNRELEASED_INSTANCE_ID
    assert taken["ErrorMessage"] == (
        "Static member s2-new with instance id box-2 cannot join the group because the instance id is owned by s2 member."
    )
    # s2 leaves for a restart (-2): the group does not rebalance and its partitions wait for it.
    gone = group.heartbeat(MemberId="s2", MemberEpoch=-2, InstanceId="box-2")
    assert (gone["ErrorCode"], gone["MemberEpoch"]) == (0, -2)
    state = server.group_state("kip848")
    assert state is not None and state["group_epoch"] == 2
    back = group.join("s2-new", ["orders"], InstanceId="box-2")
    assert (back["ErrorCode"], back["MemberEpoch"], parts(back, ids)) == (0, 2, {"orders": [2, 3]})
    state = server.group_state("kip848")
    assert state is not None and set(state["members"]) == {"s1", "s2-new"} and state["group_epoch"] == 2
    fenced = group.heartbeat(MemberId="s2", MemberEpoch=2, InstanceId="box-2")
    assert fenced["ErrorCode"] == ErrorCode.FENCED_INSTANCE_ID


def test_a_regular_expression_subscribes_to_the_topics_it_matches_and_to_new_ones(
    group: Group, server: ServerThread
) -> None:
    create_topics(group.admin, {"orders-eu": 1, "orders-us": 1, "xorders-eu": 1})
    ids = group.ids()
    first = group.join("r1", None, SubscribedTopicRegex="orders-.*")
    assert parts(first, ids) == {"orders-eu": [0], "orders-us": [0]}
    create_topics(group.admin, {"orders-asia": 2})
    ids = group.ids()
    server.advance(10_000)  # Kafka resolves a group's expressions again at most every 10 s
    again = group.heartbeat(MemberId="r1", MemberEpoch=1)
    assert (again["MemberEpoch"], parts(again, ids)) == (
        2,
        {"orders-asia": [0, 1], "orders-eu": [0], "orders-us": [0]},
    )
    described = group.admin.send(
        "ConsumerGroupDescribeRequest",
        {"GroupIds": ["kip848"], "IncludeAuthorizedOperations": False},
        version=1,
    )
    member = described["Groups"][0]["Members"][0]
    assert (member["SubscribedTopicRegex"], member["SubscribedTopicNames"]) == ("orders-.*", [])


def test_sessions_and_rebalance_timeouts_fence_members(group: Group, server: ServerThread) -> None:
    ids = group.ids()
    group.join("quiet", ["orders"], RebalanceTimeoutMs=60_000)
    epoch = group.join("busy", ["orders"])["MemberEpoch"]
    # 'quiet' never heartbeats again: fenced when its session ends (45 s), which bumps the group epoch.
    for _ in range(8):
        server.advance(5000)
        epoch = group.heartbeat(MemberId="busy", MemberEpoch=epoch, TopicPartitions=[])["MemberEpoch"]
    state = server.group_state("kip848")
    assert state is not None and set(state["members"]) == {"quiet", "busy"}
    server.advance(5000)
    state = server.group_state("kip848")
    assert state is not None and set(state["members"]) == {"busy"} and state["group_epoch"] == 3
    got = group.heartbeat(MemberId="busy", MemberEpoch=epoch, TopicPartitions=[])
    assert (got["MemberEpoch"], parts(got, ids)) == (3, {"orders": [0, 1, 2, 3]})
    # 'busy' must give up partitions to 'late' and does not within its rebalance timeout (30 s): fenced.
    group.join("late", ["orders"])
    held = group.heartbeat(MemberId="busy", MemberEpoch=3)
    assert (held["MemberEpoch"], parts(held, ids)) == (3, {"orders": [0, 1]})
    server.advance(30_000)
    state = server.group_state("kip848")
    assert state is not None and set(state["members"]) == {"late"}
    assert group.heartbeat(MemberId="busy", MemberEpoch=3)["ErrorCode"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_the_group_configs_set_the_heartbeat_interval_and_the_session(
    group: Group, server: ServerThread
) -> None:
    group.join("m1", ["orders"])
    altered = group.admin.send(
        "IncrementalAlterConfigsRequest",
        {"Resources": [{"ResourceType": 32, "ResourceName": "kip848", "Configs": [
            {"Name": "consumer.heartbeat.interval.ms", "ConfigOperation": 0, "Value": "7000"},
            {"Name": "consumer.session.timeout.ms", "ConfigOperation": 0, "Value": "50000"},
        ]}], "ValidateOnly": False},
        version=1,
    )  # fmt: skip
    assert altered["Responses"][0]["ErrorCode"] == 0, altered
    beat = group.heartbeat(MemberId="m1", MemberEpoch=1)
    assert beat["HeartbeatIntervalMs"] == 7000
    server.advance(46_000)  # past the default 45 s session, within the group's 50 s
    assert group.heartbeat(MemberId="m1", MemberEpoch=1)["ErrorCode"] == 0
    refused = group.admin.send(
        "IncrementalAlterConfigsRequest",
        {"Resources": [{"ResourceType": 32, "ResourceName": "kip848", "Configs": [
            {"Name": "consumer.session.timeout.ms", "ConfigOperation": 0, "Value": "1000"},
        ]}], "ValidateOnly": False},
        version=1,
    )  # fmt: skip
    assert refused["Responses"][0]["ErrorCode"] == ErrorCode.INVALID_CONFIG
    assert (
        refused["Responses"][0]["ErrorMessage"]
        == "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."
    )


def test_a_classic_group_of_another_protocol_type_is_not_upgraded(group: Group, server: ServerThread) -> None:
    joined = answered(
        server,
        lambda: group.client.send(
            "JoinGroupRequest",
            {"GroupId": "kip848", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": "",
             "GroupInstanceId": "c1", "ProtocolType": "connect", "Protocols": [{"Name": "v1", "Metadata": b""}],
             "Reason": None},
            version=9,
        ),
    )  # fmt: skip
    assert joined["ErrorCode"] == 0
    refused = group.join("m1", ["orders"])
    assert (refused["ErrorCode"], refused["ErrorMessage"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Cannot upgrade classic group kip848 to consumer group because the group does not use the consumer "
        "embedded protocol.",
    )
    described = group.admin.send(
        "ConsumerGroupDescribeRequest",
        {"GroupIds": ["kip848"], "IncludeAuthorizedOperations": False},
        version=0,
    )
    assert described["Groups"][0]["ErrorMessage"] == "Group kip848 is not a consumer group."


def test_a_classic_member_of_a_consumer_group_rejoins_without_a_change(
    group: Group, server: ServerThread
) -> None:
    """A classic member's JoinGroup to a consumer group that changes nothing (once it has reconciled: no
    record to write) is answered at once with the member's generation."""
    joined = group.join("m1", ["orders"])
    assert joined["ErrorCode"] == 0
    metadata = write_subscription(["orders"], version=0)

    def join(member_id: str) -> dict[str, Any]:
        request = {
            "GroupId": "kip848", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": member_id,
            "GroupInstanceId": None, "ProtocolType": "consumer",
            "Protocols": [{"Name": "range", "Metadata": metadata}], "Reason": None,
        }  # fmt: skip
        return answered(server, lambda: group.client.send("JoinGroupRequest", request, version=9))

    member_id = join("")["MemberId"]  # MEMBER_ID_REQUIRED
    assert join(member_id)["ErrorCode"] == 0
    # The consumer member gives up the partitions now the classic member's target; the classic member's
    # next join takes them (its generation moves on), and the one after changes nothing.
    revoked = group.heartbeat(MemberId="m1", MemberEpoch=joined["MemberEpoch"], TopicPartitions=[])
    assert revoked["ErrorCode"] == 0, revoked
    reconciled = join(member_id)
    assert reconciled["ErrorCode"] == 0, reconciled
    again = join(member_id)
    assert (again["ErrorCode"], again["GenerationId"], again["MemberId"]) == (
        0,
        reconciled["GenerationId"],
        member_id,
    ), again


def test_the_group_moves_with_its_coordinator(group: Group, server: ServerThread) -> None:
    ids = group.ids()
    group.join("m1", ["orders"])
    group.join("m2", ["orders"])
    before = server.group_state("kip848")
    assert before is not None
    old = group.coordinator
    server.stop_broker(old, "crash")
    server.advance(9000)  # fenced after broker.session.timeout.ms: the partition gets a new leader
    leader = server.partition_state(OFFSETS_TOPIC, coordinator_partition("kip848", 50)).leader
    assert leader != old
    with BlockingClient.connect(
        server.brokers[leader], software=LIBRDKAFKA, request_timeout=TIMEOUT
    ) as moved:
        loading = moved.send(
            "ConsumerGroupHeartbeatRequest",
            {"GroupId": "kip848", "MemberId": "m1", "MemberEpoch": 1},
            version=1,
        )
        assert loading["ErrorCode"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        server.advance(100)
        group.client.close()
        group.client = moved
        after = server.group_state("kip848")
        assert after is not None and after["coordinator"] == leader
        assert {k: after[k] for k in ("group_epoch", "assignment_epoch", "members")} == {
            k: before[k] for k in ("group_epoch", "assignment_epoch", "members")
        }
        # The members go on with the epochs they had.
        revoke = group.heartbeat(MemberId="m1", MemberEpoch=1)
        assert (revoke["ErrorCode"], revoke["MemberEpoch"], parts(revoke, ids)) == (0, 1, {"orders": [0, 1]})
    group.client = BlockingClient.connect(server.bootstrap)  # closed by the fixture


def test_without_an_authorizer_describe_answers_every_group_operation_when_asked(group: Group) -> None:
    """As Kafka: IncludeAuthorizedOperations without an authorizer gives every operation of a group."""
    from controller.acls.codes import ALL_OPERATIONS, ResourceType
    from controller.handlers import NO_OPERATIONS

    group.join("m1", ["orders"])
    answers = [
        group.admin.send(
            "ConsumerGroupDescribeRequest",
            {"GroupIds": ["kip848"], "IncludeAuthorizedOperations": asked},
            version=1,
        )["Groups"][0]["AuthorizedOperations"]
        for asked in (True, False)
    ]
    assert answers == [ALL_OPERATIONS[ResourceType.GROUP], NO_OPERATIONS]
