"""A hypothesis-driven stream of random and mutated frames: the server never fails internally."""

from __future__ import annotations

import logging
import socket
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.rawwire import SCHEMAS, raw_connect, read_response, request_frame

VALID = [
    request_frame(
        68, 0, {"NumPartitions": 4, "ReplicationFactor": 3, "NodeId": [0, 1, 2, 3], "TopicName": "t"}
    ),
    request_frame(68, 0, {"NumPartitions": 2, "ReplicationFactor": 2, "StartPartition": 5}),
    request_frame(18, 3, {"ClientSoftwareName": "fuzz", "ClientSoftwareVersion": "1.0"}),
    request_frame(18, 0, {}),
]


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["random", "mutated", "resized", "valid"]))
    if kind == "random":
        return draw(st.binary(min_size=1, max_size=64))
    base = bytearray(draw(st.sampled_from(VALID)))
    if kind == "mutated":
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(4, len(base) - 1))
            base[at] = draw(st.integers(0, 255))
    elif kind == "resized":
        cut = draw(st.integers(4, len(base)))
        body = base[4:cut] + draw(st.binary(max_size=8))
        base = bytearray(struct.pack(">i", len(body)) + body)
    return bytes(base)


def test_random_and_mutated_frames_never_break_the_server(placement_sim_factory, caplog):
    server = placement_sim_factory(
        properties={"connections.max.idle.ms": "300", "socket.request.max.bytes": "2048"}
    )
    caplog.set_level(logging.WARNING)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.lists(frames(), min_size=1, max_size=4))
    def send(stream: list[bytes]) -> None:
        sock = raw_connect(server.bootstrap, timeout=5)
        try:
            sock.sendall(b"".join(stream))
            sock.shutdown(socket.SHUT_WR)
            while read_response(sock) is not None:
                pass
        except (ConnectionResetError, BrokenPipeError):
            pass
        finally:
            sock.close()

    send()
    # Still answering correctly afterwards.
    sock = raw_connect(server.bootstrap)
    sock.sendall(request_frame(68, 0, {"NumPartitions": 3, "ReplicationFactor": 3}, 5))
    frame = read_response(sock)
    assert frame is not None
    assert SCHEMAS.response(68).decode(frame[5:], 0)["ErrorCode"] == 0
    stats = server.stats
    assert stats["closed:internal error"] == 0
    assert stats["connections"] >= 150
    problems = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert problems == []
