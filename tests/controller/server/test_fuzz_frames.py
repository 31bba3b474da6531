"""Twenty thousand random, mutated, cut and valid frames of every API and version, over many connections:
no unhandled exception, every connection answered or closed within 2 s, and a well-behaved client served
all along."""

from __future__ import annotations

import logging
import socket
import statistics
import threading
import time

from tests.support.fuzz import FrameSource
from tests.support.rawwire import SCHEMAS, raw_connect, read_response, request_frame

FRAMES = 20_000
PER_CONNECTION = 50
THREADS = 8


def _drain(sock: socket.socket, deadline: float) -> bool:
    """Reads answers until the server closes; False when it neither answers nor closes by the deadline."""
    while True:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if read_response(sock) is None:
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


def test_twenty_thousand_frames_never_break_the_server(placement_sim_factory, caplog) -> None:
    server = placement_sim_factory(
        properties={
            "connections.max.idle.ms": "1000",
            "socket.request.max.bytes": "1048576",
            "auto.create.topics.enable": "true",
            "simulator.max.partitions": "50000",
        }
    )
    caplog.set_level(logging.WARNING)
    handlers = server.server.controller.handlers
    apis = {key: (h.min_version, h.max_version) for key, h in handlers.items()}
    streams = []
    source = FrameSource(SCHEMAS, apis, seed=20_000)
    for n in range(FRAMES // PER_CONNECTION):
        # Half the connections send valid requests only (all answered); half send everything.
        make = source.valid if n % 2 == 0 else source.next
        streams.append([make() for _ in range(PER_CONNECTION)])

    unanswered: list[int] = []
    latencies: list[float] = []
    failures: list[str] = []
    done = threading.Event()

    def well_behaved() -> None:
        sock = raw_connect(server.bootstrap)
        correlation = 0
        while not done.is_set():
            correlation += 1
            started = time.perf_counter()
            sock.sendall(
                request_frame(
                    18, 3, {"ClientSoftwareName": "good", "ClientSoftwareVersion": "1"}, correlation
                )
            )
            frame = read_response(sock)
            latencies.append(time.perf_counter() - started)
            if frame is None or int.from_bytes(frame[:4], "big") != correlation:
                failures.append(f"answer {correlation} missing")
                return
            time.sleep(0.005)
        sock.close()

    def fuzzer(index: int) -> None:
        for n in range(index, len(streams), THREADS):
            try:
                sock = raw_connect(server.bootstrap, timeout=5)
            except OSError as exc:
                failures.append(f"connect: {exc}")
                continue
            try:
                sock.sendall(b"".join(streams[n]))
                sock.shutdown(socket.SHUT_WR)
            except (ConnectionResetError, BrokenPipeError):
                pass  # closed on a bad frame while we were still sending: an outcome too
            if not _drain(sock, time.monotonic() + 2.0):
                unanswered.append(n)
            sock.close()

    good = threading.Thread(target=well_behaved, daemon=True)
    good.start()
    workers = [threading.Thread(target=fuzzer, args=(i,), daemon=True) for i in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(600)
    done.set()
    good.join(10)

    assert unanswered == []
    assert failures == []
    stats = server.stats
    assert stats["requests:internal error"] == 0 and stats["closed:internal error"] == 0
    problems = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert [r.getMessage()[:300] for r in problems] == []
    assert stats["connections"] >= FRAMES // PER_CONNECTION
    answered = sum(v for k, v in stats.items() if k.startswith("requests:") and k[9:].isdigit())
    assert answered >= FRAMES // 2  # the valid connections alone: every API and version exercised
    assert len(latencies) > 20 and statistics.median(latencies) < 0.05
    # Still answering correctly afterwards.
    sock = raw_connect(server.bootstrap)
    sock.sendall(request_frame(68, 0, {"NumPartitions": 3, "ReplicationFactor": 3}, 5))
    frame = read_response(sock)
    assert frame is not None and SCHEMAS.response(68).decode(frame[5:], 0)["ErrorCode"] == 0
