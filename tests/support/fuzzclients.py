"""Fuzzing clients in a process of their own: many connections, each sending a stream of seeded frames
(valid ones only, or everything :class:`~tests.support.fuzz.FrameSource` makes), then reading until the
server answers every valid one, or (for the rest, which close their side once sent) closes.

They run apart from the server's process so that their work (making and reading thousands of frames)
does not compete with the server for the interpreter, and a connection left unanswered is the server's
doing, not the test's."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[2]


@dataclass
class FuzzOutcome:
    """``unanswered``: the connections (by index) neither answered nor closed within the deadline."""

    connections: int
    unanswered: list[int]
    failures: list[str]


def fuzz(
    bootstrap: str,
    apis: dict[int, tuple[int, int]],
    *,
    seed: int,
    frames: int,
    per_connection: int,
    threads: int = 8,
    deadline: float = 2.0,
    timeout: float = 900.0,
) -> FuzzOutcome:
    """Runs the clients (see the module docstring) and waits for them; even-numbered connections send
    valid requests only, odd-numbered ones everything."""
    spec = {
        "bootstrap": bootstrap,
        "apis": {str(key): list(versions) for key, versions in apis.items()},
        "seed": seed,
        "frames": frames,
        "per_connection": per_connection,
        "threads": threads,
        "deadline": deadline,
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.fuzzclients"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"the fuzzing clients failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    return FuzzOutcome(result["connections"], result["unanswered"], result["failures"])


def _drain(sock: socket.socket, deadline: float, expected: int | None = None) -> bool:
    """Reads answers until the server closes (or, with ``expected``, until that many came); False when it
    neither answers nor closes by the deadline."""
    from tests.support.rawwire import read_response

    answers = 0
    while expected is None or answers < expected:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if read_response(sock) is None:
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        answers += 1
    return True


def _main() -> None:
    from tests.support.fuzz import FrameSource
    from tests.support.rawwire import SCHEMAS, raw_connect

    spec = json.loads(sys.stdin.read())
    apis = {int(key): (low, high) for key, (low, high) in spec["apis"].items()}
    source = FrameSource(SCHEMAS, apis, seed=spec["seed"])
    per_connection = spec["per_connection"]
    streams = []
    for n in range(spec["frames"] // per_connection):
        make = source.valid if n % 2 == 0 else source.next
        streams.append(b"".join(make() for _ in range(per_connection)))

    unanswered: list[int] = []
    failures: list[str] = []
    threads = spec["threads"]

    def client(index: int) -> None:
        for n in range(index, len(streams), threads):
            try:
                sock = raw_connect(spec["bootstrap"], timeout=10)
            except OSError as exc:
                failures.append(f"connection {n}: cannot connect: {exc}")
                continue
            # Valid streams wait for every answer; the others close their side once sent (the server
            # answers what it can at once, then closes) and read until the server closes.
            valid = n % 2 == 0
            try:
                try:
                    sock.sendall(streams[n])
                    if not valid:
                        sock.shutdown(socket.SHUT_WR)
                except (ConnectionResetError, BrokenPipeError):
                    pass  # closed on a bad frame while we were still sending: an outcome too
                expected = per_connection if valid else None
                if not _drain(sock, time.monotonic() + spec["deadline"], expected):
                    unanswered.append(n)
            finally:
                sock.close()

    workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(json.dumps({"connections": len(streams), "unanswered": sorted(unanswered), "failures": failures}))


if __name__ == "__main__":
    _main()
