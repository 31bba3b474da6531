"""A scenario drives a leader change that kafka-python sees over a real socket: played by ``placement-sim
serve --scenario`` from start, and loaded into a running server by ``placement-sim scenario load``
(SimulatorScenarioLoad), both on the real clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaConnectionError

from controller.embedded import ServerThread
from placement_sim.cli.main import main
from tests.support.serve import served_process

SCENARIO = """\
[cluster]
brokers = [{id = 0, rack = "a"}, {id = 1, rack = "b"}, {id = 2, rack = "c"}]

[[steps]]
t = "0s"
action = "create-topic"
topic = "orders"
assignments = [[0, 1, 2]]

[[steps]]
t = "{stop_at}"
action = "stop-broker"
broker = 0
mode = "controlled"

[[steps]]
t = "{stop_at}"
action = "stop-broker"
broker = 7
"""


def leader_of(admin: KafkaAdminClient, topic: str) -> int | None:
    """Partition 0's leader as Metadata gives it to kafka-python (None: no such topic yet)."""
    try:
        [described] = admin.describe_topics([topic])
    except KafkaConnectionError:  # the stopped broker's connection went away: ask again
        return None
    if described["error_code"] != 0:
        return None
    return int(described["partitions"][0]["leader_id"])


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "not within the timeout"
        time.sleep(0.1)


def admin_at(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=bootstrap,
        client_id="scenario-test",
        request_timeout_ms=5000,
        bootstrap_timeout_ms=5000,
    )


def test_serve_with_a_scenario_moves_the_leader_kafka_python_sees(tmp_path: Path) -> None:
    path = tmp_path / "controlled.toml"
    path.write_text(SCENARIO.replace("{stop_at}", "3s"))
    with served_process(None, "--scenario", str(path)) as (bootstrap, proc):
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        assert lines[0].startswith("brokers on 0=127.0.0.1:")
        assert lines[1] == f"scenario {path}: 3 step(s) from {lines[1].split()[-2]} ms\n"
        admin = admin_at(bootstrap)
        try:
            wait_for(lambda: leader_of(admin, "orders") == 0)  # created by the scenario's first step
            wait_for(lambda: leader_of(admin, "orders") == 1)  # broker 0's controlled shutdown moved it
        finally:
            admin.close()
        printed = [proc.stdout.readline() for _ in range(3)]
    assert printed[0].endswith("ms step 0: create-topic orders (1 partitions, assigned)\n")
    assert printed[1].endswith("ms step 1: stop-broker 0 (controlled)\n")
    assert printed[2].endswith("ms step 2 FAILED: stop-broker 7 (crash): no broker 7 is registered\n")


@pytest.fixture
def real_clock_server() -> ServerThread:
    with ServerThread.start(placer="legacy", brokers=[(0, "a"), (1, "b"), (2, "c")], seed=1) as server:
        yield server


def test_a_scenario_loaded_into_a_running_server_moves_the_leader(
    real_clock_server: ServerThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "load.toml"
    path.write_text(SCENARIO.replace("{stop_at}", "2s"))
    assert (
        main(["scenario", "load", str(path), "--bootstrap", real_clock_server.bootstrap, "--timeout", "5"])
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"Loaded 3 step(s) from {path}, from ") and out[0].endswith(" ms.")
    assert out[1:] == ["Not applied to a running server: cluster."]
    admin = admin_at(real_clock_server.bootstrap)
    try:
        wait_for(lambda: leader_of(admin, "orders") == 0)
        wait_for(lambda: leader_of(admin, "orders") == 1)
    finally:
        admin.close()
    assert real_clock_server.broker_state(0) in ("controlled shutdown", "offline")
    real_clock_server.wait_until(lambda: real_clock_server.broker_state(0) == "offline", timeout=10)
