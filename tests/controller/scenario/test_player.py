"""Every step kind played by simulate: what each did (its events), or its error, and the run carrying on."""

from __future__ import annotations

from pathlib import Path

from controller.events import Event
from controller.scenario import parse_scenario
from controller.scenario.player import StepResult
from controller.scenario.simulation import simulate

SCENARIO = """\
[scenario]
end = "30s"

[cluster]
brokers = [{id = 0, rack = "a"}, {id = 1, rack = "b"}, {id = 2, rack = "c"}]

[settings]
"replica.placer.class.name" = "legacy"

[[steps]]
t = "0s"
action = "create-topic"
topic = "orders"
partitions = 2
replication_factor = 2
configs = {"min.insync.replicas" = 1}

[[steps]]
t = "0s"
action = "create-topic"
topic = "orders"
partitions = 1

[[steps]]
t = "0s"
action = "produce"
topic = "orders"
total_records_per_s = 100

[[steps]]
t = "0s"
action = "produce"
topic = "nope"
records_per_s = 1

[[steps]]
t = "1s"
action = "slow-follower"
broker = 1
delay = "500ms"
records_per_s = 10

[[steps]]
t = "2s"
action = "add-broker"
broker = 7
rack = "d"

[[steps]]
t = "3s"
action = "remove-broker"
broker = 7

[[steps]]
t = "3s"
action = "fail-promotion"
broker = 9

[[steps]]
t = "4s"
action = "fault-add"
spec = "error=NOT_CONTROLLER api=CreateTopics once; delay=500 api=Metadata"

[[steps]]
t = "4s"
action = "fault-clear"
ids = [1]

[[steps]]
t = "5s"
action = "elect"
kind = "preferred"
topic = "orders"

[[steps]]
t = "5s"
action = "elect"
kind = "unclean"
topic = "orders"
partition = 5

[[steps]]
t = "6s"
action = "stop-broker"
brokers = [0, 9]
mode = "hang"

[[steps]]
t = "7s"
action = "start-broker"
rack = "a"

[[steps]]
t = "8s"
action = "reassign"
topic = "orders"
partition = 0
replicas = [1, 2]

[[steps]]
t = "9s"
action = "snapshot"
topics = ["nope"]

[[steps]]
t = "10s"
action = "fault-clear"
"""


async def test_every_step_kind_does_what_it_says_or_fails_with_a_reason_and_the_run_carries_on() -> None:
    run = await simulate(parse_scenario(SCENARIO, "every.toml"))
    results = [e for e in run.entries if isinstance(e, StepResult)]
    outcomes = [(r.step.index, r.at_ms, r.error, r.details) for r in results]
    assert outcomes == [
        (0, 0, None, ()),
        (1, 0, "TOPIC_ALREADY_EXISTS: Topic 'orders' already exists.", ()),
        (2, 0, None, ()),
        (3, 0, "no topic 'nope'", ()),
        (4, 1000, None, ()),
        (5, 2000, None, ()),
        (6, 3000, None, ()),
        (7, 3000, "no broker 9", ()),
        (
            8,
            4000,
            None,
            ("fault 1: error=NOT_CONTROLLER api=CreateTopics once", "fault 2: delay=500 api=Metadata"),
        ),
        (9, 4000, None, ("cleared 1 fault(s)",)),
        (10, 5000, None, ("elected 0, not needed 2, failed 0",)),
        (11, 5000, "orders-5: UNKNOWN_TOPIC_OR_PARTITION: No such partition as orders-5", ()),
        (12, 6000, "no broker 9 is registered (done for the 1 other(s))", ()),
        (13, 7000, None, ()),
        (14, 8000, None, ()),
        (15, 9000, "no topic 'nope'", ()),
        (16, 10_000, None, ("cleared 1 fault(s)",)),
    ]
    events = [e for e in run.entries if isinstance(e, Event)]

    def changes(subject: str, at: int) -> list[tuple[str, object, object]]:
        return [c for e in events if e.subject == subject and e.time == at for c in e.changes]

    assert changes("broker 1", 1000) == [("copy_delay_ms", 0, 500), ("copy_rate", None, 10.0)]
    assert ("registered", True, False) in changes("broker 7", 3000)
    assert changes("broker 0", 6000) == [("process", "up", "hung")]
    assert ("process", "hung", "up") in changes("broker 0", 7000)
    assert run.end_ms == 30_000 and len(run.failed_steps) == 6


async def test_a_failed_promotion_leaves_the_candidate_unconfirmed() -> None:
    text = (Path(__file__).parents[3] / "examples" / "scenarios" / "leader-failover.toml").read_text()
    text += '\n[[steps]]\nt = "5s"\naction = "fail-promotion"\nbroker = 1\n'
    run = await simulate(parse_scenario(text, "fails.toml"))
    [shot] = [
        e.snapshot
        for e in run.entries
        if isinstance(e, StepResult) and e.snapshot and e.snapshot.label == "broker 1 leads"
    ]
    [p] = shot.topics[0]["Partitions"]
    assert (p["LeaderId"], p["Status"], shot.offline) == (-1, "CandidateFound", 1)


async def test_a_reassign_step_moves_the_partition_through_the_replication_model() -> None:
    text = """\
[cluster]
brokers = 4

[[steps]]
t = 0
action = "create-topic"
topic = "orders"
assignments = [[0, 1, 2]]

[[steps]]
t = "1s"
action = "reassign"
topic = "orders"
partition = 0
replicas = [3, 1, 2]

[[steps]]
t = "1s"
action = "reassign"
topic = "orders"
partition = 0
replicas = [1, 9]

[[steps]]
t = "10s"
action = "snapshot"
"""
    run = await simulate(parse_scenario(text, "move.toml"))
    results = [e for e in run.entries if isinstance(e, StepResult)]
    refused = "orders-0: INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes broker 9, but no such broker is registered."  # fmt: skip
    assert [r.error for r in results] == [None, None, refused, None]
    [p] = results[-1].snapshot.topics[0]["Partitions"]
    assert (p["LeaderId"], p["Replicas"], p["Isr"]) == (3, [3, 1, 2], [1, 2, 3])  # the leader's ask's order
    changes = [e.change("replicas") for e in run.entries if isinstance(e, Event) and e.change("replicas")]
    assert changes == [((0, 1, 2), (3, 1, 2, 0)), ((3, 1, 2, 0), (3, 1, 2))]
