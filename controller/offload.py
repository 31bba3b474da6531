"""Big work: off the event loop, and without the garbage collector's long pauses. One rule for when,
one way to do it.

Work that grows with a request (placing a 300,000-partition topic, checking its result, building its
partitions, encoding a huge Metadata answer) runs in a worker thread once it passes :data:`BIG`, so
the event loop keeps serving everyone else meanwhile (the interpreter switches threads every few
milliseconds). Small work runs inline, where a thread would cost more than it saves. Work sent off the
loop must not change shared state: it reads immutable inputs and returns its result to the caller.

While work runs in a thread, the interpreter switches threads every :data:`SWITCH_INTERVAL` instead of
every 5 ms (:func:`in_thread`): the event loop takes the interpreter back at each callback it runs (each
connection's read, each timer), and waiting 5 ms each time, behind a worker encoding a big answer, held
the loop up for more than a second in a fuzzing run with a dozen busy connections.

The simulator's own big work runs in **one** worker thread per process, one piece after another: only
one thread runs Python at a time anyway, and every further runnable thread is one more the event loop
waits behind for the interpreter. Eight clients asking for big event-log answers at once, each made in
a thread of its own, held a small request on another connection 17 ms at the 95th percentile and past
50 ms now and then; made one after another in one worker, 2 ms (tests/controller/server/test_fairness.py).
A plugin's code is not the simulator's and may never return: it runs in threads of its own
(:func:`in_plugin_thread`), so that a plugin stuck past its deadline holds no other work up.

CPython's cyclic garbage collector stops every thread while it scans all tracked objects, and a
cluster of a million partitions holds millions of them: a full collection takes hundreds of
milliseconds, found nothing to free in every case measured (the cluster's state has no cycles), and
froze every client meanwhile. So while big work runs the collector is paused (:func:`gc_paused`), and
what the work built, which lives as long as the cluster, is then moved out of the collector's sight
(``gc.freeze``): later collections scan only the young, short-lived objects of requests.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import gc
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = [
    "BIG",
    "SWITCH_INTERVAL",
    "YOUNG_THRESHOLD",
    "Turns",
    "collect_as_a_server",
    "gc_paused",
    "in_plugin_thread",
    "in_thread",
    "off_loop",
]

T = TypeVar("T")

#: Above this size (replicas, partitions, entries) work runs in a worker thread, with the collector paused.
BIG = 20_000
#: A request body bigger than this (bytes) is decoded in a worker thread (decoding costs about 0.2 ms/KiB).
BIG_BODY = 32 * 1024

#: The interpreter's thread switch interval (seconds) while work runs in worker threads.
SWITCH_INTERVAL = 0.0005

_paused = 0
_in_threads = 0
_switch_interval = 0.0


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while the block runs; afterwards what survives is frozen (see the
    module docstring). Nested and concurrent uses count: the collector resumes after the last."""
    global _paused
    if _paused == 0:
        gc.disable()
    _paused += 1
    try:
        yield
    finally:
        _paused -= 1
        if _paused == 0:
            gc.freeze()
            gc.enable()


#: The collector's first threshold in a process that only serves: a young collection once this many more
#: objects are allocated than freed, where Python's 700 (2,000 from 3.13) collected every few requests (a
#: commit makes about fifty objects that outlive it until the replication tick answers it).
YOUNG_THRESHOLD = 20_000


def collect_as_a_server() -> None:
    """The collector of a process that only serves (``placement-sim serve``; an embedded server leaves its
    host's as it is): what exists once the server listens (its modules, codecs and cluster) is frozen, so
    that later collections skip it (without a collection first, which would hold the first answers
    back), and the young objects are collected every :data:`YOUNG_THRESHOLD` allocations instead of
    Python's 700 (docs/benchmarks.md, "Consumer groups": the collections' share of a commit's instructions
    falls from 11% to 4%)."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


_worker: concurrent.futures.ThreadPoolExecutor | None = None


def _the_worker() -> concurrent.futures.ThreadPoolExecutor:
    global _worker
    if _worker is None:
        _worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="offload")
    return _worker


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the process's one worker thread (after the work sent there before it), with the
    collector paused (:func:`gc_paused`) and the interpreter switching threads every
    :data:`SWITCH_INTERVAL` until the last such work ends. ``fn`` must return: it is the simulator's own."""
    return await _in(_the_worker(), fn, args)


async def in_plugin_thread(fn: Callable[..., T], *args: Any) -> T:
    """As :func:`in_thread`, for a plugin's code, which may not return: in a thread of the event loop's
    default pool, beside the simulator's worker."""
    return await _in(None, fn, args)


async def _in(pool: concurrent.futures.Executor | None, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    global _in_threads, _switch_interval
    if _in_threads == 0:
        _switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(SWITCH_INTERVAL, _switch_interval))
    _in_threads += 1
    try:
        with gc_paused():
            call = functools.partial(contextvars.copy_context().run, fn, *args)
            return await asyncio.get_running_loop().run_in_executor(pool, call)
    finally:
        _in_threads -= 1
        if _in_threads == 0:
            sys.setswitchinterval(_switch_interval)


async def off_loop(size: int, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``: inline when ``size`` is small, in a worker thread when it is above :data:`BIG`."""
    if size <= BIG:
        return fn(*args)
    return await in_thread(fn, *args)


class Turns:
    """Long work on the event loop, in turns: ``if turns.due(): await asyncio.sleep(0)`` after each piece
    hands the loop to others once the current turn has used :data:`TURN_SECONDS` (a generator may
    ``yield`` instead, for its consumer to sleep).

    A True from :meth:`due` means the work yields: the next call starts a new turn, so that the time the
    others take meanwhile is not counted as this work's (it was, and a rebuild of the metadata image
    beside an auto-creation of 100,000 topics did one piece per turn: 12 s instead of 1)."""

    __slots__ = ("_since", "_yielded")

    #: How long one turn of long work may hold the event loop.
    TURN_SECONDS = 0.005

    def __init__(self) -> None:
        self._since = time.perf_counter()
        self._yielded = False

    def due(self) -> bool:
        now = time.perf_counter()
        if self._yielded:  # back from yielding: a new turn starts
            self._yielded = False
            self._since = now
            return False
        if now - self._since >= self.TURN_SECONDS:
            self._yielded = True
            return True
        return False

    async def yield_if_due(self) -> None:
        if self.due():
            await asyncio.sleep(0)
            self._since = time.perf_counter()
            self._yielded = False
