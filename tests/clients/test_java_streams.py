"""Kafka Streams (the pinned 4.x release) counting words through a broker crash, at least once and exactly
once (``exactly_once_v2``: its producer's transactions, offsets committed in them, read_committed reads):
the application's repartition and changelog topics, its group, commits and transactions all live on the
simulator, a broker leading part of them crashes halfway through the input, and the counts it writes out
reach exactly what the input holds.
"""

from __future__ import annotations

import pytest

from harness.java_clients import JavaProgram
from tests.clients.java_support import java_cluster

LINES = 600
GUARANTEES = ["at_least_once", "exactly_once_v2"]
#: A transactional id's states once its last transaction committed (Kafka's names).
ENDED = {"CompleteCommit", "Empty"}


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_word_count_through_a_broker_crash(guarantee: str) -> None:
    with java_cluster() as server:
        with JavaProgram("WordCount", [server.bootstrap, guarantee, str(LINES)], heap="512m") as program:
            program.expect("running", timeout=180)
            program.expect("half", timeout=120)
            crashed = server.partition_state("lines", 0).leader
            server.stop_broker(crashed, "crash")
            program.send("go")
            program.expect("written", timeout=180)
            result = program.expect("counts", timeout=180)
            program.finish(timeout=60)
        moved = server.partition_state("lines", 0)
        lost = server.lost_records()
        if guarantee == "exactly_once_v2":  # the last commit completes (its markers written) after the end
            server.wait_until(
                lambda: all(t["state"] in ENDED for t in server.transactions().values()), timeout=60
            )
        transactions = server.transactions()
        lost_transaction_records = server.lost_transaction_records()

    assert moved.leader != crashed  # the crash did move leaders under the application
    assert program.of("record failed") == []
    assert result["counts"] == result["expected"]
    assert sum(result["expected"].values()) == 3 * LINES
    assert result["state"] == "RUNNING" and "ERROR" not in result["states"]
    assert lost == []
    if guarantee == "exactly_once_v2":  # the application's producer did commit transactions
        assert transactions and {t["state"] for t in transactions.values()} <= ENDED
        assert lost_transaction_records == []
    else:
        assert transactions == {}
