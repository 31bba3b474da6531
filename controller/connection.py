"""One client connection: frames in, answers out, in order, without ever holding up other connections.

A :class:`Connection` is an ``asyncio.BufferedProtocol``: bytes are read into its buffer
(:meth:`get_buffer`, :meth:`buffer_updated`; a big frame's rest straight into a buffer of its own,
:data:`BIG_FRAME`, which is the frame then), are cut into frames (a size prefix <= 0 or above ``socket.request.max.bytes`` closes the connection before the body
is read), and the frames are answered in arrival order. A request whose handler answers at once is
answered right there; one that must wait (a placement, an election) holds the requests behind it on
this connection only. At most :data:`TURN_FRAMES` requests are answered per turn of the event loop, and
the answers of one turn go out in one write, so that a client pipelining thousands of requests shares
the loop with everyone else.

A client that closes its side of the connection is answered what can be answered at once; a request
that must wait is not started (or is cancelled) and the connection closes, so that the work of a client
that has gone never holds up others.

Flow control, as Kafka's broker mutes a channel: a connection stops reading while it holds
``queued.max.requests`` unanswered requests, while the server holds ``queued.max.request.bytes`` of
frames in all, and while its client does not read its answers (the socket's send buffer is full); it
stops answering then too, after at most :data:`TURN_BYTES` of answers, and the bytes its transport
holds meanwhile are counted at the host (:meth:`ConnectionHost.unsent`: past
``simulator.unsent.answers.max.bytes`` in all, Fetch answers shrink to their first batch). A
frame's bytes count until its answer is made (not only until its work starts), so the requests being
worked on, and the memory their decoded forms take, are bounded by ``queued.max.request.bytes`` too.
``connections.max.idle.ms`` without a complete request (time spent answering does not count) closes it.

A connection knows nothing of the server or of what the frames mean: it is handed an ``answer``
callable (frame in, answer out: :mod:`controller.answers`), which the security layer wraps on SASL
listeners, and a :class:`ConnectionHost` that keeps the counts shared with other connections. The
largest frame it takes is its ``frame_limit`` (``socket.request.max.bytes``; the security layer sets a
smaller one until a SASL connection has authenticated).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast

from controller.answers import FUTURE, Answer, Close, Closing, Later
from controller.logsafe import shown
from protocol.framing import FramePieces

log = logging.getLogger(__name__)

__all__ = ["Connection", "ConnectionHost", "ConnectionLimits", "TURN_FRAMES"]

#: Requests answered per turn of the event loop before the loop serves others.
TURN_FRAMES = 64
#: ... or this much time (seconds), whichever comes first.
TURN_SECONDS = 0.002
#: ... or answers of this many bytes: they are written, and a client that does not read them stops the
#: connection's answering there (the transport pauses writing), so the answers held for one client are
#: the transport's high-water mark plus one turn's (plus the one answer a request in progress makes).
TURN_BYTES = 256 * 1024
#: A frame at least this big (bytes) is read from the socket straight into a buffer of its own size,
#: not through the connection's buffer, and answered from there (a read-only ``memoryview``, where
#: smaller frames are ``bytes``): a Produce of a 1 MB batch is never copied.
BIG_FRAME = 64 * 1024
#: ... and at most this big (a frame announced bigger is read through the connection's buffer, as its
#: bytes come), once 1/BIG_FRAME_ARRIVED of it has arrived: an announced size alone makes the server
#: allocate nothing.
BIG_FRAME_MAX = 4 * 1024 * 1024
BIG_FRAME_ARRIVED = 16
#: The most bytes one read of the socket takes outside a big frame.
READ_BYTES = 64 * 1024

_reads = threading.local()


def _read_buffer() -> memoryview:
    """The buffer the connections of this thread's event loop read into outside big frames: one for them
    all, since each read is taken out of it (:meth:`Connection.buffer_updated`) before the next starts."""
    buffer: memoryview | None = getattr(_reads, "buffer", None)
    if buffer is None:
        buffer = _reads.buffer = memoryview(bytearray(READ_BYTES))
    return buffer


_SIZE = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Kafka's per-connection limits, as the server's configuration gives them."""

    #: ``socket.request.max.bytes``: larger frames close the connection before their body is read.
    max_request_bytes: int
    #: ``queued.max.requests``: unanswered requests one connection may hold before it stops being read.
    queued_max_requests: int
    #: ``queued.max.request.bytes``: bytes of frames the server holds in all before connections stop.
    queued_max_request_bytes: int
    #: ``connections.max.idle.ms``.
    idle_ms: int


class ConnectionHost(Protocol):
    """What a connection shares with the others: admission, the bytes held in all, who waits for room."""

    held_bytes: int

    def connection_made(self, conn: Connection) -> None: ...

    def connection_lost(self, conn: Connection, reason: str) -> None: ...

    def answering(self, conn: Connection) -> bool: ...

    def hold(self, size: int) -> None: ...

    def release(self, size: int) -> None: ...

    def blocked(self, conn: Connection) -> None: ...

    def unsent(self, size: int) -> None:
        """Bytes of answers held for a client that does not read them changed by ``size``."""

    def log_close(self, conn: Connection, close: Close) -> None: ...


class Connection(asyncio.BufferedProtocol):
    """See the module docstring. ``broker`` is the broker whose listener took it (None: the bootstrap).
    The host sets :attr:`answer` when it admits the connection."""

    def __init__(self, host: ConnectionHost, limits: ConnectionLimits, broker: int | None) -> None:
        self.host = host
        self.limits = limits
        self.broker = broker
        #: Frame in, answer out: set by the host (wrapped by the security layer on SASL listeners).
        self.answer: Callable[[bytes], Answer] = _not_admitted
        #: The largest frame taken now, and the setting it comes from (the security layer's before a SASL
        #: connection has authenticated): a larger size prefix closes the connection unread.
        self.frame_limit: Callable[[], tuple[int, str]] = functools.partial(
            _request_limit, limits.max_request_bytes
        )
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.ip = ""
        self._buffer = bytearray()
        #: Where the socket is read into (:meth:`get_buffer`): the loop's read buffer, or a big frame's own.
        self._read = _read_buffer()
        #: A big frame being read (:data:`BIG_FRAME`): its bytes, and how many have arrived.
        self._big: bytearray | None = None
        self._big_filled = 0
        self._frames: deque[bytes] = deque()
        self._held = 0  # bytes of this connection counted against queued.max.request.bytes
        self._unsent = 0  # bytes of answers counted as unsent at the host (while its client does not read)
        self._out: list[bytes | FramePieces] = []
        #: The work in progress: a task waiting for a Later, or the Later's own future (:meth:`_done`).
        self._task: asyncio.Future[object] | None = None
        #: The work of the request being answered, until its task starts.
        self._pending: Later | None = None
        self._scheduled = False
        self._reading = True
        self._admitted = False
        self._write_blocked = False
        self._eof = False
        self.closed = False
        self._close_reason: str | None = None
        self._idle_since: float | None = None
        self._idle_handle: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------------------------- transport events

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes
        peername = transport.get_extra_info("peername")
        if isinstance(peername, tuple):
            self.ip = str(peername[0])
            self.peer = f"{peername[0]}:{peername[1]}"
        else:
            self.peer = self.ip = str(peername)
        self.host.connection_made(self)

    def admit(self) -> None:
        """The server lets this connection in: it is read and answered from now on."""
        self._admitted = True
        if self.transport is not None and not self.closed:
            if not self._reading:
                self._reading = True
                self.transport.resume_reading()
            self._waiting()

    @property
    def reading(self) -> bool:
        """Whether the connection is read now (flow control stops reading it while it has no room)."""
        return self._reading

    @property
    def unanswered(self) -> int:
        """Requests taken and not yet answered: queued, and the one being answered."""
        return len(self._frames) + (self._task is not None)

    def get_buffer(self, sizehint: int) -> memoryview:
        """Where the next read of the socket goes: the rest of a big frame (read in place: no copy of
        its bytes until the whole frame is there), else the connection's reused read buffer."""
        big = self._big
        if big is not None:
            return memoryview(big)[self._big_filled :]
        return self._read

    def buffer_updated(self, nbytes: int) -> None:
        big = self._big
        if big is None:
            self.data_received(self._read[:nbytes])
            return
        if self.closed:
            return
        self._big_filled += nbytes  # held already (_read_big)
        if self._big_filled < len(big):
            return
        self._big = None
        # Handed over as it is, read-only: the connection never touches these bytes again.
        self._frames.append(memoryview(big).toreadonly())  # type: ignore[arg-type]
        self._busy()
        if self._admitted:
            self._pump()
        self.flow()

    def data_received(self, data: bytes | memoryview) -> None:
        if self.closed:
            return
        size = len(data)
        self._held += size
        self.host.hold(size)
        buffer = self._buffer
        if buffer:  # the rest of a frame begun before: the frames are cut from the buffer
            buffer += data
            if not self._take(buffer):
                return
        elif not self._take(data):  # nothing waits: the frames are cut from the read itself
            return
        if self._admitted:
            self._pump()

    def _take(self, source: bytearray | bytes | memoryview) -> bool:
        """Cuts whole frames off ``source`` (the connection's buffer, or a read when the buffer is empty)
        while fewer than ``queued.max.requests`` are unanswered; what is left of a read waits in the
        buffer (and reading stops while frames wait there). False when a bad frame size closed the
        connection (a bad size after whole frames is judged once they are answered)."""
        limit, setting = self.frame_limit()
        frames = self._frames
        unanswered = self.unanswered
        room = self.limits.queued_max_requests - unanswered
        pos = 0
        end = len(source)
        bad: int | None = None  # a frame size that closes the connection
        big: int | None = None  # a big frame's size, whose rest is read into a buffer of its own
        # One copy per frame: slicing the bytearray and then bytes() of the slice would copy it twice. The
        # view is let go before the buffer changes size.
        with memoryview(source) as view:
            while end - pos >= 4 and room > 0:
                (size,) = _SIZE.unpack_from(view, pos)
                if size <= 0 or size > limit:
                    if unanswered:
                        # Judged once the requests before it are answered, as Kafka reads a connection's
                        # next size only then; the limit may change meanwhile (a SASL connection's grows
                        # when it has authenticated).
                        break
                    bad = size
                    break
                if end - pos - 4 < size:
                    if BIG_FRAME <= size <= BIG_FRAME_MAX and (end - pos - 4) * BIG_FRAME_ARRIVED >= size:
                        big = size
                    break
                frames.append(bytes(view[pos + 4 : pos + 4 + size]))
                pos += 4 + size
                room -= 1
                unanswered += 1
            buffer = self._buffer
            if source is not buffer and pos < end:
                buffer += view[pos:]
        if bad is not None:
            self.close(
                Close(
                    "bad frame size",
                    f"invalid frame size {bad} (must be between 1 and {limit}, {setting})",
                )
            )
            return False
        if source is buffer:
            if big is not None:
                self._read_big(pos, big)
            if pos:
                del buffer[:pos]
        elif big is not None:
            self._read_big(0, big)
        if pos:
            self._busy()
        return True

    def _read_big(self, pos: int, size: int) -> None:
        """The rest of the big frame at ``pos`` is read into a buffer of its own (:meth:`get_buffer`), when
        the server has room to hold all of it: its bytes still to come are held from now on, as Kafka's
        ``MemoryPool`` takes a whole receive buffer at once."""
        buffer = self._buffer
        arrived = len(buffer) - pos
        rest = size + 4 - arrived
        if self.host.held_bytes + rest > self.limits.queued_max_request_bytes:
            return  # read through the connection's buffer, as it comes
        big = self._big = bytearray(size)
        self._big_filled = arrived - 4
        with memoryview(buffer) as view:
            big[: self._big_filled] = view[pos + 4 :]
        del buffer[pos:]
        self._held += rest
        self.host.hold(rest)

    def _unfinished(self) -> int:
        """Bytes of a frame the buffer holds only part of (whole frames waiting to be taken do not count)."""
        if self._big is not None:
            return 4 + self._big_filled
        buffer = self._buffer
        pos = 0
        end = len(buffer)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buffer, pos)
            if size <= 0 or end - pos - 4 < size:
                break
            pos += 4 + size
        return end - pos

    def eof_received(self) -> bool:
        # The client will send no more. What it sent that can be answered at once is answered, then the
        # connection closes. Work that waits (a placer, an election) is cancelled instead, with what is
        # queued behind it: a client that closed its side cannot be told from one that left, and Kafka
        # closes a connection at the end of its stream.
        self._eof = True
        unfinished = self._unfinished()
        if unfinished:
            self.close(Close("disconnected mid-request", f"{unfinished} byte(s) of an unfinished frame"))
            return False
        if self._task is not None:
            log.debug("%s closed its side while a request was in progress: its work is cancelled", self.peer)
            self.close(None)
            return False
        if not self._frames and not self._buffer:
            self.close(None)
            return False
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed:
            self.closed = True
            if self._close_reason is None:
                if self._unfinished():
                    self._close_reason = "disconnected mid-request"
                elif isinstance(exc, (ConnectionResetError, BrokenPipeError)):
                    # The client reset the connection (closed it with answers unread, or at once): it
                    # left, as a client may; Kafka logs such a disconnect at debug too.
                    self._close_reason = "client reset"
                    log.debug("%s reset the connection (%s)", self.peer, exc)
                elif exc is not None:
                    self._close_reason = "connection error"
                    log.warning("closing connection from %s: connection error (%s)", self.peer, exc)
                else:
                    self._close_reason = "client"
                    log.debug("%s closed the connection", self.peer)
        self._release()
        self._cancel_work()
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        self.host.connection_lost(self, self._close_reason or "client")

    def pause_writing(self) -> None:
        self._write_blocked = True
        self._count_unsent()
        self.flow()

    def resume_writing(self) -> None:
        self._write_blocked = False
        self._count_unsent()
        self.flow()
        self._schedule()

    def _count_unsent(self) -> None:
        """The bytes of answers held for this client, counted at the host while the client does not read
        them (the transport is paused: above its high-water mark) and no more once it does."""
        size = 0
        transport = self.transport
        if self._write_blocked and transport is not None and not self.closed:
            size = transport.get_write_buffer_size()
        if size != self._unsent:
            self.host.unsent(size - self._unsent)
            self._unsent = size

    # ------------------------------------------------------------------------------------- answering

    def _pump(self) -> None:
        """Answers queued requests in order until one must wait, the turn's budget is used, or the server
        holds this connection back (a hung broker, a client that does not read)."""
        self._scheduled = False
        if (
            self.closed
            or self._task is not None
            or self._write_blocked
            or not self._admitted
            or not self.host.answering(self)
        ):
            self.flow()
            return
        frames = self._frames
        answer = self.answer
        out = self._out
        started = time.perf_counter()
        count = written = 0
        released = 0  # bytes of the frames answered in this turn, released together
        try:
            while frames:
                frame = frames.popleft()
                result = answer(frame)
                kind = result.__class__
                if kind is bytes or (kind is not Closing and not isinstance(result, Later)):
                    released += len(frame) + 4
                    out.append(result)  # type: ignore[arg-type]
                    count += 1
                    written += len(result)  # type: ignore[arg-type]
                    if (
                        count >= TURN_FRAMES
                        or written >= TURN_BYTES
                        or time.perf_counter() - started > TURN_SECONDS
                    ):
                        break
                    continue
                if released:
                    self._release_held(released)
                    released = 0
                if kind is Closing:
                    self._closing(result)  # type: ignore[arg-type]
                    return
                if self._eof:  # the client has gone: its work is not started
                    result.close()
                    self._flush()
                    self.close(None)
                    return
                work = result.work
                if work.__class__ is FUTURE:
                    # A future the handler completes (a commit waiting for the high watermark, a member
                    # waiting for its group's join phase): its answer is made when it is done, without a
                    # task of its own. A parked request's frame is not held while it waits.
                    size = len(frame)
                    if result.parked:
                        self._release_frame(size)
                        size = -1
                    self._task = work
                    work.add_done_callback(functools.partial(self._done, result, size))
                    break
                self._pending = result
                self._task = asyncio.ensure_future(self._finish(result, len(frame)))
                break
        except Close as close:  # the close releases every byte held, those of this turn's frames too
            self._flush()
            self.close(close)
            return
        if released:
            self._release_held(released)
        self._flush()
        if self._buffer and not self._take(self._buffer):
            return
        if frames and self._task is None:
            self._schedule()
        elif not frames and self._task is None:
            self._waiting()
            if self._eof:
                self.close(None)
        self.flow()

    async def _finish(self, pending: Later, size: int) -> None:
        """Waits for ``pending`` (the answer to a frame of ``size`` bytes, held until it is answered, or,
        for a parked request, only until it starts waiting: :class:`controller.answers.Parked`)."""
        self._pending = None  # started: cancelling the task now cancels the work too

        def park() -> None:
            nonlocal size
            if size >= 0 and not self.closed:
                self._release_frame(size)
                size = -1
                self.flow()

        try:
            response = await pending.run(park)
        except Close as close:
            self._task = None
            self.close(close)
            return
        except asyncio.CancelledError:
            return
        self._task = None
        if self.closed:
            return
        if size >= 0:
            self._release_frame(size)
        if isinstance(response, Closing):
            self._closing(response)
            return
        self._out.append(response)
        self._pump()

    def _done(self, pending: Later, size: int, work: asyncio.Future[object]) -> None:
        """:meth:`_finish` for a Later whose work is a future: called once it is done (``size`` -1: its
        frame was released when it was parked)."""
        if self._task is not work:
            return  # cancelled: the client went away
        self._task = None
        if work.cancelled() or self.closed:
            return
        try:
            failed = work.exception()
            answer = pending.finish(work.result()) if failed is None else None
            if failed is not None:
                if isinstance(failed, Close):
                    raise failed
                if not isinstance(failed, Exception):
                    return
                answer = pending.fail(failed)
        except Close as close:
            self.close(close)
            return
        if isinstance(answer, Later):  # more to wait for (an answer encoded off the loop)
            self._task = asyncio.ensure_future(self._finish(answer, size))
            return
        if size >= 0:
            self._release_frame(size)
        if answer.__class__ is Closing:
            self._closing(answer)  # type: ignore[arg-type]
            return
        self._out.append(answer)  # type: ignore[arg-type]
        self._pump()

    def _closing(self, closing: Closing) -> None:
        """Sends what was answered and ``closing``'s frame, then closes (at once, or after its delay)."""
        if closing.frame is not None:
            self._out.append(closing.frame)
        self._flush()
        self._frames.clear()  # nothing after it is answered
        if closing.frame is None or not closing.after:
            self.close(closing.close, quiet=True)
        else:
            self._reading = False
            if self.transport is not None:
                self.transport.pause_reading()
            asyncio.get_running_loop().call_later(closing.after, self.close, closing.close, True)

    def _schedule(self) -> None:
        if not self._scheduled and not self.closed:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._pump)

    def resume(self) -> None:
        """The server serves this connection again (its broker stopped hanging)."""
        self._schedule()

    def _flush(self) -> None:
        out = self._out
        transport = self.transport
        if out and transport is not None and not transport.is_closing():
            # A frame in pieces (a Fetch answer's records, the logs' own bytes) goes to the transport as it
            # is: uvloop writes the pieces with one vectored write, where a join would copy every record
            # once more (a quarter of a consumer's CPU per MB). Other frames are joined as before.
            if len(out) == 1:
                answer = out[0]
                if answer.__class__ is FramePieces:
                    transport.writelines(answer.pieces)  # type: ignore[attr-defined]
                else:
                    transport.write(answer)  # type: ignore[arg-type]
            else:
                written: list[bytes | memoryview] = []
                for answer in out:
                    if answer.__class__ is FramePieces:
                        written.extend(answer.pieces)  # type: ignore[attr-defined]
                    else:
                        written.append(answer)  # type: ignore[arg-type]
                if len(written) == len(out):
                    transport.write(b"".join(written))
                else:
                    transport.writelines(written)
        out.clear()

    # ------------------------------------------------------------------------------------- flow and idle

    def flow(self) -> None:
        """Reads only while this connection and the server have room (Kafka mutes channels the same way)."""
        if self.transport is None or self.closed or not self._admitted:
            return
        limits = self.limits
        room = (
            self.unanswered < limits.queued_max_requests
            and not self._write_blocked
            and (self.host.held_bytes < limits.queued_max_request_bytes or self._held == 0)
        )
        if room and not self._reading:
            self._reading = True
            self.transport.resume_reading()
        elif not room and self._reading:
            self._reading = False
            self.transport.pause_reading()
            self.host.blocked(self)

    def _release_frame(self, size: int) -> None:
        self._release_held(size + 4)

    def _release_held(self, size: int) -> None:
        """Bytes of frames (with their size prefixes) no longer held for this connection."""
        self._held -= size
        self.host.release(size)

    def _cancel_work(self) -> None:
        """Work for a client that went away is not finished (nor started)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.close()

    def _release(self) -> None:
        if self._held:
            self.host.release(self._held)
            self._held = 0
        if self._unsent:
            self.host.unsent(-self._unsent)
            self._unsent = 0
        self._frames.clear()
        self._buffer.clear()
        self._big = None

    def _busy(self) -> None:
        self._idle_since = None

    def _waiting(self) -> None:
        """Idle from now until the next complete request (answers in progress are not idle time)."""
        if self._frames or self._task is not None or self.closed:
            return
        loop = asyncio.get_running_loop()
        idle = self.limits.idle_ms / 1000
        if self._idle_since is None:  # bytes of an unfinished frame do not restart the clock
            self._idle_since = loop.time()
        if self._idle_handle is None:
            self._idle_handle = loop.call_at(self._idle_since + idle, self._check_idle)

    def _check_idle(self) -> None:
        self._idle_handle = None
        if self.closed:
            return
        loop = asyncio.get_running_loop()
        idle = self.limits.idle_ms / 1000
        since = self._idle_since
        if since is not None and loop.time() - since >= idle:
            self.close(
                Close("idle", f"no complete request within connections.max.idle.ms={self.limits.idle_ms}")
            )
            return
        self._idle_handle = loop.call_at(
            (since if since is not None else loop.time()) + idle, self._check_idle
        )

    # ------------------------------------------------------------------------------------- closing

    def close(self, why: Close | None, quiet: bool = False) -> None:
        """Closes the connection (after what was answered is sent); ``why`` None: the client finished."""
        if self.closed:
            return
        self.closed = True
        if why is None:
            self._close_reason = "client"
        else:
            self._close_reason = why.reason
            if not quiet:
                self.host.log_close(self, why)
        self._release()
        self._cancel_work()
        if self.transport is not None:
            self.transport.close()

    def abort(self, reason: str) -> None:
        """Drops the connection at once, unanswered (its broker crashed, the server stops)."""
        if self.closed:
            return
        self.close(Close(reason), quiet=True)
        if self.transport is not None:
            self.transport.abort()

    def __repr__(self) -> str:
        return f"Connection({shown(self.peer)}, broker={self.broker})"


def _request_limit(limit: int) -> tuple[int, str]:
    return limit, "socket.request.max.bytes"


def _not_admitted(frame: bytes) -> Answer:
    raise Close("internal error", "a frame was answered before the connection was admitted")
