"""The seeded loss checker in the suite: 200 seeds, each a cluster of 5 brokers (a topic of 6 partitions,
3 replicas, min.insync.replicas 2) through a schedule of crashes, hangs, isolations, controlled shutdowns,
restarts, followers that stop copying, preferred and unclean elections, reassignments and Produce faults,
on a virtual clock, while producers (the project's client) write; every partition read back from the
beginning afterwards. Eligible leader replicas are on (the default); 12 seeds run again with them off. The seeds take the 16 configurations in turn (policy x unclean x acks 0/1/all x
idempotence). About 2 minutes on a loaded 2-core machine (0.3 to 0.9 s a seed).

100 more seeds run transactional producers (both policies, unclean elections off and on): each
transaction committed or aborted as the seed draws, every partition read again as a read_committed
consumer; a committed transaction's records are read or reported lost by an unclean election, an aborted
one's are never returned, and no transaction is left holding a partition's last stable offset.

Each failing seed is replayed alone with ``asyncio.run(controller.losscheck.run_seed(seed))``: the same
seed gives the same schedule and interleaving. And the checks themselves are held to what they catch:
a run record made by hand breaks each rule once."""

from __future__ import annotations

import dataclasses

import pytest

from controller.losscheck import (
    CONFIGURATIONS,
    TRANSACTION_CHECKS,
    TRANSACTIONAL_CONFIGURATIONS,
    Acknowledged,
    Loss,
    Observation,
    ReadRecord,
    RunRecord,
    Setup,
    TransactionsRecord,
    check_run,
    make_schedule,
    run_seed,
)
from controller.losscheck.checks import Unanswered
from controller.transactions.state_log import LostTxnRecord

SEEDS = 200
#: Seeds run per test (the 200 are split so that a failure names a smaller range).
CHUNK = 25


@pytest.mark.parametrize("first", range(0, SEEDS, CHUNK))
async def test_no_acknowledged_record_is_lost_without_a_report(first: int) -> None:
    failures = []
    acknowledged = lost = 0
    for seed in range(first, first + CHUNK):
        result = await run_seed(seed)
        acknowledged += len(result.run.acknowledged)
        lost += result.lost
        if not result.ok:
            failures.append(result.describe())
    assert not failures, "\n\n".join(failures)
    assert acknowledged > 0  # the producers wrote through the failures


#: Seeds in which every replica of some partition crashed: with eligible leader replicas on (the default,
#: as Kafka 4.1+) the partition elects its last known leader when it comes back (Kafka's balanced
#: recovery), which the 200 seeds above run through; before that election they stayed leaderless.
ELR_SEEDS = (3, 35, 48, 51, 64, 82, 96, 99, 115, 129, 147, 179)


async def test_with_eligible_leader_replicas_off_every_partition_is_read_back() -> None:
    """ELR off (``simulator.eligible.leader.replicas.version=0``, Kafka 3.x's rules): the same seeds keep the
    last ISR member listed and elect it cleanly when it comes back; every partition is read back and
    every loss is reported with its cause."""
    kafka_3 = Setup(properties=(("simulator.eligible.leader.replicas.version", "0"),))
    failures = []
    for seed in ELR_SEEDS:
        result = await run_seed(seed, setup=kafka_3)
        assert not result.run.unreadable, result.describe()
        if not result.ok:
            failures.append(result.describe())
    assert not failures, "\n\n".join(failures)


TRANSACTIONAL_SEEDS = 100


@pytest.mark.parametrize("first", range(0, TRANSACTIONAL_SEEDS, CHUNK))
async def test_transactions_committed_are_read_and_aborted_never(first: int) -> None:
    failures = []
    committed = aborted = read_committed = 0
    for seed in range(first, first + CHUNK):
        result = await run_seed(seed, TRANSACTIONAL_CONFIGURATIONS[seed % len(TRANSACTIONAL_CONFIGURATIONS)])
        record = result.run.extras["transactions"]
        committed += len(record.committed)
        aborted += len(record.aborted)
        read_committed += len(record.read_committed)
        if not result.ok:
            failures.append(result.describe())
    assert not failures, "\n\n".join(failures)
    # Transactions were committed and aborted through the failures, and read back read_committed.
    assert committed > 0 and aborted > 0 and read_committed > 0


def test_the_schedule_is_the_seeds_and_offers_every_failure() -> None:
    assert make_schedule(7, 5, 6, 3, 80) == make_schedule(7, 5, 6, 3, 80)
    assert make_schedule(7, 5, 6, 3, 80) != make_schedule(8, 5, 6, 3, 80)
    kinds = {step.kind for seed in range(SEEDS) for step in make_schedule(seed, 5, 6, 3, 80)}
    assert kinds == {
        "produce",
        "advance",
        "crash",
        "hang",
        "isolate",
        "controlled",
        "start",
        "stop copying",
        "copy again",
        "preferred election",
        "unclean election",
        "reassign",
        "disconnect after produce",
        "delay produce",
    }
    assert len(CONFIGURATIONS) == 16
    assert {(c.policy, c.unclean, c.acks, c.idempotent) for c in CONFIGURATIONS[:4]} == {
        ("kafka", False, 0, False),
        ("kafka", False, 1, False),
        ("kafka", False, -1, False),
        ("kafka", False, -1, True),
    }


def _run() -> RunRecord:
    """Two acknowledged records at offsets 0 and 1 of t-0, read back."""
    run = RunRecord("kafka")
    run.acknowledged = [
        Acknowledged("t", 0, 0, b"a", -1, 7, 0, 0),
        Acknowledged("t", 0, 1, b"b", 1),
    ]
    run.read = [ReadRecord("t", 0, 0, b"a", 0, 7, 0, 0), ReadRecord("t", 0, 1, b"b", 0)]
    return run


def _names(run: RunRecord) -> list[str]:
    return [v.check for v in check_run(run)]


def test_each_check_catches_the_rule_it_holds() -> None:
    assert _names(_run()) == []
    missing_all = _run()
    missing_all.read = missing_all.read[1:]
    assert _names(missing_all) == ["acks=all record missing"]
    missing_all.losses = [Loss("t", 0, 0, 0, 0, -1, 7, "clean election: leader 1 elected with epoch 1")]
    assert _names(missing_all) == ["acks=all record missing"]  # a clean election cannot take it
    missing_all.losses = [Loss("t", 0, 0, 0, 0, -1, 7, "unclean election: leader 1 elected with epoch 1")]
    assert _names(missing_all) == []
    missing_one = _run()
    missing_one.read = missing_one.read[:1]
    assert _names(missing_one) == ["acks=1 record missing"]
    missing_one.losses = [Loss("t", 0, 1, 1, 0, 1, -1, "clean election: leader 1 elected with epoch 1")]
    assert _names(missing_one) == []
    false_loss = _run()
    false_loss.losses = [Loss("t", 0, 1, 1, 0, 1, -1, "clean election: leader 1 elected with epoch 1")]
    assert _names(false_loss) == ["loss reported that did not happen"]  # offset 1 holds epoch 0's record
    false_loss.read[1] = ReadRecord("t", 0, 1, b"b", 1)  # another epoch's record there, "b" read back
    assert _names(false_loss) == ["loss reported that did not happen"]  # nothing written there is missing
    duplicate = _run()
    duplicate.read.append(ReadRecord("t", 0, 2, b"a", 0, 7, 0, 0))
    assert _names(duplicate) == ["duplicate (producer id, epoch, sequence)"]
    watermark = _run()
    watermark.high_watermark = [
        Observation(10, "t", 0, "moved to 2 with the ISR [0] below min.insync.replicas=2")
    ]
    assert _names(watermark) == ["high watermark"]
    unreadable = _run()
    unreadable.unreadable = [("t", 0)]
    assert _names(unreadable) == ["unreadable"]


def test_each_transaction_check_catches_the_rule_it_holds() -> None:
    def run() -> RunRecord:
        """A committed record at t-0 offset 0, an aborted one at 1 (its marker at 2), the commit's marker at
        3; a read_committed consumer got the committed one."""
        base = _run()
        base.acknowledged = [Acknowledged("t", 0, 0, b"c", -1, 7, 0, 0)]
        base.read = [ReadRecord("t", 0, 0, b"c", 0, 7, 0, 0), ReadRecord("t", 0, 1, b"x", 0, 7, 0, 1)]
        record = TransactionsRecord(committed=list(base.acknowledged))
        record.aborted = [Unanswered("t", 0, b"x", 7)]
        record.read_committed = [ReadRecord("t", 0, 0, b"c", 0, 7, 0, 0)]
        base.extras["transactions"] = record
        return base

    def names(base: RunRecord) -> list[str]:
        return [v.check for v in check_run(base, TRANSACTION_CHECKS)]

    assert names(run()) == []
    missing = run()
    missing.extras["transactions"].read_committed = []
    assert names(missing) == ["committed transaction's record missing"]
    missing.losses = [Loss("t", 0, 0, 0, 0, -1, 7, "unclean election: leader 1 elected with epoch 1")]
    assert names(missing) == []
    aborted = run()
    aborted.extras["transactions"].read_committed.append(ReadRecord("t", 0, 1, b"x", 0, 7, 0, 1))
    assert names(aborted) == ["aborted transaction's record read"]
    held = run()
    held.extras["transactions"].unstable = [("t", 0, 1, 4)]
    assert names(held) == ["last stable offset held"]
    # An unclean election took the producer's later write there (its marker): the records take the fate
    # of its next marker, or hang open (Kafka's hanging transaction); the reported loss is their cause.
    marker_lost = [Loss("t", 0, 3, 3, 0, -1, 7, "unclean election: leader 1 elected with epoch 1")]
    for broken in (missing, aborted, held):
        broken.losses = marker_lost
        assert names(broken) == []
    other_producer = [Loss("t", 0, 3, 3, 0, -1, 8, "unclean election: leader 1 elected with epoch 1")]
    held.losses = other_producer
    assert names(held) == ["last stable offset held"]
    assert [v.check for v in check_run(run())] == []  # the default checks ignore the transactions' record


def test_a_transaction_held_open_by_its_coordinators_lost_record_is_reported_with_that_cause() -> None:
    """The coordinator lost the record that put t-0 in producer 7's transaction: no marker comes there,
    and the read_committed read stops at its first record, a committed record of producer 8 behind it."""
    base = _run()
    base.acknowledged = [Acknowledged("t", 0, 1, b"c", -1, 8, 0, 0)]
    base.read = [ReadRecord("t", 0, 0, b"x", 0, 7, 0, 0), ReadRecord("t", 0, 1, b"c", 0, 8, 0, 0)]
    record = TransactionsRecord(committed=list(base.acknowledged), unstable=[("t", 0, 0, 3)])
    base.extras["transactions"] = record

    def names() -> list[str]:
        return [v.check for v in check_run(base, TRANSACTION_CHECKS)]

    assert names() == ["committed transaction's record missing", "last stable offset held"]
    lost = LostTxnRecord("tx", "Ongoing", 7, 0, 4, 7, 9910, (("t", 1),), "loaded above the high watermark")
    record.state_lost = [lost]  # another partition of the transaction: not the cause
    assert names() == ["committed transaction's record missing", "last stable offset held"]
    record.state_lost = [dataclasses.replace(lost, producer_id=8, partitions=(("t", 0),))]  # another producer
    assert names() == ["committed transaction's record missing", "last stable offset held"]
    record.state_lost = [dataclasses.replace(lost, partitions=(("t", 0),))]
    assert names() == []


async def test_fluvio_seed_966_a_coordinator_answering_from_an_unreplicated_record_is_a_reported_loss() -> (
    None
):
    """Seed 966 of the Fluvio policy (benchmarks/losses.py; replayed alone, docs/data-path.md): broker 0
    appended an Ongoing record (t2 adds checked-0) and crashed before any replica had it; back as the
    leader of __transaction_state-4 it loaded it (a load reads to the log end) and answered from it; the
    high watermark never covered it (Fluvio's waits for every replica) and the next leader did not have
    it, so the coordinator forgot checked-0 and t2's records there hang with no marker. The server
    reports that record lost, with its cause, and the checker holds the hang to it."""
    result = await run_seed(966, TRANSACTIONAL_CONFIGURATIONS[966 % len(TRANSACTIONAL_CONFIGURATIONS)])
    record = result.run.extras["transactions"]
    assert result.ok, result.describe()
    assert record.unstable == [("checked", 0, 1, 6)]  # the hang is there, explained
    [lost] = record.state_lost
    assert (lost.transactional_id, lost.state, lost.producer_id, lost.partitions) == (
        "losscheck-2",
        "Ongoing",
        0,
        (("checked", 0),),
    )
    assert lost.cause == "loaded above the high watermark by the coordinator of epoch 4"
    record.state_lost = []  # without the report the hang is a violation
    assert [v.check for v in check_run(result.run, TRANSACTION_CHECKS)] == [
        "committed transaction's record missing",
        "last stable offset held",
    ]
