"""However a client's bytes are cut into reads, a connection takes the same frames in the same order:
frames are cut from a read itself when nothing waits in the connection's buffer, and from the buffer when
the rest of a frame arrives later; every byte held for them is released once they are answered."""

from __future__ import annotations

import asyncio
import random

from tests.controller.server.test_waiting_answers import answerer, answers, connect, framed, send, settle

FRAMES = [b"a", b"bb" * 40, b"w1", b"c" * 7, b"d"]
STREAM = framed(*FRAMES)
EXPECTED = b"[a][" + b"bb" * 40 + b"]<one>[ccccccc][d]"


async def answered_in(reads: list[bytes]) -> tuple[bytes, int, int]:
    """The answers to ``STREAM`` sent in ``reads``, the bytes still held and the requests unanswered."""
    waiting: dict = {}
    conn, transport, host = connect(answerer(waiting))
    for read in reads:
        send(conn, read)
        # The connection may take the frames over several turns (a turn ends after TURN_SECONDS: a
        # preempted one ends after a frame), so the waiting one is completed whenever it has come.
        for _ in range(4 * len(FRAMES)):
            if b"w1" in waiting and not waiting[b"w1"].done():
                waiting[b"w1"].set_result(b"one")
            await asyncio.sleep(0)
    return answers(transport), host.held_bytes, conn.unanswered


async def test_every_cut_into_two_reads_gives_the_same_answers() -> None:
    for cut in range(1, len(STREAM)):
        got = await answered_in([STREAM[:cut], STREAM[cut:]])
        assert got == (EXPECTED, 0, 0), f"cut at {cut}"


async def test_reads_of_random_sizes_give_the_same_answers() -> None:
    rng = random.Random(7)
    for _ in range(50):
        reads, pos = [], 0
        while pos < len(STREAM):
            size = rng.randint(1, 40)
            reads.append(STREAM[pos : pos + size])
            pos += size
        assert await answered_in(reads) == (EXPECTED, 0, 0), [len(r) for r in reads]


async def test_a_bad_frame_size_after_whole_frames_in_one_read_closes_after_answering_them() -> None:
    conn, transport, host = connect(answerer({}))
    send(conn, framed(b"a", b"b") + b"\xff\xff\xff\xff")
    await settle()
    assert answers(transport) == b"[a][b]"
    assert conn.closed and host.closes == ["bad frame size"] and host.held_bytes == 0
