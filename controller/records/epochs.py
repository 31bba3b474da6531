"""A replica's leader epoch cache: the offset each leader epoch starts at in its log, with the semantics
of Kafka's ``LeaderEpochFileCache`` (kept in memory; Kafka checkpoints it to a file).

Entries are ``(epoch, start_offset)`` pairs, both strictly increasing. An epoch gets its start when the
replica becomes leader for it (at its log end offset) or appends the first batch stamped with it; a new
entry removes the entries it contradicts (an epoch not below it, or a start offset not below its own).
OffsetForLeaderEpoch answers from :meth:`LeaderEpochCache.end_offset_for`.
"""

from __future__ import annotations

import bisect
import logging
from typing import Final, NamedTuple

log = logging.getLogger(__name__)

__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochEntry", "LeaderEpochCache"]

#: ``OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH`` and ``UNDEFINED_EPOCH_OFFSET``.
UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1


class EpochEntry(NamedTuple):
    """One leader epoch and the offset of its first record (Kafka's ``EpochEntry``)."""

    epoch: int
    start_offset: int


class LeaderEpochCache:
    """The epoch entries of one replica's log (see the module docstring)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[EpochEntry] = []

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` (``assign``): nothing changes when the latest
        entry is the same epoch starting no later; otherwise the entries it contradicts are removed first
        (``maybeTruncateNonMonotonicEntries``). Returns whether the cache changed. Negative values are
        refused as Kafka refuses them (batches stamped -1 carry no epoch: do not assign those)."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid partition leader epoch entry ({epoch}, {start_offset})")
        entries = self._entries
        if entries:
            latest = entries[-1]
            if latest.epoch == epoch and start_offset >= latest.start_offset:
                return False
        removed: list[EpochEntry] = []
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            removed.append(entries.pop())
        if len(removed) > 1 or (removed and removed[0].start_offset != start_offset):
            log.debug("epoch entry (%d, %d) removed conflicting entries %s", epoch, start_offset, removed)
        entries.append(EpochEntry(epoch, start_offset))
        return True

    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def epoch_entry(self, epoch: int) -> EpochEntry | None:
        """The entry of exactly this epoch, if the cache has one."""
        index = bisect.bisect_left(self._entries, epoch, key=_epoch)
        if index < len(self._entries) and self._entries[index].epoch == epoch:
            return self._entries[index]
        return None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` belongs to: the latest entry starting at or before it."""
        index = bisect.bisect_right(self._entries, offset, key=_start)
        return self._entries[index - 1].epoch if index else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``endOffsetFor``: ``(epoch, end offset)`` for a requested epoch.

        - -1 (undefined): ``(-1, -1)``;
        - the latest epoch: that epoch and the log end offset;
        - an epoch with a later one in the cache: the largest cached epoch not above the one asked for,
          and the start offset of the first epoch above it;
        - an epoch older than every cached one: the requested epoch itself and the first entry's start
          offset (the data of that epoch has left the log);
        - an epoch newer than every cached one (or an empty cache): ``(-1, -1)``.
        """
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries and entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(entries, requested_epoch, key=_epoch)
        if higher == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, entries[0].start_offset
        return entries[higher - 1].epoch, entries[higher].start_offset

    def truncate_from_end(self, end_offset: int) -> list[EpochEntry]:
        """``truncateFromEnd``: remove the entries starting at or after ``end_offset`` (the log was cut
        there); returns them."""
        entries = self._entries
        removed: list[EpochEntry] = []
        if end_offset >= 0:
            while entries and entries[-1].start_offset >= end_offset:
                removed.append(entries.pop())
        return removed

    def truncate_from_start(self, start_offset: int) -> list[EpochEntry]:
        """``truncateFromStart``: the log now starts at ``start_offset``; the entries starting at or before
        it go, and the last of them comes back starting at ``start_offset`` (so an entry at exactly that
        offset stays). Returns the entries removed."""
        entries = self._entries
        count = bisect.bisect_right(entries, start_offset, key=_start)
        if not count:
            return []
        removed = entries[:count]
        entries[:count] = [EpochEntry(removed[-1].epoch, start_offset)]
        return removed

    def clear(self) -> None:
        self._entries.clear()

    def copy(self) -> LeaderEpochCache:
        other = LeaderEpochCache()
        other._entries = list(self._entries)
        return other

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self._entries})"


def _epoch(entry: EpochEntry) -> int:
    return entry.epoch


def _start(entry: EpochEntry) -> int:
    return entry.start_offset
