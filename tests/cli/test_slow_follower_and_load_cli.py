"""``placement-sim broker slow`` and ``placement-sim load`` (issue 29, item 6): a slow follower and a
produce load from the command line, as scenario files and ``ServerThread`` have them; ``serve --help``
says how brokers and racks are set and where every setting is listed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from placement_sim.cli.main import main


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=[(0, "a"), (1, "b"), (2, "c")], clock="virtual", seed=1) as running:
        running.create_topic("orders", assignments=[[0, 1, 2], [0, 1, 2]])
        yield running


def cli(capsys: pytest.CaptureFixture[str], server: ServerThread, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--bootstrap", server.bootstrap])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_slow_follower_leaves_the_isr_under_load_and_rejoins_when_it_catches_up(server, capsys) -> None:
    assert cli(capsys, server, "load", "orders", "--total-records-per-s", "20") == (
        0,
        "Load on orders: 10 records/s per partition.\n",
        "",
    )
    assert cli(capsys, server, "broker", "slow", "2", "--lag-ms", "60000") == (
        0,
        "Broker 2's followers copy 60000 ms behind their leaders.\n",
        "",
    )
    server.advance(80_000)  # more than replica.lag.time.max.ms (30 s) behind: out of the ISR
    state = server.partition_state("orders", 0)
    assert state.isr == (0, 1) and state.log_end_offsets[2] < state.log_end_offsets[0]
    assert cli(capsys, server, "broker", "slow", "2", "--lag-ms", "0", "--unlimited")[0] == 0
    server.advance(2_000)
    assert server.partition_state("orders", 0).isr == (0, 1, 2)
    assert cli(capsys, server, "broker", "slow", "1", "--records-per-s", "0") == (
        0,
        "Broker 1's followers copy at most 0 records/s per partition.\n",
        "",
    )
    server.advance(40_000)
    assert server.partition_state("orders", 1).isr == (0, 2)
    assert cli(capsys, server, "load", "orders", "--records-per-s", "0")[1] == "Load on orders stopped.\n"
    ends = server.partition_state("orders", 0).log_end_offsets[0]
    server.advance(10_000)
    assert server.partition_state("orders", 0).log_end_offsets[0] == ends  # the load stopped
    events = [str(e) for e in server.events() if "broker 2:" in str(e)]
    assert any("copy_delay_ms 0 -> 60000" in e for e in events)


def test_broker_slow_needs_something_to_change(server, capsys) -> None:
    code, _, err = cli(capsys, server, "broker", "slow", "2")
    assert code == 2 and "give --lag-ms, --records-per-s or --unlimited" in err


def test_serve_help_says_how_brokers_and_racks_are_set(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--set simulator.brokers=0:rack-a,1:rack-b,2:rack-c" in text
    assert "placement-sim settings" in text
