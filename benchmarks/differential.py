"""The differential oracle at scale: thousands of random request sequences sent to a real Apache Kafka
(the version `make reference` fetches) and to the simulator, their answers compared field by field.

The same generators and comparison as tests/differential/ (harness/differential/), driven by a seeded
random number generator instead of hypothesis (no shrinking: a difference is printed with the steps that
led to it). Sequences run on the single combined node (`--sequences`) and on the cluster of a controller
and three brokers in three racks (`--three`: reassignments, broker failures by SIGKILL / SIGSTOP / SIGTERM
against the simulator's `stop_broker` modes). The table shows, per API, the steps sent, the differences
found that docs/fidelity.md lists, and those it does not; then how often each row of the table was met.
The script exits 1 on any unlisted difference.

    .venv/bin/python benchmarks/differential.py [--sequences 10000] [--three 100] [--steps 12] [--seed 1]
        [--minutes M]

``--minutes`` bounds the run: once the time is up the sequence under way ends, the table shows what ran
(and says how many sequences that was), and the exit status is 1 too: a bounded run did not meet the
target.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.differential.choices import Chooser  # noqa: E402
from harness.differential.generators import ACTIONS, GENERATORS  # noqa: E402
from harness.differential.machine import paired_session, sim_for  # noqa: E402
from harness.differential.session import DifferentialSession, UnlistedDifferences, _generic  # noqa: E402
from harness.kafka_cluster import KafkaCluster, rss_bytes  # noqa: E402


def run_sequences(
    session: DifferentialSession, count: int, steps: int, seed: int, label: str, deadline: float
) -> tuple[float, int]:
    """Runs up to ``count`` sequences (fewer if ``deadline``, a ``time.monotonic()``, passes): the
    seconds they took and how many ran."""
    shape = session.cluster
    names = [g.name for g in GENERATORS.values() if shape in g.clusters for _ in range(g.weight)]
    actions = [a.name for a in ACTIONS.values() if shape in a.clusters for _ in range(a.weight)]
    began = time.monotonic()
    progress = [0]  # sequences ended
    try:
        _sequences(session, count, steps, seed, label, deadline, names, actions, began, progress)
    except KeyboardInterrupt:  # Ctrl-C: the table of what ran
        print(f"  {label}: interrupted after {progress[0]} of {count} sequences", flush=True)
    return time.monotonic() - began, progress[0]


def _sequences(
    session: DifferentialSession,
    count: int,
    steps: int,
    seed: int,
    label: str,
    deadline: float,
    names: list[str],
    actions: list[str],
    began: float,
    progress: list[int],
) -> None:
    window = Window()
    for n in range(count):
        if time.monotonic() > deadline:
            print(f"  {label}: time is up after {n} of {count} sequences", flush=True)
            break
        rng = random.Random(seed * 1_000_003 + n)
        session.begin()
        try:
            _steps(session, rng, steps, n, names, actions)
        except UnlistedDifferences:
            raise
        except (TimeoutError, AssertionError) as exc:  # the harness's own, not a difference: shown, counted
            HARNESS_ERRORS.append(f"{label} sequence {n}: {type(exc).__name__}: {str(exc)[:300]}")
            print(f"  harness error in sequence {n}: {HARNESS_ERRORS[-1]}", flush=True)
        finally:
            session.end()
        progress[0] = n + 1
        if (n + 1) % max(1, count // 20) == 0:
            elapsed = time.monotonic() - began
            print(
                f"  {label}: {n + 1}/{count} sequences, {elapsed:.0f} s, "
                f"{sum(session.unlisted_kinds.values())} unlisted difference(s) so far",
                flush=True,
            )
            print("    " + window.since(session, n + 1, elapsed), flush=True)


class Window:
    """Where the time of the sequences since the last progress line went: each side's waiting for its
    answers (the three APIs it waited on longest; the two sides are asked at once), the rest being the
    harness's own work and its pauses while it waits for a failure to settle, and the memory each holds
    (a run that slows shows which part grew)."""

    def __init__(self) -> None:
        self.sequences, self.elapsed = 0, 0.0
        self.spent: dict[str, Counter[str]] = {}

    def since(self, session: DifferentialSession, sequences: int, elapsed: float) -> str:
        count = max(1, sequences - self.sequences)
        wall = (elapsed - self.elapsed) / count
        parts = [f"{wall * 1000:.0f} ms a sequence"]
        for side in session.sides:
            delta = side.spent.copy()
            delta.subtract(self.spent.get(side.name, Counter()))
            top = ", ".join(f"{api} {s / count * 1000:.0f}" for api, s in delta.most_common(3))
            parts.append(f"{side.name} answers {sum(delta.values()) / count * 1000:.0f} ms ({top})")
            self.spent[side.name] = side.spent.copy()
        self.sequences, self.elapsed = sequences, elapsed
        kafka_rss = sum(session.kafka.cluster.memory().values())
        parts.append(
            f"RSS: Kafka {kafka_rss / 2**20:.0f} MB, this process {rss_bytes(os.getpid()) / 2**20:.0f} MB"
        )
        return "; ".join(parts)


#: What went wrong in the harness itself (a cluster that did not settle in time): each sequence's, shown
#: at the end; the run then fails (exit 1), as it did not check those sequences whole.
HARNESS_ERRORS: list[str] = []


def _steps(
    session: DifferentialSession, rng: random.Random, steps: int, n: int, names: list[str], actions: list[str]
) -> None:
    for _ in range(steps):
        chooser = Chooser(rng=rng)
        if actions and rng.random() < 0.15:
            ACTIONS[rng.choice(actions)].run(chooser, session)
            continue
        assert session.model is not None
        step = GENERATORS[rng.choice(names)].make(chooser, session.model)
        if step is not None:
            known = len(session.unlisted_kinds)
            session.run(step)
            if len(session.unlisted_kinds) > known:  # a new kind: shown at once, with its steps
                difference, context = session.unlisted[-1]
                print(f"  new unlisted kind (sequence {n}): {difference}", flush=True)
                print("    after: " + context.replace("\n", "\n           "), flush=True)


def report(
    sessions: list[DifferentialSession],
    seconds: dict[str, float],
    sequences: dict[str, int],
    asked: dict[str, int],
) -> int:
    totals: dict[str, list[int]] = {}
    for session in sessions:
        for api, counts in session.counts.items():
            row = totals.setdefault(api, [0, 0, 0])
            row[0] += counts.steps
            row[1] += counts.listed
            row[2] += counts.unlisted
    print()
    print(f"{'API':<28}{'steps':>9}{'listed':>10}{'unlisted':>10}")
    for api in sorted(totals):
        steps, listed, unlisted = totals[api]
        print(f"{api:<28}{steps:>9}{listed:>10}{unlisted:>10}")
    all_steps = sum(t[0] for t in totals.values())
    print(
        f"{'all':<28}{all_steps:>9}{sum(t[1] for t in totals.values()):>10}{sum(t[2] for t in totals.values()):>10}"
    )
    for shape, secs in seconds.items():
        print(
            f"{shape}: {sequences[shape]} of {asked[shape]} sequences in {secs:.0f} s "
            f"({sequences[shape] / max(secs, 1e-9):.2f} per second)"
        )
    short = [shape for shape in asked if sequences.get(shape, 0) < asked[shape]]
    used: Counter[int] = Counter()
    table = sessions[0].table
    for session in sessions:
        used.update(session.table.used)
    print("\ndocs/fidelity.md rows met (differences each covered):")
    for row in table.rows:
        area = row.area.split("`")[0].strip() or row.area[:40]
        print(f"  line {row.line:>3}  {used.get(row.line, 0):>8}  {area}")
    if HARNESS_ERRORS:
        print(f"\n{len(HARNESS_ERRORS)} sequence(s) cut short by the harness itself (not checked whole):")
        for line in HARNESS_ERRORS:
            print(f"  {line}")
    unlisted = [(d, context) for s in sessions for d, context in s.unlisted]
    if not unlisted:
        print("\nno unlisted difference")
        if short:
            print(f"but the run was cut short by --minutes ({', '.join(short)}): not the target")
            return 1
        return 1 if HARNESS_ERRORS else 0
    kinds: Counter[tuple[str, str]] = Counter()
    for session in sessions:
        kinds.update(session.unlisted_kinds)
    print(f"\n{len(unlisted)} UNLISTED difference(s), {len(kinds)} kind(s):")
    shown: set[tuple[str, str]] = set()
    for difference, context in unlisted:
        kind = (difference.api, _generic(difference.path))
        if kind in shown:
            continue
        shown.add(kind)
        print(f"\n  [{kinds[kind]}x] {difference}")
        print("    after: " + context.replace("\n", "\n           "))
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=10_000, help="sequences on the single node")
    parser.add_argument("--three", type=int, default=100, help="sequences on the three-rack cluster")
    parser.add_argument("--steps", type=int, default=12, help="steps per sequence")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long, table of what ran")
    args = parser.parse_args()
    deadline = time.monotonic() + args.minutes * 60 if args.minutes is not None else float("inf")
    sessions, seconds, counts, asked = [], {}, {}, {}
    for shape, count in (("single", args.sequences), ("three-racks", args.three)):
        if count <= 0:
            continue
        cluster = KafkaCluster.start(shape)
        print(cluster.summary(), flush=True)
        sim = sim_for(shape, seed=args.seed)
        try:
            with paired_session(cluster, sim, shape, strict=False) as session:
                asked[shape] = count
                seconds[shape], counts[shape] = run_sequences(
                    session, count, args.steps, args.seed, shape, deadline
                )
                sessions.append(session)
        finally:
            sim.stop()
            cluster.stop()
    return report(sessions, seconds, counts, asked)


if __name__ == "__main__":
    sys.exit(main())
