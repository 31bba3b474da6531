"""The event loop's watch (``benchmarks/fuzz.py --watch``) reports a stall with where the loop stood."""

from __future__ import annotations

import time

from controller.embedded import ServerThread
from tests.support.loopwatch import LoopWatch


def _hold_the_loop() -> None:
    time.sleep(0.6)


def test_a_stall_is_reported_with_the_loop_threads_stack() -> None:
    with ServerThread.start(seed=1) as server:
        with LoopWatch(server, threshold=0.2) as watch:
            server.call(_hold_the_loop)
            time.sleep(0.1)
    [stall] = [s for s in watch.stalls if s.seconds > 0.4]
    assert any("_hold_the_loop" in stack for stack in stall.loop_stacks)
    assert stall.lines()[0].startswith("loop stalled ")
    assert "connections 0, not read 0" in stall.state
