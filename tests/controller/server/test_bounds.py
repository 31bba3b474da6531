"""One client must not take the memory or the service of all others: limits apply before a request is
decoded (array caps from the settings, :mod:`controller.dispatch`), and an answer is bounded by its
request. The server runs in a process of its own, whose peak memory is read from /proc."""

from __future__ import annotations

import select
import socket
import ssl
import struct
import threading
import time

import pytest

from protocol.client import BlockingClient
from protocol.framing import encode_request
from tests.support.probe import LatencyProbe
from tests.support.rawwire import SCHEMAS, closed_by_server, raw_connect, read_response, request_frame
from tests.support.serve import peak_rss, served_process

#: Measures how long other clients wait: run after the rest of the suite, with nothing beside it.
pytestmark = pytest.mark.alone

MB = 1 << 20


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def create_topics_v5_body(name: str, assignments: int) -> bytes:
    """CreateTopics v5 naming one topic with ``assignments`` manual assignments of one broker each (10
    bytes each), encoded by hand: the codec would take minutes and gigabytes to build it."""
    topic = b"".join(
        [
            _uvarint(len(name) + 1) + name.encode(),
            struct.pack(">ih", -1, -1),
            _uvarint(assignments + 1),
            b"".join(struct.pack(">iBiB", i, 2, 1, 0) for i in range(assignments)),
            b"\x01\x00",  # no configs, no tagged fields
        ]
    )
    return b"\x02" + topic + struct.pack(">i", 60_000) + b"\x00\x00"


def test_the_hand_made_body_is_the_codecs() -> None:
    data = {
        "Topics": [
            {
                "Name": "t",
                "NumPartitions": -1,
                "ReplicationFactor": -1,
                "Assignments": [{"PartitionIndex": i, "BrokerIds": [1]} for i in range(3)],
                "Configs": [],
            }
        ],
        "timeoutMs": 60_000,
        "validateOnly": False,
    }
    assert create_topics_v5_body("t", 3) == SCHEMAS.request(19).encode(data, 5)


def test_two_million_assignments_are_refused_unread_while_others_are_served() -> None:
    """19 MB of CreateTopics naming 2,000,000 assignments (above simulator.max.partitions, 500,000):
    POLICY_VIOLATION, without building them (the server's peak memory grew by ~760 MB before the caps),
    and another client's ApiVersions is answered meanwhile."""
    body = create_topics_v5_body("huge", 2_000_000)
    assert len(body) > 19 * 10**6
    frame = encode_request(SCHEMAS, 19, 5, 7, "bounds-test", body)
    with served_process() as (bootstrap, proc), LatencyProbe(bootstrap, at_least=0.5) as probe:
        sock = raw_connect(bootstrap, timeout=60)
        before = peak_rss(proc)
        sender = threading.Thread(target=sock.sendall, args=(frame,), daemon=True)
        sender.start()
        answer = read_response(sock)
        sender.join(10)
        grown = peak_rss(proc) - before
        sock.close()
    assert answer is not None
    response = SCHEMAS.response(19).decode(answer[5:], 5)  # correlation id, empty tag section
    [topic] = response["Topics"]
    assert (topic["Name"], topic["ErrorCode"]) == ("huge", 44)  # POLICY_VIOLATION
    assert topic["ErrorMessage"] == (
        "2000000 elements in Topics.Assignments, above the limit of 500000 (simulator.max.partitions); "
        "the request was not read further."
    )
    # The frame's bytes (held while read, then cut from the buffer) and no decoded assignments.
    assert grown < 120 * MB, f"peak RSS grew by {grown / MB:.0f} MB"
    assert probe.failures == [] and probe.count > 10
    assert probe.worst < 1.0, f"ApiVersions waited {probe.worst:.2f} s"


def test_every_capped_request_gets_its_handlers_error_answer(placement_sim_factory) -> None:
    """With simulator.max.partitions=4, each API refuses an array of five unread, with its own error answer,
    and the connection serves the next request."""
    server = placement_sim_factory(properties={"simulator.max.partitions": "4"})
    five = list(range(5))

    with BlockingClient.connect(server.bootstrap, request_timeout=5) as client:
        elect = client.send(
            "ElectLeadersRequest",
            {"ElectionType": 0, "TopicPartitions": [{"Topic": "t", "Partitions": five}], "TimeoutMs": 1000},
            version=2,
        )
        assert elect["ErrorCode"] == 42  # INVALID_REQUEST
        assert [(r["Topic"], r["PartitionResult"]) for r in elect["ReplicaElectionResults"]] == [("t", [])]
        metadata = client.send("MetadataRequest", {"Topics": [{"Name": f"t{i}"} for i in five]}, version=13)
        assert (metadata["ErrorCode"], metadata["Topics"], metadata["Brokers"]) == (42, [], [])
        deleted = client.send(
            "DeleteTopicsRequest", {"TopicNames": [f"t{i}" for i in five], "TimeoutMs": 1000}, version=4
        )
        assert deleted["Responses"] == []
        grown = client.send(
            "CreatePartitionsRequest",
            {
                "Topics": [{"Name": "t", "Count": 6, "Assignments": [{"BrokerIds": [1]} for _ in five]}],
                "TimeoutMs": 1000,
                "ValidateOnly": False,
            },
            version=3,
        )
        [result] = grown["Results"]
        assert (result["Name"], result["ErrorCode"]) == ("t", 44)  # POLICY_VIOLATION
        assert "5 elements in Topics.Assignments, above the limit of 4" in result["ErrorMessage"]
        assert client.send("ApiVersionsRequest", {}, version=0)["ErrorCode"] == 0
    assert server.server.stats["requests:capped:Topics.Assignments"] == 1


def _shapes() -> dict[str, tuple[int, int, dict]]:
    """Requests whose answers repeat the most per byte of request: (apiKey, version, request)."""
    names = [chr(ord("a") + i % 26) * (1 + i // 26) for i in range(2000)]  # short, distinct
    return {
        "ElectLeaders: one long unknown topic, 20,000 partitions": (
            43,
            1,
            {
                "ElectionType": 0,
                "TopicPartitions": [{"Topic": "x" * 32_700, "Partitions": list(range(20_000))}],
                "TimeoutMs": 1000,
            },
        ),
        "ElectLeaders: one existing partition named 20,000 times": (
            43,
            1,
            {
                "ElectionType": 0,
                "TopicPartitions": [{"Topic": "t", "Partitions": [0] * 20_000}],
                "TimeoutMs": 1,
            },
        ),
        "CreatePartitions: 2,000 unknown topics": (
            37,
            1,
            {
                "Topics": [{"Name": n, "Count": 2, "Assignments": None} for n in names],
                "TimeoutMs": 1000,
                "ValidateOnly": False,
            },
        ),
        "CreateTopics: 2,000 topics of an invalid partition count": (
            19,
            7,
            {
                "Topics": [
                    {"Name": n, "NumPartitions": 0, "ReplicationFactor": 1, "Assignments": [], "Configs": []}
                    for n in names
                ],
                "timeoutMs": 1000,
                "validateOnly": True,
            },
        ),
        "DeleteTopics: one unknown topic named 20,000 times": (
            20,
            5,
            {"TopicNames": ["u"] * 20_000, "TimeoutMs": 1000},
        ),
        "Metadata: 2,000 unknown topics": (3, 8, {"Topics": [{"Name": n} for n in names]}),
        "DescribeProducers: one long invalid topic, 20,000 partitions": (
            61,
            0,
            {"Topics": [{"Name": "x" * 32_700, "PartitionIndexes": list(range(20_000))}]},
        ),
        "DescribeProducers: one unknown topic, 20,000 partitions": (
            61,
            0,
            {"Topics": [{"Name": "u" * 249, "PartitionIndexes": list(range(20_000))}]},
        ),
    }


@pytest.mark.parametrize("shape", list(_shapes()))
def test_an_answer_is_bounded_by_its_request(placement_sim_factory, shape: str) -> None:
    """Each message is said once per answer: the answer stays within 5 times its request (ElectLeaders'
    first shape got a 624 MB answer to 110 KB, each partition's message naming the topic)."""
    server = placement_sim_factory()
    with BlockingClient.connect(server.bootstrap, request_timeout=5) as client:
        client.send(
            "CreateTopicsRequest",
            {
                "Topics": [
                    {
                        "Name": "t",
                        "NumPartitions": 1,
                        "ReplicationFactor": 3,
                        "Assignments": [],
                        "Configs": [],
                    }
                ],
                "timeoutMs": 1000,
            },
        )
    api_key, version, data = _shapes()[shape]
    frame = request_frame(api_key, version, data)
    sock = raw_connect(server.bootstrap, timeout=10)
    sock.sendall(frame)
    answer = read_response(sock)
    sock.close()
    assert answer is not None
    response = SCHEMAS.response(api_key).decode(answer[4 + (version >= _flexible(api_key)) :], version)
    assert response  # decodes
    assert len(answer) + 4 < 5 * len(frame), f"{len(answer):,} bytes answer {len(frame):,}"


def _flexible(api_key: int) -> int:
    return {43: 2, 37: 2, 19: 5, 20: 4, 3: 9, 61: 0}[api_key]


# ---------------------------------------------------------------------------------- before authentication


def _ask(sock: socket.socket, api_key: int, version: int, data: dict) -> dict | None:
    sock.sendall(request_frame(api_key, version, data))
    frame = read_response(sock)
    if frame is None:
        return None
    flexible = SCHEMAS.response(api_key).is_flexible(version) and api_key != 18
    return SCHEMAS.response(api_key).decode(frame[5 if flexible else 4 :], version)


def _push(sock: socket.socket, announced: int, sent: int) -> None:
    try:
        sock.sendall(struct.pack(">i", announced) + b"\x00" * sent)
    except OSError:
        pass  # closed by the server (or it stopped reading: the send times out)


def test_frames_before_authentication_are_capped(placement_sim_factory) -> None:
    """Three connections announcing 100 MB frames without a SASL handshake are closed at their size
    (sasl.server.max.receive.size, 512 KiB), instead of holding queued.max.request.bytes (2 MB here) until
    they go idle: an authenticated client's 1.1 MB request is answered meanwhile."""
    server = placement_sim_factory(
        security="SASL_PLAINTEXT",
        users={"alice": "alice-secret"},
        properties={"socket.request.max.bytes": str(101 * MB), "queued.max.request.bytes": str(2 * MB)},
    )
    good = raw_connect(server.bootstrap, timeout=5)
    assert _ask(good, 17, 1, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
    assert _ask(good, 36, 2, {"AuthBytes": b"\0alice\0alice-secret"})["ErrorCode"] == 0
    hostile = [raw_connect(server.bootstrap, timeout=3) for _ in range(3)]
    pushers = [threading.Thread(target=_push, args=(s, 100 * MB, MB), daemon=True) for s in hostile]
    for pusher in pushers:
        pusher.start()
    for sock in hostile:
        assert closed_by_server(sock)
    big = request_frame(18, 0, {}, 9)  # ApiVersions, and 1.1 MB of bytes after its body (Kafka ignores them)
    padding = 1_100_000
    good.sendall(struct.pack(">i", len(big) - 4 + padding) + big[4:] + b"\x00" * padding)
    answer = read_response(good)
    assert answer is not None and answer[:4] == struct.pack(">i", 9)
    assert SCHEMAS.response(18).decode(answer[4:], 0)["ErrorCode"] == 0
    good.close()
    for pusher in pushers:
        pusher.join(5)
    assert server.stats["closed:bad frame size"] == 3


def test_a_57_mb_raw_token_is_refused_at_its_size(placement_sim_factory, caplog) -> None:
    """After a version 0 handshake the tokens are raw frames: one announcing 57 MB closes the connection
    before its body is read; a token within the limit is still taken after a handshake."""
    server = placement_sim_factory(security="SASL_PLAINTEXT", users={"alice": "alice-secret"})
    with raw_connect(server.bootstrap, timeout=5) as sock:
        assert _ask(sock, 17, 0, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
        _push(sock, 57 * MB, 64 * 1024)
        assert closed_by_server(sock)
    assert "(must be between 1 and 524288, sasl.server.max.receive.size)" in caplog.text
    with raw_connect(server.bootstrap, timeout=5) as sock:
        assert _ask(sock, 17, 0, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
        token = b"\0alice\0alice-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert read_response(sock) == b""
        assert _ask(sock, 3, 12, {"Topics": None}) is not None


def _from(address: str, bootstrap: str, timeout: float = 5) -> socket.socket:
    """A TCP connection to ``bootstrap`` from the loopback address ``address`` (another client host)."""
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout, source_address=(address, 0))


def test_silent_tls_sockets_hold_slots_no_longer_than_the_handshake_timeout(
    placement_sim_factory, placement_sim_certificates
) -> None:
    """Three silent sockets from one address fill max.connections=3 (each counted from accept); their
    handshakes end at simulator.ssl.handshake.timeout.ms (300 ms here), and a client from another address,
    waiting in the backlog meanwhile, is then served (before: the handshakes held the slots for 60 s)."""
    server = placement_sim_factory(
        security="SSL",
        properties={
            "max.connections": "3",
            "max.connections.per.ip": "3",
            "simulator.ssl.handshake.timeout.ms": "300",
        },
    )
    silent = [_from("127.0.0.2", server.bootstrap) for _ in range(3)]
    try:
        context = ssl.create_default_context(cafile=str(placement_sim_certificates.ca_file))
        host = server.bootstrap.rsplit(":", 1)[0]
        with context.wrap_socket(_from("127.0.0.3", server.bootstrap), server_hostname=host) as good:
            answer = _ask(good, 18, 0, {})
        assert answer is not None and answer["ErrorCode"] == 0
        assert all(closed_by_server(sock) for sock in silent)
        assert server.stats["closed:TLS handshake failed"] == 3
    finally:
        for sock in silent:
            sock.close()


# ---------------------------------------------------------------------------------- auto-creation


def _metadata(names: list[str], correlation: int, allow: bool) -> bytes:
    return request_frame(
        3, 9, {"Topics": [{"Name": n} for n in names], "AllowAutoTopicCreation": allow}, correlation
    )


def test_metadata_of_other_clients_is_answered_while_many_topics_are_auto_created() -> None:
    """While one Metadata request auto-creates 60,000 topics, another client's Metadata for a topic that
    exists, asked every 0.1 s, is answered ten times before the big one finishes: it is answered from the
    last metadata image, which holds what a new one would of that topic (it waited for a rebuild of the
    image, done one topic per turn of the loop: seconds). benchmarks/autocreate.py measures the wait."""
    with served_process({"auto.create.topics.enable": "true"}) as (bootstrap, _):
        with raw_connect(bootstrap, timeout=60) as other, raw_connect(bootstrap, timeout=120) as big:
            other.sendall(_metadata(["probe"], 1, True))
            assert read_response(other) is not None
            big.sendall(_metadata([f"auto-{i:05d}" for i in range(60_000)], 2, True))
            for correlation in range(3, 10_000):  # until the creation is under way
                other.sendall(_metadata(["auto-00000"], correlation, False))
                answer = read_response(other)
                assert answer is not None
                if SCHEMAS.response(3).decode(answer[5:], 9)["Topics"][0]["ErrorCode"] == 0:
                    break
            for correlation in range(10_001, 10_011):
                time.sleep(0.1)  # hundreds of topics are created meanwhile
                other.sendall(_metadata(["probe"], correlation, False))
                answer = read_response(other)
                assert not select.select([big], [], [], 0)[0], "the big request finished first"
                assert answer is not None and answer[:4] == struct.pack(">i", correlation)
                [topic] = SCHEMAS.response(3).decode(answer[5:], 9)["Topics"]
                assert (topic["Name"], topic["ErrorCode"], len(topic["Partitions"])) == ("probe", 0, 1)
            response = read_response(big)
    assert response is not None
    topics = SCHEMAS.response(3).decode(response[5:], 9)["Topics"]
    assert len(topics) == 60_000 and {t["ErrorCode"] for t in topics} == {0}


def test_an_unknown_long_topic_named_with_many_partitions_takes_no_memory_per_partition() -> None:
    """ElectLeaders v1 naming one unknown 32,700-character topic with 20,000 partitions (110 KB): the
    message naming the topic is made once, not once per partition (654 MB of messages before)."""
    data = {
        "ElectionType": 0,
        "TopicPartitions": [{"Topic": "x" * 32_700, "Partitions": list(range(20_000))}],
        "TimeoutMs": 1000,
    }
    frame = request_frame(43, 1, data, 3)
    with served_process() as (bootstrap, proc), raw_connect(bootstrap, timeout=30) as sock:
        sock.sendall(request_frame(18, 0, {}, 2))  # the connection's own costs first
        assert read_response(sock) is not None
        before = peak_rss(proc)
        sock.sendall(frame)
        answer = read_response(sock)
        grown = peak_rss(proc) - before
    assert answer is not None
    response = SCHEMAS.response(43).decode(answer[4:], 1)
    [topic] = response["ReplicaElectionResults"]
    assert [p["ErrorCode"] for p in topic["PartitionResult"]] == [3] * 20_000
    assert grown < 60 * MB, f"peak RSS grew by {grown / MB:.0f} MB"
