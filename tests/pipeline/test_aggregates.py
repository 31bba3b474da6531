"""The metrics rows and per-placer aggregates of a tiny sweep (single process), and the table the sweep
command prints, checked against values worked out by hand.

The placer puts every partition on brokers 0..rf-1, leader first, so each run's figures follow from
the cluster shape alone, and the leader and replica columns differ in every run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from placement_sim.cli.main import main
from placement_sim.pipeline.aggregates import TIMING_MEASURES
from placement_sim.pipeline.grid import Grid, parse_grid
from placement_sim.pipeline.sweep import SweepResult, run_sweep
from tests.support.placers import placer_file

FIRST_BROKERS = placer_file("RecordingPlacer")

# Three shapes, one topic of 3 partitions x 2 replicas, one seed: every partition is [0, 1].
GRID = f"""
seeds = [0]
placers = ["{FIRST_BROKERS}"]

[[clusters]]
name = "flat"
racks = [2]
brokers_per_rack = [1, 2]

[[clusters]]
name = "no-rack"
brokers = [5]

[[workloads]]
name = "w"
topics = 1
partitions = 3
replication_factor = 2
"""

# Worked by hand, per run (skew = max / mean; within = share of brokers within +-10% of the mean):
# flat-2x1 (0 in rack-a, 1 in rack-b): replicas 3, 3 -> skew 1.0, within 1.0; leaders 3, 0 (mean 1.5)
#   -> skew 2.0, within 0. [0, 1] spans both racks: no violation. Losing rack-a moves the 3 leaders to
#   1, losing rack-b moves none: at most 3 leaders on a broker, as before: growth 3 / 3 = 1.0, 0 offline.
# flat-2x2 (0, 1 in rack-a; 2, 3 in rack-b): replicas 3, 3, 0, 0 (mean 1.5) -> skew 2.0, within 0;
#   leaders 3, 0, 0, 0 (mean 0.75) -> skew 4.0, within 0. Every [0, 1] sits in rack-a alone: 3 violations;
#   losing rack-a takes all 3 offline, losing rack-b leaves broker 0 its 3 leaders: growth 3 / 3 = 1.0.
# no-rack-5: replicas 3, 3, 0, 0, 0 (mean 1.2) -> skew 2.5, within 0; leaders 3, 0, 0, 0, 0 (mean 0.6)
#   -> skew 5.0, within 0. No racks: no violation, no rack to lose (growth 0.0, 0 offline).
RUNS = {
    # scenario: (leaders_skew, replicas_skew, leaders_within_10pct, replicas_within_10pct)
    "flat-2x1/w/s0": (2.0, 1.0, 0.0, 1.0),
    "flat-2x2/w/s0": (4.0, 2.0, 0.0, 0.0),
    "no-rack-5/w/s0": (5.0, 2.5, 0.0, 0.0),
}
# Over the three runs: leader skew mean (2 + 4 + 5) / 3 = 11/3, worst 5; replica skew mean
# (1 + 2 + 2.5) / 3 = 11/6, worst 2.5; replicas within mean 1/3, leaders within mean 0; no run has
# every broker in bound for both; rack violations 3 (in 1 run of 3); growth mean (1 + 1 + 0) / 3 = 2/3,
# worst 1.0; worst offline 3.
BY_PLACER = {
    "placer": FIRST_BROKERS,
    "runs": 3,
    "runs_placed": 3,
    "leaders_skew_mean": 11 / 3,
    "leaders_skew_worst": 5.0,
    "replicas_skew_mean": 11 / 6,
    "replicas_skew_worst": 2.5,
    "balance_bound_share": 0.0,
    "rack_violations_total": 3,
    "rack_failure_leader_growth_mean": 2 / 3,
    "failed_requests": 0,
    "leaders_within_10pct_mean": 0.0,
    "replicas_within_10pct_mean": 1 / 3,
    "runs_with_rack_violations_share": 1 / 3,
    "rack_failure_leader_growth_worst": 1.0,
    "rack_failure_offline_partitions_worst": 3,
}


@pytest.fixture(scope="module")
def grid() -> Grid:
    return parse_grid(GRID)


@pytest.fixture(scope="module")
def sweep(grid: Grid, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    return run_sweep(grid, str(tmp_path_factory.mktemp("aggregates-sweep")), use_spark=False)


def test_each_runs_metrics_row_carries_its_own_skews(
    sweep: SweepResult, read_table: Callable[[str | Path, str], pd.DataFrame]
) -> None:
    metrics = read_table(sweep.out, "metrics")
    columns = ["leaders_skew", "replicas_skew", "leaders_within_10pct", "replicas_within_10pct"]
    assert {row["scenario"]: tuple(row[c] for c in columns) for _, row in metrics.iterrows()} == RUNS
    placements = read_table(sweep.out, "placements")
    assert {tuple(r) for r in placements["replicas"]} == {(0, 1)} and len(placements) == 9


def test_the_per_placer_aggregates_carry_the_figures_of_the_right_metric(sweep: SweepResult) -> None:
    skews = [BY_PLACER[k] for k in ("leaders_skew_mean", "leaders_skew_worst")] + [
        BY_PLACER[k] for k in ("replicas_skew_mean", "replicas_skew_worst")
    ]
    assert len(set(skews)) == 4 and not {0, 1} & set(skews)  # a swap cannot go unnoticed
    for table in (sweep.aggregates["by_placer"], pq.read_table(Path(sweep.out) / "aggregates" / "by_placer")):
        [row] = table.to_pylist()
        assert [k for k in row if k not in TIMING_MEASURES] == list(BY_PLACER)
        for key, expected in BY_PLACER.items():
            assert row[key] == pytest.approx(expected, rel=1e-12), key


def test_the_per_family_aggregates_split_the_runs(sweep: SweepResult) -> None:
    rows = {row["family"]: row for row in sweep.aggregates["by_placer_family"].to_pylist()}
    # flat: runs 2x1 and 2x2; no-rack: run 5 alone.
    assert (rows["flat"]["leaders_skew_mean"], rows["flat"]["leaders_skew_worst"]) == (3.0, 4.0)
    assert (rows["flat"]["replicas_skew_mean"], rows["flat"]["replicas_skew_worst"]) == (1.5, 2.0)
    assert (rows["no-rack"]["leaders_skew_mean"], rows["no-rack"]["replicas_skew_mean"]) == (5.0, 2.5)


def test_the_sweep_command_prints_each_figure_under_its_own_heading(tmp_path: Path, capsys) -> None:
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(GRID)
    out = tmp_path / "out"
    assert main(["sweep", "--no-spark", "--grid", str(grid_file), "--out", str(out), "--quiet"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    printed = dict(zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", row.strip()), strict=True))
    assert printed == {
        "placer": FIRST_BROKERS,
        "runs": "3",
        "leader skew": "3.667",
        "replica skew": "1.833",
        "in bound": "0%",
        "rack viol.": "3",
        "rack loss growth": "0.67",
        "failed req.": "0",
    }


# One flat cluster and one of rack paths: multi-level applies to the second only.
MIXED_GRID = """
seeds = [0]
placers = ["multi-level"]

[[clusters]]
name = "flat"
racks = [3]
brokers_per_rack = [2]

[[clusters]]
name = "dcs"
levels = [[3, 2]]
brokers_per_rack = [1]

[[workloads]]
name = "w"
topics = 2
partitions = 3
replication_factor = 2
"""


def test_the_sweep_command_shows_a_placer_that_does_not_apply_apart_from_its_failures(
    tmp_path: Path, capsys
) -> None:
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(MIXED_GRID)
    out = tmp_path / "out"
    assert main(["sweep", "--no-spark", "--grid", str(grid_file), "--out", str(out), "--quiet"]) == 0
    header, row, note = capsys.readouterr().out.splitlines()[:3]
    printed = dict(zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", row.strip()), strict=True))
    assert (printed["placer"], printed["runs"], printed["failed req."]) == ("multi-level", "2", "0")
    assert note.startswith(
        "multi-level: not applicable to 1 of 2 runs (2 requests), e.g.: Multi-level rack awareness needs every "
        "rack id to be a path starting with '/'"
    )
    [by_placer] = pq.read_table(out / "aggregates" / "by_placer").to_pylist()
    assert by_placer["failed_requests"] == 2  # the wire's answers: both of the flat run's requests failed
