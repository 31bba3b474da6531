"""``placement-sim produce`` and ``consume`` beyond the documented session, with Kafka's console tools'
habits: a line is a value unless parse.key (or -k SEP) splits it, a line without the separator is an
error, --max-messages/--max and --offset, print.key, and an error the server answers (one line on
stderr, exit 1). Failovers, Ctrl-C, the partitioner and groups: tests/cli/test_console_tools.py."""

from __future__ import annotations

import io
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
        for name in ("lines", "keyed", "short", "bad"):
            running.call(lambda n=name: running.server.controller.cluster.add_topic(n, [[0, 1]]))
        yield running


def test_a_line_is_a_value_unless_a_separator_splits_it_at_its_first_occurrence() -> None:
    assert parse_record("k=v") == (None, b"k=v")  # Kafka's parse.key=false
    assert parse_record("k=v=w", "=") == (b"k", b"v=w")
    assert parse_record("=v", "=") == (b"", b"v")
    assert parse_record("a::b", "::") == (b"a", b"b")
    with pytest.raises(ValueError, match="^No key separator found on line number 3: 'plain'$"):
        parse_record("plain", ":", 3)


def _read(server: ServerThread, topic: str, *extra: str) -> list[str]:
    """Reads from the beginning until nothing comes for a second (the records are all written)."""
    return [topic, "--from-beginning", "--timeout-ms", "1000", *extra, "--bootstrap", server.bootstrap]


def test_stdin_lines_are_values_by_default_and_keyed_with_parse_key(server, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a:1\nb\tc\n"))
    assert main(["produce", "lines", "--acks", "1", "--bootstrap", server.bootstrap]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("k1:v1\nk2:v:2\n"))
    properties = ["--property", "parse.key=true", "--property", "key.separator=:"]
    assert main(["produce", "keyed", *properties, "--acks", "1", "--bootstrap", server.bootstrap]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("k3=v3\n"))
    assert main(["produce", "keyed", "-k", "=", "--acks", "1", "--bootstrap", server.bootstrap]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("k4\tv4\n"))  # key.separator defaults to a tab
    assert main(["produce", "keyed", "--property", "parse.key=true", "--bootstrap", server.bootstrap]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "lines-0: offsets 0-1",
        "keyed-0: offsets 0-1",
        "keyed-0: offset 2",
        "keyed-0: offset 3",
    ]
    server.wait_until(lambda: server.partition_state("keyed", 0).high_watermark == 4, timeout=10)
    server.wait_until(lambda: server.partition_state("lines", 0).high_watermark == 2, timeout=10)
    assert main(["consume", *_read(server, "lines", "--property", "print.key=true")]) == 0
    read = capsys.readouterr()
    assert read.out.splitlines() == ["null\ta:1", "null\tb\tc"]
    assert read.err == "Processed a total of 2 messages\n"  # as kafka-console-consumer says it
    assert main(["consume", *_read(server, "keyed")]) == 0  # values only: Kafka's print.key=false
    assert capsys.readouterr().out.splitlines() == ["v1", "v:2", "v3", "v4"]
    printed = ["--property", "print.key=true", "--property", "key.separator=="]
    assert main(["consume", *_read(server, "keyed", *printed, "--max-messages", "3")]) == 0
    assert capsys.readouterr().out.splitlines() == ["k1=v1", "k2=v:2", "k3=v3"]


def test_a_line_without_the_separator_stops_the_producer_after_the_lines_before_it(
    server, capsys, monkeypatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a:1\nnokey\nc:3\n"))
    assert main(["produce", "short", "-k", ":", "--bootstrap", server.bootstrap]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines() == ["short-0: offset 0"]
    assert out.err == "placement-sim: No key separator found on line number 2: 'nokey'\n"
    server.wait_until(lambda: server.partition_state("short", 0).high_watermark == 1, timeout=10)
    assert main(["consume", *_read(server, "short")]) == 0
    assert capsys.readouterr().out.splitlines() == ["1"]


def test_an_unknown_or_malformed_property_is_one_line_and_exit_1(server, capsys) -> None:
    args = ["--record", "x", "--bootstrap", server.bootstrap]
    assert main(["produce", "bad", "--property", "print.key=true", *args]) == 1
    assert (
        capsys.readouterr().err
        == "placement-sim: --property print.key: not one of key.separator, parse.key\n"
    )
    assert main(["produce", "bad", "--property", "parse.key", *args]) == 1
    assert capsys.readouterr().err == "placement-sim: --property parse.key: expected NAME=VALUE\n"
    assert main(["consume", "bad", "--property", "parse.key=true", "--bootstrap", server.bootstrap]) == 1
    assert (
        capsys.readouterr().err
        == "placement-sim: --property parse.key: not one of key.separator, print.key, print.offset, "
        "print.partition\n"
    )
    assert server.partition_state("bad", 0).log_end_offsets == {0: 0, 1: 0}  # nothing was sent


def test_records_given_as_options_are_read_back_by_offset_and_max(server, capsys) -> None:
    args = [
        "produce",
        "cli",
        "-p",
        "1",
        "--acks",
        "1",
        "--batch-size",
        "16",  # two of these records (9 bytes each in a batch) fill one
        "-k",
        "=",
        "--bootstrap",
        server.bootstrap,
    ]
    assert main([*args, "--record", "a=1", "--record", "b=2", "--record", "c="]) == 0
    assert capsys.readouterr().out.splitlines() == ["cli-1: offsets 0-1", "cli-1: offset 2"]
    server.wait_until(lambda: server.partition_state("cli", 1).high_watermark == 3, timeout=10)
    read = [
        "consume",
        "cli",
        "-p",
        "1",
        "--offset",
        "1",
        "--max",
        "2",
        "--offsets",
        "--bootstrap",
        server.bootstrap,
    ]
    assert main([*read, "--property", "print.key=true"]) == 0
    assert capsys.readouterr().out.splitlines() == ["1: b\t2", "2: c\t"]
    at_end = ["consume", "cli", "-p", "1", "--timeout-ms", "300", "--bootstrap", server.bootstrap]
    assert main(at_end) == 0  # from the end: nothing comes within the timeout
    assert capsys.readouterr() == ("", "Processed a total of 0 messages\n")


def test_an_error_the_server_answers_is_one_line_and_exit_1(server, capsys) -> None:
    # UNKNOWN_TOPIC_OR_PARTITION is retriable (a topic being created): Kafka's producer waits for it.
    command = ["produce", "no-such-topic", "--record", "x", "--timeout", "1", "--bootstrap", server.bootstrap]
    assert main(command) == 1
    assert capsys.readouterr().err == (
        "placement-sim: topic no-such-topic: UNKNOWN_TOPIC_OR_PARTITION (3): This server does not host this "
        "topic-partition. (still so after 1 s of retries)\n"
    )
    assert main(["produce", "cli", "-p", "7", "--record", "x", "--bootstrap", server.bootstrap]) == 1
    assert (
        capsys.readouterr().err == "placement-sim: cli-7: no such partition (the topic has partitions 0-1)\n"
    )
    with pytest.raises(SystemExit):  # argparse: not an offset
        main(["consume", "cli", "-p", "0", "--offset", "-5", "--bootstrap", server.bootstrap])
    assert "the provided offset value '-5' is incorrect" in capsys.readouterr().err
    assert main(["consume", "cli", "--offset", "99", "--bootstrap", server.bootstrap]) == 2
    assert capsys.readouterr().err == (
        "placement-sim consume: The partition is required when offset is specified.\n"
    )
    assert main(["consume", "cli", "--group", "g", "-p", "0", "--bootstrap", server.bootstrap]) == 2
    assert capsys.readouterr().err == (
        "placement-sim consume: Options group and partition cannot be specified together.\n"
    )
