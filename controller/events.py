"""The event log: every change of broker or partition state, in order, with its clock time and its cause.

Readable in-process (:meth:`EventLog.since`, ``ServerThread.events()``) and printed at debug level. With a
virtual clock and a seed, the same requests and controls give the same log, event for event.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["Event", "EventLog", "as_event", "show_value"]


def show_value(value: Any) -> str:
    """A changed field's value as the log prints it (lists as ``[1,2]``)."""
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


@dataclass(frozen=True, slots=True)
class Event:
    """One change: ``subject`` (``broker 3``, ``orders-0``, ``topic orders``) changed ``changes``
    (``(field, before, after)`` triples) at ``time`` (clock ms) because of ``cause``."""

    seq: int
    time: int
    kind: str  # "broker", "partition", "topic", "config", "group" or "loss" (acknowledged records lost)
    subject: str
    changes: tuple[tuple[str, Any, Any], ...]
    cause: str

    def change(self, field: str) -> tuple[Any, Any] | None:
        """(before, after) of one field, or None when this event did not change it."""
        for name, before, after in self.changes:
            if name == field:
                return before, after
        return None

    def __str__(self) -> str:
        changes = ", ".join(
            f"{name} {show_value(before)} -> {show_value(after)}" for name, before, after in self.changes
        )
        return f"{self.time} ms #{self.seq} {self.subject}: {changes} ({self.cause})"


class EventLog:
    """The last ``max_events`` events (older ones are dropped, their sequence numbers stay counted).

    Events are kept as plain tuples and made :class:`Event` objects when read: a failover records one
    event per partition (100,000 of them), and recording must cost next to nothing. A partition's
    subject may be given as ``(topic, index)``: its name (``orders-0``) is made when read."""

    def __init__(self, clock_now: Any, max_events: int = 1_000_000) -> None:
        self._now = clock_now
        self._events: deque[tuple[int, int, str, Any, tuple[tuple[str, Any, Any], ...], str]] = deque(
            maxlen=max_events
        )
        self._seq = itertools.count(1)

    def record(self, kind: str, subject: str, changes: list[tuple[str, Any, Any]], cause: str) -> None:
        entry = (next(self._seq), self._now(), kind, subject, tuple(changes), cause)
        self._events.append(entry)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("event %s", Event(*entry))

    def record_many(
        self, kind: str, entries: list[tuple[str | tuple[str, int], list[tuple[str, Any, Any]], str]]
    ) -> None:
        """One event per ``(subject, changes, cause)``, in order, at the same clock time (a subject
        ``(topic, index)`` names a partition, made ``topic-index`` when read)."""
        now = self._now()
        seq = self._seq
        made = [(next(seq), now, kind, subject, tuple(changes), cause) for subject, changes, cause in entries]
        self._events.extend(made)
        if log.isEnabledFor(logging.DEBUG):
            for entry in made:
                log.debug("event %s", as_event(entry))

    def since(self, seq: int = 0) -> list[Event]:
        """The events after sequence number ``seq`` still held, oldest first."""
        return list(self.iter_since(seq))

    def iter_since(self, seq: int = 0) -> Iterator[Event]:
        """:meth:`since`, made as they are read (a reader that wants a few pays for a few)."""
        return map(as_event, itertools.islice(self._events, self._start(seq), None))

    def entries_since(self, seq: int, limit: int) -> list[tuple[Any, ...]]:
        """At most ``limit`` of the kept entries after ``seq``, as kept (make each an :class:`Event` with
        :func:`as_event`): reading them costs a copy of references, so that a big answer is made from them
        off the event loop."""
        start = self._start(seq)
        return list(itertools.islice(self._events, start, min(len(self._events), start + max(0, limit))))

    def _start(self, seq: int) -> int:
        """Where the kept entries after ``seq`` start: 0 before the oldest kept, the number held past the
        newest (any int64 a client sends)."""
        held = len(self._events)
        if not held or seq < self._events[0][0]:
            return 0
        return min(held, seq - self._events[0][0] + 1)

    @property
    def last_seq(self) -> int:
        return self._events[-1][0] if self._events else 0

    def __iter__(self) -> Iterator[Event]:
        return map(as_event, self._events)

    def __len__(self) -> int:
        return len(self._events)


def as_event(entry: tuple[Any, ...]) -> Event:
    """A kept entry as an :class:`Event` (a partition's ``(topic, index)`` subject named ``topic-index``)."""
    seq, time, kind, subject, changes, cause = entry
    if type(subject) is tuple:
        subject = f"{subject[0]}-{subject[1]}"
    return Event(seq, time, kind, subject, changes, cause)
