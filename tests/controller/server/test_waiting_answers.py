"""A request whose answer waits on a future the handler completes (a commit waiting for the high
watermark, a member parked until its group's join phase completes) holds the requests behind it on its
connection, and is answered by a callback on the future, not a task: in order, with its error answer
when the work fails, and never after its client has gone. A parked one's frame is not held meanwhile."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from controller.answers import Close, Later, Parked, parked
from controller.connection import Connection, ConnectionLimits

LIMITS = ConnectionLimits(
    max_request_bytes=1 << 20, queued_max_requests=500, queued_max_request_bytes=1 << 24, idle_ms=60_000
)


class Host:
    """Counts as the server does, and remembers the closes it is told of."""

    def __init__(self) -> None:
        self.held_bytes = 0
        self.closes: list[str] = []

    def connection_made(self, conn: Connection) -> None:
        pass

    def connection_lost(self, conn: Connection, reason: str) -> None:
        pass

    def answering(self, conn: Connection) -> bool:
        return True

    def hold(self, size: int) -> None:
        self.held_bytes += size

    def release(self, size: int) -> None:
        self.held_bytes -= size

    def blocked(self, conn: Connection) -> None:
        pass

    def unsent(self, size: int) -> None:
        pass

    def log_close(self, conn: Connection, close: Close) -> None:
        self.closes.append(close.reason)


class Transport:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.written: list[bytes] = []
        #: What each writelines() was given, the objects themselves.
        self.pieces: list[list[bytes | memoryview]] = []
        self.closed = False

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else None

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after close"
        self.written.append(bytes(data))

    def writelines(self, pieces: list[bytes | memoryview]) -> None:
        assert not self.closed, "written after close"
        self.pieces.append(list(pieces))
        self.written.append(b"".join(pieces))

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.conn.connection_lost(None)

    def abort(self) -> None:
        self.close()


def framed(*frames: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def connect(answer: Any) -> tuple[Connection, Transport, Host]:
    host = Host()
    conn = Connection(host, LIMITS, None)
    transport = Transport(conn)
    conn.connection_made(transport)  # type: ignore[arg-type]
    conn.answer = answer
    conn.admit()
    return conn, transport, host


def send(conn: Connection, data: bytes) -> None:
    buffer = conn.get_buffer(len(data))
    buffer[: len(data)] = data
    conn.buffer_updated(len(data))


def answers(transport: Transport) -> bytes:
    return b"".join(transport.written)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.fixture
def waiting() -> dict[bytes, asyncio.Future[Any]]:
    return {}


def answerer(waiting: dict[bytes, asyncio.Future[Any]], finish: Any = None, fail: Any = None) -> Any:
    """Frames starting with ``w`` wait on a future (kept in ``waiting``); the others are answered at once."""

    def answer(frame: bytes) -> Any:
        if frame.startswith((b"w", b"p")):  # p: parked (it waits for other clients)
            future = asyncio.get_running_loop().create_future()
            waiting[frame] = future
            return Later(
                future,
                finish or (lambda result: b"<" + result + b">"),
                fail or (lambda exc: b"!" + type(exc).__name__.encode()),
                parked=frame.startswith(b"p"),
            )
        return b"[" + frame + b"]"

    return answer


async def test_the_requests_behind_a_waiting_one_are_answered_after_it_in_order(waiting):
    conn, transport, _ = connect(answerer(waiting))
    tasks = len(asyncio.all_tasks())
    send(conn, framed(b"a", b"w1", b"b", b"c"))
    await settle()
    assert len(asyncio.all_tasks()) == tasks  # waited for by a callback on the future, not a task
    assert answers(transport) == b"[a]"
    assert conn.unanswered == 3  # the waiting one and the two behind it
    waiting[b"w1"].set_result(b"one")
    await settle()
    assert answers(transport) == b"[a]<one>[b][c]"
    assert conn.unanswered == 0


async def test_work_that_fails_is_answered_with_its_error_answer(waiting):
    conn, transport, _ = connect(answerer(waiting))
    send(conn, framed(b"w1", b"b"))
    await settle()
    waiting[b"w1"].set_exception(ValueError("no"))
    await settle()
    assert answers(transport) == b"!ValueError[b]"


async def test_an_answer_that_needs_more_waiting_is_waited_for(waiting):
    async def later_bytes(result: bytes) -> bytes:
        await asyncio.sleep(0)
        return b"(" + result + b")"

    def finish(result: bytes) -> Any:
        return Later(later_bytes(result), lambda body: body, lambda exc: b"!")

    conn, transport, _ = connect(answerer(waiting, finish=finish))
    send(conn, framed(b"w1", b"b"))
    await settle()
    waiting[b"w1"].set_result(b"one")
    await settle()
    assert answers(transport) == b"(one)[b]"


async def test_a_close_raised_by_the_answer_closes_the_connection(waiting):
    def finish(result: bytes) -> Any:
        raise Close("bad answer")

    conn, transport, host = connect(answerer(waiting, finish=finish))
    send(conn, framed(b"w1", b"b"))
    await settle()
    waiting[b"w1"].set_result(b"one")
    await settle()
    assert conn.closed and transport.closed
    assert host.closes == ["bad answer"]
    assert answers(transport) == b""  # nothing after the close, and not the request behind it


async def test_a_client_that_leaves_while_its_request_waits_cancels_the_work(waiting):
    conn, transport, _ = connect(answerer(waiting))
    send(conn, framed(b"w1", b"b"))
    await settle()
    future = waiting[b"w1"]
    conn.connection_lost(None)
    await settle()
    assert future.cancelled()
    assert answers(transport) == b""
    assert conn.closed


async def test_work_completed_after_its_client_left_answers_nothing(waiting):
    conn, transport, _ = connect(answerer(waiting))
    send(conn, framed(b"w1"))
    await settle()
    future = waiting[b"w1"]
    conn.close(None)
    assert future.cancelled()  # the handler's own check (a commit's ``answered.done()``) sees it
    await settle()
    assert answers(transport) == b"" and transport.closed


async def test_a_parked_request_is_not_held_while_it_waits_and_is_answered_in_order(waiting):
    conn, transport, host = connect(answerer(waiting))
    tasks = len(asyncio.all_tasks())
    send(conn, framed(b"p1" + b"x" * 1000))
    await settle()
    assert len(asyncio.all_tasks()) == tasks
    assert host.held_bytes == 0  # released when it parked, not when it is answered
    send(conn, framed(b"b"))
    await settle()
    assert answers(transport) == b"" and conn.unanswered == 2
    waiting[b"p1" + b"x" * 1000].set_result(b"one")
    await settle()
    assert answers(transport) == b"<one>[b]"
    assert host.held_bytes == 0 and conn.unanswered == 0


async def test_parked_answers_now_when_the_result_is_given_at_once() -> None:
    made = parked(lambda respond: respond(7), lambda result: {"answer": result})
    assert made == {"answer": 7}


async def test_parked_answers_from_its_future_when_the_result_comes_later() -> None:
    held: list[Any] = []
    made = parked(held.append, lambda result: {"answer": result})
    assert isinstance(made, Parked) and not made.work.done()
    held[0](7)
    held[0](8)  # a second result is not taken
    assert made.work.result() == {"answer": 7}


async def test_parked_hands_a_failing_answer_to_the_request_not_to_the_caller() -> None:
    held: list[Any] = []

    def broken(result: int) -> dict[str, int]:
        raise KeyError(result)

    made = parked(held.append, broken)
    held[0](7)  # the coordinator completing a join phase is not interrupted
    assert isinstance(made.work.exception(), KeyError)


async def test_parked_gives_nothing_once_its_client_has_gone() -> None:
    held: list[Any] = []
    calls: list[int] = []
    made = parked(held.append, lambda result: calls.append(result))
    made.work.cancel()
    held[0](7)
    assert calls == [] and made.work.cancelled()
