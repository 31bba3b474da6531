"""report.html: self-contained (tables and embedded PNG plots), and rebuildable without Spark."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline import report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _images(html: str) -> list[bytes]:
    return [base64.b64decode(data) for data in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]


def test_the_report_embeds_its_three_plots_and_its_tables(spark_sweep, small_grid) -> None:
    html = Path(spark_sweep.report).read_text(encoding="utf-8")
    images = _images(html)
    assert len(images) == 3
    assert all(image.startswith(PNG_SIGNATURE) for image in images)
    for heading in (
        "Skew distribution per placer",
        "Leaders per broker in unbalanced-1-2-3/fluvio-example/s0",
        "Failure impact per placer",
        "Failed placement requests per placer and error code",
        "Per placer and cluster family",
    ):
        assert heading in html
    for placer in small_grid.placers:
        assert f"<td>{placer}</td>" in html
    assert "INVALID_REPLICATION_FACTOR" in html


def test_the_report_needs_nothing_but_itself(spark_sweep) -> None:
    html = Path(spark_sweep.report).read_text(encoding="utf-8")
    assert not re.search(r'(src|href)="(?!data:)', html)
    assert "<script" not in html


def test_the_chosen_scenario_shows_leaders_per_rack(spark_sweep) -> None:
    html = Path(spark_sweep.report).read_text(encoding="utf-8")
    section = html.split("Leaders per rack:")[1].split("</table>")[0]
    rows = re.findall(r"<tr>\s*<td>(rack-\w)</td>\s*<td>(\d+)</td>", section)
    # The first placer column is fluvio (placers are listed in order): 1, 2, 3 leaders in racks a, b, c.
    assert rows == [("rack-a", "1"), ("rack-b", "2"), ("rack-c", "3")]


def test_the_report_is_rebuilt_from_parquet_without_spark(spark_sweep, tmp_path) -> None:
    target = tmp_path / "again.html"
    assert (
        report.main(
            [str(spark_sweep.out), "--report", str(target), "--scenario", "balanced-4x3/balanced-example/s1"]
        )
        == 0
    )
    html = target.read_text(encoding="utf-8")
    assert len(_images(html)) == 3
    assert "Leaders per broker in balanced-4x3/balanced-example/s1" in html


def test_an_unknown_report_scenario_falls_back_to_the_first(spark_sweep, caplog) -> None:
    data = report.load_report_data(spark_sweep.out, scenario="no/such/scenario")
    assert data.scenario == "balanced-4x3/balanced-example/s0"
    assert "not in this sweep" in caplog.text


def test_rebuilding_from_a_folder_that_is_not_a_sweep_says_so(tmp_path, capsys) -> None:
    assert report.main([str(tmp_path)]) == 1
    assert (
        f"{tmp_path / 'metrics'} does not exist: is {tmp_path} a sweep output folder?"
        in capsys.readouterr().err
    )


REPO = Path(__file__).resolve().parents[2]


# --- rebuilding the report --------------------------------------------------------------------------


def _rebuild(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pipeline.report ARGS`` as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline.report", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_sweep_saves_the_scenario_its_report_plots(spark_sweep, local_sweep) -> None:
    for sweep in (spark_sweep, local_sweep):
        saved = json.loads((Path(sweep.out) / "sweep.json").read_text(encoding="utf-8"))
        assert saved["report_scenario"] == "unbalanced-1-2-3/fluvio-example/s0"


def test_a_rebuild_plots_the_scenario_the_sweep_plotted(spark_sweep, tmp_path) -> None:
    out = tmp_path / "out"
    shutil.copytree(spark_sweep.out, out)
    (out / "report.html").unlink()
    done = _rebuild(str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out / "report.html")
    # Not the first scenario in sort order (balanced-4x3/...), which a rebuild used to plot.
    assert "<h2>Leaders per broker in unbalanced-1-2-3/fluvio-example/s0</h2>" in (
        out / "report.html"
    ).read_text(encoding="utf-8")


def test_rebuilding_for_a_scenario_the_sweep_did_not_run_is_one_line_of_error(spark_sweep, tmp_path) -> None:
    target = tmp_path / "report.html"
    done = _rebuild(str(spark_sweep.out), "--scenario", "no/such/scenario", "--report", str(target))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: scenario 'no/such/scenario' is not in this sweep; it ran 30 scenario(s): "
        "balanced-4x3/balanced-example/s0, balanced-4x3/balanced-example/s1, balanced-4x3/fluvio-example/s0, ... "
        "(the scenario comes from --scenario)"
    ]
    assert not target.exists()


def test_a_saved_scenario_the_output_does_not_have_is_an_error_too(spark_sweep, tmp_path) -> None:
    out = tmp_path / "out"
    shutil.copytree(spark_sweep.out, out)
    saved = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    (out / "sweep.json").write_text(json.dumps({**saved, "report_scenario": "gone/workload/s9"}))
    done = _rebuild(str(out), "--report", str(tmp_path / "report.html"))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: scenario 'gone/workload/s9' is not in this sweep")
    assert line.endswith(f"(the scenario comes from {out / 'sweep.json'})")
