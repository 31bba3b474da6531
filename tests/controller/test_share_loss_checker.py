"""The seeded loss checker's share groups (:mod:`controller.losscheck.share`): 24 seeds, each the loss
checker's cluster and schedule (5 brokers, a topic of 6 partitions x 3 replicas, crashes, hangs,
isolations, controlled shutdowns, restarts, elections, reassignments, Produce faults) on a virtual clock,
with acks=all idempotent producers and two share consumers (the project's client: ShareGroupHeartbeat,
ShareFetch, ShareAcknowledge) that accept, release, reject or let locks expire, then drain the topic. No
record accepted is delivered again unless a lost acknowledgement is reported; every record of the final
log is accepted or reported (archived with its cause, or a data-path loss at its offset). With unclean
elections on, the internal topics may elect unclean leaders too: seed 5 loses an answered acceptance on
``__share_group_state``, and the record comes back reported. About 30 seconds on a loaded 2-core machine
(1 to 2 s a seed; seeds 13 and 15 took 12 and 21 s while the members' FindCoordinator waited, in real
time, behind a ShareFetch waiting on the virtual clock on the same connection: it has its own now).

A failing seed replays alone with ``asyncio.run(controller.losscheck.share.run_share_seed(seed))``. The
two share checks are held to what they catch on run records made by hand."""

from __future__ import annotations

import pytest

from controller.losscheck import Loss, ReadRecord, RunRecord, check_run
from controller.losscheck.share import (
    SHARE_CONFIGURATIONS,
    Acceptance,
    AcceptedNotDeliveredAgain,
    Delivery,
    EveryRecordConsumedOrReported,
    ReportedArchive,
    ShareRecord,
    run_share_seed,
)

SEEDS = 24
CHUNK = 8


@pytest.mark.parametrize("first", range(0, SEEDS, CHUNK))
async def test_no_accepted_record_comes_back_and_none_is_lost_without_a_report(first: int) -> None:
    failures = []
    delivered = accepted = 0
    for seed in range(first, first + CHUNK):
        result = await run_share_seed(seed)
        share = result.run.extras["share"]
        delivered += len(share.deliveries)
        accepted += len(share.accepted)
        if not result.ok:
            failures.append(result.describe())
    assert not failures, "\n\n".join(failures)
    assert delivered > accepted > 0  # the members consumed through the failures, some records twice


async def test_a_lost_acceptance_is_delivered_again_and_reported() -> None:
    """Seed 5 (unclean elections on, the internal topics too): an unclean election of a
    ``__share_group_state`` partition takes an acceptance already answered; the record is delivered again,
    and ``lost_acknowledgements`` reports it (the exception check 1 allows is a report, not a pass)."""
    result = await run_share_seed(5)
    assert result.ok, result.describe()
    share = result.run.extras["share"]
    assert share.lost_acknowledgements
    lost = {(partition, offset) for partition, offsets in share.lost_acknowledgements for offset in offsets}
    first_accepted = {}
    for a in share.accepted:
        first_accepted.setdefault((a.partition, a.offset), a.order)
    again = [
        d
        for d in share.deliveries
        if (d.partition, d.offset) in lost and d.order > first_accepted.get((d.partition, d.offset), 1 << 30)
    ]
    assert again  # accepted, then delivered again: reported
    assert AcceptedNotDeliveredAgain().check(result.run) == []
    share.lost_acknowledgements = []
    assert AcceptedNotDeliveredAgain().check(result.run)  # without the report it is a violation


def test_share_configurations_are_acks_all_idempotent() -> None:
    assert {(c.policy, c.unclean) for c in SHARE_CONFIGURATIONS} == {
        ("kafka", False),
        ("kafka", True),
        ("fluvio", False),
        ("fluvio", True),
    }
    assert all(c.acks == -1 and c.idempotent for c in SHARE_CONFIGURATIONS)


def _run() -> tuple[RunRecord, ShareRecord]:
    """Records at offsets 0 and 1 of t-0: offset 0 delivered and accepted, offset 1 delivered."""
    run = RunRecord("kafka")
    run.read = [ReadRecord("t", 0, 0, b"a", 0), ReadRecord("t", 0, 1, b"b", 0)]
    share = ShareRecord("t")
    share.deliveries = [Delivery(0, 0, b"a", 1, "m0", 1), Delivery(0, 1, b"b", 1, "m0", 1)]
    share.accepted = [Acceptance(0, 0, b"a", "m0", 2)]
    run.extras["share"] = share
    return run, share


def test_an_accepted_record_delivered_again_is_caught_unless_reported() -> None:
    checks = [AcceptedNotDeliveredAgain()]
    run, share = _run()
    share.accepted.append(Acceptance(0, 1, b"b", "m0", 2))
    assert check_run(run, checks) == []
    share.deliveries.append(Delivery(0, 0, b"a", 2, "m1", 3))
    [violation] = check_run(run, checks)
    assert "offset 0" in violation.detail and "delivered again to m1" in violation.detail
    share.lost_acknowledgements = [(0, (0,))]
    assert check_run(run, checks) == []


def test_a_record_neither_accepted_nor_reported_is_caught() -> None:
    checks = [EveryRecordConsumedOrReported()]
    run, share = _run()
    [violation] = check_run(run, checks)
    assert "t-0 offset 1 (b'b')" in violation.detail
    share.archived = [ReportedArchive(0, 1, 1, "rejected by its member")]
    assert check_run(run, checks) == []
    share.archived = []
    share.unanswered = [(0, 1, b"b")]  # an acceptance sent, its answer lost: the broker may hold it
    assert check_run(run, checks) == []
    share.unanswered = []
    run.losses = [Loss("t", 0, 1, 1, 0, -1, 7, "unclean election")]  # the offset held another record
    assert check_run(run, checks) == []
    share.accepted = [Acceptance(0, 0, b"other", "m0", 2)]  # accepted at offset 0: another record
    [violation] = check_run(run, checks)
    assert "t-0 offset 0 (b'a')" in violation.detail
