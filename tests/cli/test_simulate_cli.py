"""``placement-sim simulate``: a scenario played in process on a virtual clock: its output, the same bytes
for the same file and seed, failing steps reported while the run carries on, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement_sim.cli.main import main

SCENARIO = """\
[scenario]
name = "crash and back"
end = "30s"

[cluster]
brokers = [{id = 0, rack = "a"}, {id = 1, rack = "b"}, {id = 2, rack = "c"}]

[settings]
"replica.placer.class.name" = "legacy"

[[steps]]
t = "0s"
action = "create-topic"
topic = "orders"
partitions = 3
replication_factor = 3

[[steps]]
t = "1s"
action = "produce"
topic = "orders"
records_per_s = 100

[[steps]]
t = "10s"
action = "stop-broker"
broker = 0

[[steps]]
t = "10s"
action = "stop-broker"
broker = 9

[[steps]]
t = "20s"
action = "snapshot"
label = "after"

[[steps]]
t = "25s"
action = "start-broker"
broker = 0
"""

EXPECTED = """\
# scenario crash and back (SCENARIO), seed 0
0 ms step 0: create-topic orders (3 partitions, RF 3)
0 ms #1 topic orders: partitions 0 -> 3 (topic created)
1000 ms step 1: produce orders (100 records/s per partition)
10000 ms step 2: stop-broker 0 (crash)
10000 ms #2 broker 0: process up -> crashed (stop_broker(crash))
10000 ms step 3 FAILED: stop-broker 9 (crash): no broker 9 is registered
19000 ms #3 broker 0: fenced False -> True, state running -> offline (broker 0 fenced: no heartbeat for broker.session.timeout.ms=9000)
19000 ms #4 orders-0: isr [0,2,1] -> [2,1], leader 0 -> 2, leader_epoch 0 -> 1, last_leader -1 -> 0, epoch_start_offset 0 -> 890, partition_epoch 0 -> 1 (broker 0 fenced: no heartbeat for broker.session.timeout.ms=9000)
19000 ms #5 orders-1: isr [1,0,2] -> [1,2], partition_epoch 0 -> 1 (broker 0 fenced: no heartbeat for broker.session.timeout.ms=9000)
19000 ms #6 orders-2: isr [2,1,0] -> [2,1], partition_epoch 0 -> 1 (broker 0 fenced: no heartbeat for broker.session.timeout.ms=9000)
20000 ms step 4: snapshot 'after'
  3 partitions: 0 offline, 3 under-replicated; leaders per broker [1:1, 2:2]
  TOPIC   PARTITION  LEADER  EPOCH  REPLICAS   ISR     STATUS  HW    LEO   FOLLOWER OFFSETS
  orders  0          2       1/1    [0, 2, 1]  [2, 1]  Online  990   990   [0:890, 1:990]
  orders  1          1       0/1    [1, 0, 2]  [1, 2]  Online  1890  1890  [0:890, 2:1890]
  orders  2          2       0/1    [2, 1, 0]  [2, 1]  Online  1890  1890  [1:1890, 0:890]
25000 ms step 5: start-broker 0
25000 ms #7 broker 0: process crashed -> up, epoch 0 -> 1, registered_at 0 -> 25000, state offline -> fenced (new process registered)
27000 ms #8 broker 0: fenced True -> False, state fenced -> running (broker 0 unfenced: first heartbeat after registration)
27000 ms #9 orders-0: isr [2,1] -> [0,1,2], partition_epoch 1 -> 2 (replication: broker(s) [0] caught up)
27000 ms #10 orders-1: isr [1,2] -> [0,1,2], partition_epoch 1 -> 2 (replication: broker(s) [0] caught up)
27000 ms #11 orders-2: isr [2,1] -> [0,1,2], partition_epoch 1 -> 2 (replication: broker(s) [0] caught up)
# end at 30000 ms; 1 step(s) failed
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "crash.toml"
    path.write_text(SCENARIO)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_timeline_prints_steps_events_and_snapshots_and_a_failed_step_does_not_stop_it(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, str(scenario))
    assert out == EXPECTED.replace("SCENARIO", str(scenario))
    assert code == 1  # a step failed


def test_json_is_the_same_bytes_for_the_same_file_and_seed(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run(capsys, str(scenario), "--json", "--seed", "3")[1]
    second = run(capsys, str(scenario), "--json", "--seed", "3")[1]
    assert first == second
    document = json.loads(first)
    assert (document["scenario"], document["seed"], document["end_ms"], document["failed_steps"]) == (
        "crash and back",
        3,
        30_000,
        1,
    )
    steps = [e for e in document["timeline"] if e["type"] == "step"]
    assert [(s["index"], s["time_ms"], s["action"], s["error"]) for s in steps] == [
        (0, 0, "create-topic", None),
        (1, 1000, "produce", None),
        (2, 10_000, "stop-broker", None),
        (3, 10_000, "stop-broker", "no broker 9 is registered"),
        (4, 20_000, "snapshot", None),
        (5, 25_000, "start-broker", None),
    ]
    snapshot = steps[4]["snapshot"]
    assert (snapshot["partitions"], snapshot["offline"], snapshot["under_replicated"]) == (3, 0, 3)
    assert [p["Isr"] for p in snapshot["topics"][0]["Partitions"]] == [
        [p for p in r if p != 0] for r in (p["Replicas"] for p in snapshot["topics"][0]["Partitions"])
    ]
    events = [e for e in document["timeline"] if e["type"] == "event"]
    assert [e["seq"] for e in events] == list(range(1, 12))
    assert events[1]["changes"] == [["process", "up", "crashed"]]


def test_a_different_seed_places_differently(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Kafka's legacy placer draws its start index and replica shift from simulator.seed.
    def replicas(seed: str) -> list[list[int]]:
        document = json.loads(run(capsys, str(scenario), "--json", "--seed", seed)[1])
        [snapshot] = [e["snapshot"] for e in document["timeline"] if e.get("action") == "snapshot"]
        return [p["Replicas"] for p in snapshot["topics"][0]["Partitions"]]

    assert replicas("1") == replicas("1")
    assert replicas("1") != replicas("2")


def test_bad_files_end_with_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[settings]\n"simulator.clock" = "real"\n"simulator.replication.tick.ms" = -5\n')
    code, out, err = run(capsys, str(bad))
    assert (code, out) == (2, "")
    assert err.startswith(f"placement-sim: {bad}:3: settings.simulator.replication.tick.ms: ")
    assert err.count("\n") == 1
    code, out, err = run(capsys, str(tmp_path / "missing.toml"))
    assert (code, out, err.split(":")[0:2]) == (
        2,
        "",
        ["placement-sim", " cannot read scenario file " + str(tmp_path / "missing.toml")],
    )


def test_a_cluster_file_gives_the_brokers_and_its_topics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cluster.json").write_text(
        json.dumps(
            {
                "brokers": [{"id": 1, "rack": "x"}, {"id": 2, "rack": "y"}],
                "assignments": {"t": [[1, 2], [2, 1]]},
            }
        )
    )
    (tmp_path / "s.toml").write_text(
        '[cluster]\nfile = "cluster.json"\n\n[[steps]]\nt = "1s"\naction = "stop-broker"\nrack = "x"\n'
        '[[steps]]\nt = "2s"\naction = "snapshot"\n'
    )
    code, out, _ = run(capsys, str(tmp_path / "s.toml"))
    assert code == 0
    assert out.splitlines()[1:5] == [
        "0 ms cluster file: create-topic t (2 partitions, assigned)",
        "0 ms #1 topic t: partitions 0 -> 2 (topic created)",
        "1000 ms step 0: stop-broker rack x (crash)",
        "1000 ms #2 broker 1: process up -> crashed (stop_broker(crash))",
    ]
    assert "  2 partitions: 1 offline, 0 under-replicated; leaders per broker [2:1]" in out.splitlines()


def test_partitions_scales_the_placed_topics(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = str(Path(__file__).parents[2] / "examples" / "scenarios" / "rack-loss.toml")
    code, out, _ = run(capsys, shipped, "--partitions", "30", "--json")
    assert code == 0
    document = json.loads(out)
    [create] = [e for e in document["timeline"] if e.get("action") == "create-topic"]
    assert create["description"] == "create-topic orders (30 partitions, RF 3)"
    summaries = [
        (s["snapshot"]["partitions"], s["snapshot"]["offline"])
        for s in document["timeline"]
        if "snapshot" in s
    ]
    assert summaries == [(30, 10), (30, 0)]  # a third of the leaders on the lost rack, then moved


def test_serve_refuses_a_bad_scenario_with_one_line_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[steps]]\nt = "1s"\naction = "stop-broker"\nbroker = 1\nmode = "crsh"\n')
    assert main(["serve", "--scenario", str(bad), "--listen", "127.0.0.1:0"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == (
        "",
        f"placement-sim: {bad}:5: steps[0].mode: 'crsh' is not one of crash, hang, isolate, controlled\n",
    )
    bad.write_text('[settings]\n"simulator.clock" = "sundial"\n')
    assert main(["serve", "--scenario", str(bad), "--listen", "127.0.0.1:0"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"placement-sim: {bad}:2: settings.simulator.clock: ")
