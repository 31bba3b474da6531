"""The ``kafka`` election policy, through the controller's election service, against Kafka 4.4's own
``PartitionChangeBuilder``, with eligible leader replicas off on both sides, and on on both sides (the
ELR, the last known leader and its election, replicas back from an unclean shutdown).

Random partition changes: a registration (ISR, leader or none, epochs, leader recovery state, a
reassignment in progress), the brokers that may lead, what asks for the change (none: the ONLINE election
inside every change; a broker lost or back; ElectLeaders PREFERRED or UNCLEAN), the topic's unclean
setting, and target ISR, replicas, adding and removing replicas. A difference fails with its smallest
case.
"""

from __future__ import annotations

from harness.differences import compare
from harness.kafka_rules import KafkaRules
from harness.reference_election import ElectionChecker, kafka_election

CASES = 2_500


def _case(partition: dict, acceptable: list[int], trigger: str | None = None, **targets) -> dict:
    registration = {
        "leaderEpoch": 0,
        "partitionEpoch": 0,
        "recovering": False,
        "adding": [],
        "removing": [],
        **partition,
    }
    return {
        "partition": registration,
        "acceptable": acceptable,
        "trigger": trigger,
        "uncleanTopic": False,
        **targets,
    }


#: Differences found before, kept as the first cases of every run.
FOUND = [
    # Kafka 4.x completes a reassignment once the replicas it adds are in the ISR (3.x waited for every
    # target replica): the simulator kept the reassignment open.
    _case({"replicas": [0, 6], "isr": [0], "leader": -1, "adding": [6]}, [6], targetIsr=[6]),
    # A change that sets new target replicas elects among them: the simulator showed the policy the old
    # replicas and refused its answer.
    {
        **_case({"replicas": [5], "isr": [5], "leader": -1}, [2, 5], targetIsr=[], targetReplicas=[2, 1, 5]),
        "uncleanTopic": True,
    },
]


def test_the_kafka_policy_elects_as_kafka(kafka_rules: KafkaRules, seed: int) -> None:
    checker = ElectionChecker()
    outcome = compare(checker, kafka_rules, CASES, seed, extra=FOUND)
    assert outcome.difference is None, f"seed {seed}: {outcome.difference}"
    assert outcome.cases == CASES + len(FOUND)
    # Every kind of election Kafka's controller asks for, with and without a reassignment.
    kinds = {" ".join(kind.split()[1:]) for kind in outcome.kinds}
    assert kinds == {
        f"{election}{suffix}"
        for election in ("ONLINE", "PREFERRED", "UNCLEAN")
        for suffix in ("", " reassigning")
    }


def test_the_kafka_policy_elects_as_kafka_with_eligible_leader_replicas(
    kafka_rules: KafkaRules, seed: int
) -> None:
    checker = ElectionChecker(elr=True)
    outcome = compare(checker, kafka_rules, CASES, seed)
    assert outcome.difference is None, f"seed {seed}: {outcome.difference}"
    assert outcome.cases == CASES
    # Elections from the ELR and of the last known leader came up, under each kind Kafka asks for.
    kinds = set(outcome.kinds)
    for election in ("ONLINE", "PREFERRED", "UNCLEAN"):
        assert any(k.endswith(f"{election} last-known-leader") for k in kinds), sorted(kinds)
        assert any(k.endswith(f"{election} from-elr") for k in kinds), sorted(kinds)


def test_the_cases_change_leaders(kafka_rules: KafkaRules) -> None:
    """What is compared includes clean, unclean and no elections: not a run of records that change nothing."""
    checker = ElectionChecker()
    clean = _case({"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1}, [2, 3], targetIsr=[2, 3])
    unclean = {**_case({"replicas": [1, 2], "isr": [1], "leader": 1}, [2], "UNCLEAN"), "targetIsr": [1]}
    unchanged = _case({"replicas": [1, 2], "isr": [1, 2], "leader": 1}, [1, 2])
    answers = checker.answers(kafka_rules, [clean, unclean, unchanged])
    for kafka, ours in answers:
        assert kafka == ours
    (clean_answer, _), (unclean_answer, _), (unchanged_answer, _) = answers
    assert clean_answer["partition"]["leader"] == 2 and clean_answer["partition"]["isr"] == [2, 3]
    assert clean_answer["partition"]["leaderEpoch"] == 1 and not clean_answer["partition"]["recovering"]
    assert unclean_answer["partition"]["leader"] == 2 and unclean_answer["partition"]["isr"] == [2]
    assert unclean_answer["partition"]["recovering"]
    assert unchanged_answer == {"changed": False, "partition": unchanged_answer["partition"]}
    assert (
        kafka_election(unclean) == "UNCLEAN" and kafka_election({**clean, "uncleanTopic": True}) == "UNCLEAN"
    )
