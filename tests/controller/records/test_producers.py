"""Idempotent producers on a partition, as Kafka's ProducerStateManager answers them: duplicates with the
original offsets, sequence gaps, stale and new epochs, unknown producers; the state rebuilt from a log
(how it moves with leadership and survives truncation); the producer id allocator."""

from __future__ import annotations

import pytest

from controller.records.batch import control_batch, read_header
from controller.records.checks import DEFAULT_LIMITS, ClientBatch, check_client_batch
from controller.records.log import Log
from controller.records.producers import BatchMetadata, ProducerIdAllocator, ProducerStates
from protocol.codes import ErrorCode
from protocol.errors import Refusal
from tests.controller.records.batches import NOW, build

PID = 4000


def txn(count: int, sequence: int, epoch: int = 0, pid: int = PID) -> ClientBatch:
    checked = check_client_batch(
        build(count, producer=(pid, epoch, sequence), transactional=True), 9, DEFAULT_LIMITS, NOW, "t", 1
    )
    assert isinstance(checked, ClientBatch)
    return checked


def batch(count: int, sequence: int, epoch: int = 0, pid: int = PID) -> ClientBatch:
    checked = check_client_batch(
        build(count, producer=(pid, epoch, sequence)), 9, DEFAULT_LIMITS, NOW, "t", 1
    )
    assert isinstance(checked, ClientBatch)
    return checked


class Leader:
    """A leader's produce path for one partition, as the integration will run it."""

    def __init__(self, log: Log | None = None) -> None:
        self.log = log or Log()
        self.states = ProducerStates.from_batches(self.log.batches())

    def produce(self, client: ClientBatch, epoch: int = 0) -> tuple[int, int] | Refusal:
        """(first offset, last offset) answered, or the refusal."""
        found = self.states.check(client.header, self.log.log_end_offset, "t", 1)
        if isinstance(found, Refusal):
            return found
        if isinstance(found, BatchMetadata):
            return found.first_offset, found.last_offset
        stored = self.log.append_as_leader(client, epoch)
        self.states.record(client.header, stored.base_offset)
        return stored.base_offset, stored.last_offset


def test_in_sequence_batches_are_appended():
    leader = Leader()
    assert leader.produce(batch(3, 0)) == (0, 2)
    assert leader.produce(batch(2, 3)) == (3, 4)
    entry = leader.states.entry(PID)
    assert entry is not None and entry.epoch == 0 and entry.last_seq == 4
    assert [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in entry.batches] == [
        (0, 2, 0, 2),
        (3, 4, 3, 4),
    ]


def test_a_retried_batch_gets_the_original_offsets_and_is_not_appended_again():
    leader = Leader()
    leader.produce(batch(3, 0))
    leader.produce(batch(1, 0, pid=PID + 1))  # another producer in between
    leader.produce(batch(2, 3))
    assert leader.produce(batch(3, 0)) == (0, 2)
    assert leader.produce(batch(2, 3)) == (4, 5)
    assert leader.log.log_end_offset == 6


def test_only_the_last_five_batches_are_remembered():
    leader = Leader()
    for sequence in range(0, 12, 2):
        leader.produce(batch(2, sequence))
    assert len(leader.states.entry(PID).batches) == 5
    assert leader.produce(batch(2, 2)) == (2, 3)  # the second batch is still known
    refusal = leader.produce(batch(2, 0))  # the first is forgotten: a sequence error, as in Kafka
    assert isinstance(refusal, Refusal) and refusal.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_sequence_gap():
    leader = Leader()
    leader.produce(batch(3, 0))
    refusal = leader.produce(batch(1, 5))
    assert (refusal.code, refusal.message) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        f"Out of order sequence number for producer {PID} at offset 3 in partition t-1: 5 (incoming seq. "
        "number), 2 (current end sequence number)",
    )
    overlapping = leader.produce(batch(2, 1))  # a retry that is not exactly a remembered batch
    assert overlapping.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_stale_producer_epoch():
    leader = Leader()
    leader.produce(batch(1, 0, epoch=3))
    refusal = leader.produce(batch(1, 1, epoch=2))
    assert (refusal.code, refusal.message) == (
        ErrorCode.INVALID_PRODUCER_EPOCH,
        f"Epoch of producer {PID} at offset 1 in t-1 is 2, which is smaller than the last seen epoch 3",
    )


def test_a_new_epoch_starts_at_sequence_0():
    leader = Leader()
    leader.produce(batch(3, 0, epoch=0))
    refusal = leader.produce(batch(1, 3, epoch=1))
    assert (refusal.code, refusal.message) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        f"Invalid sequence number for new epoch of producer {PID}at offset 3 in partition t-1: 1 (request "
        "epoch), 3 (seq. number), 0 (current producer epoch)",
    )
    assert leader.produce(batch(2, 0, epoch=1)) == (3, 4)
    assert leader.states.entry(PID).epoch == 1 and len(leader.states.entry(PID).batches) == 1
    # the old epoch's batches are no longer duplicates
    assert leader.produce(batch(3, 0, epoch=0)).code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_an_unknown_producer_may_start_anywhere():
    leader = Leader()
    assert leader.produce(batch(2, 77, epoch=5)) == (0, 1)
    assert leader.produce(batch(1, 79, epoch=5)) == (2, 2)


def test_sequences_wrap():
    leader = Leader()
    top = 2**31 - 1
    assert leader.produce(batch(2, top - 1)) == (0, 1)
    assert leader.states.entry(PID).last_seq == top
    assert leader.produce(batch(2, 0)) == (2, 3)
    assert leader.produce(batch(2, top - 1)) == (0, 1)  # still a duplicate across the wrap


def test_batches_without_a_producer_id_pass():
    states = ProducerStates()
    header = read_header(build(2))
    assert states.check(header, 0, "t", 1) is None
    states.record(header, 0)
    assert len(states) == 0


def test_the_state_moves_with_the_log_to_a_new_leader():
    old = Leader()
    old.produce(batch(3, 0))
    old.produce(batch(2, 0, pid=PID + 1))
    old.produce(batch(2, 3))
    follower = Log()
    for entry in old.log.read(0, old.log.log_end_offset, 1 << 30):
        follower.append_copy(entry)
    new = Leader(follower)  # the follower is elected: its state comes from its log
    assert new.states.producer_ids() == [PID, PID + 1]
    assert new.produce(batch(2, 3)) == (5, 6)  # the retry of a batch the old leader took
    assert new.produce(batch(1, 5)) == (7, 7)
    assert new.produce(batch(1, 9)).code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_after_truncation_the_state_is_rebuilt_from_what_is_left():
    leader = Leader()
    leader.produce(batch(3, 0))
    leader.produce(batch(2, 3))
    leader.log.truncate_to(3)
    states = ProducerStates.from_batches(leader.log.batches())
    assert states.entry(PID).last_seq == 2
    leader.states = states
    assert leader.produce(batch(2, 3)) == (3, 4)  # the lost batch is appended again, not a duplicate


def test_followers_record_without_checks():
    leader = Leader()
    leader.produce(batch(3, 0))
    states = ProducerStates()
    for entry in leader.log.batches():
        states.record_stored(entry)
    assert states.entry(PID).last_seq == 2


def test_idle_producers_expire():
    leader = Leader()
    leader.produce(batch(1, 0))
    assert leader.states.expire(NOW + 86_400_000 - 1) == []
    assert leader.states.expire(NOW + 86_400_000) == [PID]
    assert leader.produce(batch(1, 57)) == (1, 1)  # forgotten: any sequence again


def test_producer_ids_count_up_from_the_given_start():
    allocator = ProducerIdAllocator(1000)
    assert [allocator.allocate() for _ in range(3)] == [1000, 1001, 1002]
    assert allocator.next_id == 1003 and ProducerIdAllocator.FIRST_EPOCH == 0
    assert [ProducerIdAllocator().allocate() for _ in range(2)] == [0, 0]
    with pytest.raises(ValueError):
        ProducerIdAllocator(-1)


def test_a_partition_keeps_at_most_its_limit_of_producers_the_least_recent_forgotten():
    states = ProducerStates(limit=3)
    for pid in (1, 2, 3):
        states.record(read_header(build(1, producer=(pid, 0, 0))), pid)
    states.record(read_header(build(1, producer=(1, 0, 1))), 9)  # producer 1 appended again: the most recent
    states.record(read_header(build(1, producer=(4, 0, 0))), 10)
    assert states.producer_ids() == [1, 3, 4]  # producer 2 appended least recently
    # A forgotten producer starts again at any sequence (KIP-360).
    assert states.check(read_header(build(1, producer=(2, 0, 7))), 11, "t", 0) is None
    assert ProducerStates().limit == 10_000


def test_transactions_open_complete_and_abort_as_markers_arrive_and_are_forgotten_below_bounds():
    leader = Leader()
    assert leader.produce(txn(1, 0)) == (0, 0)
    assert leader.states.has_ongoing_transaction(PID)
    assert leader.states.first_unstable_offset(1) == 0
    aborted = leader.states.record_marker(PID, 0, False, 3, 1, NOW)
    assert aborted is not None and (aborted.first_offset, aborted.last_offset) == (0, 1)
    assert not leader.states.has_ongoing_transaction(PID)
    assert leader.states.first_unstable_offset(1) == 0  # its marker is not below the high watermark yet
    assert leader.states.first_unstable_offset(2) is None
    assert leader.states.aborted_between(0, 2) == [aborted]
    assert leader.states.aborted_between(2, 5) == []
    entry = leader.states.entry(PID)
    assert entry is not None and (entry.current_txn_first_offset, entry.coordinator_epoch) == (None, 3)
    refused = leader.states.check_marker(PID, 0, 2)
    assert isinstance(refused, Refusal) and refused.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    leader.states.forget_aborted(2)
    assert leader.states.aborted_between(0, 2) == []


def test_a_plain_batch_inside_an_open_transaction_is_invalid_txn_state():
    leader = Leader()
    assert leader.produce(txn(1, 0)) == (0, 0)
    refused = leader.produce(batch(1, 1))
    assert isinstance(refused, Refusal) and refused.code == ErrorCode.INVALID_TXN_STATE


def test_the_state_rebuilt_from_a_log_with_markers_is_the_same():
    leader = Leader()
    leader.produce(txn(2, 0))
    marker = control_batch(PID, 0, False, 1, NOW)
    checked = check_client_batch(marker, 9, DEFAULT_LIMITS, NOW, "t", 1)
    assert isinstance(checked, Refusal)  # a client may not write one: only a leader appends markers
    stored = leader.log.append_as_leader(ClientBatch(memoryview(marker), read_header(marker)), 0)
    leader.states.record_marker(PID, 0, False, 1, stored.base_offset, NOW)
    leader.produce(txn(1, 2))
    rebuilt = ProducerStates.from_batches(leader.log.batches())
    assert rebuilt.aborted_between(0, 10) == leader.states.aborted_between(0, 10)
    assert rebuilt.ongoing() == leader.states.ongoing() == {PID: 3}
