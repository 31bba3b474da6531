"""The ``striped`` placer against Kafka 4.4's own ``StripedReplicaPlacer``, on random cluster shapes.

Racks or none (names whose Java hash and UTF-16 order matter among them), fenced and unfenced brokers,
ids up to 2^31-1, several placement calls in turn on one placer and Random, replication factors from
-1 to more than the brokers. A difference fails with its smallest case (harness/differences.py).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from harness.differences import Difference, compare, shrink
from harness.kafka_rules import KafkaRules
from harness.reference_placement import PlacementChecker

CASES = 2_500

#: Differences found before, kept as the first cases of every run.
FOUND = [
    # Kafka 4.x words the replication-factor errors with cordoned log directories (KIP-1066).
    {"seed": 0, "brokers": [], "calls": [[0, 0, 1]]},
    {"seed": 0, "brokers": [[0, None, False]], "calls": [[0, 1, 2]]},
]


def test_the_jvm_runs_the_pinned_kafka(kafka_rules: KafkaRules) -> None:
    pom = (Path(__file__).resolve().parents[2] / "harness" / "kafka" / "pom.xml").read_text()
    pinned = re.search(r"<kafka.version>(.+?)</kafka.version>", pom)
    assert pinned is not None
    assert kafka_rules.version["kafka"] == pinned.group(1)


def test_striped_places_as_kafka(kafka_rules: KafkaRules, seed: int) -> None:
    checker = PlacementChecker()
    outcome = compare(checker, kafka_rules, CASES, seed, extra=FOUND)
    assert outcome.difference is None, f"seed {seed}: {outcome.difference}"
    assert outcome.cases == CASES + len(FOUND)
    # The cases covered every shape: no brokers, no racks, one to four or more racks, with fenced brokers.
    assert {"no brokers", "no racks", "no racks, fenced", "4+ racks", "4+ racks, fenced"} <= set(
        outcome.kinds
    )


def test_both_sides_fail_alike(kafka_rules: KafkaRules) -> None:
    """Placements and errors both come through: the comparison is not of two empty answers."""
    checker = PlacementChecker()
    [(kafka, ours)] = checker.answers(kafka_rules, [FOUND[1]])
    assert kafka == ours
    assert kafka[0]["error"] == "InvalidReplicationFactorException"
    assert kafka[0]["message"].startswith("The target replication factor of 2 cannot be reached")
    case = {"seed": 7, "brokers": [[1, "a", False], [2, "b", False], [3, "c", True]], "calls": [[0, 3, 3]]}
    [(kafka, ours)] = checker.answers(kafka_rules, [case])
    assert kafka == ours
    assert [sorted(r) for r in kafka[0]["replicas"]] == [[1, 2, 3]] * 3
    assert {r[0] for r in kafka[0]["replicas"]} <= {1, 2}  # a fenced broker never leads


class _OffByOne(PlacementChecker):
    """A placer that is wrong in a known way: it swaps the first two replicas of partition 5 on."""

    def ours(self, cases):
        answers = super().ours(cases)
        for answer in answers:
            for result in answer:
                for replicas in result.get("replicas", [])[5:]:
                    if len(replicas) > 1:
                        replicas[0], replicas[1] = replicas[1], replicas[0]
        return answers


def test_a_difference_is_shrunk_to_its_smallest_case(kafka_rules: KafkaRules) -> None:
    checker = _OffByOne()
    outcome = compare(checker, kafka_rules, 500, seed=1)
    found = outcome.difference
    assert found is not None and found.original is not None
    # Smallest: one call of six partitions (the first five agree) of RF 2 on two brokers, seed 0.
    assert found.case["calls"] == [[0, 6, 2]]
    assert len(found.case["brokers"]) == 2 and found.case["seed"] == 0
    assert found.kafka != found.ours
    text = str(found)
    assert "smallest case" in text and "Kafka:" in text and "simulator:" in text and "found as:" in text
    # Shrinking again finds nothing smaller.
    again = shrink(checker, kafka_rules, Difference(found.case, found.kafka, found.ours))
    assert again.case == found.case and again.shrink_steps == 0


def test_cases_depend_on_the_seed_alone() -> None:
    checker = PlacementChecker()

    def cases(seed: int) -> list:
        rnd = random.Random(seed)
        return [checker.random_case(rnd) for _ in range(20)]

    assert cases(5) == cases(5)
    assert cases(5) != cases(6)
