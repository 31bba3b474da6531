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
    [line] = [line for line in done.stdout.splitlines() if line.startswith("threshold")]
    _, before, after, _, frozen = line.split()
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
