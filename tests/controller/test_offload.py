"""Work in worker threads (controller.offload.in_thread): the interpreter switches threads often while any
runs, and as before once the last ends; the collector is paused meanwhile; results and errors come back."""

from __future__ import annotations

import asyncio
import gc
import itertools
import re
import sys
import threading
import time

import pytest

from controller import offload


def test_threads_switch_often_while_work_runs_and_as_before_after() -> None:
    before = sys.getswitchinterval()
    seen: list[tuple[float, bool]] = []

    def work(n: int) -> int:
        seen.append((sys.getswitchinterval(), gc.isenabled()))
        return n * 2

    async def main() -> list[int]:
        return list(await asyncio.gather(offload.in_thread(work, 1), offload.in_plugin_thread(work, 2)))

    assert asyncio.run(main()) == [2, 4]
    assert seen == [(pytest.approx(offload.SWITCH_INTERVAL), False)] * 2
    assert sys.getswitchinterval() == pytest.approx(before) and gc.isenabled()


def test_the_simulators_work_runs_in_one_thread_one_piece_after_another() -> None:
    """Big work sent off the loop at once runs in the order sent, in one thread (any further runnable
    thread is one more the event loop waits behind): the second starts once the first has ended."""
    spans: list[tuple[str, str, float, float]] = []

    def work(name: str) -> str:
        start = time.perf_counter()
        time.sleep(0.05)
        spans.append((name, threading.current_thread().name, start, time.perf_counter()))
        return name

    async def main() -> list[str]:
        return list(await asyncio.gather(*(offload.in_thread(work, name) for name in "abc")))

    assert asyncio.run(main()) == ["a", "b", "c"]
    assert [name for name, *_ in spans] == ["a", "b", "c"]
    assert len({thread for _, thread, *_ in spans}) == 1
    assert all(earlier[3] <= later[2] for earlier, later in itertools.pairwise(spans))


def test_a_plugin_stuck_in_its_thread_holds_up_no_other_work() -> None:
    """A plugin's code runs beside the simulator's worker: one that has not returned (here until released)
    does not keep the simulator's own work waiting."""
    release = threading.Event()

    def stuck() -> str:
        release.wait(10)
        return "plugin"

    async def main() -> tuple[str, bool]:
        plugin = asyncio.ensure_future(offload.in_plugin_thread(stuck))
        own = await asyncio.wait_for(offload.in_thread(lambda: "own"), 5)
        waiting = not plugin.done()
        release.set()
        await plugin
        return own, waiting

    assert asyncio.run(main()) == ("own", True)


def test_an_error_in_a_thread_reaches_the_caller_and_restores_the_interval() -> None:
    before = sys.getswitchinterval()

    def broken() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        asyncio.run(offload.in_thread(broken))
    assert sys.getswitchinterval() == pytest.approx(before) and gc.isenabled()


_SERVE_AND_LOOK = """
import gc, os, signal, sys, threading, time
from controller.offload import YOUNG_THRESHOLD
from placement_sim.cli.main import main

before = gc.get_threshold()

def look():
    deadline = time.monotonic() + 20
    while gc.get_threshold()[0] != YOUNG_THRESHOLD and time.monotonic() < deadline:
        time.sleep(0.01)
    print("threshold", before[0], gc.get_threshold()[0], "frozen", gc.get_freeze_count() > 0, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=look, daemon=True).start()
sys.exit(main(["serve", "--listen", "127.0.0.1:0", "--seed", "1"]))
"""


def test_a_serving_process_freezes_its_start_and_collects_young_objects_less_often() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _SERVE_AND_LOOK], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    # Found anywhere in the output: the look thread prints while serve prints its start lines, and a print
    # writes its text and its newline apart, so its line may follow another's text (under load on 3.13).
    [(before, after, frozen)] = re.findall(r"threshold (\d+) (\d+) frozen (True|False)", done.stdout)
    # (The interpreter's own first threshold: 700 up to Python 3.12, 2000 from 3.13.)
    assert int(before) < offload.YOUNG_THRESHOLD
    assert (int(after), frozen) == (offload.YOUNG_THRESHOLD, "True")
    assert "stopped" in done.stdout


def test_an_embedded_server_leaves_its_hosts_collector_as_it_is() -> None:
    from controller.embedded import ServerThread

    # (Its freezes after big work, gc_paused's, are not counted here: other servers of the session may
    # freeze meanwhile.)
    threshold = gc.get_threshold()
    with ServerThread.start():
        assert gc.get_threshold() == threshold
    assert gc.get_threshold() == threshold
