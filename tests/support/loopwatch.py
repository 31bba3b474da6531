"""A watch on an embedded server's event loop, for benchmarks that look for stalls (``benchmarks/fuzz.py
--watch``): a thread of its own hands the loop a callback every ``interval`` and, while one waits longer
than ``threshold``, samples the loop thread's stack (and once, every other thread's), with the
collector's runs and the server's connection counts. Each stall is reported with when it began
(``time.monotonic()``, the clock the fuzzing clients stamp their connections with), how long it lasted
and where the loop thread stood."""

from __future__ import annotations

import gc
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stall:
    began: float
    seconds: float
    loop_stacks: Counter[str] = field(default_factory=Counter)
    other_threads: list[str] = field(default_factory=list)
    collections: list[tuple[int, float]] = field(default_factory=list)
    state: str = ""

    def lines(self) -> list[str]:
        out = [f"loop stalled {self.seconds * 1000:.0f} ms from {self.began:.3f}; {self.state}"]
        long = [(generation, ms) for generation, ms in self.collections if ms >= 5]
        if self.collections:
            out.append(
                f"  collections in it: {len(self.collections)}; of 5 ms or more (generation, ms): {long}"
            )
        for stack, n in self.loop_stacks.most_common(4):
            out.append(f"  {n:4d} x loop thread at: {stack}")
        out += [f"  other thread: {t}" for t in self.other_threads]
        return out


def _stack(frame: Any, depth: int = 12) -> str:
    frames = traceback.extract_stack(frame)[-depth:]
    return " <- ".join(f"{f.name} ({f.filename.rsplit('/', 2)[-1]}:{f.lineno})" for f in reversed(frames))


class LoopWatch:
    def __init__(self, server: Any, interval: float = 0.02, threshold: float = 0.25) -> None:
        self.server = server
        self.interval = interval
        self.threshold = threshold
        self.stalls: list[Stall] = []
        self._stop = threading.Event()
        self._collections: list[tuple[float, int, float]] = []
        self._gc_began = 0.0
        self._thread = threading.Thread(target=self._run, name="loop-watch", daemon=True)

    def __enter__(self) -> LoopWatch:
        gc.callbacks.append(self._on_gc)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        now = time.monotonic()
        if phase == "start":
            self._gc_began = now
        else:
            self._collections.append((now, info["generation"], now - self._gc_began))

    def _state(self) -> str:
        server = self.server.server
        try:
            conns = list(server.connections)
        except RuntimeError:  # changed while read from this thread
            return "connections: ?"
        paused = sum(1 for c in conns if not c.reading)
        return f"connections {len(conns)}, not read {paused}, held bytes {server.held_bytes:,}"

    def _run(self) -> None:
        loop = self.server._loop
        tid = self.server._thread.ident
        while not self._stop.wait(self.interval):
            answered = threading.Event()
            sent = time.monotonic()
            try:
                loop.call_soon_threadsafe(answered.set)
            except RuntimeError:  # the loop closed
                return
            stall: Stall | None = None
            while not answered.wait(self.interval):
                if time.monotonic() - sent < self.threshold:
                    continue
                if stall is None:
                    stall = Stall(sent, 0.0, state=self._state())
                    frames = sys._current_frames()
                    stall.other_threads = [
                        f"{t.name}: {_stack(frames[t.ident], 4)}"
                        for t in threading.enumerate()
                        if t.ident in frames
                        and t.ident not in (tid, threading.get_ident())
                        and not t.name.startswith(("loop-watch",))
                    ][:12]
                frame = sys._current_frames().get(tid)
                if frame is not None:
                    stall.loop_stacks[_stack(frame)] += 1
            if stall is not None:
                stall.seconds = time.monotonic() - sent
                stall.collections = [
                    (generation, round(took * 1000, 1))
                    for at, generation, took in self._collections
                    if sent <= at <= sent + stall.seconds
                ]
                self.stalls.append(stall)
            self._collections = [c for c in self._collections if c[0] > sent - 1]
