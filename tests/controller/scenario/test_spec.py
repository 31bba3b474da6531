"""Scenario files read into typed steps, and ONE error naming the line and the key of a bad one."""

from __future__ import annotations

import pytest

from controller.faults import FaultSpec
from controller.placement.api import UsableBroker
from controller.scenario import ScenarioError, parse_duration, parse_scenario
from controller.scenario.spec import (
    AddBroker,
    CreateTopic,
    Elect,
    FailPromotion,
    FaultAdd,
    FaultClear,
    ProduceLoad,
    Reassign,
    RemoveBroker,
    SlowFollower,
    Snapshot,
    StartBroker,
    StopBroker,
)

EVERY_STEP = """\
[scenario]
name = "every step"
end = "1m"
seed = 7

[cluster]
brokers = [{id = 0, rack = "a"}, {id = 1, rack = "b"}, 2]

[settings]
"simulator.election.policy" = "fluvio"
"broker.session.timeout.ms" = 3000
"unclean.leader.election.enable" = true

[[steps]]
t = "1500ms"
action = "produce"
topic = "orders"
total_records_per_s = 300

[[steps]]
t = 0
action = "create-topic"
topic = "orders"
partitions = 3
replication_factor = 2
configs = {"min.insync.replicas" = 2, "cleanup.policy" = "delete"}

[[steps]]
t = "0s"
action = "create-topic"
topic = "fixed"
assignments = [[0, 1], [1, 2]]

[[steps]]
t = "10s"
action = "stop-broker"
rack = "a"
mode = "hang"

[[steps]]
t = "10s"
action = "start-broker"
brokers = [0, 1]

[[steps]]
t = "11s"
action = "add-broker"
broker = 5
rack = "c"

[[steps]]
t = "12s"
action = "remove-broker"
broker = 5

[[steps]]
t = "13s"
action = "slow-follower"
broker = 1
delay = "3s"
records_per_s = 50

[[steps]]
t = "14s"
action = "slow-follower"
broker = 1
delay = "0ms"
unlimited = true

[[steps]]
t = "15s"
action = "fail-promotion"
broker = 2

[[steps]]
t = "16s"
action = "elect"
kind = "unclean"
topic = "orders"
partition = 1

[[steps]]
t = "17s"
action = "reassign"
topic = "orders"
partition = 0
replicas = [2, 1]

[[steps]]
t = "18s"
action = "fault-add"
spec = "error=NOT_CONTROLLER api=CreateTopics once; delay=500 api=Metadata"

[[steps]]
t = "19s"
action = "fault-clear"
ids = [1]

[[steps]]
t = "20s"
action = "snapshot"
label = "after"
topics = ["orders"]
table = false
"""


def test_every_key_is_read_into_typed_steps_in_time_order() -> None:
    scenario = parse_scenario(EVERY_STEP, "every.toml")
    assert (scenario.name, scenario.end_ms, scenario.seed, scenario.duration_ms) == (
        "every step",
        60_000,
        7,
        60_000,
    )
    assert scenario.brokers == (
        UsableBroker(0, "a", False),
        UsableBroker(1, "b", False),
        UsableBroker(2, None, False),
    )
    assert scenario.settings == {
        "simulator.election.policy": "fluvio",
        "broker.session.timeout.ms": "3000",
        "unclean.leader.election.enable": "true",
    }
    faults = (
        FaultSpec("error", error=41, api_key=19, trigger="once"),
        FaultSpec("delay", delay_ms=500, api_key=3),
    )
    assert scenario.steps == (
        CreateTopic(0, 1, "orders", 3, 2, {"min.insync.replicas": "2", "cleanup.policy": "delete"}),
        CreateTopic(0, 2, "fixed", assignments=((0, 1), (1, 2))),
        ProduceLoad(1500, 0, "orders", None, 300.0),
        StopBroker(10_000, 3, (), "a", "hang"),
        StartBroker(10_000, 4, (0, 1), None),
        AddBroker(11_000, 5, 5, "c"),
        RemoveBroker(12_000, 6, 5),
        SlowFollower(13_000, 7, 1, 3000, 50.0),
        SlowFollower(14_000, 8, 1, 0, None),
        FailPromotion(15_000, 9, 2, True),
        Elect(16_000, 10, "unclean", "orders", 1),
        Reassign(17_000, 11, "orders", 0, (2, 1)),
        FaultAdd(18_000, 12, faults),
        FaultClear(19_000, 13, (1,)),
        Snapshot(20_000, 14, "after", ("orders",), False),
    )
    assert [s.describe() for s in scenario.steps[:4]] == [
        "create-topic orders (3 partitions, RF 2)",
        "create-topic fixed (2 partitions, assigned)",
        "produce orders (300 records/s in total)",
        "stop-broker rack a (hang)",
    ]


def test_a_count_of_brokers_goes_round_the_racks() -> None:
    scenario = parse_scenario('[cluster]\nbrokers = 4\nracks = ["x", "y"]\n')
    assert scenario.brokers == tuple(UsableBroker(i, "xy"[i % 2], False) for i in range(4))
    assert parse_scenario("").steps == () and parse_scenario("").brokers is None


@pytest.mark.parametrize(
    ("value", "ms"),
    [("10s", 10_000), ("1500ms", 1500), ("2m", 120_000), ("1h", 3_600_000), ("1.5s", 1500), (250, 250)],
)
def test_times(value: object, ms: int) -> None:
    assert parse_duration(value) == ms


def _error(text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "scenario.toml")
    return str(caught.value)


def test_a_bad_value_is_one_error_naming_its_line_and_key() -> None:
    text = (
        '[[steps]]\nt = 0\naction = "snapshot"\n' * 3
        + '[[steps]]\naction = "stop-broker"\nmode = "crsh"\nbroker = 1\nt = "10s"\n'
    )
    assert text.split("\n")[11] == 'mode = "crsh"'
    assert (
        _error(text)
        == "scenario.toml:12: steps[3].mode: 'crsh' is not one of crash, hang, isolate, controlled"
    )
    assert _error(text.replace('mode = "crsh"', "colour = 1")) == (
        "scenario.toml:12: steps[3].colour: unknown key; stop-broker takes t, action, broker, brokers, rack, mode"
    )
    assert _error(text.replace("broker = 1", 'rack = "a"\nbroker = 1')) == (
        "scenario.toml:10: steps[3]: give one of broker, brokers or rack"
    )


def test_errors_of_each_kind() -> None:
    assert _error('[[steps]]\nt = "soon"\naction = "elect"\n') == (
        'scenario.toml:2: steps[0].t: expected a time like "10s" or "1500ms", got \'soon\''
    )
    assert _error('[[steps]]\nt = "1s"\naction = "explode"\n') == (
        "scenario.toml:3: steps[0].action: 'explode' is not one of create-topic, produce, stop-broker, "
        "start-broker, add-broker, remove-broker, slow-follower, fail-promotion, elect, reassign, "
        "fault-add, fault-clear, snapshot"
    )
    assert _error('[[steps]]\naction = "elect"\n') == "scenario.toml:1: steps[0]: missing 't'"
    assert _error('[[steps]]\nt = 0\naction = "fault-add"\nspec = "error=NOPE"\n') == (
        "scenario.toml:4: steps[0].spec: fault 1: no error code 'NOPE'"
    )
    assert (
        _error("[cluster]\nbrokers = [0, {id = 0}]\n")
        == "scenario.toml:2: cluster.brokers: broker id 0 appears twice"
    )
    assert _error('[cluster]\nbrokers = [{id = 0, shelf = "a"}]\n') == (
        "scenario.toml:2: cluster.brokers[0].shelf: unknown key; a broker has id, rack and fenced"
    )
    assert _error('[cluster]\nfile = "c.json"\nbrokers = 3\n') == (
        "scenario.toml:2: cluster.file: give brokers or a cluster file, not both"
    )
    assert _error("[settings]\nx = [1]\n") == (
        "scenario.toml:2: settings.x: a setting is a string, number or boolean (quote dotted keys)"
    )
    assert _error("[settings]\n\nsimulator.seed = 1\n") == (
        "scenario.toml:3: settings.simulator: a setting is a string, number or boolean (quote dotted keys)"
    )
    assert _error("[steps]\nt = 1\n") == "scenario.toml:1: steps: expected [[steps]] tables"
    assert (
        _error("[scene]\n")
        == "scenario.toml:1: scene: unknown section; a scenario has scenario, cluster, settings, steps"
    )
    assert _error('[scenario]\nend = "2w"\n') == (
        'scenario.toml:2: scenario.end: expected a time like "10s" or "1500ms", got \'2w\''
    )
    assert _error('[[steps]]\nt = 0\naction = "produce"\ntopic = "t"\n') == (
        "scenario.toml:1: steps[0]: give records_per_s (per partition) or total_records_per_s"
    )
    assert _error('[[steps]]\nt = 0\naction = "elect"\npartition = 1\n') == (
        "scenario.toml:4: steps[0].partition: a partition goes with its topic"
    )


def test_a_syntax_error_names_the_line_tomllib_gives() -> None:
    assert _error('[[steps]]\nt = "1s"\naction = stop\n') == "scenario.toml:3: not valid TOML: Invalid value"
