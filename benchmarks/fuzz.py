"""A million fuzzed frames: the server never fails, answers or closes every connection, and keeps serving a
well-behaved client meanwhile.

The frames are tests.support.fuzz's: valid requests of every API and version the server answers (with
extreme values, 32,700-character strings, 20,000-entry arrays), and those frames mutated, cut, resized
and pure noise, 50 to a connection; even-numbered connections send valid frames only. Half the time they
name what the server holds (three topics and their partitions, one compacted and one LogAppendTime; a
live group, its member id and generation: tests.support.fuzz.live_context), and their Produce records
are real batches of every codec, a third of them changed inside with the CRC made right again. The fuzzing clients
run in processes of their own (tests.support.fuzzclients), as does the well-behaved client
(tests.support.probe, Metadata every 5 ms); the server runs in this process on its own thread, so its
log and counters can be read. Reported: frames per second, unhandled exceptions in the server (errors
logged, handler failures, internal-error closes), connections neither answered nor closed within 2 s of
their last byte, the ERROR lines the server logged, and the well-behaved client's p50 and p99 round
trips; each unanswered connection with when it sent, what came back and the frame it waited on, and any pause of a client
process itself (so that its misses are not laid at the server's door). Exit 1 when any exception, ERROR
line or unanswered connection is seen, a client fails, or the well-behaved client's p50 is above 50 ms.

    .venv/bin/python benchmarks/fuzz.py [--frames 1000000] [--loop auto|asyncio|uvloop] [--seed 1] [--watch]
    .venv/bin/python benchmarks/fuzz.py --replay N [the run's other arguments]

``--watch`` samples the server's event loop while it stalls and prints the ten longest stalls with where
the loop was. ``--replay N`` makes connection N's stream again, as the run with the same arguments made
it, and sends it alone to a fresh server: each frame's answer time, and the loop's stalls meanwhile (the
server holds then only what the run's start makes, not what the streams before N made).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controller.embedded import ServerThread  # noqa: E402
from tests.support.fuzz import GROUP_PROPERTIES, FuzzContext, live_context, warm  # noqa: E402
from tests.support.fuzzclients import fuzz, replay, run_spec, stream_of  # noqa: E402
from tests.support.loopwatch import LoopWatch  # noqa: E402
from tests.support.probe import LatencyProbe  # noqa: E402

PER_CONNECTION = 50
P50_TARGET = 0.050


class _Problems(logging.Handler):
    """Counts the server's log records that show a failure: errors, and anything with a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []
        self.errors = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(f"{record.levelname} {record.name}: {record.getMessage()[:300]}")
            self.errors += record.levelno >= logging.ERROR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--loop", default="auto", choices=["auto", "asyncio", "uvloop"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--processes", type=int, default=2, help="fuzzing client processes")
    parser.add_argument(
        "--watch", action="store_true", help="watch the server's event loop and print where it stalled"
    )
    parser.add_argument(
        "--replay",
        type=int,
        metavar="N",
        help="make connection N's stream of this run again and send it alone on a fresh server: each "
        "frame's answer time",
    )
    args = parser.parse_args()

    problems = _Problems()
    logging.getLogger().addHandler(problems)
    logging.getLogger().setLevel(logging.WARNING)
    properties = {
        "connections.max.idle.ms": "1000",
        "socket.request.max.bytes": "1048576",
        "auto.create.topics.enable": "true",
        "simulator.max.partitions": "50000",
        "simulator.event.loop": args.loop,
        **GROUP_PROPERTIES,
    }
    with ServerThread.start(seed=args.seed, properties=properties) as server:
        handlers = server.server.dispatcher.handlers
        apis = {key: (h.min_version, h.max_version) for key, h in handlers.items()}
        # Every handler module imported and every codec built before the streams start: a handler's and a
        # codec's first use (once per API version) is not what this measures (tests.support.fuzz.warm).
        warm(server)
        context = live_context(server.bootstrap)
        if args.replay is not None:
            _replay(server, apis, context, args)
            return
        started = time.perf_counter()
        print(f"streams start at {time.monotonic():.3f} (monotonic)", flush=True)
        watch = LoopWatch(server) if args.watch else contextlib.nullcontext()
        with watch, LatencyProbe(server.bootstrap, metadata=True) as probe:
            outcome = fuzz(
                server.bootstrap,
                apis,
                seed=args.seed,
                frames=args.frames,
                per_connection=PER_CONNECTION,
                processes=args.processes,
                timeout=24 * 3600,
                context=context,
            )
        took = time.perf_counter() - started
        stats = server.stats
    exceptions = len(problems.records) + stats["requests:internal error"] + stats["closed:internal error"]
    latencies = sorted(probe.latencies)
    p50 = statistics.median(latencies) if latencies else float("inf")
    p99 = latencies[int(len(latencies) * 0.99)] if latencies else float("inf")
    answered = sum(v for k, v in stats.items() if k.startswith("requests:") and k[9:].isdigit())

    print(
        f"frames:                  {args.frames:,} on {outcome.connections:,} connections ({args.loop} loop)"
    )
    print(f"time:                    {took:.1f} s = {args.frames / took:,.0f} frames/s")
    print(f"requests handled:        {answered:,}")
    print(f"unhandled exceptions:    {exceptions}")
    print(f"ERROR lines:             {problems.errors}")
    print(f"unanswered connections:  {len(outcome.unanswered)}")
    print(f"client failures:         {len(outcome.failures) + len(probe.failures)}")
    print(f"client process pauses:   {len(outcome.pauses)} over 0.25 s (the clients' own, not the server's)")
    print(
        f"well-behaved client:     p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms ({len(latencies):,} requests)"
    )
    # The stalls before the pauses: which connections went unanswered tells more than when a client paused.
    for line in (problems.records + outcome.failures + probe.failures + outcome.stalls)[:20]:
        print(f"  {line}")
    for line in outcome.pauses[:10]:
        print(f"  {line}")
    if isinstance(watch, LoopWatch):
        print(f"event loop stalls over {watch.threshold * 1000:.0f} ms: {len(watch.stalls)}")
        longest = sorted(sorted(watch.stalls, key=lambda s: -s.seconds)[:10], key=lambda s: s.began)
        for stall in longest:  # the ten longest, in the order they came
            print("\n".join(f"  {line}" for line in stall.lines()))
    failed = exceptions or outcome.unanswered or outcome.failures or probe.failures or p50 > P50_TARGET
    if failed:
        print(
            f"FAILED (targets: no exception, no ERROR line, no unanswered connection, p50 <= {P50_TARGET * 1000:.0f} ms)"
        )
        sys.exit(1)
    print("ok")


def _replay(server: ServerThread, apis: dict[int, tuple[int, int]], context: FuzzContext, args: Any) -> None:
    """``--replay N``: connection N's stream (as the run of these arguments makes it) sent alone."""
    spec = run_spec(
        server.bootstrap,
        apis,
        args.seed,
        args.frames,
        PER_CONNECTION,
        processes=args.processes,
        context=context,
    )
    stream = stream_of(spec, args.replay)
    kind = "valid" if args.replay % 2 == 0 else "mixed"
    print(f"connection {args.replay} ({kind}), {len(stream):,} bytes, sent alone:")
    with LoopWatch(server, threshold=0.05) as watch:
        answers = replay(server.bootstrap, stream)
    last = 0.0
    for frame, at in answers:
        shown = (
            "no answer"
            if at is None
            else f"+{at * 1000:8.1f} ms ({(at - last) * 1000:7.1f} ms after the one before)"
        )
        print(f"  {frame:>16}  {shown}")
        last = at if at is not None else last
    print(f"event loop stalls over {watch.threshold * 1000:.0f} ms: {len(watch.stalls)}")
    for stall in sorted(watch.stalls, key=lambda s: -s.seconds)[:5]:
        print("\n".join(f"  {line}" for line in stall.lines()))


if __name__ == "__main__":
    main()
