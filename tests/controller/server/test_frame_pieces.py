"""A frame in pieces (a Fetch answer: the logs' own bytes between its fields) goes to the transport as
those very objects, in order with the frames answered beside it: the records are never joined into a copy
on their way to the socket."""

from __future__ import annotations

from typing import Any

from protocol.framing import FramePieces
from tests.controller.server.test_waiting_answers import answers, connect, framed, send, settle

RECORDS = memoryview(bytearray(b"r" * 300_000)).toreadonly()  # as a log holds a big Produce's batch


def answer(frame: bytes) -> Any:
    if frame.startswith(b"f"):
        return FramePieces([b"{", RECORDS, b"}"], 2 + len(RECORDS))
    return b"[" + frame + b"]"


async def test_a_frame_in_pieces_is_written_as_its_pieces_in_order_with_the_others() -> None:
    conn, transport, host = connect(answer)
    send(conn, framed(b"a", b"f1", b"b"))
    await settle()
    assert answers(transport) == b"[a]{" + bytes(RECORDS) + b"}[b]"
    [pieces] = transport.pieces
    assert any(piece is RECORDS for piece in pieces)  # the log's bytes themselves, not a copy
    assert host.held_bytes == 0 and conn.unanswered == 0


async def test_a_frame_in_pieces_alone_is_written_as_its_pieces() -> None:
    conn, transport, _ = connect(answer)
    send(conn, framed(b"f2"))
    await settle()
    assert transport.pieces == [[b"{", RECORDS, b"}"]]
    assert answers(transport) == b"{" + bytes(RECORDS) + b"}"


async def test_frames_without_pieces_are_written_joined() -> None:
    conn, transport, _ = connect(answer)
    send(conn, framed(b"a", b"b"))
    await settle()
    assert transport.pieces == [] and answers(transport) == b"[a][b]"


def test_a_frame_in_pieces_measures_and_joins_to_its_bytes() -> None:
    frame = FramePieces([b"ab", memoryview(b"cde")], 5)
    assert len(frame) == 5 and bytes(frame) == b"abcde"
