"""One share-partition: a share group's view of one topic partition, as Kafka's ``SharePartition`` keeps it
on the partition's leader (KIP-932).

Records from the share-partition start offset (SPSO) to the end offset (one past the last record ever
acquired) are *in flight*, each in one state:

- AVAILABLE: may be acquired (again), by any member;
- ACQUIRED: locked to one member until it acknowledges it or the lock ends
  (``share.record.lock.duration.ms``); each acquisition counts a delivery;
- ACKNOWLEDGED: accepted by a member: never delivered again;
- ARCHIVED: rejected, a gap, or delivered ``share.delivery.count.limit`` times without being accepted:
  never delivered again.

A member acquires the AVAILABLE records in offset order, then new ones up to the high watermark, at most
``share.partition.max.record.locks`` in flight. It acknowledges each acquired record: accept
(ACKNOWLEDGED), release (AVAILABLE again, or ARCHIVED at the delivery limit), reject (ARCHIVED), gap
(ARCHIVED: an offset with no record) or renew (the lock starts again, KIP-1222). A lock that ends makes the
record AVAILABLE, or ARCHIVED at the delivery limit, and so does the end of the member's share session
(its deliveries count, as a real Kafka 4.4 broker counts them). The SPSO moves past the records at the
start that are ACKNOWLEDGED or ARCHIVED.

This module is the state machine only, on the cluster's clock; what is persisted (the share coordinator's
:class:`ShareState`) and when is :mod:`controller.share.service`'s.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from protocol.codes import ErrorCode

__all__ = [
    "AcknowledgeType",
    "Acquired",
    "Archived",
    "RecordState",
    "SharePartition",
    "ShareState",
    "StateBatch",
]


class RecordState(enum.IntEnum):
    """A record's state, with Kafka's ids (those persisted by the share coordinator)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """ShareFetch's and ShareAcknowledge's acknowledge types (Kafka's ``AcknowledgeType``, 0 a gap)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


#: The types by their wire value (a lookup instead of the enum's call, once per acknowledged range).
_ACKNOWLEDGE_TYPES: dict[int, AcknowledgeType] = {t.value: t for t in AcknowledgeType}


class Acquired(NamedTuple):
    """A range of records acquired in one fetch, with their delivery count (this delivery included)."""

    first_offset: int
    last_offset: int
    delivery_count: int


class StateBatch(NamedTuple):
    """A range of in-flight records in one persisted state (Kafka's ``PersisterStateBatch``)."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass(frozen=True)
class ShareState:
    """What the share coordinator keeps of a share-partition (Kafka's ``ShareSnapshot``): the start offset,
    the state epoch (+1 when an admin rewrites it) and the in-flight records that are not plain AVAILABLE
    with no delivery (ACQUIRED ones are kept AVAILABLE with their delivery count: a lock does not survive
    the leader)."""

    start_offset: int
    state_epoch: int
    leader_epoch: int
    batches: tuple[StateBatch, ...] = ()

    def accepted(self) -> set[int]:
        return {
            o
            for b in self.batches
            if b.state is RecordState.ACKNOWLEDGED
            for o in range(b.first_offset, b.last_offset + 1)
        }


@dataclass(frozen=True)
class Archived:
    """Records a share group will never deliver (again) without their being accepted: rejected, released
    or timed out at the delivery limit, or gaps. Reported, not lost: the group gave up on them."""

    group: str
    topic: str
    partition: int
    first_offset: int
    last_offset: int
    delivery_count: int
    cause: str
    at: int


class _InFlight:
    """One in-flight record."""

    __slots__ = ("deadline", "delivery_count", "member", "state")

    def __init__(self, state: RecordState, delivery_count: int) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member: str | None = None
        self.deadline = 0


class SharePartition:
    """One share group's state of one partition (see the module docstring)."""

    def __init__(
        self,
        group: str,
        topic: str,
        partition: int,
        state: ShareState,
        leader: int,
        leader_epoch: int,
        on_archived: Callable[[Archived], None] | None = None,
    ) -> None:
        self.group = group
        self.topic = topic
        self.partition = partition
        #: The topic's id (a topic made again under the same name is another share-partition).
        self.topic_id: object = None
        #: The leader (and its epoch) whose memory this state is: a new leader loads the persisted state.
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.state_epoch = state.state_epoch
        self.start_offset = state.start_offset
        self._records: dict[int, _InFlight] = {}
        self.end_offset = state.start_offset
        for batch in state.batches:
            for offset in range(max(batch.first_offset, state.start_offset), batch.last_offset + 1):
                kept = RecordState.AVAILABLE if batch.state is RecordState.ACQUIRED else batch.state
                self._records[offset] = _InFlight(kept, batch.delivery_count)
            self.end_offset = max(self.end_offset, batch.last_offset + 1)
        for offset in range(self.start_offset, self.end_offset):
            self._records.setdefault(offset, _InFlight(RecordState.AVAILABLE, 0))
        self._on_archived = on_archived
        self._advance(0)

    # ------------------------------------------------------------------------------------- reading

    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def state_of(self, offset: int) -> tuple[RecordState, int, str | None] | None:
        """(state, delivery count, member) of an in-flight offset; None below the start or past the end."""
        record = self._records.get(offset)
        return None if record is None else (record.state, record.delivery_count, record.member)

    def acquired_by(self, member: str) -> list[int]:
        return [o for o, r in self._records.items() if r.state is RecordState.ACQUIRED and r.member == member]

    def has_available(self, high_watermark: int, max_in_flight: int) -> bool:
        """Whether a fetch now would acquire something."""
        if any(r.state is RecordState.AVAILABLE for r in self._records.values()):
            return True
        return self.end_offset < high_watermark and self.in_flight() < max_in_flight

    def snapshot(self) -> ShareState:
        """The persisted form of this state now (:class:`ShareState`), in runs of one state and count."""
        runs: list[list[int]] = []  # [first, last, state, count]
        available, acquired = RecordState.AVAILABLE, RecordState.ACQUIRED
        for offset in sorted(self._records):
            record = self._records[offset]
            state = available if record.state is acquired else record.state
            count = record.delivery_count
            if state is available and count == 0:
                continue
            if runs:
                last = runs[-1]
                if last[1] == offset - 1 and last[2] is state and last[3] == count:
                    last[1] = offset
                    continue
            runs.append([offset, offset, state, count])
        batches = tuple(StateBatch(a, b, RecordState(c), d) for a, b, c, d in runs)
        return ShareState(self.start_offset, self.state_epoch, self.leader_epoch, batches)

    # ------------------------------------------------------------------------------------- acquiring

    def acquire(
        self,
        member: str,
        high_watermark: int,
        max_records: int,
        max_in_flight: int,
        deadline: int,
        batch_end: Callable[[int], int] | None = None,
        strict: bool = False,
    ) -> list[Acquired]:
        """Locks records to ``member`` until ``deadline``: the AVAILABLE in-flight ones in offset order,
        then new ones below ``high_watermark`` while fewer than ``max_in_flight`` are in flight; at most
        ``max_records`` unless a batch would be cut (``batch_end(offset)``: one past the log batch holding
        ``offset``; Kafka acquires whole batches in its batch-optimized mode), exactly so when ``strict``
        (record-limit mode). Returns the ranges acquired, each with one delivery count."""
        taken: list[int] = []
        for offset in sorted(o for o, r in self._records.items() if r.state is RecordState.AVAILABLE):
            if len(taken) >= max_records:
                break
            taken.append(offset)
        offset = self.end_offset
        limit = min(high_watermark, self.start_offset + max_in_flight)
        while offset < limit and len(taken) < max_records:
            end = min(batch_end(offset), limit) if batch_end is not None else offset + 1
            if strict:
                end = min(end, offset + max_records - len(taken))
            end = max(end, offset + 1)
            for o in range(offset, end):
                self._records[o] = _InFlight(RecordState.AVAILABLE, 0)
                taken.append(o)
            offset = end
        self.end_offset = max(self.end_offset, offset)
        out: list[Acquired] = []
        records = self._records
        first = last = count = -1  # the run being gathered: offsets in a row with one delivery count
        for o in sorted(taken):
            record = records[o]
            record.state = RecordState.ACQUIRED
            record.delivery_count += 1
            record.member = member
            record.deadline = deadline
            if o == last + 1 and record.delivery_count == count:
                last = o
                continue
            if first >= 0:
                out.append(Acquired(first, last, count))
            first = last = o
            count = record.delivery_count
        if first >= 0:
            out.append(Acquired(first, last, count))
        return out

    # ------------------------------------------------------------------------------------- acknowledging

    def acknowledge(
        self,
        member: str,
        batches: Iterable[tuple[int, int, list[int]]],
        delivery_limit: int,
        deadline: int,
        now: int,
    ) -> tuple[ErrorCode, str | None]:
        """Acknowledges ``(first, last, types)`` ranges for ``member`` (one type for the range, or one per
        offset): all or nothing, INVALID_RECORD_STATE (with Kafka's message) when an offset is not in flight,
        not ACQUIRED or acquired by another member; INVALID_REQUEST for a malformed range."""
        changes: list[tuple[int, AcknowledgeType]] = []
        for first, last, types in batches:
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                return (
                    ErrorCode.INVALID_REQUEST,
                    f"Invalid acknowledgement batch {first}-{last} with {len(types)} type(s).",
                )
            try:
                kinds = [_ACKNOWLEDGE_TYPES[raw] for raw in types]
            except KeyError as unknown:
                return ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {unknown.args[0]}"
            for i, offset in enumerate(range(first, last + 1)):
                kind = kinds[0] if len(kinds) == 1 else kinds[i]
                record = self._records.get(offset)
                if record is None or record.state is not RecordState.ACQUIRED or record.member != member:
                    return (
                        ErrorCode.INVALID_RECORD_STATE,
                        f"The record state is invalid. The acknowledgement of delivery could not be completed "
                        f"for offset {offset}.",
                    )
                changes.append((offset, kind))
        archived: list[tuple[int, int, str]] = []
        for offset, kind in changes:
            record = self._records[offset]
            if kind is AcknowledgeType.RENEW:
                record.deadline = deadline
                continue
            record.member = None
            if kind is AcknowledgeType.ACCEPT:
                record.state = RecordState.ACKNOWLEDGED
            elif kind is AcknowledgeType.RELEASE:
                if record.delivery_count >= delivery_limit:
                    record.state = RecordState.ARCHIVED
                    archived.append((offset, record.delivery_count, "released at the delivery count limit"))
                else:
                    record.state = RecordState.AVAILABLE
            else:
                record.state = RecordState.ARCHIVED
                why = "rejected by its member" if kind is AcknowledgeType.REJECT else "acknowledged as a gap"
                archived.append((offset, record.delivery_count, why))
        self._report(archived, now)
        self._advance(now)
        return ErrorCode.NONE, None

    def expire(self, now: int, delivery_limit: int) -> bool:
        """Ends the locks whose deadline has passed: AVAILABLE again, or ARCHIVED at the delivery limit.
        Whether any ended."""
        archived: list[tuple[int, int, str]] = []
        ended = False
        for offset, record in self._records.items():
            if record.state is RecordState.ACQUIRED and record.deadline <= now:
                ended = True
                record.member = None
                if record.delivery_count >= delivery_limit:
                    record.state = RecordState.ARCHIVED
                    archived.append((offset, record.delivery_count, "lock ended at the delivery count limit"))
                else:
                    record.state = RecordState.AVAILABLE
        self._report(archived, now)
        self._advance(now)
        return ended

    def next_deadline(self) -> int | None:
        deadlines = [r.deadline for r in self._records.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def release(self, member: str, delivery_limit: int, now: int) -> bool:
        """Releases what ``member`` holds (its share session closed, or its group session ended): AVAILABLE
        again, or ARCHIVED at the delivery limit. Whether anything was released."""
        archived: list[tuple[int, int, str]] = []
        released = False
        for offset, record in self._records.items():
            if record.state is RecordState.ACQUIRED and record.member == member:
                released = True
                record.member = None
                if record.delivery_count >= delivery_limit:
                    record.state = RecordState.ARCHIVED
                    archived.append((offset, record.delivery_count, "released at the delivery count limit"))
                else:
                    record.state = RecordState.AVAILABLE
        self._report(archived, now)
        self._advance(now)
        return released

    def archive(self, offsets: Iterable[int], member: str, cause: str, now: int) -> None:
        """Archives records just acquired by ``member`` that it must not get (Kafka's share-partition
        archives the records of aborted transactions so under read_committed): reported with ``cause``."""
        archived: list[tuple[int, int, str]] = []
        for offset in offsets:
            record = self._records.get(offset)
            if record is not None and record.state is RecordState.ACQUIRED and record.member == member:
                record.state = RecordState.ARCHIVED
                record.member = None
                archived.append((offset, record.delivery_count, cause))
        self._report(archived, now)
        self._advance(now)

    def release_range(self, first: int, last: int, member: str) -> None:
        """Gives back records just acquired that the answer could not carry (over its byte budget): they
        were not delivered, so their delivery is not counted."""
        for offset in range(first, last + 1):
            record = self._records.get(offset)
            if record is not None and record.state is RecordState.ACQUIRED and record.member == member:
                record.state = RecordState.AVAILABLE
                record.member = None
                record.delivery_count = max(0, record.delivery_count - 1)

    def restore(
        self, saved: dict[int, tuple[RecordState, int, str | None, int]], start: int, end: int
    ) -> None:
        """Puts records back as :meth:`save` kept them (an acknowledgement whose write failed)."""
        self.start_offset, self.end_offset = start, end
        for offset, (state, count, member, deadline) in saved.items():
            record = self._records.setdefault(offset, _InFlight(state, count))
            record.state, record.delivery_count, record.member, record.deadline = (
                state,
                count,
                member,
                deadline,
            )

    def save(
        self, batches: Iterable[tuple[int, int, list[int]]]
    ) -> tuple[dict[int, tuple[RecordState, int, str | None, int]], int, int]:
        """What an acknowledgement of ``batches`` may change, to :meth:`restore` it."""
        saved = {}
        for first, last, _ in batches:
            for offset in range(first, last + 1):
                r = self._records.get(offset)
                if r is not None:
                    saved[offset] = (r.state, r.delivery_count, r.member, r.deadline)
        start = self.start_offset
        for offset in range(start, self.end_offset):  # what the start offset may move past
            r = self._records.get(offset)
            if r is None or r.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                if offset not in saved:
                    break
            elif offset not in saved:
                saved[offset] = (r.state, r.delivery_count, r.member, r.deadline)
        return saved, start, self.end_offset

    def reset(self, start_offset: int) -> None:
        """An admin set the start offset (AlterShareGroupOffsets): nothing in flight, a new state epoch."""
        self._records.clear()
        self.start_offset = self.end_offset = start_offset
        self.state_epoch += 1

    def move_start(self, log_start: int, now: int) -> None:
        """The log's start moved past the SPSO (retention, DeleteRecords): the records gone are no longer in
        flight (Kafka moves the SPSO to the log start)."""
        if log_start <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start, self.end_offset)):
            self._records.pop(offset, None)
        self.start_offset = log_start
        self.end_offset = max(self.end_offset, log_start)

    # ------------------------------------------------------------------------------------- internals

    def _advance(self, now: int) -> None:
        start = self.start_offset
        while start < self.end_offset:
            record = self._records.get(start)
            if record is None or record.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self._records[start]
            start += 1
        self.start_offset = start

    def _report(self, archived: list[tuple[int, int, str]], now: int) -> None:
        if self._on_archived is None or not archived:
            return
        archived.sort()
        run: list[tuple[int, int, str]] = []
        for item in archived + [(-2, -1, "")]:
            if run and (item[0] != run[-1][0] + 1 or item[1:] != run[-1][1:]):
                first, count, cause = run[0]
                self._on_archived(
                    Archived(self.group, self.topic, self.partition, first, run[-1][0], count, cause, now)
                )
                run = []
            run.append(item)
