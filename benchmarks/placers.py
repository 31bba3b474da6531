"""Placement speed: replica slots placed per second by every built-in placer, and how it scales.

Each placer (loaded by short name, seeded with ``simulator.seed``) places 1,000 / 10,000 / 100,000
partitions x RF 3 on 1,000 unfenced brokers in 10 racks named ``/dc1/r1`` .. ``/dc2/r5`` (paths,
so that ``multi-level`` sees two data centres of five racks; the other placers treat them as ten
plain rack names). A replica slot is one broker id in one partition's replica list. Every call uses
a fresh placer and is timed on its own (best of five, garbage collector paused as ``timeit`` does),
so the figures include building the placer's per-call state.

The reference, measured in the same run, is a plain Python round-robin loop over the same sizes
(``[[ids[(p + r) % n] for r in range(3)] for p in ...]``): the floor of placing in Python. The last
column is the time per slot at the largest size divided by that at the smallest; about 1 means the
cost grows linearly with the number of partitions.

    .venv/bin/python benchmarks/placers.py [--sizes 1000,10000,100000] [--placers striped,legacy]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controller.placement.api import ClusterView, PlacementSpec, UsableBroker  # noqa: E402
from controller.placement.builtin.java_random import SEED_KEY  # noqa: E402
from controller.placement.loader import BUILTIN_PLACERS, load_placer  # noqa: E402

BROKERS = 1_000
RACKS = 10
REPLICATION_FACTOR = 3
SIZES = (1_000, 10_000, 100_000)
TARGET = {"striped": 1_000_000}  # replica slots per second
PLACER_ORDER = ("striped", "legacy", "fluvio", "fluvio-fair", "multi-level")


def cluster() -> ClusterView:
    racks = [f"/dc{r // 5 + 1}/r{r % 5 + 1}" for r in range(RACKS)]
    return ClusterView(tuple(UsableBroker(i, racks[i % RACKS], False) for i in range(BROKERS)))


REPEATS = 5
COL = 18


def timed(run: Callable[[], object]) -> tuple[float, object]:
    """Seconds one call takes, with the garbage collector paused as ``timeit`` does."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = run()
        return time.perf_counter() - start, result
    finally:
        gc.enable()


def time_placer(name: str, view: ClusterView, partitions: int) -> float:
    spec = PlacementSpec(start_partition=0, num_partitions=partitions, num_replicas=REPLICATION_FACTOR)
    best = float("inf")
    for attempt in range(REPEATS):
        placer = load_placer(name, {SEED_KEY: str(attempt)})
        seconds, result = timed(lambda: placer.place(spec, view))  # noqa: B023 - called at once
        best = min(best, seconds)
        if not isinstance(result, list) or len(result) != partitions:
            raise SystemExit(f"{name} did not place {partitions} partitions")
    return best


def time_reference(view: ClusterView, partitions: int) -> float:
    ids = [b.id for b in view.brokers]
    n = len(ids)

    def round_robin() -> list[list[int]]:
        return [[ids[(p + r) % n] for r in range(REPLICATION_FACTOR)] for p in range(partitions)]

    return min(timed(round_robin)[0] for _ in range(REPEATS))


def row(label: str, seconds: Sequence[float], sizes: Sequence[int]) -> str:
    rates = [size * REPLICATION_FACTOR / s for size, s in zip(sizes, seconds, strict=True)]
    per_slot = [s / (size * REPLICATION_FACTOR) for size, s in zip(sizes, seconds, strict=True)]
    ratio = per_slot[-1] / per_slot[0]
    cells = " | ".join(f"{rate:>{COL},.0f}" for rate in rates)
    return f"| {label:<24} | {cells} | {ratio:>13.2f} |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="partition counts, comma-separated"
    )
    parser.add_argument("--placers", default=",".join(PLACER_ORDER), help="short names, comma-separated")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    names = [n.strip() for n in args.placers.split(",") if n.strip()]
    unknown = [n for n in names if n not in BUILTIN_PLACERS]
    if unknown:
        parser.error(f"unknown placers {unknown}; built-ins: {', '.join(sorted(BUILTIN_PLACERS))}")
    view = cluster()
    print(
        f"Replica slots placed per second: partitions x RF {REPLICATION_FACTOR} on {BROKERS:,} brokers in "
        f"{RACKS} racks (Python {sys.version.split()[0]})"
    )
    print()
    header = " | ".join(f"{f'{size:,} partitions':>{COL}}" for size in sizes)
    print(f"| {'placer':<24} | {header} | {'cost ratio':>13} |")
    print(f"|{'-' * 26}|" + "|".join("-" * (COL + 1) + ":" for _ in sizes) + f"|{'-' * 14}:|")
    print(row("reference: round-robin", [time_reference(view, size) for size in sizes], sizes), flush=True)
    missed = []
    for name in names:
        seconds = [time_placer(name, view, size) for size in sizes]
        print(row(name, seconds, sizes), flush=True)
        target = TARGET.get(name)
        if target is not None and sizes[-1] * REPLICATION_FACTOR / seconds[-1] < target:
            missed.append(f"{name} placed fewer than {target:,} slots/s at {sizes[-1]:,} partitions")
    print()
    print(f"cost ratio: time per slot at {sizes[-1]:,} partitions / at {sizes[0]:,} (about 1 = linear)")
    for line in missed:
        print(f"TARGET MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
