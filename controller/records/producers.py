"""Idempotent producers: the sequence state a partition keeps per producer id, as Kafka's
``ProducerStateManager``, ``ProducerStateEntry`` and ``ProducerAppendInfo`` keep it, and the producer
ids InitProducerId hands out.

Per producer id a partition keeps the producer epoch and the last five batches' sequence ranges with
their offsets (``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``). Before a leader appends a client's batch
that carries a producer id (``UnifiedLog.analyzeAndValidateProducerState``):

- the same epoch and exactly the sequence range of one of the five: a retried duplicate, answered as a
  success with the original batch's offsets and nothing appended;
- an epoch below the producer's: INVALID_PRODUCER_EPOCH;
- a new (higher) epoch: its first batch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
- the same epoch: the batch must start right after the last sequence (int32's largest wraps to 0),
  else OUT_OF_ORDER_SEQUENCE_NUMBER;
- an unknown producer (none of its batches in the log, say after a failover to a replica that lost
  them, or after retention) may start at any sequence (KIP-360 made Kafka accept it rather than answer
  UNKNOWN_PRODUCER_ID).

The state is a function of the log: :meth:`ProducerStates.from_batches` rebuilds it from a log's
batches, so a new leader, which holds the same batches as the old one up to its log end, has the same
state, and a replica rebuilds it after truncation (``UnifiedLog.rebuildProducerState``). Kafka also
keeps snapshots, so a producer whose batches all left the log by retention is still known to it; a
state rebuilt from the log alone forgets it, which only matters for a retry of a batch already gone.
A leader keeps its state across retention and DeleteRecords, as Kafka does, and forgets a producer
whose last batch is ``producer.id.expiration.ms`` old (looked at every
``producer.id.expiration.check.interval.ms``, when the partition is next appended to or described), and
beyond ``simulator.max.producers.per.partition`` producers the one
that appended least recently and has no transaction open here (:class:`ProducerStates`). Each producer kept costs about 700 bytes (its
entry and its last five batches' sequence ranges).

**Transactions** (Kafka's ``ProducerAppendInfo.appendDataBatch`` and ``appendEndTxnMarker``): a producer's
first transactional batch on a partition opens its transaction there (``currentTxnFirstOffset``); a
non-transactional batch while one is open is INVALID_TXN_STATE. A marker (a control batch the
coordinator has written, :func:`~controller.records.batch.control_batch`) ends it: a marker of an older
producer epoch is INVALID_PRODUCER_EPOCH, of an older coordinator epoch TRANSACTION_COORDINATOR_FENCED;
the marker's epoch becomes the producer's (KIP-890 part 2 bumps it at every end, which forgets the
batches of the epoch before). What the read side needs is kept beside: the open transactions' first
offsets and the completed ones (the last stable offset, :meth:`ProducerStates.first_unstable_offset`),
and the aborted ones (Kafka's transaction index, :meth:`ProducerStates.aborted_between`), all functions
of the log too.
"""

from __future__ import annotations

import bisect
import logging
import operator
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, NamedTuple

from controller.records.batch import (
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    BatchHeader,
    control_marker,
    decrement_sequence,
)
from controller.records.log import StoredBatch
from protocol.codes import ErrorCode
from protocol.errors import Refusal

log = logging.getLogger(__name__)

__all__ = [
    "MAX_PRODUCERS",
    "NUM_BATCHES_TO_RETAIN",
    "PRODUCER_ID_EXPIRATION_CHECK_MS",
    "PRODUCER_ID_EXPIRATION_MS",
    "AbortedTxn",
    "BatchMetadata",
    "ProducerEntry",
    "ProducerIdAllocator",
    "ProducerStates",
]

#: ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``: the batches remembered per producer (and the most a
#: producer may have in flight per partition: ``max.in.flight.requests.per.connection`` <= 5).
NUM_BATCHES_TO_RETAIN: Final = 5
#: ``producer.id.expiration.ms`` default (1 day): a producer idle that long is forgotten.
PRODUCER_ID_EXPIRATION_MS: Final = 86_400_000
#: ``producer.id.expiration.check.interval.ms`` default (10 minutes): how often a leader looks.
PRODUCER_ID_EXPIRATION_CHECK_MS: Final = 600_000
#: ``simulator.max.producers.per.partition``'s default: the producers one partition replica keeps.
MAX_PRODUCERS: Final = 10_000
_INT32_MAX: Final = 2**31 - 1


class BatchMetadata(NamedTuple):
    """What a partition remembers of one of a producer's batches (Kafka's ``BatchMetadata``)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    #: The batch's MaxTimestamp (LogAppendTime: the leader's time); Kafka answers a duplicate with it as
    #: the append time.
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class AbortedTxn(NamedTuple):
    """An aborted transaction on a partition (Kafka's ``AbortedTxn``, an entry of its transaction index):
    the producer, the transaction's first offset there and its marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    """One producer's state on a partition (Kafka's ``ProducerStateEntry``)."""

    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] | None = None
    last_timestamp: int = -1
    #: The first offset of its open transaction on the partition, None when none is open.
    current_txn_first_offset: int | None = None
    #: The epoch of the coordinator that wrote its last marker (-1: none yet).
    coordinator_epoch: int = -1

    def __post_init__(self) -> None:
        if self.batches is None:
            self.batches = deque(maxlen=NUM_BATCHES_TO_RETAIN)

    @property
    def last_seq(self) -> int:
        assert self.batches is not None
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def duplicate_of(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """``findDuplicateBatch``: the remembered batch with exactly this epoch and sequence range."""
        if epoch != self.epoch:
            return None
        assert self.batches is not None
        for batch in self.batches:
            if batch.last_seq == last_seq and batch.first_seq == first_seq:
                return batch
        return None

    def add(self, epoch: int, metadata: BatchMetadata) -> None:
        """``addBatch``: a new epoch forgets the old epoch's batches; five are kept."""
        assert self.batches is not None
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch
        self.batches.append(metadata)
        self.last_timestamp = metadata.timestamp


class ProducerStates:
    """The producers of one partition replica (see the module docstring), at most ``limit`` of them: past
    it the producer that appended least recently is forgotten (Kafka keeps every producer until
    ``producer.id.expiration.ms``; a client that asks a new producer id for each batch would make the
    state grow without bound). A forgotten producer is one KIP-360 lets start again at any sequence."""

    __slots__ = ("_aborted", "_completed", "_ongoing", "_producers", "limit")

    def __init__(self, limit: int = MAX_PRODUCERS) -> None:
        #: By producer id, the least recently appended first.
        self._producers: dict[int, ProducerEntry] = {}
        self.limit = limit
        #: Open transactions: producer id -> first offset.
        self._ongoing: dict[int, int] = {}
        #: Completed transactions as (first offset, marker offset), in marker order (pruned by
        #: :meth:`first_unstable_offset` once the high watermark passes their markers).
        self._completed: deque[tuple[int, int]] = deque()
        #: Aborted transactions, in marker order (the transaction index).
        self._aborted: list[AbortedTxn] = []

    @classmethod
    def from_batches(cls, batches: Iterable[StoredBatch], limit: int = MAX_PRODUCERS) -> ProducerStates:
        """The state a log's batches give, oldest first (what a replica has after appending them)."""
        states = cls(limit)
        for batch in batches:
            if not batch.is_synthetic:
                states.record_stored(batch)
        return states

    @property
    def has_transactions(self) -> bool:
        """Whether any transaction was ever seen here (open, completed or aborted)."""
        return bool(self._ongoing or self._completed or self._aborted)

    def __len__(self) -> int:
        return len(self._producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def producer_ids(self) -> list[int]:
        return sorted(self._producers)

    def entries(self) -> list[ProducerEntry]:
        """Every producer's state, by producer id (what DescribeProducers lists)."""
        return [self._producers[pid] for pid in sorted(self._producers)]

    def check(
        self, header: BatchHeader, next_offset: int, topic: str, partition: int
    ) -> BatchMetadata | Refusal | None:
        """The leader's checks of a client's batch before it is appended at ``next_offset`` (the log end
        offset): the original batch when this one is a retried duplicate (answer with its offsets,
        append nothing), a refusal (INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER, with Kafka's
        messages), or None to append. A batch without a producer id passes."""
        if not header.has_producer_id:
            return None
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return None
        epoch, first_seq = header.producer_epoch, header.base_sequence
        duplicate = entry.duplicate_of(epoch, first_seq, header.last_sequence)
        if duplicate is not None:
            return duplicate
        pid = header.producer_id
        if epoch < entry.epoch:
            return Refusal(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {pid} at offset {next_offset} in {topic}-{partition} is {epoch}, which is "
                f"smaller than the last seen epoch {entry.epoch}",
            )
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                # Kafka's message, missing space and all (ProducerAppendInfo.checkSequence).
                return Refusal(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"Invalid sequence number for new epoch of producer {pid}at offset {next_offset} in "
                    f"partition {topic}-{partition}: {epoch} (request epoch), {first_seq} (seq. number), "
                    f"{entry.epoch} (current producer epoch)",
                )
            return _transaction_state(entry, header, next_offset, topic, partition)
        last_seq = entry.last_seq
        if entry.epoch != NO_PRODUCER_EPOCH and not _in_sequence(last_seq, first_seq):
            return Refusal(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {pid} at offset {next_offset} in partition "
                f"{topic}-{partition}: {first_seq} (incoming seq. number), {last_seq} (current end sequence "
                "number)",
            )
        return _transaction_state(entry, header, next_offset, topic, partition)

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> Refusal | None:
        """The leader's checks of a marker before it is appended (``appendEndTxnMarker``): an older producer
        epoch than the partition has seen (INVALID_PRODUCER_EPOCH), an older coordinator epoch
        (TRANSACTION_COORDINATOR_FENCED); None to append."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return None
        if epoch < entry.epoch:
            return Refusal(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen epoch {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            return Refusal(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"Invalid coordinator epoch for producerId {producer_id}: {coordinator_epoch} (zombie), "
                f"{entry.coordinator_epoch} (current)",
            )
        return None

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        """Whether the producer has a transaction open on this partition."""
        return producer_id in self._ongoing

    def ongoing(self) -> dict[int, int]:
        """Open transactions: producer id -> first offset."""
        return dict(self._ongoing)

    def forget_completed(self, high_watermark: int) -> None:
        """Completed transactions whose markers are below ``high_watermark`` no longer hold the last
        stable offset back (Kafka's ``onHighWatermarkUpdated``): forgotten."""
        completed = self._completed
        while completed and completed[0][1] < high_watermark:
            completed.popleft()

    def forget_aborted(self, log_start_offset: int) -> None:
        """Aborted transactions whose markers left the log (retention, DeleteRecords) are forgotten, as
        Kafka's transaction index goes with its segments."""
        aborted = self._aborted
        if aborted and aborted[0].last_offset < log_start_offset:
            del aborted[: bisect.bisect_left(aborted, log_start_offset, key=_LAST_OFFSET)]

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset a read_committed consumer may not pass (Kafka's ``firstUnstableOffset``): the
        first offset of the oldest transaction open, or completed with its marker not yet below
        ``high_watermark``; None when there is none."""
        self.forget_completed(high_watermark)
        completed = self._completed
        first = min(self._ongoing.values(), default=None)
        if completed:
            oldest = min(start for start, _ in completed)
            first = oldest if first is None else min(first, oldest)
        return first

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions a fetch of offsets [start, end) must be told of
        (``collectAbortedTxns``): those whose marker is at ``start`` or after and that began before
        ``end``, in marker order."""
        aborted = self._aborted
        if not aborted:
            return []
        # Markers are in offset order: skip those before ``start``.
        low = bisect.bisect_left(aborted, start, key=_LAST_OFFSET)
        return [txn for txn in aborted[low:] if txn.first_offset < end]

    def record(self, header: BatchHeader, base_offset: int) -> None:
        """Take an appended batch into the state (leader and follower alike; no checks): ``header`` is the
        batch's, ``base_offset`` the offset it got. A control batch is taken by :meth:`record_marker`."""
        if not header.has_producer_id:
            return
        producers = self._producers
        entry = producers.pop(header.producer_id, None)  # back in last: the most recently appended
        if entry is None:
            entry = ProducerEntry(header.producer_id)
            if len(producers) >= self.limit:
                self._make_room()
        producers[header.producer_id] = entry
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = base_offset
            self._ongoing[header.producer_id] = base_offset
        entry.add(
            header.producer_epoch,
            BatchMetadata(
                header.last_sequence,
                base_offset + header.last_offset_delta,
                header.last_offset_delta,
                header.max_timestamp,
            ),
        )

    def _make_room(self) -> None:
        """Forget the producers that appended least recently until one more fits under ``limit``; a
        producer with a transaction open here is kept (its transaction holds the last stable offset)."""
        producers = self._producers
        excess = len(producers) - self.limit + 1
        gone = []
        for pid, entry in producers.items():
            if len(gone) >= excess:
                break
            if entry.current_txn_first_offset is None:
                gone.append(pid)
        for pid in gone:
            del producers[pid]

    def record_marker(
        self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int, offset: int, timestamp: int
    ) -> AbortedTxn | None:
        """Take an appended marker at ``offset`` into the state: the producer's open transaction here ends
        (an aborted one is listed, and returned); its epoch becomes the marker's."""
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerEntry(producer_id)
        aborted = None
        first = entry.current_txn_first_offset
        if first is not None:
            self._ongoing.pop(producer_id, None)
            self._completed.append((first, offset))
            if not commit:
                aborted = AbortedTxn(producer_id, first, offset)
                self._aborted.append(aborted)
        if epoch != entry.epoch:
            assert entry.batches is not None
            entry.batches.clear()
            entry.epoch = epoch
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = timestamp
        return aborted

    def record_stored(self, batch: StoredBatch) -> None:
        """:meth:`record` (or :meth:`record_marker`) for a batch as a log holds it (a follower's copy, a
        log replayed)."""
        if batch.is_synthetic:
            return
        header = batch.header()
        if header.is_control:
            marker = control_marker(batch.render())
            if marker is not None:
                commit, coordinator_epoch = marker
                self.record_marker(
                    header.producer_id,
                    header.producer_epoch,
                    commit,
                    coordinator_epoch,
                    batch.base_offset,
                    header.max_timestamp,
                )
            return
        self.record(header, batch.base_offset)

    def expire(self, now_ms: int, expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> list[int]:
        """Forget the producers whose last batch is ``expiration_ms`` old or more
        (``removeExpiredProducers``, with their batches' timestamps); returns their ids."""
        gone = [
            pid
            for pid, e in self._producers.items()
            if now_ms - e.last_timestamp >= expiration_ms and e.current_txn_first_offset is None
        ]
        for pid in gone:
            del self._producers[pid]
        return sorted(gone)


_LAST_OFFSET: Final = operator.attrgetter("last_offset")


def _transaction_state(
    entry: ProducerEntry, header: BatchHeader, next_offset: int, topic: str, partition: int
) -> Refusal | None:
    """``appendDataBatch``'s last check: no plain batch while the producer's transaction is open here."""
    if entry.current_txn_first_offset is not None and not header.is_transactional:
        return Refusal(
            ErrorCode.INVALID_TXN_STATE,
            f"Expected transactional write from producer {header.producer_id} at offset {next_offset} in "
            f"partition {topic}-{partition}",
        )
    return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerIdAllocator:
    """The producer ids InitProducerId gives idempotent producers: one new id per request, counting up
    from ``start`` (Kafka's controller hands brokers blocks of ids from 0; an idempotent producer always
    gets a new id with epoch 0, ``TransactionCoordinator.handleInitProducerId``). Deterministic: the same
    start and the same requests give the same ids."""

    __slots__ = ("_next",)

    #: The epoch a new idempotent producer starts at.
    FIRST_EPOCH: Final = 0

    def __init__(self, start: int = 0) -> None:
        if start < 0:
            raise ValueError(f"producer ids start at 0 or more, not {start}")
        self._next = start

    def allocate(self) -> int:
        """A producer id no producer had before."""
        producer_id = self._next
        self._next += 1
        return producer_id

    @property
    def next_id(self) -> int:
        return self._next
