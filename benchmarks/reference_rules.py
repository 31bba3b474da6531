"""Held against Kafka's own code at scale: 100,000 random placements and 100,000 random partition changes.

The ``striped`` placer is compared with Kafka's ``StripedReplicaPlacer`` and the ``kafka`` election policy
(through the controller's election service) with Kafka's ``PartitionChangeBuilder``, both run in one JVM
(harness/java/.../KafkaRules.java, at the Kafka version pinned in harness/kafka/pom.xml), case by case as
tests/harness/ does on 2,500 of each. The cases come from ``--seed`` in batches of 1,000; the first
difference stops the area and is printed as its smallest case.

The peer measured in the same run is Kafka's code itself: per area, the median over batches of the time
per case each side took (Kafka's: the JVM answering a batch, including the JSON both ways; ours: the
placer on its own, or the election service with a partition created and deleted around each case). The
target is agreement: the script exits 1 on any difference, or when fewer cases than asked were compared.

    .venv/bin/python benchmarks/reference_rules.py [--cases 100000] [--seed 1] [--areas placement,election]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.differences import Checker, compare  # noqa: E402
from harness.kafka_rules import KafkaRules  # noqa: E402
from harness.reference_election import ElectionChecker  # noqa: E402
from harness.reference_placement import PlacementChecker  # noqa: E402

CHECKERS: dict[str, type[Checker]] = {"placement": PlacementChecker, "election": ElectionChecker}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000, help="random cases per area (default 100,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--areas", default=",".join(CHECKERS))
    args = parser.parse_args()
    areas = [a.strip() for a in args.areas.split(",") if a.strip()]
    failed = False
    with KafkaRules(timeout=600) as rules:
        print(
            f"Kafka {rules.version['kafka']} (metadata version {rules.version['metadataVersion']}), seed {args.seed}"
        )
        print()
        header = f"{'area':<10} {'cases':>8} {'differences':>11} {'Kafka µs/case':>14} {'ours µs/case':>13} {'wall s':>7}"
        print(header)
        print("-" * len(header))
        findings = []
        for area in areas:
            checker = CHECKERS[area]()
            started = time.perf_counter()
            outcome = compare(checker, rules, args.cases, args.seed)
            wall = time.perf_counter() - started
            kafka = statistics.median(k / n * 1e6 for n, k, _ in outcome.timings)
            ours = statistics.median(o / n * 1e6 for n, _, o in outcome.timings)
            differences = 0 if outcome.difference is None else 1
            print(
                f"{area:<10} {outcome.cases:>8,} {differences:>11} {kafka:>14.0f} {ours:>13.0f} {wall:>7.1f}"
            )
            if outcome.difference is not None:
                findings.append((area, outcome.difference))
                failed = True
            elif outcome.cases < args.cases:
                failed = True
        for area, difference in findings:
            print()
            print(f"{area}: {difference}")
        print()
        print(f"target: no difference in {args.cases:,} cases per area")
    print("MISSED" if failed else "met")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
