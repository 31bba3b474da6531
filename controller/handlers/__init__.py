"""Request handlers: one module per API key, each a function from decoded request to response data.

Each handler module defines ``API_KEY``, ``VERSIONS = (min, max)`` (what the server answers, within the
spec's range) and ``async def handle(ctx, request, version) -> dict``. Handlers never see bytes.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.app import Controller
    from protocol.framing import RequestHeader

__all__ = ["HANDLER_MODULES", "Handler", "RequestContext", "load_handlers"]

HANDLER_MODULES = [
    "api_versions",
    "create_replica_placement",
    "metadata",
    "create_topics",
    "delete_topics",
    "create_partitions",
    "describe_cluster",
]


@dataclass
class RequestContext:
    """What a handler may use besides the request: the controller's state and who is asking."""

    controller: Controller
    header: RequestHeader
    peer: str
    listener_broker: int | None = None  # the broker whose listener received the request (None: bootstrap)


HandleFn = Callable[[RequestContext, dict[str, Any], int], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    handle: HandleFn

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def load_handlers() -> dict[int, Handler]:
    handlers: dict[int, Handler] = {}
    for name in HANDLER_MODULES:
        module = importlib.import_module(f"controller.handlers.{name}")
        low, high = module.VERSIONS
        handlers[module.API_KEY] = Handler(module.API_KEY, low, high, module.handle)
    return handlers
