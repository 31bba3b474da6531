"""One replica's log in memory: its batches, log start and end offsets, size, and leader epoch cache.

A log holds :class:`StoredBatch` entries in offset order. The leader makes them
(:meth:`Log.append_as_leader` stamps a client's batch with its offsets and epoch); a follower appends the
leader's own entry objects (:meth:`Log.append_copy`), so every replica of a partition shares one copy of
each batch's bytes: a replica costs a list of references, not its data. Entries never change once
made. A *synthetic run* is an entry with no bytes: ``count`` records with null keys and values, as the
simulator's synthetic workload appends them; its bytes are made when a reader asks
(:meth:`StoredBatch.render`), and it can be cut anywhere (a follower may copy part of it).

What a log answers follows Kafka's ``UnifiedLog`` and ``LocalLog``: reads return whole batches (the first
may start before the offset asked for) up to a bound offset (the high watermark for consumers), within
a byte budget but at least one batch when asked (``minOneMessage``); truncation and log start moves keep
the epoch cache in step (``truncateFromEnd``, ``truncateFromStart``); offsets by timestamp as
``FileRecords.searchForTimestamp``, from what the leader read of each batch's records at append
(:class:`~controller.records.validator.BatchTimestamps`) and the largest timestamp of every block of
:data:`_BLOCK` batches (Kafka's time index plays that part): a lookup reads no batch and costs about
:data:`_BLOCK` steps plus one per block, however long the log. What belongs to the partition (the high
watermark, who leads, acks) is not here.
"""

from __future__ import annotations

import bisect
import logging
import operator
from array import array
from collections.abc import Iterator
from typing import Final, NamedTuple

from controller.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchHeader,
    read_header,
    stamp_head,
    synthetic_batch,
    synthetic_size,
)
from controller.records.checks import ClientBatch
from controller.records.epochs import LeaderEpochCache
from controller.records.validator import BatchTimestamps, read_timestamps

log = logging.getLogger(__name__)

__all__ = ["ACKS_ALL", "Log", "StoredBatch", "TimestampAndOffset", "divergence_offset", "join_batches"]

#: Produce's ``Acks`` for "every in-sync replica" (Kafka's ``acks=all``; 1: the leader, 0: none).
ACKS_ALL: Final = -1
#: A batch read in place is kept as a view of its request's frame when it is at least 1/_KEPT_SHARE of
#: the frame (else copied): what a log holds beyond its batches' bytes is bounded so.
_KEPT_SHARE: Final = 2
#: Batches per block of the timestamp index (a power of two: ``index >> _BLOCK_SHIFT`` is the block).
_BLOCK_SHIFT: Final = 8
_BLOCK: Final = 1 << _BLOCK_SHIFT


class TimestampAndOffset(NamedTuple):
    """A ListOffsets answer from a log (``FileRecords.TimestampAndOffset``): -1 timestamp for earliest
    and latest; ``leader_epoch`` None when unknown."""

    timestamp: int
    offset: int
    leader_epoch: int | None


class StoredBatch:
    """One batch of a log and what a log needs to know of it without reading it. Shared by every replica
    that holds it; never changed.

    A client's batch is kept as the client's bytes (``source``: the request's own ``records`` bytes, or a
    read-only view of the request's frame when the records were read in place and are most of it, so
    appending copies nothing; a read-only view is taken to be of bytes that never change, as a frame's) and the head the leader stamped over their
    first bytes (``stamped_head``, see :func:`~controller.records.batch.stamp_head`); its bytes as a
    consumer gets them are the head then the rest of the source (:meth:`pieces`, :meth:`render`). A
    synthetic run has neither.

    ``acks`` is the acks level the leader appended the batch with (``Produce``'s ``Acks``: -1 all, 1 the
    leader, 0 none), so that a loss can say whether the batch had been acknowledged; a synthetic run, and
    a batch a log did not append itself, count as ``acks=all``.

    ``max_timestamp`` is the records' largest timestamp and ``max_offset`` the offset of the first record
    with it; ``steps`` (None when that record is the only one raising the running maximum) the offset
    deltas and timestamps of the records that raise it, in order (see
    :class:`~controller.records.validator.BatchTimestamps`): what ListOffsets by timestamp reads.
    """

    __slots__ = (
        "acks",
        "base_offset",
        "last_offset",
        "leader_epoch",
        "max_offset",
        "max_timestamp",
        "size",
        "source",
        "stamped_head",
        "steps",
    )

    def __init__(
        self,
        source: bytes | memoryview | None,
        stamped_head: bytes,
        base_offset: int,
        last_offset: int,
        leader_epoch: int,
        max_timestamp: int,
        size: int,
        acks: int = ACKS_ALL,
        max_offset: int | None = None,
        steps: tuple[array[int], array[int]] | None = None,
    ) -> None:
        self.acks = acks
        self.source = source
        self.stamped_head = stamped_head
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.leader_epoch = leader_epoch
        self.max_timestamp = max_timestamp
        self.max_offset = base_offset if max_offset is None else max_offset
        self.steps = steps
        self.size = size

    @classmethod
    def from_bytes(cls, data: bytes) -> StoredBatch:
        """An entry for a whole stamped v2 batch (one already in some log, or read back from a Fetch): its
        records' timestamps are read (the batch is taken to be good)."""
        header = read_header(data, 0)
        timestamps = read_timestamps(ClientBatch(memoryview(data), header))
        return cls(
            data,
            b"",
            header.base_offset,
            header.last_offset,
            header.partition_leader_epoch,
            header.max_timestamp,
            len(data),
            max_offset=header.base_offset + timestamps.max_delta,
            steps=timestamps.steps,
        )

    @classmethod
    def synthetic(cls, base_offset: int, count: int, leader_epoch: int, timestamp_ms: int) -> StoredBatch:
        """A synthetic run of ``count`` null records from ``base_offset``, all stamped ``timestamp_ms``."""
        if count <= 0:
            raise ValueError(f"a synthetic run needs at least one record, not {count}")
        return cls(
            None, b"", base_offset, base_offset + count - 1, leader_epoch, timestamp_ms, synthetic_size(count)
        )

    @property
    def count(self) -> int:
        """The offsets the batch spans (its records, for a client's batch)."""
        return self.last_offset - self.base_offset + 1

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def is_synthetic(self) -> bool:
        return self.source is None

    def header(self) -> BatchHeader:
        """The batch's header as stamped (made for a synthetic run: no producer, CreateTime)."""
        source, head = self.source, self.stamped_head
        if source is None:
            return BatchHeader(
                self.base_offset,
                self.size - LOG_OVERHEAD,
                self.leader_epoch,
                MAGIC_V2,
                0,
                0,
                self.last_offset - self.base_offset,
                self.max_timestamp,
                self.max_timestamp,
                NO_PRODUCER_ID,
                NO_PRODUCER_EPOCH,
                NO_SEQUENCE,
                self.count,
            )
        if not head:
            return read_header(source, 0)
        return read_header(head + bytes(source[len(head) : HEADER_SIZE]), 0)

    def pieces(self) -> tuple[bytes | memoryview, ...]:
        """The batch's bytes in pieces, for joining into a Fetch answer without an extra copy."""
        if self.source is None:
            return (self.render(),)
        if not self.stamped_head:
            return (self.source,)
        return (self.stamped_head, memoryview(self.source)[len(self.stamped_head) :])

    def render(self) -> bytes:
        """The batch's bytes as a consumer gets them (made for a synthetic run: the same run gives the same
        bytes)."""
        if self.source is None:
            return synthetic_batch(self.base_offset, self.count, self.leader_epoch, self.max_timestamp)
        return b"".join(self.pieces())

    def cut(self, start: int, end: int) -> StoredBatch:
        """The offsets [start, end) of a synthetic run, as a run of its own (what a follower that copies
        part of the run holds); the run itself when that is all of it."""
        if self.source is not None:
            raise ValueError("only a synthetic run can be cut")
        start, end = max(start, self.base_offset), min(end, self.last_offset + 1)
        if start == self.base_offset and end == self.last_offset + 1:
            return self
        return StoredBatch.synthetic(start, end - start, self.leader_epoch, self.max_timestamp)

    def first_at_or_after(self, timestamp: int, start: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record at offset ``start`` or later whose timestamp is
        ``timestamp`` or later (``timestamp`` at most :attr:`max_timestamp`), from the steps: the first
        such record raises the running maximum, unless a record below ``start`` (a log start inside this
        batch) had raised it past ``timestamp`` already, when the first step past ``start`` is taken
        (``docs/fidelity.md``). None when no step qualifies."""
        steps = self.steps
        if steps is None:
            return (self.max_timestamp, self.max_offset) if self.max_offset >= start else None
        deltas, stamps = steps
        base = self.base_offset
        for k in range(bisect.bisect_left(stamps, timestamp), len(stamps)):
            if base + deltas[k] >= start:
                return stamps[k], base + deltas[k]
        return None

    def __repr__(self) -> str:
        kind = "synthetic" if self.source is None else f"{self.size} bytes"
        return f"StoredBatch([{self.base_offset}, {self.last_offset}], epoch {self.leader_epoch}, {kind})"


def join_batches(batches: list[StoredBatch]) -> bytes:
    """The ``records`` field of a Fetch answer for these batches, in one copy."""
    if len(batches) == 1:
        return batches[0].render()
    return b"".join([piece for batch in batches for piece in batch.pieces()])


_LAST_OFFSET = operator.attrgetter("last_offset")


#: What a removed entry's slot holds until the log's list is compacted (see ``Log._drop_head``): no bytes.
_GONE: Final = StoredBatch(None, b"", -1, -1, NO_PARTITION_LEADER_EPOCH, -1, 0)


class Log:
    """One replica's log (see the module docstring). ``log_start_offset`` and ``log_end_offset`` are
    Kafka's; ``size_bytes`` counts the batches held (a synthetic run as its rendered size)."""

    __slots__ = ("_blocks", "_entries", "_head", "epochs", "log_end_offset", "log_start_offset", "size_bytes")

    def __init__(self, start_offset: int = 0) -> None:
        self._entries: list[StoredBatch] = []
        self._head = 0  # entries before it have left the log (dropped lazily, see _drop_head)
        #: The largest MaxTimestamp of each block of _BLOCK entries (of ``_entries``, dropped ones too).
        self._blocks: list[int] = []
        self.log_start_offset = start_offset
        self.log_end_offset = start_offset
        self.size_bytes = 0
        self.epochs = LeaderEpochCache()

    # -- what it holds ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries) - self._head

    def batches(self) -> Iterator[StoredBatch]:
        """The entries, oldest first."""
        for index in range(self._head, len(self._entries)):
            yield self._entries[index]

    def last_batch(self) -> StoredBatch | None:
        """The newest entry, if the log holds any."""
        return self._entries[-1] if len(self._entries) > self._head else None

    def batch_at(self, offset: int) -> StoredBatch | None:
        """The entry holding ``offset``, if the log has it."""
        index = self._index_of(offset)
        if index == len(self._entries):
            return None
        entry = self._entries[index]
        return entry if entry.base_offset <= offset else None

    def _index_of(self, offset: int) -> int:
        """The index of the first entry whose last offset is ``offset`` or more."""
        return bisect.bisect_left(self._entries, offset, lo=self._head, key=_LAST_OFFSET)

    # -- appending --------------------------------------------------------------------------------------

    def append_as_leader(
        self,
        batch: ClientBatch,
        leader_epoch: int,
        log_append_time_ms: int | None = None,
        acks: int = ACKS_ALL,
    ) -> StoredBatch:
        """Append a client's checked batch as the leader: it gets the next offsets and ``leader_epoch``
        (and, for a LogAppendTime topic, ``log_append_time_ms``) stamped on a new head; the client's
        bytes are kept as they are (not copied when the request's records are exactly the batch).
        ``acks`` is the Produce's acks level, kept on the entry."""
        base = self.log_end_offset
        view, header = batch.data, batch.header
        timestamps: BatchTimestamps = batch.timestamps or read_timestamps(batch)
        if log_append_time_ms is not None:
            timestamps = BatchTimestamps(log_append_time_ms, 0)
        head = stamp_head(view, base, leader_epoch, log_append_time_ms, timestamps.max_timestamp)
        source: bytes | memoryview = view.obj
        if isinstance(source, bytes) and len(source) == len(view) == header.size:
            pass  # the request's own records bytes, exactly the batch
        elif view.readonly and header.size * _KEPT_SHARE >= len(source):
            # Most of a request's frame, read in place (bytes, or the read-only view of a big frame that
            # nothing changes: controller.connection): kept as a view, not copied; it keeps the frame
            # alive while the batch is in some log.
            source = view if len(view) == header.size else view[: header.size]
        else:
            # Bytes that may change, or a small part of a frame (which a view would keep whole): copied.
            source = bytes(view[: header.size])
        entry = StoredBatch(
            source,
            head,
            base,
            base + header.last_offset_delta,
            leader_epoch,
            timestamps.max_timestamp,
            header.size,
            acks,
            base + timestamps.max_delta,
            timestamps.steps,
        )
        self._append(entry)
        return entry

    def append_synthetic(self, count: int, leader_epoch: int, timestamp_ms: int) -> StoredBatch:
        """Append a synthetic run of ``count`` records as the leader."""
        entry = StoredBatch.synthetic(self.log_end_offset, count, leader_epoch, timestamp_ms)
        self._append(entry)
        return entry

    def extend_synthetic(self, count: int, leader_epoch: int, timestamp_ms: int) -> StoredBatch:
        """:meth:`append_synthetic`, merged into the last entry when that is a synthetic run of the same
        epoch (the merged run carries ``timestamp_ms``): a synthetic workload appends every tick, and a
        log grows by records, not by an entry a tick. Followers hold their own runs (a run is cut when
        copied), so replacing the leader's last run changes no other log."""
        entries = self._entries
        if len(entries) > self._head:
            last = entries[-1]
            if last.source is None and last.leader_epoch == leader_epoch and count > 0:
                end = last.last_offset + count
                size = synthetic_size(end - last.base_offset + 1)
                merged = StoredBatch(None, b"", last.base_offset, end, leader_epoch, timestamp_ms, size)
                entries[-1] = merged
                self._block_changed(len(entries) - 1, last.max_timestamp, timestamp_ms)
                self.log_end_offset = end + 1
                self.size_bytes += size - last.size
                return merged
        return self.append_synthetic(count, leader_epoch, timestamp_ms)

    def append_copy(self, entry: StoredBatch) -> None:
        """Append an entry of the leader's log as a follower copies it (the same object: no bytes are
        copied). It must start at this log's end offset."""
        if entry.base_offset != self.log_end_offset:
            raise ValueError(
                f"a copied batch must start at the log end offset {self.log_end_offset}, not {entry.base_offset}"
            )
        self._append(entry)

    def _append(self, entry: StoredBatch) -> None:
        if entry.leader_epoch != NO_PARTITION_LEADER_EPOCH:
            self.epochs.assign(entry.leader_epoch, entry.base_offset)
        blocks = self._blocks
        block = len(self._entries) >> _BLOCK_SHIFT
        if block == len(blocks):
            blocks.append(entry.max_timestamp)
        elif entry.max_timestamp > blocks[block]:
            blocks[block] = entry.max_timestamp
        self._entries.append(entry)
        self.log_end_offset = entry.last_offset + 1
        self.size_bytes += entry.size

    def become_leader(self, leader_epoch: int) -> None:
        """The replica leads from ``leader_epoch`` on: the epoch starts at its log end offset, before any
        batch of it is appended (``Partition.makeLeader`` assigns it so)."""
        self.epochs.assign(leader_epoch, self.log_end_offset)

    # -- reading ----------------------------------------------------------------------------------------

    def read(self, offset: int, max_offset: int, max_bytes: int, min_one: bool = True) -> list[StoredBatch]:
        """The batches a fetch from ``offset`` gets: from the one holding ``offset`` (which may start before
        it), every batch wholly below ``max_offset`` (the high watermark for a consumer, the log end
        offset for a follower), while their sizes add up to at most ``max_bytes``; with ``min_one`` the
        first batch even when it alone is larger (Kafka's ``minOneMessage``, KIP-74). A synthetic run
        gives only its part from ``offset`` and below ``max_offset``. The offset must lie in
        [log start, log end] (the caller answers OFFSET_OUT_OF_RANGE otherwise); at or past
        ``max_offset`` nothing is read.

        Kafka cuts its answer at the byte budget, mid-batch, and the client drops the partial batch; the
        whole batches below the budget are the same records.
        """
        end = min(max_offset, self.log_end_offset)
        if offset >= end:
            return []
        entries = self._entries
        index = self._index_of(offset)
        out: list[StoredBatch] = []
        total = 0
        while index < len(entries):
            entry = entries[index]
            if entry.source is None:
                entry = entry.cut(offset, end)
            elif entry.last_offset >= end:
                break
            if total + entry.size > max_bytes and (out or not min_one):
                break
            out.append(entry)
            total += entry.size
            if entry.last_offset >= end - 1:
                break
            index += 1
        return out

    # -- removing ---------------------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> list[StoredBatch]:
        """Cut the log so that it ends before ``offset`` (``UnifiedLog.truncateTo``), as a follower does
        when its leader's log is shorter or diverges. A client's batch that holds ``offset`` goes whole,
        as Kafka truncates its segments at batch boundaries (the log then ends at that batch's base
        offset); a synthetic run is cut exactly. The epoch cache loses the epochs starting at or after
        the new end. Returns what was removed (a cut run's removed part included), oldest first."""
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset ({offset})")
        if offset >= self.log_end_offset:
            # Kafka truncates the epoch cache all the same: an epoch assigned at the end with no batch
            # (a leader that appended nothing) goes.
            self.epochs.truncate_from_end(self.log_end_offset)
            return []
        entries = self._entries
        index = self._index_of(offset)
        removed = entries[index:]
        del entries[index:]
        self.size_bytes -= sum(entry.size for entry in removed)
        if removed and removed[0].base_offset < offset and removed[0].source is None:
            cut = removed[0]
            kept = cut.cut(cut.base_offset, offset)
            entries.append(kept)
            self.size_bytes += kept.size
            removed[0] = cut.cut(offset, cut.last_offset + 1)
        self._reblock(index)
        if len(entries) > self._head:
            self.log_end_offset = entries[-1].last_offset + 1
        else:
            self.log_end_offset = removed[0].base_offset if removed else offset
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.epochs.truncate_from_end(self.log_end_offset)
        return removed

    def move_start(self, offset: int) -> list[StoredBatch]:
        """Move the log start offset up to ``offset`` (DeleteRecords; ``maybeIncrementLogStartOffset``):
        the batches wholly below it leave the log, a batch holding it stays whole (its records below the
        new start are no longer served by offset, as in Kafka). The caller checks ``offset`` against the
        high watermark (OFFSET_OUT_OF_RANGE above it). Returns the batches removed."""
        if offset <= self.log_start_offset:
            return []
        if offset > self.log_end_offset:
            raise ValueError(f"log start {offset} would pass the log end offset {self.log_end_offset}")
        self.log_start_offset = offset
        self.epochs.truncate_from_start(offset)
        return self._drop_head(self._index_of(offset))

    def retain_bytes(self, retention_bytes: int, upper_bound: int) -> list[StoredBatch]:
        """Drop the oldest batches while the log would still hold ``retention_bytes`` or more without them
        (Kafka's ``retention.bytes`` deletes whole segments so: the log keeps at least that much) and
        they lie wholly below ``upper_bound`` (Kafka deletes nothing at or above the high watermark). A
        batch is this log's segment. The log start moves to the first batch kept. A negative
        ``retention_bytes`` keeps everything. Returns the batches removed."""
        if retention_bytes < 0:
            return []
        entries = self._entries
        index = self._head
        size = self.size_bytes
        while index < len(entries):
            entry = entries[index]
            if size - entry.size < retention_bytes or entry.last_offset >= upper_bound:
                break
            size -= entry.size
            index += 1
        if index == self._head:
            return []
        removed = self._drop_head(index)
        start = entries[self._head].base_offset if len(self) else self.log_end_offset
        if start > self.log_start_offset:
            self.log_start_offset = start
            self.epochs.truncate_from_start(start)
        return removed

    def _drop_head(self, index: int) -> list[StoredBatch]:
        """Remove the entries before ``index``: the list is compacted only when most of it is gone, so
        dropping batches one by one stays cheap; until then their slots hold :data:`_GONE`, so that a
        removed batch's bytes (and the request frame a kept view holds) are freed now: a log bounded by
        ``retention.bytes`` held up to twice its bound while its head waited for the compaction."""
        removed = self._entries[self._head : index]
        self._entries[self._head : index] = [_GONE] * len(removed)
        self._head = index
        self.size_bytes -= sum(entry.size for entry in removed)
        if self._head > 64 and self._head * 2 > len(self._entries):
            del self._entries[: self._head]
            self._head = 0
            self._reblock(0)
        return removed

    # -- the timestamp index ----------------------------------------------------------------------------

    def _block_changed(self, index: int, old: int, new: int) -> None:
        """The entry at ``index`` changed its MaxTimestamp from ``old`` to ``new``."""
        block = index >> _BLOCK_SHIFT
        if new >= self._blocks[block]:
            self._blocks[block] = new
        elif old >= self._blocks[block]:  # it held the block's largest: look again
            self._reblock(index)

    def _reblock(self, index: int) -> None:
        """The block maxima again from the block of ``index`` on (entries there changed or went)."""
        entries, blocks = self._entries, self._blocks
        block = index >> _BLOCK_SHIFT
        del blocks[block:]
        for start in range(block << _BLOCK_SHIFT, len(entries), _BLOCK):
            blocks.append(max(entry.max_timestamp for entry in entries[start : start + _BLOCK]))

    def _first_at_least(self, timestamp: int, index: int) -> int | None:
        """The first index from ``index`` on (at or after the head) whose entry's MaxTimestamp is
        ``timestamp`` or more: the rest of ``index``'s block entry by entry, then block by block."""
        entries, blocks = self._entries, self._blocks
        end = len(entries)
        block_end = min(end, ((index >> _BLOCK_SHIFT) + 1) << _BLOCK_SHIFT)
        while index < block_end:
            if entries[index].max_timestamp >= timestamp:
                return index
            index += 1
        if index >= end:
            return None
        block = index >> _BLOCK_SHIFT
        while block < len(blocks) and blocks[block] < timestamp:
            block += 1
        if block >= len(blocks):
            return None
        index = block << _BLOCK_SHIFT
        while entries[index].max_timestamp < timestamp:
            index += 1
        return index

    # -- epochs and timestamps --------------------------------------------------------------------------

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        """``UnifiedLog.endOffsetForEpoch``: ``(epoch, end offset)`` from the epoch cache (see
        :meth:`LeaderEpochCache.end_offset_for`), or None where Kafka answers the undefined (-1, -1)."""
        found_epoch, found_offset = self.epochs.end_offset_for(epoch, self.log_end_offset)
        if found_offset == -1:
            return None
        return found_epoch, found_offset

    def earliest(self) -> TimestampAndOffset:
        """ListOffsets -2: the log start offset, with the earliest cached epoch when it starts there or
        before (``fetchOffsetByTimestamp``)."""
        first = self.epochs.earliest_entry()
        epoch = first.epoch if first is not None and first.start_offset <= self.log_start_offset else None
        return TimestampAndOffset(NO_TIMESTAMP, self.log_start_offset, epoch)

    def max_timestamp(self) -> TimestampAndOffset | None:
        """ListOffsets -3: the first record with the largest timestamp in the log (the first batch with
        the largest MaxTimestamp, then its first record with that timestamp, as
        ``RecordBatch.offsetOfMaxTimestamp``); None for an empty log."""
        entries, blocks = self._entries, self._blocks
        head, end = self._head, len(entries)
        if head >= end:
            return None
        block_end = min(end, ((head >> _BLOCK_SHIFT) + 1) << _BLOCK_SHIFT)
        largest = max(entry.max_timestamp for entry in entries[head:block_end])
        later = blocks[(block_end >> _BLOCK_SHIFT) :] if block_end < end else []
        if later:
            largest = max(largest, max(later))
        index = self._first_at_least(largest, head)
        assert index is not None
        best = entries[index]
        return TimestampAndOffset(best.max_timestamp, best.max_offset, _epoch_or_none(best.leader_epoch))

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets by timestamp: the first record at or after the log start offset whose timestamp is
        ``timestamp`` or later (``FileRecords.searchForTimestamp``), or None. No batch is read: the batch
        is found by the block maxima, the record by its steps (:meth:`StoredBatch.first_at_or_after`)."""
        start = self.log_start_offset
        entries = self._entries
        index = self._first_at_least(timestamp, self._head)
        while index is not None:
            entry = entries[index]
            if entry.last_offset >= start:
                found = entry.first_at_or_after(timestamp, start)
                if found is not None:
                    return TimestampAndOffset(found[0], found[1], _epoch_or_none(entry.leader_epoch))
            index = self._first_at_least(timestamp, index + 1)
        return None

    def __repr__(self) -> str:
        return (
            f"Log([{self.log_start_offset}, {self.log_end_offset}), {len(self)} batches, "
            f"{self.size_bytes} bytes, {self.epochs!r})"
        )


def divergence_offset(follower: Log, leader: Log) -> int:
    """The offset a follower truncates its log to before it copies from ``leader``: where their logs
    stop agreeing, found from the two epoch caches as Kafka's follower finds it (it asks the leader for
    the end of its latest epoch, OffsetForLeaderEpoch or Fetch's DivergingEpoch, and truncates to the
    smaller of that and its own end of the epoch the leader names, asking again while the leader names
    an epoch it does not have: ``AbstractFetcherThread.getOffsetTruncationState``). Without epochs to
    compare, the follower keeps what the leader's log end offset allows. Changes neither log."""
    mine = follower.epochs.copy()
    end = follower.log_end_offset
    while True:
        epoch = mine.latest_epoch()
        if epoch is None:
            return min(end, leader.log_end_offset)
        leader_epoch, leader_end = leader.epochs.end_offset_for(epoch, leader.log_end_offset)
        if leader_end == -1:
            return min(end, leader.log_end_offset)
        my_epoch, my_end = mine.end_offset_for(leader_epoch, end)
        if my_end == -1:
            return min(leader_end, end)
        if my_epoch == leader_epoch:
            return min(my_end, leader_end, end)
        # The leader names an epoch this log does not have: cut to the end of the largest one below it
        # and ask again with what is left.
        end = min(my_end, end)
        mine.truncate_from_end(end)


def _epoch_or_none(epoch: int) -> int | None:
    return epoch if epoch >= 0 else None
