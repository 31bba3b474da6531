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

__all__ = ["Event", "EventLog"]


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


@dataclass(frozen=True, slots=True)
class Event:
    """One change: ``subject`` (``broker 3``, ``orders-0``, ``topic orders``) changed ``changes``
    (``(field, before, after)`` triples) at ``time`` (clock ms) because of ``cause``."""

    seq: int
    time: int
    kind: str  # "broker", "partition" or "topic"
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
            f"{name} {_show(before)} -> {_show(after)}" for name, before, after in self.changes
        )
        return f"{self.time} ms #{self.seq} {self.subject}: {changes} ({self.cause})"


class EventLog:
    """The last ``max_events`` events (older ones are dropped, their sequence numbers stay counted)."""

    def __init__(self, clock_now: Any, max_events: int = 1_000_000) -> None:
        self._now = clock_now
        self._events: deque[Event] = deque(maxlen=max_events)
        self._seq = itertools.count(1)

    def record(self, kind: str, subject: str, changes: list[tuple[str, Any, Any]], cause: str) -> Event:
        event = Event(next(self._seq), self._now(), kind, subject, tuple(changes), cause)
        self._events.append(event)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("event %s", event)
        return event

    def since(self, seq: int = 0) -> list[Event]:
        """The events after sequence number ``seq`` still held, oldest first."""
        if not self._events or seq < self._events[0].seq:
            return list(self._events)
        start = seq - self._events[0].seq + 1
        return list(itertools.islice(self._events, start, None))

    @property
    def last_seq(self) -> int:
        return self._events[-1].seq if self._events else 0

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)
