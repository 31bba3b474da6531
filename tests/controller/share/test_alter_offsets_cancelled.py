"""AlterShareGroupOffsets writes every partition's state at once (gathered); a handler cancelled as its
client leaves, after it gathered the writes and before they started, leaves no write half made and no
coroutine never awaited (the million-frame fuzz run printed one such RuntimeWarning)."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from controller.share.handlers.alter_share_group_offsets import _into


def test_writes_gathered_then_cancelled_are_never_made() -> None:
    made: list[int] = []

    async def write() -> int:
        made.append(1)
        return 0

    async def handler(entries: list[dict[str, int]]) -> None:
        await asyncio.gather(*(_into(entry, write) for entry in entries))

    async def main() -> None:
        entries: list[dict[str, int]] = [{}, {}]
        task = asyncio.ensure_future(handler(entries))
        await asyncio.sleep(0)  # the handler gathered its writes: they start at the loop's next turn
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert entries == [{}, {}]

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert made == []
    assert [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)] == []
