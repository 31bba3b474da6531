"""Which event loop the server runs on (``simulator.event.loop``): uvloop where it is installed, or
asyncio's own. uvloop's loop is libuv's, written in C: the same server answers with less CPU per request.

uvloop is imported with this module, which only what starts a server imports (``controller.embedded``,
``placement-sim serve``): loading its 13 MB extension is 4-6 ms, paid with the other imports rather than
at the first ``ServerThread.start()``, as a C peer's library is loaded at its import.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import ModuleType

from controller.config import EVENT_LOOP, ConfigError

uvloop: ModuleType | None
try:
    import uvloop
except ImportError:  # an install without it runs asyncio's loop
    uvloop = None

__all__ = ["loop_factory", "loop_name", "new_event_loop"]


def loop_factory(choice: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """The event loop ``auto``, ``uvloop`` or ``asyncio`` stands for; ConfigError for ``uvloop`` when it
    is not installed."""
    if choice == "asyncio":
        return asyncio.new_event_loop
    if uvloop is None:
        if choice == "uvloop":
            raise ConfigError(
                f"{EVENT_LOOP}: uvloop is not installed (pip install uvloop, or set {EVENT_LOOP}=asyncio)",
                EVENT_LOOP,
            ) from None
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def new_event_loop(choice: str) -> asyncio.AbstractEventLoop:
    return loop_factory(choice)()


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``, for what the server prints at start."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
