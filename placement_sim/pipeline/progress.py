"""Progress of a sweep, counted in (scenario, placer) runs.

Library code reports through a :data:`ProgressCallback`; the command line prints it with
:class:`ConsoleProgress`. The Spark job counts finished runs with an accumulator that the executors
add to as their tasks finish.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

log = logging.getLogger(__name__)

__all__ = ["ConsoleProgress", "ProgressCallback", "Ticker", "format_duration"]

#: Called with (runs done, runs in total).
ProgressCallback = Callable[[int, int], None]


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class ConsoleProgress:
    """Prints ``runs done/total (share), rate, ETA`` to a stream, at most once per ``interval`` seconds."""

    def __init__(self, stream: TextIO | None = None, interval: float = 2.0, label: str = "runs") -> None:
        self.stream = stream or sys.stderr
        self.interval = interval
        self.label = label
        self.started = time.monotonic()
        self._last_print = 0.0
        self._last_done = -1

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        finished = total > 0 and done >= total
        if done == self._last_done or (not finished and now - self._last_print < self.interval):
            return
        self._last_print, self._last_done = now, done
        elapsed = now - self.started
        share = done / total if total else 1.0
        line = f"{self.label} {done:,}/{total:,} ({share:.0%}) in {format_duration(elapsed)}"
        if 0 < done < total:
            rate = done / elapsed if elapsed > 0 else 0.0
            eta = (total - done) / rate if rate > 0 else 0.0
            line += f", {rate:,.0f}/s, about {format_duration(eta)} left"
        print(line, file=self.stream, flush=True)


class Ticker(threading.Thread):
    """Calls ``poll()`` every ``interval`` seconds until stopped (used while a Spark job runs)."""

    def __init__(self, poll: Callable[[], None], interval: float = 1.0) -> None:
        super().__init__(name="sweep-progress", daemon=True)
        self._poll = poll
        self._interval = interval
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self._interval):
            try:
                self._poll()
            except Exception:  # noqa: BLE001 - progress must never break the sweep
                log.debug("progress poll failed", exc_info=True)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)
