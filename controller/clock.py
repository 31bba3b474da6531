"""The one clock of the cluster's dynamics: session timeouts, lag checks, promotion timers, replication.

:class:`RealClock` follows the event loop's monotonic time (``serve``). :class:`VirtualClock` only moves
when told (:meth:`VirtualClock.advance`): timers fire in order of their time, ties in the order they were
set, each at its own time, so the same events give the same states and the same bytes on every run.

Times are integer milliseconds since the clock started. Callbacks are plain functions or coroutine
functions; the clock awaits a coroutine before it fires the next timer, so timers never overlap.

A virtual clock made ``exclusive`` promises that nobody but the cluster's dynamics reads the cluster
(no server: the sweep's failure simulation). The event loop is then not handed to others between
timers, and the replication model may leave partitions whose ticks only carry their workload to be
brought up to date when they are next needed (:mod:`controller.dynamics.replication`).
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["CLOCKS", "Clock", "RealClock", "Timer", "VirtualClock", "make_clock"]

Callback = Callable[[], Awaitable[Any] | Any]

CLOCKS = ("real", "virtual")


class Timer:
    """A scheduled callback; :meth:`cancel` stops it from firing."""

    __slots__ = ("callback", "cancelled", "handle", "name", "seq", "when")

    def __init__(self, when: int, seq: int, callback: Callback, name: str) -> None:
        self.when = when
        self.seq = seq
        self.callback = callback
        self.name = name
        self.cancelled = False
        self.handle: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.handle is not None:
            self.handle.cancel()

    def __lt__(self, other: Timer) -> bool:
        return (self.when, self.seq) < (other.when, other.seq)

    def __repr__(self) -> str:
        return f"Timer({self.name!r} at {self.when} ms{', cancelled' if self.cancelled else ''})"


class Clock(ABC):
    """Milliseconds and timers. Timers scheduled for the same time fire in the order they were set."""

    kind: str

    def __init__(self) -> None:
        self._seq = itertools.count()

    @abstractmethod
    def now(self) -> int:
        """Milliseconds since the clock started."""

    @abstractmethod
    def call_at(self, when: int, callback: Callback, name: str = "") -> Timer:
        """Runs ``callback`` at ``when`` (ms); a time in the past means as soon as possible."""

    def call_later(self, delay: int, callback: Callback, name: str = "") -> Timer:
        return self.call_at(self.now() + max(0, delay), callback, name)

    async def close(self) -> None:  # noqa: B027 - optional
        """Cancels what is still scheduled."""


async def _run(timer: Timer) -> None:
    try:
        result = timer.callback()
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("timer %s failed", timer.name or timer.callback)


class RealClock(Clock):
    """The event loop's monotonic time; timers are loop timers, run one at a time."""

    kind = "real"

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__()
        self._loop = loop or asyncio.get_running_loop()
        self._start = self._loop.time()
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    def now(self) -> int:
        return int((self._loop.time() - self._start) * 1000)

    def call_at(self, when: int, callback: Callback, name: str = "") -> Timer:
        timer = Timer(when, next(self._seq), callback, name)
        timer.handle = self._loop.call_at(self._start + when / 1000, self._fire, timer)
        return timer

    def _fire(self, timer: Timer) -> None:
        if timer.cancelled:
            return
        if not self._tasks and not self._lock.locked():
            # Nothing runs or waits to run: a plain callback runs now, as in its turn (no task to make).
            try:
                result = timer.callback()
            except Exception:
                log.exception("timer %s failed", timer.name or timer.callback)
                return
            if not inspect.isawaitable(result):
                return
            task = self._loop.create_task(self._await_in_turn(timer, result))
        else:
            task = self._loop.create_task(self._fire_in_turn(timer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fire_in_turn(self, timer: Timer) -> None:
        async with self._lock:
            if not timer.cancelled:
                await _run(timer)

    async def _await_in_turn(self, timer: Timer, result: Awaitable[Any]) -> None:
        """A coroutine callback begun by :meth:`_fire`: the next timers wait for it, as for any other."""
        async with self._lock:
            try:
                await result
            except Exception:
                log.exception("timer %s failed", timer.name or timer.callback)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


class VirtualClock(Clock):
    """Time that moves only when told; nothing fires between :meth:`advance` calls."""

    kind = "virtual"

    def __init__(self, exclusive: bool = False) -> None:
        """``exclusive``: nobody but the dynamics reads or changes the cluster (see the module docstring)."""
        super().__init__()
        self._now = 0
        self._timers: list[Timer] = []
        self._lock = asyncio.Lock()
        self.exclusive = exclusive

    def now(self) -> int:
        return self._now

    def call_at(self, when: int, callback: Callback, name: str = "") -> Timer:
        timer = Timer(max(when, self._now), next(self._seq), callback, name)
        heapq.heappush(self._timers, timer)
        return timer

    @property
    def pending(self) -> int:
        """How many timers are still to fire."""
        return sum(1 for t in self._timers if not t.cancelled)

    def next_timer(self) -> int | None:
        """When the next timer fires, or None when none is scheduled."""
        while self._timers and self._timers[0].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0].when if self._timers else None

    async def advance(self, ms: int) -> int:
        """Moves the clock ``ms`` milliseconds ahead, firing every timer due on the way at its own time.

        Timers that callbacks set for times within the window fire too. Returns the new time.
        """
        if ms < 0:
            raise ValueError(f"the clock cannot go back ({ms} ms)")
        async with self._lock:
            end = self._now + ms
            while True:
                when = self.next_timer()
                if when is None or when > end:
                    break
                timer = heapq.heappop(self._timers)
                self._now = timer.when
                await _run(timer)
                if not self.exclusive:
                    await asyncio.sleep(0)  # let connections be served between timers
            self._now = end
            return end

    async def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()


def make_clock(kind: str) -> Clock:
    """``real`` or ``virtual`` (``simulator.clock``); must be called with the event loop running."""
    if kind == "virtual":
        return VirtualClock()
    if kind == "real":
        return RealClock()
    raise ValueError(f"unknown clock {kind!r} (one of {', '.join(CLOCKS)})")
