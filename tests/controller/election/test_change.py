"""PartitionChangeBuilder on its own, as Kafka's PartitionChangeBuilderTest pins it (ELR off): no cluster, no
policy (Kafka's own order), and the partition is never written by the builder.

Fixtures as in those tests: leader epoch 100, partition epoch 200; "acceptable" brokers are the ones
that may lead.
"""

from __future__ import annotations

import copy

import pytest

from controller.cluster import LeaderRecoveryState, PartitionChange, PartitionState, PartitionStatus
from controller.election.change import ElectionKind, PartitionChangeBuilder, completed_reassignment

RECOVERED, RECOVERING = LeaderRecoveryState.RECOVERED, LeaderRecoveryState.RECOVERING


def partition(replicas, isr, leader, recovery=RECOVERED) -> PartitionState:
    return PartitionState(
        "foo",
        0,
        list(replicas),
        leader,
        list(isr),
        leader_epoch=100,
        partition_epoch=200,
        leo=[0] * len(replicas),
        status=PartitionStatus.ONLINE if leader != -1 else PartitionStatus.OFFLINE,
        leader_recovery_state=recovery,
        caught_up=[0] * len(replicas),
    )


def foo() -> PartitionState:
    return partition([2, 1, 3], [2, 1, 3], 1)


def baz() -> PartitionState:
    return partition([2, 1, 3], [1, 3], 3)


NOT_3 = {1, 2, 4}
ALL = {1, 2, 3, 4}


def build(p, acceptable, election=ElectionKind.ONLINE, isr=None, replicas=None) -> PartitionChange | None:
    before = copy.deepcopy(p)
    builder = PartitionChangeBuilder(p, acceptable).set_election(election)
    if isr is not None:
        builder.set_target_isr(isr)
    if replicas is not None:
        builder.set_target_replicas(replicas)
    record = builder.build("test")
    assert p == before or repr(p) == repr(before)  # the builder never writes
    return record


# testElectLeader: the node each election picks.
@pytest.mark.parametrize(
    ("make", "acceptable", "election", "isr", "leader"),
    [
        (foo, NOT_3, ElectionKind.PREFERRED, None, 2),
        (foo, NOT_3, ElectionKind.ONLINE, None, 1),
        (foo, NOT_3, ElectionKind.UNCLEAN, None, 1),
        (foo, NOT_3, ElectionKind.ONLINE, [1, 3], 1),
        (foo, NOT_3, ElectionKind.UNCLEAN, [1, 3], 1),
        (foo, NOT_3, ElectionKind.ONLINE, [3], -1),
        (foo, NOT_3, ElectionKind.UNCLEAN, [3], 2),
        (baz, ALL, ElectionKind.PREFERRED, None, 3),
        (baz, ALL, ElectionKind.ONLINE, None, 3),
        (baz, ALL, ElectionKind.UNCLEAN, None, 3),
    ],
)
def test_elect_leader(make, acceptable, election, isr, leader) -> None:
    p = make()
    record = build(p, acceptable, election, isr)
    elected = p.leader if record is None or record.get("leader") is None else record.get("leader")
    assert elected == leader


@pytest.mark.parametrize(
    ("make", "acceptable", "election"),
    [
        (foo, NOT_3, ElectionKind.ONLINE),
        (foo, NOT_3, ElectionKind.UNCLEAN),
        (baz, ALL, ElectionKind.PREFERRED),
    ],
)
def test_no_change_is_no_record(make, acceptable, election) -> None:
    assert build(make(), acceptable, election) is None


def test_an_isr_change_bumps_the_partition_epoch_and_not_the_leader_epoch() -> None:
    record = build(foo(), NOT_3, isr=[2, 1])
    assert record is not None
    assert dict(record.items()) == {"isr": [2, 1], "partition_epoch": 201}


def test_an_isr_change_that_moves_the_leader_bumps_both_epochs() -> None:
    record = build(foo(), NOT_3, isr=[2, 3])
    assert record is not None
    assert (
        record.get("isr"),
        record.get("leader"),
        record.get("leader_epoch"),
        record.get("partition_epoch"),
    ) == (
        [2, 3],
        2,
        101,
        201,
    )
    assert record.get("leader_recovery_state") is None


@pytest.mark.parametrize(
    ("p", "acceptable", "isr", "leader", "new_isr"),
    [
        (foo(), NOT_3, [3], 2, [2]),  # #1
        (partition([2, 1, 3], [3], -1), {1}, None, 1, [1]),  # #2
        (partition([2, 1, 3], [3], -1), {1}, [2], 1, [1]),  # #3
    ],
)
def test_an_unclean_election_makes_the_leader_the_isr_alone_and_recovering(
    p, acceptable, isr, leader, new_isr
) -> None:
    record = build(p, acceptable, ElectionKind.UNCLEAN, isr)
    assert record is not None
    assert (record.get("leader"), record.get("isr"), record.get("leader_epoch")) == (leader, new_isr, 101)
    assert record.get("leader_recovery_state") is RECOVERING
    assert "unclean election" in record.cause


def test_a_change_in_leadership_does_not_change_the_recovery_state() -> None:
    p = partition([1, 2, 3], [1], 1, RECOVERING)
    # Nothing acceptable and an empty target ISR: the ISR is not written empty, the leader goes.
    record = build(p, set(), isr=[])
    assert record is not None
    assert (record.get("leader"), record.get("isr"), record.get("leader_epoch")) == (-1, None, 101)
    assert record.get("leader_recovery_state") is None  # stays RECOVERING


def test_the_empty_isr_is_written_only_when_allowed() -> None:
    p = partition([1, 2], [2], 1)
    builder = PartitionChangeBuilder(p, {1}).set_election(None).set_target_isr([]).allow_empty_isr()
    record = builder.build("test")
    assert record is not None and dict(record.items()) == {"isr": [], "partition_epoch": 201}


@pytest.mark.parametrize(
    ("replicas", "leader_epoch"),
    [([2, 1, 3, 4], None), ([2, 1], 101)],  # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
)
def test_the_leader_epoch_goes_up_when_the_replicas_lose_a_member(replicas, leader_epoch) -> None:
    record = build(foo(), ALL, replicas=replicas)
    assert record is not None
    assert (record.get("replicas"), record.get("leader"), record.get("leader_epoch")) == (
        replicas,
        None,
        leader_epoch,
    )


def test_a_recovered_leader_is_one_record_with_no_epoch_bump_but_the_partition_epoch() -> None:
    p = partition([1, 2, 3], [1], 1, RECOVERING)
    builder = PartitionChangeBuilder(p, ALL).set_election(None).set_target_leader_recovery_state(RECOVERED)
    record = builder.build("recovered")
    assert record is not None and dict(record.items()) == {
        "leader_recovery_state": RECOVERED,
        "partition_epoch": 201,
    }


def test_followers_are_truncated_to_a_new_leader() -> None:
    p = partition([1, 2, 3], [2, 3], 1)
    p.leo, p.high_watermark = [10, 8, 7], 7
    record = build(p, {2, 3}, isr=[2, 3])
    assert record is not None
    assert (record.get("leader"), record.get("epoch_start_offset"), record.get("leo")) == (2, 8, [8, 8, 7])
    assert record.get("high_watermark") is None  # a clean election never moves it back


# Kafka 4.x's PartitionReassignmentReplicas.maybeCompleteReassignment (held against Kafka's own code in
# tests/harness/test_kafka_election.py): a reassignment completes once the replicas it adds are in the
# ISR; one that removes more replicas than it adds waits for every target replica.
@pytest.mark.parametrize(
    ("replicas", "adding", "removing", "isr", "done"),
    [
        ([1, 2, 3], [], [], [1, 2, 3], None),  # no reassignment
        ([0, 6], [6], [], [0], None),  # the added replica is not in sync yet
        ([0, 6], [6], [], [6], ([0, 6], [6])),  # 0 fell out of the ISR: Kafka 4.x does not wait for it
        ([4, 1, 2, 3], [4], [1], [4, 3], ([4, 2, 3], [4, 3])),  # adds one, removes one: 2 out of sync
        ([1, 2, 3], [], [3], [1, 3], None),  # removes more than it adds: waits for 2 too
        ([1, 2, 3], [], [3], [1, 2, 3], ([1, 2], [1, 2])),
        ([1, 2], [], [1, 2], [1, 2], None),  # nothing would be left
    ],
)
def test_completed_reassignment(replicas, adding, removing, isr, done) -> None:
    completed = completed_reassignment(replicas, adding, removing, isr)
    assert (None if completed is None else (completed.replicas, completed.isr)) == done


def test_an_election_on_new_target_replicas_may_elect_a_new_replica() -> None:
    """An unclean election on a change that brings new replicas (KIP-455) may elect one of them at once: its
    log is empty, and the followers' logs are cut to it."""
    p = partition([5], [5], -1)
    p.leo = [7]
    builder = (
        PartitionChangeBuilder(p, {2, 5})
        .set_target_replicas([2, 1, 5])
        .set_target_isr([])
        .set_election(ElectionKind.UNCLEAN)
    )
    assert builder.view().replicas == (2, 1, 5) and builder.view().log_end_offsets == (0, 0, 7)
    record = builder.build("test")
    assert record is not None
    assert record.get("leader") == 2 and record.get("isr") == [2] and record.get("replicas") == [2, 1, 5]
    assert record.get("leader_recovery_state") is RECOVERING
