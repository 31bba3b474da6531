"""Kafka's connection rules over raw sockets: each bad connection gets its outcome, good clients are unaffected."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from protocol.client import KafkaClient
from tests.support.placers import placer_file as placer
from tests.support.rawwire import SCHEMAS, closed_by_server, raw_connect, read_response, request_frame


class GoodClient:
    """A well-behaved client that keeps placing on its own connection while a bad one misbehaves."""

    def __init__(self, bootstrap: str) -> None:
        self.sock = raw_connect(bootstrap)
        self.answers = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        correlation = 0
        while not self._stop.is_set():
            correlation += 1
            self.sock.sendall(request_frame(68, 0, {"NumPartitions": 3, "ReplicationFactor": 3}, correlation))
            frame = read_response(self.sock)
            if frame is None:
                self.failures.append("connection closed")
                return
            (got,) = struct.unpack_from(">i", frame)
            body = SCHEMAS.response(68).decode(frame[5:], 0)  # header v1: correlation id + empty tags
            if got != correlation or body["ErrorCode"] != 0 or len(body["ReplicaPlacement"]) != 3:
                self.failures.append(f"bad answer {got} {body}")
            self.answers += 1
            time.sleep(0.005)

    def __enter__(self) -> GoodClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.sock.close()
        assert self.failures == []
        assert self.answers > 0


def frame_with_size(size: int, payload: bytes = b"") -> bytes:
    return struct.pack(">i", size) + payload


def header(api_key: int, version: int, correlation: int = 1) -> bytes:
    return struct.pack(">hhih", api_key, version, correlation, -1)


BAD_INPUTS = {
    "zero size": (frame_with_size(0), "bad frame size"),
    "negative size": (frame_with_size(-5), "bad frame size"),
    "size above socket.request.max.bytes": (frame_with_size(4097, b"\x00" * 64), "bad frame size"),
    "unknown apiKey": (frame_with_size(10, header(48, 0)), "unknown apiKey"),
    "apiKey out of any range": (frame_with_size(10, header(31999, 0)), "unknown apiKey"),
    # (v2: apiKey 68 is v0 here and, in Kafka's key space, ConsumerGroupHeartbeat v0-1)
    "unsupported version of apiKey 68": (frame_with_size(10, header(68, 2)), "unsupported version"),
    "truncated body": (
        frame_with_size(len(request_frame(68, 0, {"NumPartitions": 1, "ReplicationFactor": 1})) - 4 - 3)
        + request_frame(68, 0, {"NumPartitions": 1, "ReplicationFactor": 1})[4:-3],
        "malformed request body",
    ),
    "header too short": (frame_with_size(3, b"\x00\x12\x00"), "malformed request header"),
    "garbage": (bytes(range(7, 200, 3)), "bad frame size"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS), ids=list(BAD_INPUTS))
def test_bad_input_closes_only_that_connection(fast_idle_server, case):
    payload, reason = BAD_INPUTS[case]
    with GoodClient(fast_idle_server.bootstrap):
        bad = raw_connect(fast_idle_server.bootstrap)
        bad.sendall(payload)
        assert closed_by_server(bad)
        bad.close()
        time.sleep(0.05)
    assert fast_idle_server.stats[f"closed:{reason}"] == 1
    assert fast_idle_server.stats["closed:internal error"] == 0


def test_oversized_frame_is_refused_before_its_body_is_sent(fast_idle_server):
    sock = raw_connect(fast_idle_server.bootstrap)
    sock.sendall(struct.pack(">i", 50_000_000))  # the body never comes: the server must not wait for it
    assert closed_by_server(sock)


def test_api_versions_of_an_unknown_version_is_answered_in_v0(placement_sim_server):
    sock = raw_connect(placement_sim_server.bootstrap)
    sock.sendall(frame_with_size(10, header(18, 77, correlation=99)) + b"")
    frame = read_response(sock)
    assert frame is not None
    assert struct.unpack_from(">i", frame)[0] == 99  # response header v0: correlation id only
    body = SCHEMAS.response(18).decode(frame[4:], 0)
    assert body == {"ErrorCode": 35, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}]}
    # The connection stays open: the client retries with a version the server knows.
    sock.sendall(request_frame(18, 3, {"ClientSoftwareName": "x", "ClientSoftwareVersion": "1"}, 100))
    retry = read_response(sock)
    assert retry is not None
    assert SCHEMAS.response(18).decode(retry[4:], 3)["ErrorCode"] == 0


def test_api_versions_rejects_bad_client_software_name(placement_sim_server):
    sock = raw_connect(placement_sim_server.bootstrap)
    sock.sendall(request_frame(18, 3, {"ClientSoftwareName": "-bad name-", "ClientSoftwareVersion": "1.0"}))
    frame = read_response(sock)
    assert frame is not None
    assert SCHEMAS.response(18).decode(frame[4:], 3)["ErrorCode"] == 42


def test_a_silent_client_is_closed_after_the_idle_timeout(fast_idle_server):
    with GoodClient(fast_idle_server.bootstrap):
        silent = raw_connect(fast_idle_server.bootstrap)
        started = time.monotonic()
        assert closed_by_server(silent)
        assert 0.3 < time.monotonic() - started < 5
    assert fast_idle_server.stats["closed:idle"] >= 1


def test_time_spent_answering_is_not_idle_time(placement_sim_factory):
    server = placement_sim_factory(placer=placer("Slow"), properties={"connections.max.idle.ms": "400"})
    sock = raw_connect(server.bootstrap)
    started = time.monotonic()
    sock.sendall(request_frame(68, 0, {"NumPartitions": 2, "ReplicationFactor": 2}, correlation_id=9))
    frame = read_response(sock)
    answered = time.monotonic()
    assert frame is not None and answered - started >= 1.0  # the placer took 1 s; the limit is 0.4 s
    assert SCHEMAS.response(68).decode(frame[5:], 0)["ReplicaPlacement"] == [
        {"PartitionId": 0, "Replicas": [0, 1]},
        {"PartitionId": 1, "Replicas": [1, 2]},
    ]
    # The idle clock starts again once the answer is out.
    assert closed_by_server(sock)
    assert 0.3 < time.monotonic() - answered < 5
    assert server.stats["closed:idle"] == 1


def test_a_client_stalling_mid_frame_is_closed_after_the_idle_timeout(fast_idle_server):
    sock = raw_connect(fast_idle_server.bootstrap)
    sock.sendall(frame_with_size(100, b"\x00\x44"))
    assert closed_by_server(sock)
    assert fast_idle_server.stats["closed:idle"] == 1


def test_a_client_that_disconnects_mid_request(fast_idle_server):
    with GoodClient(fast_idle_server.bootstrap):
        sock = raw_connect(fast_idle_server.bootstrap)
        sock.sendall(frame_with_size(100, b"\x00\x44\x00\x00"))
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        deadline = time.monotonic() + 5
        while fast_idle_server.stats["closed:disconnected mid-request"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert fast_idle_server.stats["closed:disconnected mid-request"] == 1


def test_pipelined_requests_are_answered_in_order(placement_sim_server):
    sock = raw_connect(placement_sim_server.bootstrap)
    frames = []
    for i in range(1, 101):
        if i % 3 == 0:
            frames.append(request_frame(18, 3, {"ClientSoftwareName": "p", "ClientSoftwareVersion": "1"}, i))
        else:
            frames.append(request_frame(68, 0, {"NumPartitions": i % 7 + 1, "ReplicationFactor": 2}, i))
    sock.sendall(b"".join(frames))
    for i in range(1, 101):
        frame = read_response(sock)
        assert frame is not None
        assert struct.unpack_from(">i", frame)[0] == i
        if i % 3:
            body = SCHEMAS.response(68).decode(frame[5:], 0)
            assert len(body["ReplicaPlacement"]) == i % 7 + 1


async def test_many_connections_are_served_at_once(placement_sim_server):
    import asyncio

    async def one_client(n: int) -> list[list[list[int]]]:
        async with await KafkaClient.connect(placement_sim_server.bootstrap) as client:
            return await asyncio.gather(*(client.create_replica_placement(n % 5 + 1, 3) for _ in range(10)))

    results = await asyncio.gather(*(one_client(n) for n in range(20)))
    assert [len(r) for r in results] == [10] * 20
    assert all(len(answer) == n % 5 + 1 for n, r in enumerate(results) for answer in r)


def test_a_client_that_never_reads_its_responses_is_held_back(placement_sim_server):
    """The server stops reading from a client whose responses pile up, instead of buffering them all.

    The flood would make about 100 MB of responses; the server holds back once a megabyte waits to be
    sent, so the flooding client's own send blocks, while another client is answered throughout.
    """
    one = request_frame(18, 0, {}, correlation_id=1)
    batch = one * 20_000  # about 0.5 MB of requests, 1.1 MB of responses
    flood = raw_connect(placement_sim_server.bootstrap, timeout=3.0)
    sent = 0
    with GoodClient(placement_sim_server.bootstrap):
        try:
            for _ in range(100):  # 50 MB at the most
                flood.sendall(batch)
                sent += len(batch)
        except TimeoutError:
            pass
    flood.close()
    assert sent < 20 * len(batch), f"{sent} bytes of requests were taken without their answers being read"
