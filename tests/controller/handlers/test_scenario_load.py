"""SimulatorScenarioLoad (1012) over a real socket on a virtual clock: the steps fire as the clock moves,
each ``t`` after the load; the file's cluster and settings are named as not applied; a bad file is
INVALID_REQUEST naming its line and key; a failing step is logged and the others still run."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from protocol.client import BlockingClient, ErrorResponse
from protocol.codes import ApiKey, ErrorCode

SCENARIO = """\
[scenario]
seed = 5

[cluster]
brokers = 3

[settings]
"broker.session.timeout.ms" = 1000

[[steps]]
t = "0s"
action = "create-topic"
topic = "orders"
assignments = [[0, 1, 2], [1, 2, 0]]

[[steps]]
t = "5s"
action = "stop-broker"
broker = 9

[[steps]]
t = "5s"
action = "stop-broker"
broker = 0
mode = "controlled"

[[steps]]
t = "6s"
action = "elect"
kind = "unclean"
topic = "orders"
partition = 9
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(
        placer="legacy", brokers=[(0, "a"), (1, "b"), (2, "c")], clock="virtual"
    ) as started:
        yield started


def test_the_steps_fire_as_the_virtual_clock_moves(
    server: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
        client.advance_clock(1000)
        answer = client.load_scenario(SCENARIO, "wire.toml")
        assert (answer["Steps"], answer["StartMs"], answer["Ignored"]) == (
            4,
            1000,
            ["cluster", "settings", "scenario.seed"],
        )
        assert server.call(lambda: "orders" in server.server.controller.cluster.topics) is False
        with caplog.at_level(logging.WARNING, logger="controller.scenario.player"):
            client.advance_clock(1)  # 1001 ms > 1000 + 0: the first step has fired
            assert server.partition_state("orders", 0).leader == 0
            client.advance_clock(5999)  # 7000 ms: broker 0's controlled shutdown (6000), the failing steps
        assert server.partition_state("orders", 0).leader == 1
        assert server.broker_state(0) in ("controlled shutdown", "offline")
        assert [r.getMessage() for r in caplog.records] == [
            "scenario step 1 (stop-broker 9 (crash)) failed: no broker 9 is registered",
            "scenario step 3 (elect unclean (orders-9)) failed: orders-9: UNKNOWN_TOPIC_OR_PARTITION: "
            "No such partition as orders-9",
        ]


def test_a_bad_file_is_invalid_request_naming_the_line_and_key(server: ServerThread) -> None:
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
        with pytest.raises(ErrorResponse) as caught:
            client.load_scenario(
                '[[steps]]\nt = "1s"\naction = "stop-broker"\nbroker = 1\nmode = "crsh"\n', "bad.toml"
            )
        assert (caught.value.name, caught.value.message) == (
            "INVALID_REQUEST",
            "bad.toml:5: steps[0].mode: 'crsh' is not one of crash, hang, isolate, controlled",
        )
        with pytest.raises(ErrorResponse) as caught:
            client.load_scenario("[[steps]\n")
        assert caught.value.message.startswith("<scenario>:1: not valid TOML: ")
        with pytest.raises(ErrorResponse) as caught:
            client.load_scenario("#" * 1_000_001)
        assert (caught.value.name, caught.value.message) == (
            "INVALID_REQUEST",
            "a scenario of 1000001 bytes, above the limit of 1000000",
        )
        bad = client.send(ApiKey.SIMULATOR_SCENARIO_LOAD, {"Scenario": b"t = '\xff'", "Source": None})
        assert (bad["ErrorCode"], bad["ErrorMessage"]) == (
            ErrorCode.INVALID_REQUEST,
            "the scenario is not UTF-8 text: invalid start byte",
        )
        assert client.load_scenario("")["Steps"] == 0  # the server still answers


def test_in_process_a_server_thread_plays_the_same_steps(server: ServerThread) -> None:
    start = server.now()
    text = '[[steps]]\nt = "2s"\naction = "add-broker"\nbroker = 8\nrack = "z"\n'
    assert server.load_scenario(text) == start
    server.advance(1999)
    assert 8 not in server.brokers
    server.advance(1)
    assert 8 in server.brokers


def test_a_long_file_is_read_off_the_event_loop_and_played_the_same(server: ServerThread) -> None:
    # 2,000 steps (about 100 KB, above BIG_BODY): parsed in a worker thread.
    steps = "".join(
        f'[[steps]]\nt = "{i}ms"\naction = "fault-clear"\nids = [{i + 1000}]\n' for i in range(2000)
    )
    assert len(steps) > 32 * 1024
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
        answer = client.load_scenario(steps, "long.toml")
        assert (answer["Steps"], answer["StartMs"], answer["Ignored"]) == (2000, server.now(), [])
        with pytest.raises(ErrorResponse) as caught:
            client.load_scenario(steps + "[[steps]]\nt = 0\naction = 'nope'\n", "long.toml")
        assert caught.value.message.startswith("long.toml:8003: steps[2000].action: 'nope' is not one of ")
