"""Ctrl-C during a Spark sweep (issue 29, item 8): as a terminal sends it, to the whole process group, while
the runs are being written. The Spark jobs are cancelled, the tables the sweep had begun (and an earlier
sweep's, which they were replacing) are removed, so that no table looks complete, and the command says
so in one line and exits 130: no py4j traceback, no ``reentrant call``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.docs import ROOT

CLI = [sys.executable, "-m", "placement_sim.cli.main"]


def _wait_for(condition, timeout: float, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, "the sweep ended before it was interrupted"
        assert time.monotonic() < deadline, "the sweep never started writing"
        time.sleep(0.02)


def test_ctrl_c_during_a_spark_sweep_cancels_it_removes_its_tables_and_exits_130(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "aggregates" / "by_placer").mkdir(parents=True)  # an earlier sweep's tables and description
    (out / "sweep.json").write_text("{}")
    (out / "report.html").write_text("<html></html>")
    sweep = subprocess.Popen(
        [*CLI, "sweep", "--out", str(out), "--quiet", "--master", "local[2]"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,  # its own process group, as a shell's foreground job
    )
    try:
        # The runs are under way once their table is being written; on an idle machine the rest of the
        # sweep can end about a second later (seen in a clean run), so Ctrl-C comes at once.
        _wait_for(lambda: (out / "metrics" / "_temporary").exists(), 600, sweep)
        os.killpg(sweep.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        stdout, stderr = sweep.communicate(timeout=300)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait(30)
    assert sweep.returncode == 130, stderr
    assert stdout == ""
    assert stderr.splitlines() == [
        "sweep: 900 scenarios x 5 placers = 4,500 runs on Spark (local[2])",
        f"placement-sim sweep: interrupted: the Spark jobs were cancelled, and the tables begun in {out} removed",
    ]
    assert sorted(p.name for p in out.iterdir()) == []


def test_a_table_that_comes_back_after_its_removal_is_removed_again() -> None:
    """A cancelled task whose first record reaches its writer after the tables were removed makes its
    table's folder again: the removal waits for the work to be idle and removes again."""
    from placement_sim.pipeline.spark_job import removed_for_good

    folder = {"there": True, "late_writes": 1}
    removals: list[float] = []
    waits: list[float] = []

    def remove() -> None:
        removals.append(time.monotonic())
        folder["there"] = False

    def left() -> bool:
        if not folder["there"] and folder["late_writes"]:
            folder["late_writes"] -= 1
            folder["there"] = True  # the late task's writer makes the folder again
        return folder["there"]

    assert removed_for_good(waits.append, remove, left, settle=0.05, timeout=5.0)
    assert len(removals) == 2 and len(waits) == 2 and not folder["there"]


def test_a_table_that_keeps_coming_back_is_given_up_at_the_timeout() -> None:
    from placement_sim.pipeline.spark_job import removed_for_good

    started = time.monotonic()
    assert not removed_for_good(lambda _: None, lambda: None, lambda: True, settle=0.01, timeout=0.2)
    assert time.monotonic() - started < 5.0
