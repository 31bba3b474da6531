"""Work in worker threads (controller.offload.in_thread): the interpreter switches threads often while any
runs, and as before once the last ends; the collector is paused meanwhile; results and errors come back."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading

import pytest

from controller import offload


def test_threads_switch_often_while_work_runs_and_as_before_after() -> None:
    before = sys.getswitchinterval()
    seen: list[tuple[float, bool]] = []
    release = threading.Event()

    def work(n: int) -> int:
        seen.append((sys.getswitchinterval(), gc.isenabled()))
        release.wait(5)
        return n * 2

    async def main() -> list[int]:
        first = asyncio.ensure_future(offload.in_thread(work, 1))
        second = asyncio.ensure_future(offload.in_thread(work, 2))
        while len(seen) < 2:
            await asyncio.sleep(0.01)
        release.set()
        done = [await first]
        assert sys.getswitchinterval() == pytest.approx(offload.SWITCH_INTERVAL) or second.done()
        done.append(await second)
        return done

    assert asyncio.run(main()) == [2, 4]
    assert seen == [(pytest.approx(offload.SWITCH_INTERVAL), False)] * 2
    assert sys.getswitchinterval() == pytest.approx(before) and gc.isenabled()


def test_an_error_in_a_thread_reaches_the_caller_and_restores_the_interval() -> None:
    before = sys.getswitchinterval()

    def broken() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        asyncio.run(offload.in_thread(broken))
    assert sys.getswitchinterval() == pytest.approx(before) and gc.isenabled()
