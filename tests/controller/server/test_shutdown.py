"""ServerThread.stop() with connections open in every state: it returns promptly, without a traceback or a
complaint from the event loop."""

from __future__ import annotations

import logging
import time

from controller.embedded import ServerThread
from tests.support.placers import placer_file
from tests.support.rawwire import closed_by_server, raw_connect, read_response, request_frame


def test_stop_with_connections_open(capfd, caplog):
    caplog.set_level(logging.WARNING)
    server = ServerThread.start(seed=1, placer=placer_file("Hanging"))
    idle = raw_connect(server.bootstrap)
    idle.sendall(request_frame(18, 0, {}, 1))
    assert read_response(idle) is not None
    partial = raw_connect(server.bootstrap)
    partial.sendall(b"\x00\x00\x10\x00\x00\x12")
    piped = raw_connect(server.bootstrap)
    piped.sendall(request_frame(18, 0, {}, 1) * 1000)
    waiting = raw_connect(server.bootstrap)
    waiting.sendall(request_frame(68, 0, {"NumPartitions": 1, "ReplicationFactor": 1}, 1))
    time.sleep(1.0)  # the placer hangs in its worker
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 10
    assert closed_by_server(idle) and closed_by_server(partial) and closed_by_server(waiting)
    out, err = capfd.readouterr()
    for bad in ("Traceback", "Exception", "Task was destroyed", "never awaited"):
        assert bad not in out + err, out + err
    problems = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert [r.getMessage() for r in problems] == []
