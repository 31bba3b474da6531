"""Request faults: the compact syntax, matching, triggers (seeded), and every action on real sockets."""

from __future__ import annotations

import select
import socket
import struct
from collections.abc import Iterator

import pytest

from controller.config import ConfigError, ServerConfig
from controller.embedded import ServerThread
from controller.faults import FaultSpec, FaultSyntaxError, format_faults, parse_faults
from controller.records.batch import client_batch
from protocol import load_schemas
from protocol.client import BlockingClient, ConnectionClosedError, ErrorResponse, RequestTimedOutError
from protocol.codes import ApiKey, ErrorCode
from tests.support.rawwire import raw_connect, read_response, request_frame

SCHEMAS = load_schemas()
METADATA_V12 = {"Topics": [{"Name": "orders"}], "AllowAutoTopicCreation": False}


def topic(name: str, partitions: int = 2) -> dict:
    return {
        "Name": name,
        "NumPartitions": partitions,
        "ReplicationFactor": 2,
        "Assignments": [],
        "Configs": [],
    }


def create(client: BlockingClient, name: str) -> dict:
    return client.send(
        "CreateTopicsRequest", {"Topics": [topic(name)], "timeoutMs": 5000, "validateOnly": False}
    )


def metadata_error(client: BlockingClient, name: str = "orders") -> int:
    answer = client.send("MetadataRequest", {"Topics": [{"Name": name}], "AllowAutoTopicCreation": False})
    return answer["Topics"][0]["ErrorCode"]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(
        placer="legacy", brokers=[(0, None), (1, None), (2, None)], clock="virtual"
    ) as started:
        yield started


@pytest.fixture(scope="module")
def client(server: ServerThread) -> Iterator[BlockingClient]:
    with BlockingClient.connect(server.bootstrap, request_timeout=5, client_id="faults-test") as connected:
        assert create(connected, "orders")["Topics"][0]["ErrorCode"] == 0
        yield connected


@pytest.fixture(autouse=True)
def no_faults_left(server: ServerThread) -> Iterator[None]:
    yield
    server.faults.clear()


# ------------------------------------------------------------------------------------------ syntax


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        (
            "error=NOT_CONTROLLER api=CreateTopics once",
            FaultSpec("error", error=41, api_key=19, trigger="once"),
        ),
        (
            "delay=5000 api=Metadata@0-8 client=slow",
            FaultSpec("delay", delay_ms=5000, api_key=3, min_version=0, max_version=8, client="slow"),
        ),  # fmt: skip
        ("drop broker=bootstrap times=2", FaultSpec("drop", broker=-2, trigger="times", count=2)),
        (
            "close=before api=DescribeCluster broker=1 call=3",
            FaultSpec("close-before", api_key=60, broker=1, trigger="on-call", count=3),
        ),  # fmt: skip
        ("close=after api=CreateTopics topic=orders", FaultSpec("close-after", api_key=19, topic="orders")),
        (
            "blackhole client=bad p=0.25",
            FaultSpec("blackhole", client="bad", trigger="probability", probability=0.25),
        ),  # fmt: skip
        (
            "error=6 api=ElectLeaders partition=3 group=g",
            FaultSpec("error", error=6, api_key=43, partition=3, group="g"),
        ),  # fmt: skip
    ],
)
def test_the_compact_syntax_reads_and_prints_back(text, spec):
    [parsed] = parse_faults(text)
    assert parsed == spec
    assert parse_faults(str(parsed)) == [spec]
    assert FaultSpec.from_wire(spec.to_wire()) == spec


def test_several_faults_are_separated_by_semicolons():
    faults = parse_faults(" drop api=Metadata ;; error=NOT_CONTROLLER api=create-topics ")
    assert format_faults(faults) == "drop api=Metadata; error=NOT_CONTROLLER api=CreateTopics"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "api=Metadata",
            "fault 1: 'api=Metadata' has no action (error=, delay=, drop, close=before|after, blackhole)",
        ),  # fmt: skip
        ("drop; error=NOPE", "fault 2: no error code 'NOPE'"),
        ("error=NONE", "fault 1: an error fault needs an error code other than NONE"),
        ("drop api=Frobnicate", "fault 1: no API named 'Frobnicate'"),
        ("delay=0", "fault 1: a delay must be a positive number of ms, not 0"),
        ("blackhole", "fault 1: blackhole needs the client id to black-hole (client=...)"),
        ("drop once times=2", "fault 1: times=2: a fault has one trigger"),
        ("drop p=1.5", "fault 1: a probability is between 0 and 1, not 1.5"),
        ("drop call=0", "fault 1: on-call needs a count of at least 1, not 0"),
        ("drop api=Metadata@9-2", "fault 1: version range 9-2 is empty"),
        ("drop partition=x", "fault 1: partition=x: 'x' is not a whole number"),
        ("drop later", "fault 1: 'later' is not a fault word (see docs/control.md)"),
    ],
)
def test_malformed_faults_say_what_is_wrong(text, message):
    with pytest.raises(FaultSyntaxError) as raised:
        parse_faults(text)
    assert str(raised.value) == message


def test_a_malformed_simulator_faults_setting_stops_startup():
    with pytest.raises(ConfigError) as raised:
        ServerConfig.from_properties({"simulator.faults": "drop p=2"})
    assert str(raised.value) == "simulator.faults: fault 1: a probability is between 0 and 1, not 2.0"


# ------------------------------------------------------------------------------------------ triggers


def test_triggers_count_matching_calls(server, client):
    once = server.faults.inject_error(ApiKey.METADATA, "NOT_LEADER_OR_FOLLOWER").once()
    assert [metadata_error(client) for _ in range(3)] == [6, 0, 0]
    assert (once.calls, once.fired) == (3, 1)
    server.faults.clear()
    third = server.faults.inject_error(ApiKey.METADATA, ErrorCode.LEADER_NOT_AVAILABLE).on_call(3)
    assert [metadata_error(client) for _ in range(4)] == [0, 0, 5, 0]
    assert third.fired == 1
    server.faults.clear()
    twice = server.faults.inject_error("Metadata", "REQUEST_TIMED_OUT").times(2)
    assert [metadata_error(client) for _ in range(3)] == [7, 7, 0]
    assert twice.fired == 2
    server.faults.clear()
    every = server.faults.inject_error(ApiKey.METADATA, "REQUEST_TIMED_OUT").every_time()
    assert [metadata_error(client) for _ in range(3)] == [7, 7, 7]
    assert every.fired == 3


def test_faults_are_kept_in_order_and_the_first_that_fires_acts(server, client):
    first = server.faults.inject_error(ApiKey.METADATA, "NOT_LEADER_OR_FOLLOWER").on_call(2)
    second = server.faults.inject_error(ApiKey.METADATA, "LEADER_NOT_AVAILABLE")
    assert [metadata_error(client) for _ in range(3)] == [5, 6, 5]
    assert (first.calls, first.fired, second.calls, second.fired) == (3, 1, 2, 2)
    assert [f.id for f in server.faults] == [first.id, second.id]


def fired_pattern(seed: int) -> list[int]:
    with (
        ServerThread.start(placer="legacy", seed=seed) as server,
        BlockingClient.connect(server.bootstrap, request_timeout=5) as client,
    ):
        server.faults.inject_error(ApiKey.METADATA, "LEADER_NOT_AVAILABLE").with_probability(0.5)
        return [metadata_error(client, "any") for _ in range(32)]


def test_a_probability_draws_from_the_servers_seed():
    pattern = fired_pattern(11)
    assert pattern == fired_pattern(11)
    assert pattern != fired_pattern(12)
    assert set(pattern) == {3, 5}  # UNKNOWN_TOPIC_OR_PARTITION when not fired, the fault's error when fired


# ------------------------------------------------------------------------------------------ matching


def test_matches_on_client_broker_version_topic_and_partition(server, client):
    faults = server.faults
    by_client = faults.inject_error(ApiKey.METADATA, "REQUEST_TIMED_OUT", client="someone-else")
    by_broker = faults.inject_error(ApiKey.METADATA, "REQUEST_TIMED_OUT", broker=1)
    by_version = faults.inject_error(ApiKey.METADATA, "REQUEST_TIMED_OUT", min_version=0, max_version=3)
    by_topic = faults.inject_error(ApiKey.METADATA, "REQUEST_TIMED_OUT", topic="payments")
    assert metadata_error(client) == 0
    assert [f.calls for f in (by_client, by_broker, by_version, by_topic)] == [0, 0, 0, 0]
    assert metadata_error(client, "payments") == 7
    assert by_topic.fired == 1
    with BlockingClient.connect(server.brokers[1], request_timeout=5) as on_broker_1:
        assert metadata_error(on_broker_1) == 7
    assert by_broker.fired == 1
    faults.clear()
    by_partition = faults.inject_error(ApiKey.ELECT_LEADERS, "NOT_CONTROLLER", partition=1)
    elect = {
        "ElectionType": 0,
        "TopicPartitions": [{"Topic": "orders", "Partitions": [0]}],
        "TimeoutMs": 5000,
    }
    assert (
        client.send("ElectLeadersRequest", elect)["ReplicaElectionResults"][0]["PartitionResult"][0][
            "ErrorCode"
        ]
        == ErrorCode.ELECTION_NOT_NEEDED
    )
    elect["TopicPartitions"][0]["Partitions"] = [1]
    results = client.send("ElectLeadersRequest", elect)["ReplicaElectionResults"]
    assert results == [
        {
            "Topic": "orders",
            "PartitionResult": [
                {
                    "PartitionId": 1,
                    "ErrorCode": ErrorCode.NOT_CONTROLLER,
                    "ErrorMessage": f"injected by fault #{by_partition.id}: error=NOT_CONTROLLER api=ElectLeaders partition=1",
                }
            ],
        }
    ]


def test_a_produce_fault_matches_the_partition_produced_to(server, client):
    """Produce names its partitions ``Index``: a fault on partition 1 answers a Produce to it, not to 0."""
    fault = server.faults.inject_error(ApiKey.PRODUCE, "NOT_LEADER_OR_FOLLOWER", topic="orders", partition=1)

    def produce(partition: int) -> tuple[int, int]:
        answer = client.send("ProduceRequest", produce_request(partition), version=9)
        [partition_answer] = answer["Responses"][0]["PartitionResponses"]
        return partition_answer["Index"], partition_answer["ErrorCode"]

    assert produce(0) == (0, ErrorCode.NONE)
    assert (fault.calls, fault.fired) == (0, 0)
    assert produce(1) == (1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert (fault.calls, fault.fired) == (1, 1)


def produce_request(partition: int, timestamp_ms: int = 1000, topic: str = "orders") -> dict:
    batch = client_batch([(b"k", b"v")], timestamp_ms)
    data = [{"Name": topic, "PartitionData": [{"Index": partition, "Records": batch}]}]
    return {"TransactionalId": None, "Acks": 1, "TimeoutMs": 5000, "TopicData": data}


def produce_error(client: BlockingClient, partition: int, timestamp_ms: int = 1000) -> int:
    answer = client.send("ProduceRequest", produce_request(partition, timestamp_ms), version=9)
    return answer["Responses"][0]["PartitionResponses"][0]["ErrorCode"]


def test_a_name_inside_another_does_not_match_and_faults_act_in_order(server, client):
    """``order`` is in the bytes of ``orders`` (the body is read), but no topic is named ``order``; of a
    body fault and a header fault both matching, the one registered first acts."""
    inside = server.faults.inject_error(ApiKey.PRODUCE, "INVALID_TOPIC_EXCEPTION", topic="order")
    assert produce_error(client, 0) == ErrorCode.NONE
    assert (inside.calls, inside.fired) == (0, 0)
    first = server.faults.inject_error(ApiKey.PRODUCE, "NOT_LEADER_OR_FOLLOWER", topic="orders", partition=1)
    second = server.faults.inject_error(ApiKey.PRODUCE, "NOT_ENOUGH_REPLICAS", client="faults-test")
    assert produce_error(client, 1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert produce_error(client, 0) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert [(f.calls, f.fired) for f in (inside, first, second)] == [(0, 0), (1, 1), (1, 1)]


def test_bodies_that_never_repeat_are_still_matched_each_time(server, client):
    """A producer's batches are new each time (kept bodies stop being kept after a few hundred new ones in
    a row): a fault still sees every one."""
    fault = server.faults.inject_error(ApiKey.PRODUCE, "NOT_LEADER_OR_FOLLOWER", topic="orders", partition=1)
    answers = [produce_error(client, i % 2, 1000 + i) for i in range(600)]
    assert answers == [ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER] * 300
    assert (fault.calls, fault.fired) == (300, 300)


def test_an_error_without_entries_is_answered_top_level(server, client):
    server.faults.inject_error(ApiKey.DESCRIBE_CLUSTER, "CLUSTER_AUTHORIZATION_FAILED").once()
    answer = client.send("DescribeClusterRequest", {"IncludeClusterAuthorizedOperations": False})
    assert (answer["ErrorCode"], answer["Brokers"]) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    assert (
        client.send("DescribeClusterRequest", {"IncludeClusterAuthorizedOperations": False})["ErrorCode"] == 0
    )


# ------------------------------------------------------------------------------------------ actions


def answer_ready(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def test_a_delay_holds_the_answer_on_the_servers_clock(server):
    fault = server.faults.delay_on(ApiKey.METADATA, 3000)
    with raw_connect(server.bootstrap) as sock:
        sock.sendall(request_frame(3, 12, METADATA_V12, 5))
        server.wait_until(lambda: fault.fired == 1, timeout=10)
        server.advance(2999)
        assert not answer_ready(sock)
        server.advance(1)
        frame = read_response(sock)
        assert frame is not None and struct.unpack_from(">i", frame)[0] == 5


def test_drop_and_blackhole_never_answer(server):
    server.faults.drop_on(ApiKey.METADATA).once()
    with BlockingClient.connect(server.bootstrap, request_timeout=5) as client:
        with pytest.raises(RequestTimedOutError):
            client.send("MetadataRequest", METADATA_V12, timeout=1)
    hole = server.faults.blackhole_client("mute")
    with pytest.raises(RequestTimedOutError):
        BlockingClient.connect(server.bootstrap, request_timeout=1, client_id="mute-client")
    with BlockingClient.connect(server.bootstrap, request_timeout=5, client_id="talker") as talker:
        assert metadata_error(talker) == 0
    assert hole.fired == 1  # the ApiVersions of the black-holed client's handshake


def test_close_before_handling_changes_nothing(server, client):
    fault = server.faults.disconnect_on(ApiKey.CREATE_TOPICS).once()
    with BlockingClient.connect(server.bootstrap, request_timeout=5) as other:
        with pytest.raises(ConnectionClosedError):
            create(other, "before")
    assert fault.fired == 1
    assert metadata_error(client, "before") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert server.stats["closed:fault"] >= 1


def test_close_after_handling_leaves_the_change_unanswered(server, client):
    server.faults.disconnect_on(ApiKey.CREATE_TOPICS, after=True).once()
    with BlockingClient.connect(server.bootstrap, request_timeout=5) as other:
        with pytest.raises(ConnectionClosedError):
            create(other, "after")
    assert metadata_error(client, "after") == 0
    assert create(client, "after")["Topics"][0]["ErrorCode"] == ErrorCode.TOPIC_ALREADY_EXISTS


# ------------------------------------------------------------------------------------------ configured, wire


def test_faults_in_server_properties_are_active_from_start():
    properties = {"simulator.faults": "error=NOT_CONTROLLER api=CreateTopics once; drop client=mute"}
    with (
        ServerThread.start(placer="legacy", properties=properties) as server,
        BlockingClient.connect(server.bootstrap, request_timeout=5) as client,
    ):
        assert [str(f.spec) for f in server.faults] == [
            "error=NOT_CONTROLLER api=CreateTopics once",
            "drop client=mute",
        ]
        assert create(client, "t")["Topics"][0]["ErrorCode"] == ErrorCode.NOT_CONTROLLER
        assert create(client, "t")["Topics"][0]["ErrorCode"] == 0


def test_faults_over_the_wire(server, client):
    entries = [
        spec.to_wire() for spec in parse_faults("error=NOT_CONTROLLER api=Metadata times=2; drop client=x")
    ]
    ids = client.add_faults(entries)
    assert len(ids) == 2 and ids[1] == ids[0] + 1
    assert metadata_error(client) == ErrorCode.NOT_CONTROLLER
    assert client.list_faults() == [
        {"Id": ids[0], "Spec": "error=NOT_CONTROLLER api=Metadata times=2", "Calls": 1, "Fired": 1},
        {"Id": ids[1], "Spec": "drop client=x", "Calls": 0, "Fired": 0},
    ]
    assert client.clear_faults([ids[1], 999]) == 1
    assert [f.id for f in server.faults] == [ids[0]]
    assert client.clear_faults() == 1
    assert metadata_error(client) == 0
    bad = {**entries[0], "Probability": 2.0, "Trigger": "probability"}
    with pytest.raises(Exception) as raised:
        client.add_faults([entries[1], bad])
    assert str(raised.value) == "INVALID_REQUEST (42): a probability is between 0 and 1, not 2.0"
    assert len(server.faults) == 0


def test_a_server_holds_at_most_max_faults(server, client, monkeypatch):
    monkeypatch.setattr("controller.faults.registry.MAX_FAULTS", 3)
    server.faults.add_text("drop client=zz1; drop client=zz2")
    with pytest.raises(ErrorResponse) as raised:
        client.add_faults([spec.to_wire() for spec in parse_faults("drop client=zz3; drop client=zz4")])
    assert raised.value.message == "at most 3 faults are held; 2 are, 2 more asked for"
    assert [str(f.spec) for f in server.faults] == ["drop client=zz1", "drop client=zz2"]


def test_a_fault_that_always_fires_is_spelled_always_on_the_wire_too():
    """One spelling: the compact syntax's ``always`` is the wire's Trigger (it was ``every`` there)."""
    [spec] = parse_faults("error=NOT_CONTROLLER api=Metadata always")
    assert (
        spec.to_wire()["Trigger"] == "always" and spec == parse_faults("error=NOT_CONTROLLER api=Metadata")[0]
    )
    assert FaultSpec.from_wire(spec.to_wire()) == spec
    with pytest.raises(FaultSyntaxError, match="unknown trigger 'every'"):
        FaultSpec.from_wire({**spec.to_wire(), "Trigger": "every"})
    assert SCHEMAS_DEFAULT_TRIGGER == "always"


SCHEMAS_DEFAULT_TRIGGER = next(
    field.default for field in load_schemas().request(1009).spec.fields[0].fields if field.name == "Trigger"
)
