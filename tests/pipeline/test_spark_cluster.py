"""The sweep on a real Spark standalone cluster: a master and one worker started as processes of their
own (loopback only), the sweep submitted with ``spark-submit`` as a user would, its tables equal to the
single-process run's. The commands are read from docs/sweep-cluster.md and run word for word."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from placement_sim.pipeline.aggregates import AGGREGATES, TIMING_MEASURES
from placement_sim.pipeline.records import TIMING_COLUMNS

#: Its setup packs the project for the cluster's executors: with nothing beside it (a second worker's
#: codec cache written meanwhile made the pack fail: "file changed as we read it").
pytestmark = pytest.mark.alone

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "sweep-cluster.md"
TABLES = ("metrics", "placements", "failures", "rack_losses", "failovers")

#: Time bounds (seconds) on a shared, loaded machine: each process start, the submitted sweep, the local one.
START_S = 240
SUBMIT_S = 900
LOCAL_S = 300


def _blocks() -> list[str]:
    """The documentation's ``sh`` blocks, in order: environment, master, worker, grid, submit, local."""
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 6, f"{DOC} should hold six sh blocks, found {len(blocks)}"
    return blocks


def _env_after(script: str, env: dict[str, str]) -> dict[str, str]:
    """The environment after running ``script`` in bash."""
    result = subprocess.run(
        ["bash", "-c", f"set -e\n{script}\nenv -0"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        check=True,
    )
    pairs = (item.split("=", 1) for item in result.stdout.decode().split("\0") if "=" in item)
    return dict(pairs)


def _start(script: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            ["bash", "-c", f"exec {script.strip()}"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole below
        )


def _wait_for(log: Path, pattern: str, process: subprocess.Popen[bytes]) -> re.Match[str]:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(
        f"no {pattern!r} in {log} within {START_S} s:\n{log.read_text(errors='replace')[-3000:]}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)


def _run(script: str, env: dict[str, str], timeout: int, log: Path) -> None:
    with log.open("wb") as out:
        result = subprocess.run(
            ["bash", "-c", f"set -e\n{script}"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            start_new_session=True,
        )
    assert result.returncode == 0, log.read_text(errors="replace")[-5000:]


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    work = tmp_path_factory.mktemp("spark-cluster")
    setup, master, worker, prepare, submit, local = _blocks()
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "WORK": str(work), "PATH": path}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env = _env_after(setup, env)
    started: list[subprocess.Popen[bytes]] = []
    try:
        started.append(_start(master, env, work / "master.log"))
        env["MASTER"] = _wait_for(work / "master.log", r"Starting Spark master at (spark://\S+)", started[0])[
            1
        ]
        started.append(_start(worker, env, work / "worker.log"))
        _wait_for(work / "worker.log", r"Successfully registered with master", started[1])
        _run(prepare, env, 60, work / "prepare.log")
        _run(submit, env, SUBMIT_S, work / "submit.log")
        _run(local, env, LOCAL_S, work / "local.log")
        yield work
    finally:
        for process in reversed(started):
            _stop(process)


def _table(path: Path) -> pd.DataFrame:
    frame = pq.read_table(path).to_pandas()
    frame = frame.drop(columns=[c for c in (*TIMING_COLUMNS, *TIMING_MEASURES) if c in frame.columns])
    keys = [
        c for c in ("scenario", "placer", "failure", "policy", "topic", "partition", "rack") if c in frame
    ]
    return frame.sort_values(keys).reset_index(drop=True) if keys else frame


def test_the_cluster_ran_the_grid_on_its_executor(cluster_run: Path) -> None:
    log = (cluster_run / "submit.log").read_text(errors="replace")
    assert re.search(r"Granted executor ID \S+ on hostPort 127\.0\.0\.1:\d+", log)
    failovers = _table(cluster_run / "cluster-out" / "failovers")
    # 1 scenario x 2 placers x 2 failure kinds x 2 policies, the third-party ones among them.
    assert len(failovers) == 8
    assert set(failovers["placer"]) == {"fluvio", "thirdparty_placer.DescendingPlacer"}
    assert set(failovers["policy"]) == {"kafka", "thirdparty_policy.LastEligiblePolicy"}


@pytest.mark.parametrize("table", [*TABLES, *(f"aggregates/{a.name}" for a in AGGREGATES)])
def test_the_cluster_writes_the_tables_of_the_single_process(cluster_run: Path, table: str) -> None:
    on_cluster = _table(cluster_run / "cluster-out" / table)
    local = _table(cluster_run / "local-out" / table)
    pd.testing.assert_frame_equal(on_cluster, local, check_exact=True)
