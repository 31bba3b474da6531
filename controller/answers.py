"""What answering a request gives: the vocabulary shared by the handlers, the dispatch, the security
layer and the connection, which import nothing else of each other.

A request is answered with one of:

- a response frame (``bytes``, or :class:`protocol.framing.FramePieces`: a frame in pieces, written as
  they are), now;
- :class:`Later`: work to wait for (a placement, an election), then the frame it makes;
- :class:`Closing`: a frame (or none), then the connection closes (a failed authentication);
- :class:`Close`, raised: the connection closes now, unanswered (a malformed frame);
- :data:`NO_FRAME`: nothing is sent, and the connection goes on (a Produce with ``acks=0``, which Kafka
  never answers).

A handler answers with response data (a ``dict``), an encoded body (``bytes``, or :class:`Pieces` of it,
framed without a copy), :class:`Sized` data too big to encode on the event loop, :data:`NO_RESPONSE` (the request is not answered), an awaitable of
one of those, or :class:`Parked` (an awaitable that waits for other clients); it may raise :class:`Close`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from protocol.framing import FramePieces

__all__ = [
    "FUTURE",
    "NO_FRAME",
    "NO_RESPONSE",
    "Answer",
    "Close",
    "Closing",
    "Later",
    "NoResponse",
    "Parked",
    "Pieces",
    "Sized",
    "parked",
]


#: The futures a handler may answer with (a commit waiting for the high watermark): the event loop's own
#: (asyncio's and uvloop's make the same). Such an answer is waited for by a callback on it, not a task.
FUTURE = asyncio.Future


class Close(Exception):
    """Ends a connection; ``reason`` is logged and counted (``closed:<reason>``), ``detail`` logged."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Closing:
    """``frame`` is sent (None: nothing is), then the connection closes ``after`` seconds later for
    ``close`` (already logged by whoever made it: the close is counted, not logged again)."""

    frame: bytes | None
    close: Close
    after: float = 0.0


class Later:
    """An answer that needs waiting for: ``work``, then ``finish`` (or ``fail``) makes the answer.

    ``parked``: the work waits for other clients or the clock, not for this server's work (see
    :class:`Parked`). Closing a Later that never ran closes its work too, so nothing is left unawaited."""

    __slots__ = ("fail", "finish", "parked", "work")

    def __init__(
        self,
        work: Awaitable[Any],
        finish: Callable[[Any], Answer],
        fail: Callable[[Exception], Answer],
        parked: bool = False,
    ) -> None:
        self.work = work
        self.finish = finish
        self.fail = fail
        self.parked = parked

    async def run(self, park: Callable[[], None] | None = None) -> bytes | Closing:
        """The answer; ``park`` is called when the work turns out to wait for others (:class:`Parked`:
        this Later's own work, or that of the Later its result makes)."""
        if self.parked and park is not None:
            park()
        try:
            result = await self.work
        except asyncio.CancelledError:
            raise
        except Close:
            raise
        except Exception as exc:
            answer = self.fail(exc)
        else:
            answer = self.finish(result)
        if isinstance(answer, Later):  # work of its own: the answer made off the loop, or a parked wait
            return await answer.run(park)
        return answer

    def close(self) -> None:
        if inspect.iscoroutine(self.work):
            self.work.close()


#: What answering one request frame gives.
Answer = bytes | FramePieces | Later | Closing


class NoResponse:
    """The type of :data:`NO_RESPONSE`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_RESPONSE"


#: A handler's answer to a request Kafka does not answer (Produce with acks=0).
NO_RESPONSE = NoResponse()
#: The frame of such an answer: empty, so sending it writes nothing.
NO_FRAME = b""


class Sized:
    """A handler's answer that is big to encode (``size`` entries): it is encoded off the event loop.

    ``value`` is the answer, or a function that makes it (then made off the loop too)."""

    __slots__ = ("size", "value")

    def __init__(self, value: Any, size: int) -> None:
        self.value = value
        self.size = size

    def made(self) -> Any:
        return self.value() if callable(self.value) else self.value


class Parked:
    """A handler's answer that waits for other clients (a group's members joining or syncing), not for
    work of the server's: ``work``, an awaitable of one of the answers above. Its request frame stops
    counting against ``queued.max.request.bytes`` once it waits, as Kafka's request handler releases a
    request's buffer once it is parked in a purgatory: parked requests, which may wait as long as a
    session timeout, never keep other clients' requests from being read (a group of 200 members with
    1 MiB of metadata each held the queue's 200 MiB until their join timed out)."""

    __slots__ = ("work",)

    def __init__(self, work: Awaitable[Any]) -> None:
        self.work = work


def parked(ask: Callable[[Callable[[Any], None]], None], answer: Callable[[Any], Any]) -> Any:
    """A handler's answer that waits for other clients: ``ask`` is given the callback that takes the
    result (a coordinator's), and ``answer`` makes the handler's answer of it. The answer now when the
    result is given at once (an error), else :class:`Parked` on a future (waited for by a callback on
    it, not a task: a group of many members parks as many requests at once)."""
    given: list[Any] = []
    future: asyncio.Future[Any] | None = None

    def respond(result: Any) -> None:
        if future is None:
            given.append(result)
        elif not future.done():  # (cancelled: the client went away)
            try:
                made = answer(result)
            except Exception as exc:  # a handler's bug: its request is answered as one, not the caller's
                future.set_exception(exc)
            else:
                future.set_result(made)

    ask(respond)
    if given:
        return answer(given[0])
    future = asyncio.get_running_loop().create_future()
    return Parked(future)


class Pieces:
    """A handler's answer encoded already, as the pieces of its body (a Fetch answer: its fields, and each
    batch's bytes as the log holds them): framed as :class:`protocol.framing.FramePieces`, never joined,
    so the records go from the log to the socket without a copy."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: list[bytes | memoryview]) -> None:
        self.pieces = pieces
