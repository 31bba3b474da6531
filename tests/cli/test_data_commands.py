"""``placement-sim produce`` and ``consume`` beyond the documented session: --record, --count and --offset,
key-less records, and an error the server answers (one line on stderr, exit 1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from placement_sim.cli.commands.data import parse_record
from placement_sim.cli.main import main


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(
        brokers=[(0, None), (1, None)], properties={"simulator.replication.tick.ms": 10}
    ) as running:
        running.call(lambda: running.server.controller.cluster.add_topic("cli", [[1, 0], [0, 1]]))
        yield running


def test_a_line_splits_at_its_first_equals_sign() -> None:
    assert parse_record("k=v=w") == (b"k", b"v=w")
    assert parse_record("plain") == (None, b"plain")
    assert parse_record("=v") == (b"", b"v")


def test_records_given_as_options_are_read_back_by_offset_and_count(server, capsys) -> None:
    args = ["produce", "cli", "-p", "1", "--acks", "1", "--batch", "2", "--bootstrap", server.bootstrap]
    assert main([*args, "--record", "a=1", "--record", "b=2", "--record", "nokey"]) == 0
    assert capsys.readouterr().out.splitlines() == ["cli-1: offsets 0-1", "cli-1: offsets 2-2"]
    server.wait_until(lambda: server.partition_state("cli", 1).high_watermark == 3, timeout=10)
    assert (
        main(
            [
                "consume",
                "cli",
                "-p",
                "1",
                "--offset",
                "1",
                "--count",
                "2",
                "--offsets",
                "--bootstrap",
                server.bootstrap,
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines() == ["1: b=2", "2: nokey"]
    assert main(["consume", "cli", "-p", "1", "--bootstrap", server.bootstrap]) == 0  # from the end: nothing
    assert capsys.readouterr().out == ""


def test_an_error_the_server_answers_is_one_line_and_exit_1(server, capsys) -> None:
    assert main(["produce", "no-such-topic", "--record", "x", "--bootstrap", server.bootstrap]) == 1
    assert capsys.readouterr().err.startswith(
        "placement-sim: no-such-topic-0: UNKNOWN_TOPIC_OR_PARTITION (3)"
    )
    assert main(["consume", "cli", "--offset", "99", "--count", "1", "--bootstrap", server.bootstrap]) == 1
    assert capsys.readouterr().err.startswith("placement-sim: cli-0: OFFSET_OUT_OF_RANGE (1)")
