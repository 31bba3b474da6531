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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.fuzz import FuzzContext

ROOT = Path(__file__).parents[2]


@dataclass
class FuzzOutcome:
    """``unanswered``: the connections (by index) neither answered nor closed within the deadline;
    ``stalls`` says of each what it had sent and how many answers came."""

    connections: int
    unanswered: list[int]
    failures: list[str]
    stalls: list[str] = field(default_factory=list)
    pauses: list[str] = field(default_factory=list)


def fuzz(
    bootstrap: str,
    apis: dict[int, tuple[int, int]],
    *,
    seed: int,
    frames: int,
    per_connection: int,
    threads: int = 8,
    processes: int = 1,
    deadline: float = 2.0,
    timeout: float = 900.0,
    context: FuzzContext | None = None,
) -> FuzzOutcome:
    """Runs the clients (see the module docstring) in ``processes`` processes of ``threads`` threads and
    waits for them; even-numbered connections send valid requests only, odd-numbered ones everything.
    Each thread makes its connections' frames as it goes (a million frames are never held at once)."""
    spec = {
        "bootstrap": bootstrap,
        "apis": {str(key): list(versions) for key, versions in apis.items()},
        "seed": seed,
        "frames": frames,
        "per_connection": per_connection,
        "threads": threads,
        "parts": processes,
        "deadline": deadline,
        "context": context.as_json() if context is not None else None,
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.fuzzclients", json.dumps({**spec, "part": part})],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for part in range(processes)
    ]
    outcome = FuzzOutcome(0, [], [])
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                raise AssertionError(f"the fuzzing clients failed ({proc.returncode}): {err[-2000:]}")
            result = json.loads(out)
            outcome.connections += result["connections"]
            outcome.unanswered.extend(result["unanswered"])
            outcome.failures.extend(result["failures"])
            outcome.stalls.extend(result["stalls"])
            outcome.pauses.extend(result["pauses"])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    outcome.unanswered.sort()
    return outcome


def _drain(
    sock: socket.socket,
    deadline: Callable[[], float],
    expected: int | None = None,
    arrivals: list[float] | None = None,
) -> int | None:
    """Reads answers until the server closes (or, with ``expected``, until that many came): how many came;
    None when the server neither answered nor closed by the deadline (``deadline()``, monotonic time,
    asked again at each wait). Each answer's arrival time is appended to ``arrivals``."""
    from tests.support.rawwire import read_response

    answers = 0
    while expected is None or answers < expected:
        while True:
            sock.settimeout(max(0.01, min(0.25, deadline() - time.monotonic())))
            try:
                answer = read_response(sock)
            except (ConnectionResetError, BrokenPipeError):
                return answers
            except TimeoutError:
                if time.monotonic() >= deadline():
                    return None
                continue
            break
        if answer is None:
            return answers
        answers += 1
        if arrivals is not None:
            arrivals.append(time.monotonic())
    return answers


def _requests(stream: bytes) -> str:
    """The frames of a stream as ``apiKey/version:size`` (as far as their size prefixes go)."""
    shown, pos = [], 0
    while pos + 8 <= len(stream):
        size = int.from_bytes(stream[pos : pos + 4], "big", signed=True)
        shown.append(
            f"{int.from_bytes(stream[pos + 4 : pos + 6], 'big', signed=True)}/"
            f"{int.from_bytes(stream[pos + 6 : pos + 8], 'big', signed=True)}:{size}"
        )
        if size <= 0:
            break
        pos += 4 + size
    return " ".join(shown)


def _main() -> None:
    from tests.support.fuzz import FrameSource, FuzzContext
    from tests.support.rawwire import SCHEMAS, raw_connect

    spec = json.loads(sys.argv[1])
    apis = {int(key): (low, high) for key, (low, high) in spec["apis"].items()}
    per_connection = spec["per_connection"]
    total = spec["frames"] // per_connection
    parts, part = spec.get("parts", 1), spec.get("part", 0)
    threads = spec["threads"]
    mine = range(total * part // parts, total * (part + 1) // parts)  # this process's connections

    unanswered: list[int] = []
    failures: list[str] = []
    stalls: list[str] = []

    def client(index: int) -> None:
        source = FrameSource(
            SCHEMAS,
            apis,
            seed=spec["seed"] * 10_000 + part * 100 + index,
            context=FuzzContext.from_json(spec.get("context")),
        )
        for n in mine[index::threads]:
            make = source.valid if n % 2 == 0 else source.next
            stream = b"".join(make() for _ in range(per_connection))
            try:
                sock = raw_connect(spec["bootstrap"], timeout=10)
            except OSError as exc:
                failures.append(f"connection {n}: cannot connect: {exc}")
                continue
            # Valid streams wait for every answer; the others close their side once sent (the server
            # answers what it can at once, then closes) and read until the server closes.
            valid = n % 2 == 0

            sent: list[float] = []

            def send(
                sock: socket.socket = sock,
                stream: bytes = stream,
                valid: bool = valid,
                sent: list[float] = sent,
            ) -> None:
                try:
                    sock.sendall(stream)
                    if not valid:
                        sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass  # closed on a bad frame while we were still sending: an outcome too
                sent.append(time.monotonic())

            def deadline(sent: list[float] = sent) -> float:
                """The deadline runs from the stream's last byte sent."""
                return (sent[0] if sent else time.monotonic()) + spec["deadline"]

            # Sent while the answers are read, as a client does: a server that stops reading while its
            # client does not read its answers (Kafka's muting, and ours) would otherwise hold both.
            sender = threading.Thread(target=send, daemon=True)
            arrivals: list[float] = []
            try:
                began = time.monotonic()
                sender.start()
                expected = per_connection if valid else None
                answers = _drain(sock, deadline, expected, arrivals)
                sender.join(10)
                if answers is None:
                    unanswered.append(n)
                    sent_at = f"{sent[0] - began:.3f}" if sent else "never"
                    last = f"{arrivals[-1] - began:.3f}" if arrivals else "-"
                    stalls.append(
                        f"connection {n} ({'valid' if valid else 'mixed'}) at {began:.3f}: sent +{sent_at} s, "
                        f"{len(arrivals)} answer(s), the last +{last} s, given up +{time.monotonic() - began:.3f} s; "
                        f"{_requests(stream)}"
                    )
            finally:
                sock.close()

    def guarded(index: int) -> None:
        try:
            client(index)
        except Exception as exc:  # noqa: BLE001 - a client that stops early is a failure, never a silent one
            failures.append(f"client thread {index} stopped: {type(exc).__name__}: {exc}")

    pauses: list[str] = []
    done = threading.Event()

    def watchdog() -> None:
        """Notes when this process itself could not run for a while (interpreter or machine), so that a
        connection given up then is not blamed on the server unseen."""
        tick = 0.02
        expected = time.monotonic() + tick
        while not done.wait(tick):
            now = time.monotonic()
            if now - expected > 0.25:
                pauses.append(f"client process paused {now - expected:.3f} s at {expected:.3f}")
            expected = now + tick

    workers = [threading.Thread(target=guarded, args=(i,)) for i in range(threads)]
    dog = threading.Thread(target=watchdog, daemon=True)
    dog.start()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    done.set()
    result = {
        "pauses": pauses,
        "connections": len(mine),
        "unanswered": sorted(unanswered),
        "failures": failures,
        "stalls": stalls,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    _main()
