"""The log under hostile clients: client strings cannot forge or flood lines, and errors that repeat (out of
file descriptors) make one line a second."""

from __future__ import annotations

import errno
import logging
import socket
import struct
import time

from protocol.framing import encode_request
from tests.support.groups import wait_for
from tests.support.rawwire import SCHEMAS, raw_connect, read_response, request_frame

FORGED = "x\nERROR controller.server: forged line\r\x1b[2J"


def test_client_strings_are_escaped_and_cut_in_the_log(placement_sim, caplog):
    caplog.set_level(logging.DEBUG)
    topics = [
        {"Name": FORGED, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []},
        {
            "Name": "y" * 30_000 + "\n",
            "NumPartitions": 1,
            "ReplicationFactor": 1,
            "Assignments": [],
            "Configs": [],
        },
    ]
    body = SCHEMAS.request(19).encode({"Topics": topics, "timeoutMs": 1000, "validateOnly": False}, 5)
    sock = raw_connect(placement_sim.bootstrap)
    sock.sendall(encode_request(SCHEMAS, 19, 5, 1, FORGED, body))  # the client id too
    assert read_response(sock) is not None
    sock.sendall(request_frame(68, 0, {"NumPartitions": 1, "ReplicationFactor": 9, "TopicName": FORGED}, 2))
    assert read_response(sock) is not None
    sock.sendall(b"\x00\x00\x00\x0a" + b"\x00\x01\x00\x00" + FORGED.encode()[:6])  # closes: unknown apiKey
    assert read_response(sock) is None
    lines = [r.getMessage() for r in caplog.records]
    assert any("forged line" in line for line in lines)  # the strings are shown...
    for line in lines:  # ...escaped and cut
        assert "\n" not in line and "\r" not in line and "\x1b" not in line, line
        assert len(line) < 2000, line[:300]


def test_repeated_accept_errors_make_one_line_a_second(placement_sim, caplog):
    """The listener's accept fails with EMFILE while a connection waits: a line a second, with the count of
    those held back, instead of one per attempt; the connection is served once accepting works again."""
    listener = placement_sim.server.server._bootstrap
    real = listener.sock

    class OutOfDescriptors:
        def fileno(self) -> int:
            return real.fileno()

        def accept(self):
            raise OSError(errno.EMFILE, "Too many open files")

        def close(self) -> None:
            real.close()

    caplog.set_level(logging.ERROR, logger="controller.server")
    listener.sock = OutOfDescriptors()
    try:
        waiting = raw_connect(placement_sim.bootstrap)
        time.sleep(2.5)
    finally:
        listener.sock = real
    lines = [r.getMessage() for r in caplog.records if "cannot accept" in r.getMessage()]
    assert 2 <= len(lines) <= 4, lines
    assert lines[0] == "cannot accept a connection: [Errno 24] Too many open files"
    assert "more since the last line)" in lines[-1]
    waiting.sendall(request_frame(18, 0, {}, 5))
    frame = read_response(waiting)
    assert frame is not None and int.from_bytes(frame[:4], "big") == 5


def test_a_client_that_resets_its_connection_left_without_a_warning(placement_sim, caplog):
    """A client that closes with a reset (SO_LINGER 0: what a client killed, or closing with answers unread,
    sends) has left as a client may: counted as ``closed:client reset``, logged at debug, no warning."""
    caplog.set_level(logging.DEBUG, logger="controller.connection")
    before = placement_sim.stats["closed:client reset"]
    sock = raw_connect(placement_sim.bootstrap)
    sock.sendall(request_frame(18, 0, {}, 7))
    assert read_response(sock) is not None
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    wait_for(lambda: placement_sim.stats["closed:client reset"] > before, 10)
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("reset the connection" in r.getMessage() for r in caplog.records)
