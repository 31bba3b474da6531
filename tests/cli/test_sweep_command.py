"""``placement-sim sweep`` as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from placement_sim.cli.main import main
from placement_sim.pipeline.default_grid import default_grid
from placement_sim.pipeline.grid import parse_grid
from placement_sim.pipeline.report import main as report_main

GRID = """
seeds = 1
placers = ["fluvio", "striped"]
[[clusters]]
name = "unbalanced"
rack_sizes = [[1, 2, 3]]
[[workloads]]
name = "fluvio-example"
topics = 1
partitions = 6
replication_factor = 3
"""


@pytest.fixture
def grid_file(tmp_path: Path) -> Path:
    path = tmp_path / "grid.toml"
    path.write_text(GRID)
    return path


def test_sweep_without_spark_writes_the_tables_and_the_report(grid_file, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    code = main(
        ["sweep", "--no-spark", "--grid", str(grid_file), "--out", str(out), "--seeds", "2", "--quiet"]
    )
    assert code == 0
    printed = capsys.readouterr()
    assert "sweep: 2 scenarios x 2 placers = 4 runs in this process" in printed.err
    lines = printed.out.splitlines()
    assert lines[0].split()[:2] == ["placer", "runs"]
    assert [line.split()[0] for line in lines[1:3]] == ["fluvio", "striped"]
    assert lines[-1].endswith(f"report: {out / 'report.html'}")
    assert pq.read_table(out / "metrics").num_rows == 4
    assert pq.read_table(out / "placements").num_rows == 4 * 6
    assert (
        (out / "report.html").is_file() and (out / "grid.json").is_file() and (out / "sweep.json").is_file()
    )


def test_the_spark_submit_entry_runs_as_a_file_and_takes_the_sweep_options(grid_file, tmp_path) -> None:
    """``spark-submit`` runs ``placement_sim/cli/spark_submit.py`` by its path (the file's folder first on
    sys.path, not the checkout's root): its imports resolve and the options are the sweep's."""
    entry = Path(__file__).resolve().parents[2] / "placement_sim" / "cli" / "spark_submit.py"
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, str(entry), "--no-spark", "--grid", str(grid_file), "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "sweep: 1 scenario x 2 placers = 2 runs in this process" in result.stderr
    assert pq.read_table(out / "metrics").num_rows == 2


def test_a_quiet_sweep_on_spark_prints_no_spark_or_jvm_lines(grid_file, tmp_path) -> None:
    """--quiet on Spark: the sweep's own lines only, none of the JVM's start banner or Spark's WARN lines."""
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "placement_sim.cli.main", "sweep", "--grid", str(grid_file), "--out", str(out)]
        + ["--master", "local[1]", "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "sweep: 1 scenario x 2 placers = 2 runs on Spark (local[1])\n"
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["placer", "fluvio", "striped"]
    assert re.fullmatch(
        rf"2 runs in [0-9.]+s \([0-9.]+s with the report\); tables in {out}; report: {out}/report.html",
        lines[3],
    )
    assert len(lines) == 4


#: A placer module that only ``--py-files`` makes importable on the executors (written to a fresh folder).
SHIPPED_PLACER = """
from controller.placement.api import ReplicaPlacer


class FirstBrokersPlacer(ReplicaPlacer):
    \"\"\"Every partition on the lowest unfenced broker ids, in order.\"\"\"

    def place(self, spec, cluster):
        ids = sorted(b.id for b in cluster.usable(spec) if not b.fenced)
        return [ids[: spec.num_replicas] for _ in range(spec.num_partitions)]
"""


def test_sweep_on_spark_with_placers_and_settings_from_the_command_line(
    spark, grid_file, tmp_path, capsys
) -> None:
    shipped = tmp_path / "shipped" / "cli_shipped_placer.py"
    shipped.parent.mkdir()
    shipped.write_text(SHIPPED_PLACER)
    out = tmp_path / "out"
    code = main(
        [
            "sweep",
            "--grid", str(grid_file),
            "--placers", "fluvio,legacy,cli_shipped_placer.FirstBrokersPlacer",
            "--py-files", str(shipped),
            "--out", str(out),
            "--master", "local[2]",
            "--conf", "spark.sql.shuffle.partitions=2",
            "--partitions", "2",
            "--quiet",
        ]
    )  # fmt: skip
    assert code == 0
    assert "on Spark (local[2])" in capsys.readouterr().err
    metrics = pq.read_table(out / "metrics").to_pandas()
    assert sorted(metrics["placer"]) == ["cli_shipped_placer.FirstBrokersPlacer", "fluvio", "legacy"]
    placements = pq.read_table(out / "placements").to_pandas()
    shipped_rows = placements[placements["placer"] == "cli_shipped_placer.FirstBrokersPlacer"]
    assert [list(r) for r in shipped_rows["replicas"]] == [[0, 1, 2]] * 6
    assert spark.range(3).count() == 3  # the test session was reused, not stopped


def test_no_placements_leaves_no_placements_table(spark, grid_file, tmp_path) -> None:
    out = tmp_path / "out"
    (out / "placements").mkdir(parents=True)  # left by an earlier sweep into the same folder
    code = main(
        ["sweep", "--grid", str(grid_file), "--out", str(out), "--master", "local[2]", "--no-placements",
         "--quiet"]
    )  # fmt: skip
    assert code == 0
    assert pq.read_table(out / "metrics").num_rows == 2
    assert not (out / "placements").exists()


def test_long_runs_print_progress(grid_file, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["sweep", "--no-spark", "--grid", str(grid_file), "--out", str(out), "--seeds", "3"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^runs 6/6 \(100%\) in \d+s$", err, re.MULTILINE), err


def test_print_default_grid_prints_the_grid_that_runs_without_arguments(capsys) -> None:
    assert main(["sweep", "--print-default-grid"]) == 0
    assert parse_grid(capsys.readouterr().out) == default_grid()


def test_a_bad_grid_is_reported_with_its_key(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GRID.replace("topics = 1", "topics = -1"))
    assert main(["sweep", "--no-spark", "--grid", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert "workloads[0].topics: must be an integer >= 1, got -1" in capsys.readouterr().err


def test_an_unknown_placer_is_refused_before_any_run(grid_file, tmp_path, capsys) -> None:
    code = main(
        ["sweep", "--no-spark", "--grid", str(grid_file), "--placers", "fluvio,nope", "--out", str(tmp_path)]
    )
    assert code == 2
    assert "unknown placer 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "metrics").exists()


def test_conf_must_be_key_value(grid_file, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "--grid", str(grid_file), "--conf", "novalue", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "argument --conf: expected KEY=VALUE, got 'novalue'" in capsys.readouterr().err


def test_a_bad_placer_setting_is_refused_before_any_run(tmp_path, capsys) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID + '[placer_configs]\n"simulator.placer.fluvio.start.index" = "-1"\n')
    assert main(["sweep", "--no-spark", "--grid", str(grid), "--out", str(tmp_path / "out")]) == 2
    assert "simulator.placer.fluvio.start.index must be a non-negative integer" in capsys.readouterr().err


def test_without_spark_the_output_must_be_a_local_folder(grid_file, capsys) -> None:
    assert main(["sweep", "--no-spark", "--grid", str(grid_file), "--out", "hdfs:///sweeps/1"]) == 2
    assert "--no-spark writes local folders only, not hdfs:///sweeps/1" in capsys.readouterr().err


def test_a_rebuilt_report_plots_the_report_scenario_the_sweep_was_given(grid_file, tmp_path) -> None:
    out = tmp_path / "out"
    scenario = "unbalanced-1-2-3/fluvio-example/s2"  # not the first in sort order (s0)
    code = main(
        ["sweep", "--no-spark", "--grid", str(grid_file), "--out", str(out), "--seeds", "3",
         "--report-scenario", scenario, "--quiet"]
    )  # fmt: skip
    assert code == 0
    assert json.loads((out / "sweep.json").read_text(encoding="utf-8"))["report_scenario"] == scenario
    (out / "report.html").unlink()
    assert report_main([str(out)]) == 0
    assert f"<h2>Leaders per broker in {scenario}</h2>" in (out / "report.html").read_text(encoding="utf-8")
