"""Broker failures as a client on the wire sees them: listeners that close, hang or answer from stale
metadata, Metadata during a failover, ElectLeaders, and addresses that stay the same across a restart."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from protocol.client import BlockingClient, RequestTimedOutError
from tests.support.rawwire import closed_by_server, raw_connect, read_response, request_frame

BROKERS = [(0, "a"), (1, "b"), (2, "c")]


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=BROKERS, clock="virtual", seed=1) as started:
        yield started


def create(client: BlockingClient, name: str, assignment: list[list[int]], **configs: str) -> None:
    topic = {
        "Name": name,
        "NumPartitions": -1,
        "ReplicationFactor": -1,
        "Assignments": [{"PartitionIndex": i, "BrokerIds": rs} for i, rs in enumerate(assignment)],
        "Configs": [{"Name": k, "Value": v} for k, v in configs.items()],
    }
    response = client.send(
        "CreateTopicsRequest", {"Topics": [topic], "timeoutMs": 5000, "validateOnly": False}
    )
    assert response["Topics"][0]["ErrorCode"] == 0, response


def partitions(client: BlockingClient, version: int | None = None) -> tuple[list[int], list[dict]]:
    # v0 has no null list: an empty one means every topic.
    response = client.send("MetadataRequest", {"Topics": [] if version == 0 else None}, version=version)
    brokers = sorted(b["NodeId"] for b in response["Brokers"])
    return brokers, [
        p for t in response["Topics"] for p in sorted(t["Partitions"], key=lambda p: p["PartitionIndex"])
    ]


def test_a_crashed_broker_closes_its_connections_refuses_new_ones_and_is_fenced_after_the_timeout(
    server,
) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        create(client, "orders", [[0, 1, 2], [1, 2, 0]])
    sock = raw_connect(server.brokers[0])
    server.stop_broker(0, "crash")
    assert closed_by_server(sock)
    host, port = server.brokers[0].rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=5)
    with BlockingClient.connect(server.bootstrap) as client:
        brokers, parts = partitions(client)
        # Until its session expires the controller still counts it in: listed, and still the leader.
        assert brokers == [0, 1, 2] and parts[0]["LeaderId"] == 0
        server.advance(9000)
        brokers, parts = partitions(client)
        assert brokers == [1, 2]
        assert [(p["LeaderId"], p["LeaderEpoch"], p["IsrNodes"], p["OfflineReplicas"]) for p in parts] == [
            (1, 1, [1, 2], [0]),
            (1, 0, [1, 2], [0]),
        ]
    assert server.stats["closed:broker 0 crashed"] == 1


def test_a_restarted_broker_listens_on_the_same_address_and_is_unfenced_at_its_first_heartbeat(
    server,
) -> None:
    address = server.brokers[2]
    server.stop_broker(2, "crash")
    server.advance(9000)
    assert server.broker_state(2) == "offline"
    server.start_broker(2)
    assert server.brokers[2] == address
    assert server.broker_state(2) == "fenced"
    with BlockingClient.connect(address) as client:  # it accepts connections again at once
        assert partitions(client)[0] == [0, 1]
        server.advance(2000)
        assert server.broker_state(2) == "running"
        assert partitions(client)[0] == [0, 1, 2]
    kinds = [(e.subject, e.change("state")) for e in server.events() if e.change("state")]
    assert kinds == [
        ("broker 2", ("running", "offline")),
        ("broker 2", ("offline", "fenced")),
        ("broker 2", ("fenced", "running")),
    ]


def test_a_hung_broker_reads_but_never_answers_until_it_resumes(server) -> None:
    with BlockingClient.connect(server.brokers[1], request_timeout=0.5) as client:
        server.stop_broker(1, "hang")
        with pytest.raises(RequestTimedOutError):
            client.send("ApiVersionsRequest", {}, version=0)
    sock = raw_connect(server.brokers[1])
    sock.sendall(request_frame(18, 0, {}, correlation_id=7))
    sock.settimeout(0.3)
    with pytest.raises(TimeoutError):
        sock.recv(1)
    server.start_broker(1)
    sock.settimeout(5)
    frame = read_response(sock)
    assert frame is not None and int.from_bytes(frame[:4], "big") == 7  # held, then answered on resume
    sock.close()


def test_an_isolated_broker_answers_from_the_metadata_it_had(server) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        create(client, "orders", [[0, 1, 2]])
    server.stop_broker(0, "isolate")
    server.advance(9000)
    with (
        BlockingClient.connect(server.brokers[0]) as isolated,
        BlockingClient.connect(server.brokers[1]) as live,
    ):
        assert partitions(isolated) == ([0, 1, 2], partitions(isolated)[1])
        assert partitions(isolated)[1][0]["LeaderId"] == 0  # it still believes it leads
        brokers, parts = partitions(live)
        assert brokers == [1, 2] and parts[0]["LeaderId"] == 1
        server.start_broker(0)
        assert partitions(isolated)[1][0]["LeaderId"] == 1


def test_metadata_v0_leaves_out_unavailable_replicas_and_says_so(server) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        create(client, "orders", [[1, 2, 0]])
        server.stop_broker(0, "crash")
        server.advance(9000)
        _, [v0] = partitions(client, version=0)
        _, [v12] = partitions(client, version=12)
    assert (v0["ErrorCode"], v0["ReplicaNodes"], v0["IsrNodes"]) == (9, [1, 2], [1, 2])
    assert (v12["ErrorCode"], v12["ReplicaNodes"], v12["IsrNodes"], v12["OfflineReplicas"]) == (
        0,
        [1, 2, 0],
        [1, 2],
        [0],
    )


def test_a_partition_without_a_leader_answers_leader_not_available_with_its_epoch(server) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        create(client, "solo", [[2]])
        server.stop_broker(2, "crash")
        server.advance(9000)
        _, [p] = partitions(client)
    # Eligible leader replicas on (Kafka 4.1's default): the last ISR member leaves the ISR for the ELR.
    assert (p["ErrorCode"], p["LeaderId"], p["LeaderEpoch"], p["IsrNodes"]) == (5, -1, 1, [])


def test_elect_leaders_in_every_version(server) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        create(client, "orders", [[0, 1, 2], [1, 2, 0]])
        server.stop_broker(0, "controlled")
        server.advance(2000)
        server.start_broker(0)
        server.advance(2100)  # registered, unfenced, and back in the ISRs
        request = {"TopicPartitions": [{"Topic": "orders", "Partitions": [0, 1, 7]}], "TimeoutMs": 5000}
        v0 = client.send("ElectLeadersRequest", request, version=0)
        assert [
            (r["PartitionId"], r["ErrorCode"]) for r in v0["ReplicaElectionResults"][0]["PartitionResult"]
        ] == [
            (0, 0),
            (1, 84),
            (7, 3),
        ]
        for version in (1, 2):
            response = client.send("ElectLeadersRequest", {**request, "ElectionType": 1}, version=version)
            assert response["ErrorCode"] == 0
            results = response["ReplicaElectionResults"][0]["PartitionResult"]
            assert [(r["PartitionId"], r["ErrorCode"]) for r in results] == [(0, 84), (1, 84), (7, 3)]
        # Every partition: those that need no election are left out, their topic stays listed.
        every = client.send(
            "ElectLeadersRequest", {"TopicPartitions": None, "ElectionType": 0, "TimeoutMs": 5000}, version=2
        )
        assert every["ReplicaElectionResults"] == [{"Topic": "orders", "PartitionResult": []}]
        bad = client.send("ElectLeadersRequest", {**request, "ElectionType": 5}, version=2)
        assert bad["ErrorCode"] == 42
    assert server.partition_state("orders", 0).leader == 0


def test_brokers_added_and_removed_at_runtime(server) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        server.add_broker(7, rack="d")
        assert 7 in server.brokers and server.broker_state(7) == "fenced"
        assert partitions(client)[0] == [0, 1, 2]
        server.advance(2000)
        assert partitions(client)[0] == [0, 1, 2, 7]
        create(client, "on7", [[7, 0]])
        host, port = server.brokers[7].rsplit(":", 1)
        server.remove_broker(7)
        assert 7 not in server.brokers
        brokers, [p] = partitions(client)
        assert brokers == [0, 1, 2] and (p["LeaderId"], p["IsrNodes"], p["OfflineReplicas"]) == (0, [0], [7])
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=5)


@pytest.mark.parametrize("policy", ["kafka", "fluvio"])
def test_metadata_never_names_a_removed_broker_as_leader_or_in_sync(policy: str) -> None:
    with ServerThread.start(brokers=BROKERS, clock="virtual", seed=1, policy=policy) as server:
        with BlockingClient.connect(server.bootstrap) as client:
            create(client, "orders", [[0, 1, 2], [1, 2, 0]])
            server.remove_broker(0)
            server.advance(10_000)
            brokers, parts = partitions(client)
            assert brokers == [1, 2]
            assert [(p["LeaderId"], p["IsrNodes"], p["OfflineReplicas"]) for p in parts] == [
                (1, [1, 2], [0]),
                (1, [1, 2], [0]),
            ]
