"""A client that keeps asking ApiVersions (or, with ``metadata=True``, Metadata for no topics: a request
that goes through the dispatch and a handler; with ``topic`` too, Metadata of that one topic, as a client
refreshing its own topic does) on its own connection and records how long each answer
took: how tests and benchmarks show that a big request on another connection does not hold anyone up.

The probe runs in a process of its own, so that the test's other clients (decoding a hundred thousand
answers, say) cannot hold it back and make the server look slow."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).parents[2]


class LatencyProbe:
    """``with LatencyProbe(bootstrap) as probe: ...``; then ``probe.worst`` (seconds) and ``probe.count``."""

    def __init__(
        self,
        bootstrap: str,
        interval: float = 0.005,
        at_least: float = 0.25,
        metadata: bool = False,
        topic: str | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.interval = interval
        self.metadata = metadata
        self.topic = topic
        #: The probe watches at least this long (seconds), however quick the work it watches.
        self.at_least = at_least
        self._entered = 0.0
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> LatencyProbe:
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.probe",
                self.bootstrap,
                str(self.interval),
                "metadata" if self.metadata else "api-versions",
                *([self.topic] if self.topic is not None else []),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self._proc.stdout is not None
        ready = self._proc.stdout.readline()
        if ready.strip() != "ready":
            self._proc.kill()
            raise AssertionError(f"the probe did not start: {ready!r}")
        self._entered = time.perf_counter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._proc is not None
        time.sleep(max(0.0, self._entered + self.at_least - time.perf_counter()))
        out, _ = self._proc.communicate("stop\n", timeout=30)
        result = json.loads(out)
        self.latencies = result["latencies"]
        self.failures = result["failures"]

    @property
    def worst(self) -> float:
        return max(self.latencies)

    def share_above(self, seconds: float) -> float:
        """The share of answers that took longer than ``seconds``."""
        return sum(1 for latency in self.latencies if latency > seconds) / len(self.latencies)

    def assert_served(self, within: float = 0.050, never_beyond: float = 0.250) -> None:
        """Every answer came; at most 1% took longer than ``within`` (a shared machine's scheduler may
        hold any process back now and then) and none longer than ``never_beyond``."""
        assert self.failures == []
        assert self.count > 10, f"the probe saw only {self.count} answers"
        slow = self.share_above(within)
        worst = ", ".join(f"{latency * 1000:.0f}" for latency in sorted(self.latencies)[-10:])
        assert slow <= 0.01, (
            f"{slow:.1%} of {self.count} answers took over {within * 1000:.0f} ms (ms: {worst})"
        )
        assert self.worst < never_beyond, f"the slowest answer took {self.worst * 1000:.0f} ms"

    @property
    def count(self) -> int:
        return len(self.latencies)


def _probe(bootstrap: str, interval: float, kind: str, topic: str | None = None) -> None:
    from tests.support.rawwire import raw_connect, read_response, request_frame

    latencies: list[float] = []
    failures: list[str] = []
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    sock = raw_connect(bootstrap)
    correlation = 0
    try:
        while not stop.is_set():
            correlation += 1
            if kind == "metadata":
                names = [] if topic is None else [{"Name": topic}]
                body = {"Topics": names, "AllowAutoTopicCreation": False}
                frame = request_frame(3, 4, body, correlation)
            else:
                frame = request_frame(18, 0, {}, correlation)
            started = time.perf_counter()
            sock.sendall(frame)
            answer = read_response(sock)
            if answer is None or int.from_bytes(answer[:4], "big") != correlation:
                failures.append(f"{kind} {correlation} unanswered")
                break
            latencies.append(time.perf_counter() - started)
            if correlation == 1:
                print("ready", flush=True)
            time.sleep(interval)
    except OSError as exc:
        failures.append(f"{kind} {correlation}: {exc}")
    finally:
        sock.close()
    if correlation <= 1 and not latencies:
        print("failed", flush=True)
    stop.wait()
    print(json.dumps({"latencies": latencies, "failures": failures}), flush=True)


if __name__ == "__main__":
    _probe(
        sys.argv[1],
        float(sys.argv[2]),
        sys.argv[3] if len(sys.argv) > 3 else "api-versions",
        sys.argv[4] if len(sys.argv) > 4 else None,
    )
