"""Big work off the event loop: one rule for when, one way to do it.

Work that grows with a request (placing a 300,000-partition topic, checking its result, building its
partitions, encoding a huge Metadata answer) runs in a worker thread once it passes :data:`BIG`, so
the event loop keeps serving everyone else meanwhile (the interpreter switches threads every few
milliseconds). Small work runs inline, where a thread would cost more than it saves. Work sent off the
loop must not change shared state: it reads immutable inputs and returns its result to the caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["BIG", "off_loop"]

T = TypeVar("T")

#: Above this size (replicas, partitions, entries) work runs in a worker thread.
BIG = 20_000


async def off_loop(size: int, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``: inline when ``size`` is small, in a worker thread when it is above :data:`BIG`."""
    if size <= BIG:
        return fn(*args)
    return await asyncio.to_thread(fn, *args)
