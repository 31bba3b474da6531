"""No request holds up the others: while one client sends something big, another client's ApiVersions is
answered within 50 ms. Each case is one a hostile client used to freeze the server. The server runs in a
process of its own, as users run it (in the test's process it would share the interpreter with the
test's own clients)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from controller.embedded import ServerThread
from protocol.client import BlockingClient
from tests.support.placers import placer_file
from tests.support.probe import LatencyProbe
from tests.support.rawwire import SCHEMAS, raw_connect, read_response, request_frame
from tests.support.serve import served

#: Measures how long other clients wait: run after the rest of the suite, with nothing beside it.
pytestmark = pytest.mark.alone

STALL = 0.050  # seconds another client may wait


def create_topics(bootstrap: str, topics: list[dict], timeout_ms: int = 60_000) -> dict:
    with BlockingClient.connect(bootstrap, request_timeout=300) as client:
        for t in topics:
            t.setdefault("Assignments", [])
            t.setdefault("Configs", [])
        return client.send(
            "CreateTopicsRequest", {"Topics": topics, "timeoutMs": timeout_ms, "validateOnly": False}
        )


def test_a_topic_of_a_million_replicas_does_not_stall_others() -> None:
    with served() as bootstrap, LatencyProbe(bootstrap) as probe:
        response = create_topics(
            bootstrap, [{"Name": "huge", "NumPartitions": 333_333, "ReplicationFactor": 3}]
        )
    assert response["Topics"][0]["ErrorCode"] == 0 and response["Topics"][0]["NumPartitions"] == 333_333
    probe.assert_served(within=STALL)


def test_metadata_auto_creating_twenty_thousand_topics_does_not_stall_others() -> None:
    props = {"auto.create.topics.enable": "true"}
    with served(props) as bootstrap, LatencyProbe(bootstrap) as probe:
        with BlockingClient.connect(bootstrap, request_timeout=300) as client:
            names = [{"Name": f"auto-{i}"} for i in range(20_000)]
            response = client.send(
                "MetadataRequest", {"Topics": names, "AllowAutoTopicCreation": True}, version=9
            )
    assert [t["ErrorCode"] for t in response["Topics"]] == [0] * 20_000
    probe.assert_served(within=STALL)


def test_a_hundred_thousand_pipelined_requests_do_not_stall_others() -> None:
    with served() as bootstrap, LatencyProbe(bootstrap) as probe:
        sock = raw_connect(bootstrap, timeout=60)
        frames = b"".join(request_frame(18, 0, {}, i) for i in range(100_000))
        reader_done = threading.Event()
        answered = []

        def read_all() -> None:
            for _ in range(100_000):
                if read_response(sock) is None:
                    break
                answered.append(1)
            reader_done.set()

        reader = threading.Thread(target=read_all, daemon=True)
        reader.start()
        sock.sendall(frames)
        reader_done.wait(120)
        sock.close()
    assert len(answered) == 100_000
    probe.assert_served(within=STALL)


def test_a_placers_result_of_a_million_partitions_does_not_stall_others() -> None:
    props = {"simulator.placer.isolation": "process", "simulator.placement.max.replicas": "1000000"}
    with served(props, "--placer", placer_file("RoundRobin")) as bootstrap:
        with (
            LatencyProbe(bootstrap) as probe,
            BlockingClient.connect(bootstrap, request_timeout=300) as client,
        ):
            replicas = client.create_replica_placement(1_000_000, 1, timeout_ms=120_000)
    assert len(replicas) == 1_000_000
    probe.assert_served(within=STALL)


def test_a_thousand_topics_on_a_big_cluster_cost_what_they_place() -> None:
    props = {"simulator.max.partitions": "500000"}
    with served(props) as bootstrap:
        big = [{"Name": f"big-{i}", "NumPartitions": 100_000, "ReplicationFactor": 3} for i in range(4)]
        assert [t["ErrorCode"] for t in create_topics(bootstrap, big)["Topics"]] == [0] * 4
        with LatencyProbe(bootstrap) as probe:
            started = time.perf_counter()
            small = [{"Name": f"small-{i}", "NumPartitions": 1, "ReplicationFactor": 3} for i in range(1000)]
            response = create_topics(bootstrap, small)
            took = time.perf_counter() - started
    assert [t["ErrorCode"] for t in response["Topics"]] == [0] * 1000
    assert took < 15, f"1,000 topics took {took:.1f} s next to 400,000 partitions"
    probe.assert_served(within=STALL)


@pytest.mark.parametrize("api", ["metadata", "placement"])
def test_every_connection_answers_in_order_with_big_answers_in_between(api: str) -> None:
    """An answer encoded off the loop still goes out in its turn."""
    with ServerThread.start(seed=1, properties={"simulator.placement.max.replicas": "1000000"}) as server:
        create_topics(server.bootstrap, [{"Name": "wide", "NumPartitions": 30_000, "ReplicationFactor": 1}])
        sock = raw_connect(server.bootstrap, timeout=60)
        big = (
            request_frame(3, 12, {"Topics": None}, 2)
            if api == "metadata"
            else request_frame(68, 0, {"NumPartitions": 30_000, "ReplicationFactor": 1}, 2)
        )
        sock.sendall(request_frame(18, 0, {}, 1) + big + request_frame(18, 0, {}, 3))
        order = []
        for _ in range(3):
            frame = read_response(sock)
            assert frame is not None
            order.append(int.from_bytes(frame[:4], "big"))
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    assert order == [1, 2, 3]


def test_electing_every_partition_of_a_big_cluster_does_not_stall_others() -> None:
    """ElectLeaders for every partition (null TopicPartitions), with a tenth of them needing a preferred
    election and 5,000 topics to list: worked in turns, its answer encoded off the loop (the test waits
    on a socket meanwhile, so the server thread has the interpreter)."""
    properties = {"simulator.max.partitions": "200000", "simulator.placement.max.replicas": "1000000"}
    with ServerThread.start(seed=1, clock="virtual", properties=properties) as server:
        topics = [{"Name": "wide", "NumPartitions": 60_000, "ReplicationFactor": 3}]
        topics += [{"Name": f"t-{i}", "NumPartitions": 1, "ReplicationFactor": 3} for i in range(5_000)]
        assert {t["ErrorCode"] for t in create_topics(server.bootstrap, topics)["Topics"]} == {0}
        server.stop_broker(0, "crash")
        server.advance(9_000)  # fenced: its partitions' leadership moves
        server.start_broker(0)
        server.advance(2_100)  # unfenced and back in the ISRs: preferred elections are needed
        moved = sum(
            1
            for t in topics
            for p in range(t["NumPartitions"])
            if server.partition_state(t["Name"], p).replicas[0] == 0
        )
        assert moved > 5_000
        sock = raw_connect(server.bootstrap, timeout=120)
        with LatencyProbe(server.bootstrap) as probe:
            sock.sendall(
                request_frame(43, 2, {"ElectionType": 0, "TopicPartitions": None, "TimeoutMs": 60_000})
            )
            frame = read_response(sock)
        sock.close()
    assert frame is not None
    answer = SCHEMAS.response(43).decode(frame[5:], 2)  # correlation id and the header's tag section
    results = {t["Topic"]: t["PartitionResult"] for t in answer["ReplicaElectionResults"]}
    assert len(results) == 5_001  # every topic listed, with the partitions that needed an election
    assert sum(len(r) for r in results.values()) == moved
    assert {p["ErrorCode"] for r in results.values() for p in r} == {0}
    probe.assert_served(within=STALL)


def test_a_long_event_log_asked_whole_by_many_does_not_stall_others() -> None:
    """SimulatorEvents asking for every event of a long log (200,000 events of three changes), from eight
    clients at once: each answer carries at most 10,000 events (the client asks again from the last), made
    off the event loop. Whole, it took the loop 380 ms in the million-frame fuzz run; made off the loop
    whole, a few at once held every other answer made there past 2 s."""
    from controller.handlers.simulator_events import EVENTS_PER_ANSWER

    with ServerThread.start(seed=1, clock="virtual") as server:
        changes = [("leader", 1, 2), ("isr", [1, 2, 3], [2, 3]), ("leader_epoch", 4, 5)]
        entries = [(("t", i), changes, "broker 1 crashed") for i in range(200_000)]
        server.call(lambda: server.server.controller.cluster.events.record_many("partition", entries))
        socks = [raw_connect(server.bootstrap, timeout=60) for _ in range(8)]
        with LatencyProbe(server.bootstrap) as probe:
            for n, sock in enumerate(socks):
                since = n * 20_000
                sock.sendall(
                    request_frame(1008, 0, {"SinceSeq": since, "MaxEvents": 2**31 - 1}, correlation_id=1)
                )
            answers = [read_response(sock) for sock in socks]
        for sock in socks:
            sock.close()
    for n, answer in enumerate(answers):
        assert answer is not None
        decoded = SCHEMAS.response(1008).decode(answer[5:], 0)  # a flexible header
        events, last = decoded["Events"], decoded["LastSeq"]
        assert len(events) == EVENTS_PER_ANSWER == 10_000 and last >= 200_000
        assert events[0]["Seq"] == n * 20_000 + 1 and events[-1]["Seq"] == n * 20_000 + 10_000
        assert events[-1]["Changes"][1] == {"Field": "isr", "Before": "[1,2,3]", "After": "[2,3]"}
    probe.assert_served(within=STALL)
