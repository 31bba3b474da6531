"""report.html: self-contained (tables and embedded PNG plots), and rebuildable without Spark."""

from __future__ import annotations

import base64
import re
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
