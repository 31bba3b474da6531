"""Kafka's limits on what clients may hold: bytes of unfinished frames, connections in all and per address.
Each test shows the limit holding while a well-behaved client is still answered."""

from __future__ import annotations

import socket
import struct
import threading
import time

from tests.support.rawwire import SCHEMAS, closed_by_server, raw_connect, read_response, request_frame

MB = 1024 * 1024


def api_versions(sock: socket.socket, correlation: int = 1) -> bool:
    """Whether ApiVersions is answered on ``sock`` (False when the wait times out or the server closes)."""
    sock.sendall(request_frame(18, 0, {}, correlation))
    try:
        frame = read_response(sock)
    except TimeoutError:
        return False
    return frame is not None and SCHEMAS.response(18).decode(frame[4:], 0)["ErrorCode"] == 0


def test_slow_clients_announcing_100_mb_frames_hold_bounded_bytes(placement_sim_factory):
    """Four clients announce 100 MB frames (allowed by socket.request.max.bytes) and push 4 MB each; the
    server stops reading them once it holds queued.max.request.bytes (1 MB), instead of buffering 16 MB,
    answers another client meanwhile, and frees everything when the idle limit closes them."""
    server = placement_sim_factory(
        properties={
            "socket.request.max.bytes": str(100 * MB),
            "queued.max.request.bytes": str(MB),
            "connections.max.idle.ms": "1500",
        }
    )
    inner = server.server
    most = 0
    sampling = threading.Event()

    def sample() -> None:
        nonlocal most
        while not sampling.is_set():
            most = max(most, inner.held_bytes)
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    def push(sock: socket.socket) -> None:
        sock.settimeout(2)
        try:
            sock.sendall(struct.pack(">i", 100 * MB) + b"\x00" * (4 * MB))
        except (TimeoutError, OSError):
            pass  # the server stopped reading: the send blocks

    slow = [raw_connect(server.bootstrap) for _ in range(4)]
    pushers = [threading.Thread(target=push, args=(s,), daemon=True) for s in slow]
    for pusher in pushers:
        pusher.start()
    good = raw_connect(server.bootstrap, timeout=5)
    time.sleep(0.3)
    assert api_versions(good)
    for pusher in pushers:
        pusher.join(10)
    assert all(closed_by_server(s) for s in slow)  # the idle limit
    sampling.set()
    sampler.join()
    # The limit, plus at most one read (256 KiB) per connection that was still reading when it was reached.
    assert MB <= most <= MB + 5 * 256 * 1024, f"held {most:,} bytes"
    assert inner.held_bytes == 0
    assert api_versions(good, 2)


def test_max_connections_per_ip_closes_the_extra_connection_at_once(placement_sim_factory):
    server = placement_sim_factory(properties={"max.connections.per.ip": "2"})
    first, second = raw_connect(server.bootstrap), raw_connect(server.bootstrap)
    assert api_versions(first) and api_versions(second)
    third = raw_connect(server.bootstrap)
    assert closed_by_server(third)  # as Kafka: closed at once, nothing answered
    assert server.stats["closed:too many connections from one address"] == 1
    first.close()
    time.sleep(0.2)
    fourth = raw_connect(server.bootstrap)
    assert api_versions(fourth) and api_versions(second, 2)


def test_max_connections_keeps_new_connections_waiting_until_one_closes(placement_sim_factory):
    server = placement_sim_factory(properties={"max.connections": "3"})
    served = [raw_connect(server.bootstrap) for _ in range(3)]
    assert all(api_versions(s) for s in served)
    waiting = raw_connect(server.bootstrap, timeout=0.5)  # taken by the system's backlog, not by the server
    assert not api_versions(waiting)  # as Kafka: not read until there is room
    assert server.stats["listeners paused: max.connections"] >= 1
    served[0].close()
    waiting.settimeout(10)
    frame = read_response(waiting)  # the request sent while it waited is answered now
    assert frame is not None and int.from_bytes(frame[:4], "big") == 1
    assert api_versions(served[1], 2)


def test_queued_max_requests_stops_reading_a_connection_at_exactly_that_many_unanswered(
    placement_sim_factory,
):
    """queued.max.requests=3: behind a placement the placer holds, a client pipelines six ApiVersions in one
    write. The server takes exactly three requests (the placement and two ApiVersions), leaves the rest
    unread and answers nothing out of order; when the placement times out, all seven are answered in order."""
    from tests.support.placers import placer_file

    server = placement_sim_factory(
        placer=placer_file("AsyncHanging"), properties={"queued.max.requests": "3"}
    )
    placement = request_frame(
        68, 0, {"NumPartitions": 1, "ReplicationFactor": 1, "NodeId": [], "timeoutMs": 1500}, 100
    )
    versions = [request_frame(18, 0, {}, i) for i in range(6)]
    with raw_connect(server.bootstrap) as sock:
        sock.sendall(placement + b"".join(versions))
        time.sleep(0.5)  # the placer holds the first request

        def taken() -> list[tuple[int, bool]]:
            return [(c.unanswered, c.reading) for c in server.server.connections]

        assert server.call(taken) == [(3, False)]
        assert server.stats["requests:18"] == 0
        sock.settimeout(10)
        correlations = []
        for _ in range(7):
            frame = read_response(sock)
            assert frame is not None
            correlations.append(struct.unpack_from(">i", frame)[0])
    assert correlations == [100, 0, 1, 2, 3, 4, 5]
    assert server.stats["requests:18"] == 6
