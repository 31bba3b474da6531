"""Kafka's Java transactional producer (kafka-clients, the pinned 4.x release) through the crash of its
transaction coordinator's broker while a transaction is open: committed transactions (records and the
offsets sent in them) are read whole by a read_committed consumer, aborted ones not at all though a
read_uncommitted consumer sees their records; no record is written twice; a second producer of the same
transactional id fences the first, and nothing the fenced one sends is read."""

from __future__ import annotations

from collections import Counter

from harness.java_clients import JavaProgram
from tests.clients.java_support import java_cluster
from tests.support.txn_clients import coordinator_of

TRANSACTIONS, PER_TRANSACTION = 24, 30
TOPIC, TRANSACTIONAL_ID, GROUP = "orders", "java-orders", "java-orders-app"
#: A transactional id's states once its last transaction ended (Kafka's names).
ENDED = {"CompleteCommit", "CompleteAbort", "Empty"}


def values(transactions: set[int]) -> set[str]:
    return {f"{t}-{j}" for t in transactions for j in range(PER_TRANSACTION)}


def test_committed_transactions_read_whole_through_a_coordinator_crash() -> None:
    properties = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000}
    with java_cluster(properties) as server:
        args = [server.bootstrap, TOPIC, TRANSACTIONAL_ID, GROUP, str(TRANSACTIONS), str(PER_TRANSACTION)]
        with JavaProgram("TransactionalProducer", args) as program:
            program.expect("open", timeout=180)
            coordinator = coordinator_of(server, TRANSACTIONAL_ID)
            before = server.transactions()[TRANSACTIONAL_ID]
            server.stop_broker(coordinator, "crash")
            program.send("go")
            program.expect("sent", timeout=180)
            fenced = program.expect("fenced", timeout=120)
            program.expect("uncommitted read", timeout=120)
            program.finish(timeout=60)
        server.wait_until(lambda: server.transactions()[TRANSACTIONAL_ID]["state"] in ENDED, timeout=60)
        state = server.transactions()[TRANSACTIONAL_ID]
        offsets = server.committed_offsets(GROUP)
        lost, lost_transaction_records = server.lost_records(), server.lost_transaction_records()

    committed = {e["t"] for e in program.of("committed")}
    aborted = {e["t"] for e in program.of("aborted")}
    assert program.of("txn failed") == [] and program.of("record failed") == []
    assert aborted == {t for t in range(TRANSACTIONS) if t % 4 == 3}
    assert committed == set(range(TRANSACTIONS)) - aborted  # the open one too, after the crash
    # The crash came while a transaction held records in every partition.
    assert before["state"] == "Ongoing" and {(TOPIC, p) for p in range(3)} <= set(
        map(tuple, before["partitions"])
    )

    read = program.of("read")
    read_values = Counter(e["value"] for e in read)
    assert set(read_values) == values(committed)  # every committed record, nothing aborted or fenced
    assert [v for v, n in read_values.items() if n > 1] == []
    for partition in range(3):  # each partition holds the transactions in the order they were sent
        order = [int(e["value"].split("-")[0]) for e in read if e["partition"] == partition]
        assert order == sorted(order)
    uncommitted = Counter(program.of("uncommitted read")[0]["values"])
    assert set(uncommitted) == values(committed | aborted)  # the aborted records are in the log
    assert [v for v, n in uncommitted.items() if n > 1] == []  # written once each through the crash
    # Transaction version 2 (KIP-890 part 2, advertised as a Kafka 4.x cluster does): the zombie's first
    # refused request is its Produce, INVALID_PRODUCER_EPOCH; with version 1 it is AddPartitionsToTxn's
    # PRODUCER_FENCED. Either way nothing of it is read (the committed set above).
    assert fenced["error"] in {"InvalidProducerEpochException", "ProducerFencedException"}

    assert offsets == {(f"{TOPIC}-in", 0): max(committed) + 1}  # the last committed transaction's offset
    assert state["coordinator"] != coordinator  # the transactional id did move with the crash
    assert state["producer_epoch"] > 0  # the successor bumped the epoch
    assert lost == [] and lost_transaction_records == []
