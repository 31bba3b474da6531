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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def run_spec(
    bootstrap: str,
    apis: dict[int, tuple[int, int]],
    seed: int,
    frames: int,
    per_connection: int,
    threads: int = 8,
    processes: int = 1,
    deadline: float = 2.0,
    context: FuzzContext | None = None,
) -> dict[str, Any]:
    """What a run's client processes are told (as JSON): enough to make any of its streams again."""
    return {
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


def fuzz(
    bootstrap: str, apis: dict[int, tuple[int, int]], *, timeout: float = 900.0, **run: Any
) -> FuzzOutcome:
    """Runs the clients (see the module docstring) in ``processes`` processes of ``threads`` threads and
    waits for them (``run``: :func:`run_spec`'s other arguments, by name); even-numbered connections send
    valid requests only, odd-numbered ones everything. Each thread makes its connections' frames as it
    goes (a million frames are never held at once)."""
    spec = run_spec(bootstrap, apis, **run)
    processes = spec["parts"]
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


def _waits(frames: list[str], sent: float, arrivals: list[float]) -> str:
    """What an unanswered valid connection waited on: answers come in the order of their requests, so the
    first frame not answered held the rest; and the answer that came longest after the one before it."""
    said = f"waiting on {frames[len(arrivals)]}; " if len(arrivals) < len(frames) else ""
    if arrivals:
        gaps = [b - a for a, b in zip([sent, *arrivals], arrivals, strict=False)]
        k = max(range(len(gaps)), key=gaps.__getitem__)
        said += f"longest wait {gaps[k]:.3f} s, for {frames[k]}; "
    return said


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


def _connections(spec: dict[str, Any], part: int) -> range:
    """The connections process ``part`` of ``spec`` makes (by index over the whole run)."""
    total = spec["frames"] // spec["per_connection"]
    parts = spec.get("parts", 1)
    return range(total * part // parts, total * (part + 1) // parts)


def streams(spec: dict[str, Any], part: int, index: int) -> Iterator[tuple[int, bytes]]:
    """What thread ``index`` of process ``part`` sends, in order: (connection, its stream). Each thread's
    frames come from a source seeded by the run's seed, the process and the thread; even-numbered
    connections send valid frames only."""
    from tests.support.fuzz import FrameSource, FuzzContext
    from tests.support.rawwire import SCHEMAS

    source = FrameSource(
        SCHEMAS,
        {int(key): (low, high) for key, (low, high) in spec["apis"].items()},
        seed=spec["seed"] * 10_000 + part * 100 + index,
        context=FuzzContext.from_json(spec.get("context")),
    )
    for n in _connections(spec, part)[index :: spec["threads"]]:
        make = source.valid if n % 2 == 0 else source.next
        yield n, b"".join(make() for _ in range(spec["per_connection"]))


def stream_of(spec: dict[str, Any], connection: int) -> bytes:
    """Connection ``connection``'s stream in the run ``spec`` describes, made again (its thread's streams
    before it are made too, as its source's state depends on them)."""
    part = next(p for p in range(spec.get("parts", 1)) if connection in _connections(spec, p))
    index = (connection - _connections(spec, part).start) % spec["threads"]
    return next(stream for n, stream in streams(spec, part, index) if n == connection)


def replay(bootstrap: str, stream: bytes, timeout: float = 60.0) -> list[tuple[str, float | None]]:
    """Sends ``stream`` alone on one connection and reads until every frame is answered, the server
    closes or ``timeout`` passes: each frame (``apiKey/version:size``) with the seconds from the last byte
    sent to its answer (None: none came). Answers come in the order of their requests."""
    from tests.support.rawwire import raw_connect

    frames = _requests(stream).split()
    sock = raw_connect(bootstrap, timeout=10)
    try:
        sent: list[float] = []
        sender = threading.Thread(target=lambda: (sock.sendall(stream), sent.append(time.monotonic())))
        arrivals: list[float] = []
        sender.start()
        _drain(sock, lambda: (sent[0] if sent else time.monotonic()) + timeout, len(frames), arrivals)
        sender.join(10)
    finally:
        sock.close()
    start = sent[0] if sent else 0.0
    times: list[float | None] = [t - start for t in arrivals]
    return list(zip(frames, times + [None] * (len(frames) - len(times)), strict=True))


def _main() -> None:
    from tests.support.rawwire import raw_connect

    spec = json.loads(sys.argv[1])
    part = spec.get("part", 0)
    threads = spec["threads"]
    mine = _connections(spec, part)

    unanswered: list[int] = []
    failures: list[str] = []
    stalls: list[str] = []

    def client(index: int) -> None:
        for n, stream in streams(spec, part, index):
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
                expected = spec["per_connection"] if valid else None
                answers = _drain(sock, deadline, expected, arrivals)
                sender.join(10)
                if answers is None:
                    unanswered.append(n)
                    sent_at = f"{sent[0] - began:.3f}" if sent else "never"
                    last = f"{arrivals[-1] - began:.3f}" if arrivals else "-"
                    frames = _requests(stream).split()
                    waiting = _waits(frames, sent[0] if sent else began, arrivals) if valid else ""
                    stalls.append(
                        f"connection {n} ({'valid' if valid else 'mixed'}) at {began:.3f}: sent +{sent_at} s, "
                        f"{len(arrivals)} answer(s), the last +{last} s, given up +{time.monotonic() - began:.3f} s; "
                        f"{waiting}{' '.join(frames)}"
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
