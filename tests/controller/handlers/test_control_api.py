"""The control APIs (keys 1000 and up) over real sockets: each control does what the in-process one does,
bad arguments get clear errors, and the gate (``simulator.control.enable``, ``simulator.control.users``)
refuses them as Kafka refuses an API key it does not serve."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from controller.config import ServerConfig
from controller.embedded import ServerThread
from protocol import load_schemas
from protocol.client import BlockingClient, ErrorResponse
from protocol.codes import ApiKey, ErrorCode
from tests.support.rawwire import raw_connect, read_response, request_frame

SCHEMAS = load_schemas()
CONTROL_KEYS = list(range(1000, 1013))
TOPIC = {"Name": "orders", "NumPartitions": 3, "ReplicationFactor": 3, "Assignments": [], "Configs": []}


def ask(sock: socket.socket, api_key: int, version: int, data: dict, correlation: int = 1) -> dict | None:
    """One request; its decoded answer, or None when the server closed the connection instead."""
    sock.sendall(request_frame(api_key, version, data, correlation))
    frame = read_response(sock)
    if frame is None:
        return None
    assert struct.unpack_from(">i", frame)[0] == correlation
    flexible = SCHEMAS.response(api_key).is_flexible(version) and api_key != 18
    return SCHEMAS.response(api_key).decode(frame[5 if flexible else 4 :], version)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(
        placer="legacy", brokers=[(0, "a"), (1, "b"), (2, "c")], clock="virtual", seed=7
    ) as started:
        yield started


@pytest.fixture(scope="module")
def client(server: ServerThread) -> Iterator[BlockingClient]:
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as connected:
        connected.send("CreateTopicsRequest", {"Topics": [TOPIC], "timeoutMs": 5000, "validateOnly": False})
        yield connected


def test_the_control_keys_are_advertised_on_a_loopback_listener(client):
    assert [k for k in client.api_versions if k >= 1000] == CONTROL_KEYS
    assert all(client.api_versions[k] == (0, 0) for k in CONTROL_KEYS)
    assert [ApiKey(k).name for k in CONTROL_KEYS] == [
        "SIMULATOR_BROKER_STOP",
        "SIMULATOR_BROKER_START",
        "SIMULATOR_BROKER_ADD",
        "SIMULATOR_BROKER_REMOVE",
        "SIMULATOR_REPLICATION",
        "SIMULATOR_PRODUCE_LOAD",
        "SIMULATOR_CLOCK_ADVANCE",
        "SIMULATOR_PARTITION_STATE",
        "SIMULATOR_EVENTS",
        "SIMULATOR_FAULTS_ADD",
        "SIMULATOR_FAULTS_LIST",
        "SIMULATOR_FAULTS_CLEAR",
        "SIMULATOR_SCENARIO_LOAD",
    ]


def test_a_crash_over_the_wire_is_the_in_process_crash(server, client):
    start = server.events()[-1].seq
    client.stop_broker(0, "crash")
    assert server.broker_state(0) == "running"  # not fenced before the session times out
    assert client.advance_clock(9000) == server.now() == 9000
    assert server.broker_state(0) == "offline"
    last, events = client.events(since=start)
    assert last == server.events()[-1].seq
    shown = [
        f"{e['TimeMs']} ms #{e['Seq']} {e['Subject']}: "
        + ", ".join(f"{c['Field']} {c['Before']} -> {c['After']}" for c in e["Changes"])
        + f" ({e['Cause']})"
        for e in events
    ]
    assert shown == [str(e) for e in server.events(start)]
    [orders] = client.partition_state(["orders"])
    for p in orders["Partitions"]:
        state = server.partition_state("orders", p["PartitionIndex"])
        assert (p["LeaderId"], p["LeaderEpoch"], p["PartitionEpoch"], p["Isr"], p["Replicas"]) == (
            state.leader,
            state.leader_epoch,
            state.partition_epoch,
            list(state.isr),
            list(state.replicas),
        )
        assert p["OfflineReplicas"] == [0] and p["Status"] == "Online" and p["LeaderRecoveryState"] == 0
        assert {r["BrokerId"]: r["LogEndOffset"] for r in p["ReplicaStates"]} == state.log_end_offsets
    client.start_broker(0)
    client.advance_clock(2000)
    assert server.broker_state(0) == "running"


def test_load_replication_and_brokers_over_the_wire(server, client):
    client.produce_load("orders", 50)
    client.set_replication(2, delay_ms=500, records_per_s=None)
    client.advance_clock(1000)
    [orders] = client.partition_state([("orders", [1])])
    [p] = orders["Partitions"]
    assert p["PartitionIndex"] == 1 and p["HighWatermark"] > 0
    assert server.partition_state("orders", 1).high_watermark == p["HighWatermark"]
    client.produce_load("orders", 0)
    assert server.call(lambda: server.server.controller.cluster.broker_state(2).copy_delay_ms) == 500
    client.add_broker(7, "d")
    client.advance_clock(2000)
    assert server.broker_state(7) == "running"
    client.remove_broker(7)
    cluster = server.server.controller.cluster
    assert server.call(lambda: cluster.broker_state(7).registered) is False
    assert 7 not in server.brokers


@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        (lambda c: c.stop_broker(42), ErrorCode.BROKER_NOT_AVAILABLE, "no broker 42 is registered"),
        (
            lambda c: c.stop_broker(1, "explode"),
            ErrorCode.INVALID_REQUEST,
            "mode must be one of crash, hang, isolate, controlled, not 'explode'",
        ),
        (lambda c: c.add_broker(1), ErrorCode.INVALID_REQUEST, "broker 1 is already registered"),
        (lambda c: c.produce_load("nope", 5), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no topic 'nope'"),
        (
            lambda c: c.produce_load("orders", float("nan")),
            ErrorCode.INVALID_REQUEST,
            "records_per_s must be from 0 to 1e+09, got nan",
        ),
        (
            lambda c: c.set_replication(1, records_per_s=-5),
            ErrorCode.INVALID_REQUEST,
            "records_per_s must not be negative, got -5.0",
        ),
        (lambda c: c.advance_clock(-1), ErrorCode.INVALID_REQUEST, "the clock cannot go back (-1 ms)"),
        (
            lambda c: c.advance_clock(3_600_001),
            ErrorCode.INVALID_REQUEST,
            "Ms 3600001 is above 3600000 (one hour): move in steps",
        ),
    ],
)
def test_bad_controls_get_clear_errors_and_the_server_goes_on(client, call, code, message):
    with pytest.raises(ErrorResponse) as raised:
        call(client)
    assert (raised.value.code, raised.value.message) == (code, message)
    assert client.partition_state(["orders"])[0]["ErrorCode"] == 0


def test_unknown_topics_and_partitions_in_partition_state(client):
    answer = client.partition_state(["nope", ("orders", [2, 9])])
    assert [(t["Name"], t["ErrorCode"]) for t in answer] == [("nope", 3), ("orders", 0)]
    assert [(p["PartitionIndex"], p["ErrorCode"]) for p in answer[1]["Partitions"]] == [(2, 0), (9, 3)]


def test_events_are_followed_in_pages(server, client):
    last, everything = client.events()
    assert [e["Seq"] for e in everything] == [e.seq for e in server.events()]
    seen, position = [], 0
    while position < last:
        _, page = client.events(since=position, max_events=2)
        assert 1 <= len(page) <= 2
        seen += page
        position = page[-1]["Seq"]
    assert seen == everything


def test_an_answer_carries_at_most_ten_thousand_events_whatever_is_asked():
    """A long log is followed in pages of at most 10,000 events, however many MaxEvents asks for."""
    with (
        ServerThread.start(seed=1, clock="virtual") as server,
        BlockingClient.connect(server.bootstrap, request_timeout=30) as client,
    ):
        entries = [(("t", i), [("leader", 1, 2)], "test") for i in range(25_000)]
        server.call(lambda: server.server.controller.cluster.events.record_many("partition", entries))
        sizes, position, last = [], 0, None
        while last is None or position < last:
            last, page = client.events(since=position, max_events=2**31 - 1)
            sizes.append(len(page))
            position = page[-1]["Seq"]
        assert position == last == server.events()[-1].seq
        assert sizes[:2] == [10_000, 10_000] and sum(sizes) == last and max(sizes) == 10_000


def test_a_real_clock_cannot_be_advanced():
    with (
        ServerThread.start(placer="legacy", seed=1) as server,
        BlockingClient.connect(server.bootstrap, request_timeout=10) as client,
    ):
        with pytest.raises(ErrorResponse) as raised:
            client.advance_clock(10)
        assert raised.value.message == "advance() needs simulator.clock=virtual; a real clock moves by itself"


def test_disabled_controls_are_neither_advertised_nor_answered():
    with ServerThread.start(placer="legacy", properties={"simulator.control.enable": "false"}) as server:
        with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
            assert [k for k in client.api_versions if k >= 1000] == []
        with raw_connect(server.bootstrap) as sock:
            assert ask(sock, 1006, 0, {"Ms": 10}) is None  # closed, as Kafka for an unknown API key
        assert server.stats["closed:unknown apiKey"] == 1


@pytest.mark.parametrize(
    ("listener", "setting", "enabled"),
    [
        ("127.0.0.1:0", "auto", True),
        ("127.0.0.5:0", "auto", True),
        ("[::1]:0", "auto", True),
        ("localhost:0", "auto", True),
        ("0.0.0.0:0", "auto", False),
        ("10.1.2.3:9092", "auto", False),
        ("0.0.0.0:0", "true", True),
        ("127.0.0.1:0", "false", False),
    ],
)
def test_the_default_serves_controls_only_on_loopback_listeners(listener, setting, enabled):
    config = ServerConfig.from_properties({"listeners": listener, "simulator.control.enable": setting})
    assert config.control_enabled is enabled


def test_over_sasl_only_the_control_users_get_answers(placement_sim_factory):
    server = placement_sim_factory(
        placer="legacy",
        clock="virtual",
        security="SASL_PLAINTEXT",
        users={"alice": "alice-secret", "bob": "bob-secret"},
        properties={"connection.failed.authentication.delay.ms": "0", "simulator.control.users": "alice"},
    )
    for user, answered in (("alice", True), ("bob", False)):
        with raw_connect(server.bootstrap) as sock:
            assert ask(sock, 17, 1, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
            token = f"\0{user}\0{user}-secret".encode()
            assert ask(sock, 36, 2, {"AuthBytes": token}, correlation=2)["ErrorCode"] == 0
            answer = ask(sock, 1006, 0, {"Ms": 100}, correlation=3)
            if answered:
                assert answer == {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "NowMs": 100}
            else:
                assert answer is None
    assert server.now() == 100
    assert server.stats["closed:unknown apiKey"] == 1


def test_over_sasl_the_control_apis_are_offered_only_to_the_control_users(placement_sim_factory):
    """ApiVersions on a SASL listener offers keys 1000 and up only to an authenticated control user, the
    only one they are served to (before, every client was offered them, and most got the connection
    closed for using them)."""
    server = placement_sim_factory(
        placer="legacy",
        security="SASL_PLAINTEXT",
        users={"alice": "alice-secret", "bob": "bob-secret"},
        properties={"connection.failed.authentication.delay.ms": "0", "simulator.control.users": "alice"},
    )
    for user, offered in (("alice", True), ("bob", False)):
        with raw_connect(server.bootstrap) as sock:
            before = {
                k["ApiKey"]
                for k in ask(sock, 18, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})[
                    "ApiKeys"
                ]
            }
            assert 3 in before and not {k for k in before if k >= 1000}
            assert ask(sock, 17, 1, {"Mechanism": "PLAIN"}, correlation=2)["ErrorCode"] == 0
            token = f"\0{user}\0{user}-secret".encode()
            assert ask(sock, 36, 2, {"AuthBytes": token}, correlation=3)["ErrorCode"] == 0
            after = {
                k["ApiKey"]
                for k in ask(
                    sock, 18, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}, correlation=4
                )["ApiKeys"]
            }
            assert (1006 in after) is offered and 3 in after
