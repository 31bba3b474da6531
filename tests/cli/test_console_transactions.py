"""``placement-sim produce --transactional-id`` and ``consume --isolation-level``: the console producer
writes its input as one transaction (committed at the end), and the console consumer reads read_committed
(up to the last stable offset, without an aborted transaction's records) or read_uncommitted (every
record, never a marker), checked against transactions written by confluent-kafka."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from controller.embedded import ServerThread
from placement_sim.cli.main import main

TIMEOUT = 30


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(
        brokers=[(0, None), (1, None), (2, None)], properties={"simulator.replication.tick.ms": 10}
    ) as running:
        for name in ("paid", "held", "halted"):
            running.create_topic(name, 1, 3)
        yield running


def _consume(server: ServerThread, topic: str, isolation: str) -> list[str]:
    return [
        "consume",
        topic,
        "--from-beginning",
        "--timeout-ms",
        "1500",
        "--isolation-level",
        isolation,
        "--bootstrap",
        server.bootstrap,
    ]


def _transactional(server: ServerThread, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(TIMEOUT)
    return producer


def test_the_console_producer_commits_its_input_and_read_committed_skips_an_aborted_transaction(
    server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    produce = ["produce", "paid", "--record", "a", "--record", "b", "--bootstrap", server.bootstrap]
    assert main([*produce, "--transactional-id", "tx-console"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "paid-0: offsets 0-1",
        "transaction tx-console: committed",
    ]
    state = server.transactions()["tx-console"]
    assert state["state"] in ("PrepareCommit", "CompleteCommit")  # answered at PrepareCommit
    aborted = _transactional(server, "tx-aborts")
    aborted.begin_transaction()
    aborted.produce("paid", value=b"refunded", partition=0)
    aborted.flush(TIMEOUT)
    aborted.abort_transaction(TIMEOUT)
    assert main([*produce[:2], "--record", "c", "--transactional-id", "tx-console", *produce[6:]]) == 0
    capsys.readouterr()

    assert main(_consume(server, "paid", "read_committed")) == 0
    assert capsys.readouterr().out.splitlines() == ["a", "b", "c"]
    # read_uncommitted: the aborted record too, and no marker is printed as a record.
    assert main(_consume(server, "paid", "read_uncommitted")) == 0
    assert capsys.readouterr().out.splitlines() == ["a", "b", "refunded", "c"]


def test_read_committed_stops_at_an_open_transaction_until_it_commits(
    server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["produce", "held", "--record", "before", "--bootstrap", server.bootstrap]) == 0
    open_transaction = _transactional(server, "tx-open")
    open_transaction.begin_transaction()
    open_transaction.produce("held", value=b"pending", partition=0)
    open_transaction.flush(TIMEOUT)
    assert main(["produce", "held", "--record", "after", "--bootstrap", server.bootstrap]) == 0
    capsys.readouterr()

    assert main(_consume(server, "held", "read_committed")) == 0
    assert capsys.readouterr().out.splitlines() == ["before"]
    assert main(_consume(server, "held", "read_uncommitted")) == 0
    assert capsys.readouterr().out.splitlines() == ["before", "pending", "after"]
    open_transaction.commit_transaction(TIMEOUT)
    server.wait_until(lambda: server.transactions()["tx-open"]["state"] == "CompleteCommit", timeout=TIMEOUT)
    assert main(_consume(server, "held", "read_committed")) == 0
    assert capsys.readouterr().out.splitlines() == ["before", "pending", "after"]


def test_a_line_that_stops_the_producer_aborts_its_transaction(
    server: ServerThread, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("k:sent\nno separator\n"))
    command = ["produce", "halted", "-k", ":", "--transactional-id", "tx-halted"]
    assert main([*command, "--bootstrap", server.bootstrap]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["halted-0: offset 0", "transaction tx-halted: aborted"]
    assert "No key separator found on line number 2" in captured.err
    assert main(_consume(server, "halted", "read_committed")) == 0
    assert capsys.readouterr().out.splitlines() == []
    assert main(_consume(server, "halted", "read_uncommitted")) == 0
    assert capsys.readouterr().out.splitlines() == ["sent"]


def test_a_transactional_id_needs_acks_all(server: ServerThread, capsys: pytest.CaptureFixture[str]) -> None:
    command = ["produce", "paid", "--record", "x", "--acks", "1", "--transactional-id", "tx"]
    assert main([*command, "--bootstrap", server.bootstrap]) == 2
    assert "--transactional-id needs a non-empty id and --acks all" in capsys.readouterr().err
