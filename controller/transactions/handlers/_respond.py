"""The answer of a handler whose coordinator call answers through a callback: at once when the callback
ran before the call returned (no task, no future), else a future the callback completes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["Answer"]


class Answer(Generic[T]):
    """``answer = Answer(build)``; pass ``answer.respond`` as the callback; return ``answer.result()``."""

    def __init__(self, build: Callable[[T], Any]) -> None:
        self._build = build
        self._given: list[T] = []
        self._future: asyncio.Future[Any] | None = None

    def respond(self, value: T) -> None:
        if self._future is None:
            self._given.append(value)
        elif not self._future.done():
            self._future.set_result(self._build(value))

    def result(self) -> Any:
        if self._given:
            return self._build(self._given[0])
        self._future = asyncio.get_running_loop().create_future()
        return self._future
