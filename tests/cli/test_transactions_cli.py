"""``placement-sim transactions list|describe`` (as ``kafka-transactions.sh``) against a server with one
open transaction of confluent-kafka's; a state filter, an unknown state and an unknown id."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from placement_sim.cli.main import main
from tests.support.txn_clients import create, txn_cluster


def run(capsys: pytest.CaptureFixture[str], bootstrap: str, *argv: str) -> tuple[int, list[list[str]], str]:
    code = main([*argv, "--bootstrap", bootstrap, "--timeout", "10"])
    out, err = capsys.readouterr()
    return code, [line.split() for line in out.splitlines()], err


def test_list_and_describe_an_open_transaction(capsys: pytest.CaptureFixture[str]) -> None:
    with txn_cluster() as server:
        create(server, "t", 3)
        producer = Producer(
            {"bootstrap.servers": server.bootstrap, "transactional.id": "cli-tx", "log_level": 0}
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("t", b"x", partition=1)
        assert producer.flush(30) == 0
        state = server.transactions()["cli-tx"]
        code, rows, _ = run(capsys, server.bootstrap, "transactions", "list")
        assert code == 0
        assert rows == [
            ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
            ["cli-tx", str(state["coordinator"]), str(state["producer_id"]), "Ongoing"],
        ]
        code, rows, err = run(
            capsys, server.bootstrap, "transactions", "list", "--state", "Empty", "--state", "Nope"
        )
        assert (code, rows[1:], err.strip()) == (0, [], "placement-sim: no state named 'Nope'")
        code, rows, _ = run(
            capsys, server.bootstrap, "transactions", "describe", "--transactional-id", "cli-tx"
        )
        assert code == 0 and rows[0][0] == "CoordinatorId" and len(rows[1]) == 9
        coordinator, tid, pid, epoch, txn_state, timeout, start, duration, partitions = rows[1]
        assert (coordinator, tid, pid, epoch, txn_state, timeout) == (
            str(state["coordinator"]),
            "cli-tx",
            str(state["producer_id"]),
            str(state["producer_epoch"]),
            "Ongoing",
            "60000",
        )
        assert int(start) == state["start_ms"] and int(duration) >= 0 and partitions == "t-1"
        code, _, err = run(capsys, server.bootstrap, "transactions", "describe", "--transactional-id", "nope")
        assert code == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in err
        producer.abort_transaction(30)
