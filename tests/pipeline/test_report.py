"""report.html: self-contained (tables and embedded PNG plots), and rebuildable without Spark."""

from __future__ import annotations

import base64
import html
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from placement_sim.pipeline import report

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


# --- what a reader sees -----------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


def _text(fragment: str) -> str:
    """What a browser shows of an HTML fragment: its text, without tags."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def _section(page: str, heading: str) -> str:
    """From ``heading`` to the next heading of the same level or higher."""
    start = page.index(heading)
    following = re.search(r"<h[12][ >]", page[start + len(heading) :])
    return page[start : start + len(heading) + following.start()] if following else page[start:]


def _cells(table: str) -> list[list[str]]:
    return [
        [_text(c) for c in re.findall(r"<td>(.*?)</td>", row)] for row in re.findall(r"<tr>(.*?)</tr>", table)
    ]


def _glossary_after(page: str, marker: str) -> list[str]:
    """The terms defined right below the first table after ``marker``."""
    end = page.index("</table></div>", page.index(marker)) + len("</table></div>")
    after = page[end:].lstrip()
    assert after.startswith('<dl class="glossary">'), f"no definitions right below the table after {marker!r}"
    return [_text(t) for t in re.findall(r"<dt>(.*?)</dt>", after[: after.index("</dl>")])]


def test_the_summary_comes_first_and_ranks_the_placers_on_the_main_figures(spark_sweep) -> None:
    page = Path(spark_sweep.report).read_text(encoding="utf-8")
    assert re.search(r"<h2[ >]", page).start() == page.index("<h2>Summary</h2>") < page.index("<table")
    summary = _section(page, "<h2>Summary</h2>")
    sentences = [_text(li) for li in re.findall(r"<li>(.*?)</li>", summary, re.S)]
    expected = [
        "fluvio and DescendingPlacer share the lowest mean leader skew (1.391), then multi-level (1.558) and "
        "striped (2.233).",
        "multi-level has the lowest mean replica skew (1.207), then fluvio and DescendingPlacer (1.367) and "
        "striped (1.764).",
        "fluvio and DescendingPlacer share the highest share of runs within the balance bound (36%), then "
        "multi-level (33%) and striped (14%).",
        "multi-level and striped share the fewest rack violations (0), then fluvio (47) and DescendingPlacer (203).",
        "striped has the lowest mean leader growth when the worst rack is lost (1.552), then fluvio (2.042), "
        "multi-level (2.167) and DescendingPlacer (2.512).",
        "fluvio, striped and DescendingPlacer share the fewest failed requests (2), then multi-level (64).",
        "Not every run placed a partition: fluvio in 28 of 30, multi-level in 6 of 30, striped in 28 of 30 and "
        "DescendingPlacer in 28 of 30; the balance and failure figures cover the runs that placed.",
    ]
    assert len(sentences) == len(expected)
    for sentence, start in zip(sentences, expected, strict=True):
        assert sentence.startswith(start)
    # The figures are the aggregate's.
    by_placer = spark_sweep.aggregates["by_placer"].to_pandas().set_index("placer")
    assert f"striped ({by_placer.loc['striped', 'leaders_skew_mean']:.3f})" in sentences[0]


def _by_placer(**columns: list) -> pd.DataFrame:
    return pd.DataFrame({"placer": ["alpha", "my.pkg.BetaPlacer", "gamma"], **columns})


def test_the_summary_follows_the_data() -> None:
    frame = _by_placer(
        runs=[10, 10, 10],
        runs_placed=[10, 10, 0],
        leaders_skew_mean=[1.5, 1.02, float("nan")],
        replicas_skew_mean=[1.1, 1.1, float("nan")],
        balance_bound_share=[0.5, 0.25, float("nan")],
        rack_violations_total=[0, 0, 0],
        rack_failure_leader_growth_mean=[2.0, 1.0, float("nan")],
        failed_requests=[0, 3, 10],
    )
    sentences = report.summary_sentences(frame)
    assert (
        '<b title="my.pkg.BetaPlacer">BetaPlacer</b> has the lowest mean leader skew (1.020)' in sentences[0]
    )
    assert [_text(s.split(' <span class="hint">')[0]) for s in sentences] == [
        "BetaPlacer has the lowest mean leader skew (1.020), then alpha (1.500); gamma placed nothing, so it has "
        "no figure.",
        "alpha and BetaPlacer both have the same mean replica skew (1.100); gamma placed nothing, so it has no "
        "figure.",
        "alpha has the highest share of runs within the balance bound (50%), then BetaPlacer (25%); gamma placed "
        "nothing, so it has no figure.",
        "alpha, BetaPlacer and gamma all have the same rack violations (0).",
        "BetaPlacer has the lowest mean leader growth when the worst rack is lost (1.000), then alpha (2.000); "
        "gamma placed nothing, so it has no figure.",
        "alpha has the fewest failed requests (0), then BetaPlacer (3) and gamma (10).",
        "Not every run placed a partition: gamma in 0 of 10; the balance and failure figures cover the runs that "
        "placed.",
    ]
    one = report.summary_sentences(frame.iloc[:1][["placer", "leaders_skew_mean"]])
    assert [_text(s.split(' <span class="hint">')[0]) for s in one] == [
        "alpha has a mean leader skew of 1.500."
    ]


def test_placer_names_are_shortened_to_their_class_names() -> None:
    names = report.short_placer_names(
        [
            "fluvio-fair",
            "thirdparty_placer.DescendingPlacer",
            "/srv/placers/my_placer.py:MyPlacer",
            "path/to/other.py",
            "one.mod:Same",
            "two.mod:Same",
        ]
    )
    assert names == {
        "fluvio-fair": "fluvio-fair",
        "thirdparty_placer.DescendingPlacer": "DescendingPlacer",
        "/srv/placers/my_placer.py:MyPlacer": "MyPlacer",
        "path/to/other.py": "other.py",
        "one.mod:Same": "one.mod:Same",  # the same class name in two modules: kept apart
        "two.mod:Same": "two.mod:Same",
    }


def test_table_columns_have_human_titles_with_units(spark_sweep) -> None:
    page = Path(spark_sweep.report).read_text(encoding="utf-8")
    headers = [_text(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", page)]
    for title in (
        "placer",
        "runs",
        "runs that placed (count)",
        "mean leader skew (max/mean)",
        "runs within the balance bound (%)",
        "rack violations, all runs (count)",
        "mean leader growth, worst rack lost (ratio)",
        "mean placer time per run (ms)",
        "what is lost",
        "worst offline partitions (count)",
        "error code",
        "runs with this error (count)",
        "cluster family",
        "partitions placed (count)",
    ):
        assert title in headers
    assert [h for h in headers if "_" in h] == []  # no raw column names
    # Numbers are shown as numbers of their kind: counts, ratios with 3 decimals, shares in percent.
    balance = _section(page, "<h3>Balance over brokers</h3>")
    by_placer = spark_sweep.aggregates["by_placer"].to_pandas().set_index("placer")
    striped = by_placer.loc["striped"]
    assert ["striped", "30", f"{int(striped.runs_placed)}", f"{striped.leaders_skew_mean:.3f}"] == next(
        row for row in _cells(balance) if row and row[0] == "striped"
    )[:4]
    assert f"<td>{striped.balance_bound_share:.0%}</td>" in balance


def test_every_table_scrolls_inside_its_own_box(spark_sweep) -> None:
    page = Path(spark_sweep.report).read_text(encoding="utf-8")
    assert page.count("<table") == page.count('<div class="table-box"><table') >= 8
    assert re.search(r"\.table-box \{[^}]*overflow-x: auto", page)


def test_the_definitions_are_right_below_the_tables_they_explain(spark_sweep) -> None:
    page = Path(spark_sweep.report).read_text(encoding="utf-8")
    assert _glossary_after(page, "<h3>Balance over brokers</h3>") == [
        "runs",
        "skew (max/mean)",
        "within ±10%",
    ]
    assert _glossary_after(page, "<h3>Rack spread and losing a rack</h3>") == [
        "rack violations",
        "leader growth (ratio)",
        "offline partitions",
    ]
    impact = _glossary_after(page, "Failure impact per placer")
    assert {"what is lost", "leader growth (ratio)", "offline partitions", "moved leaders"} <= set(impact)
    # "runs" there counts the runs that had the error: the general definition of runs is not repeated.
    assert _glossary_after(page, "Failed placement requests per placer and error code") == ["failed requests"]
    assert "Reading the figures" not in page


def test_the_plots_name_the_placers_in_full_below_them(spark_sweep) -> None:
    page = Path(spark_sweep.report).read_text(encoding="utf-8")
    notes = [_text(n) for n in re.findall(r'<p class="note">(Placer names in this plot: .*?)</p>', page)]
    assert notes == ["Placer names in this plot: DescendingPlacer = thirdparty_placer.DescendingPlacer."] * 3
    for alt in ("leader and replica skew per placer", "leaders per broker in", "leader growth per placer"):
        after_image = page[page.index(f'<img alt="{alt}') :]
        assert after_image.index("Placer names in this plot") < after_image.index("<h2>")


def test_the_box_plot_caption_explains_its_marks(spark_sweep) -> None:
    page = Path(spark_sweep.report).read_text(encoding="utf-8")
    caption = _text(page.split('<img alt="leader and replica skew per placer"')[1].split("</p>")[0])
    for mark in ("Box = quartiles", "line = median", "triangle = mean", "whiskers = ", "within 1.5 IQR"):
        assert mark in caption


# --- the plots --------------------------------------------------------------------------------------

#: Eight placers whose short names are long: they cannot all sit level side by side.
MANY_PLACERS = [
    *(f"com.example.placement.strategies.RackAwareLeastLoadedReplicaPlacerVersion{i}" for i in range(6)),
    "fluvio",
    "/srv/placers/my_experimental_placer.py:Experimental",
]
FEW_PLACERS = ["fluvio", "striped", "thirdparty_placer.DescendingPlacer"]


def _figures(placers: list[str]) -> list[Figure]:
    rng = np.random.default_rng(7)
    names = report.short_placer_names(placers)
    skews = pd.DataFrame(
        [
            {
                "placer": p,
                "partitions": 6,
                "leaders_skew": 1 + rng.random(),
                "replicas_skew": 1 + rng.random(),
            }
            for p in placers
            for _ in range(20)
        ]
    )
    impact = pd.DataFrame(
        [
            {"scope": s, "placer": p, "leader_growth_mean": 1 + rng.random(), "leader_growth_worst": 3.0}
            for s in ("rack", "dc")
            for p in placers
        ]
    )
    brokers = [{"id": b, "rack": f"/dc-{b // 4 + 1}/rack-{b % 4 + 1}"} for b in range(12)]
    details = {p: {"brokers": [{**b, "leaders": int(rng.integers(0, 5))} for b in brokers]} for p in placers}
    return [
        report.skew_figure(skews, placers, names),
        report.leaders_figure(details, placers, "multi-dc-3x4/mixed/s0", names),
        report.failure_impact_figure(impact, placers, names),
    ]


def _assert_x_labels_apart(fig: Figure, ax) -> None:
    labels = [t for t in ax.get_xticklabels() if t.get_text()]
    boxes = [t.get_window_extent() for t in labels]
    for box in boxes:  # inside the picture, none cut off
        assert fig.bbox.x0 - 1 <= box.x0 and box.x1 <= fig.bbox.x1 + 1
        assert fig.bbox.y0 - 1 <= box.y0 and box.y1 <= fig.bbox.y1 + 1
    rotation = labels[0].get_rotation() % 180
    if rotation == 0:
        ordered = sorted(boxes, key=lambda b: b.x0)
        assert all(a.x1 <= b.x0 for a, b in zip(ordered, ordered[1:], strict=False))
        return
    # Turned labels are parallel strips, one text line thick per line: the distance between two strips
    # is the distance between their ticks times the sine of the angle.
    ticks = sorted(ax.transData.transform([(x, 0) for x in ax.get_xticks()])[:, 0])
    spacing = min(b - a for a, b in zip(ticks, ticks[1:], strict=False))
    for label in labels:
        thickness = (label.get_text().count("\n") + 1) * label.get_fontsize() * fig.dpi / 72
        assert spacing * math.sin(math.radians(rotation)) >= thickness


@pytest.mark.parametrize("placers", [FEW_PLACERS, MANY_PLACERS], ids=["3 placers", "8 long names"])
def test_every_plot_has_axis_titles_a_legend_and_x_labels_that_do_not_overlap(placers) -> None:
    for fig in _figures(placers):
        fig.draw_without_rendering()
        assert fig.legends, "no legend"
        for ax in fig.axes:
            assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
            _assert_x_labels_apart(fig, ax)


def test_the_box_plots_legend_says_what_each_mark_is() -> None:
    skew = _figures(FEW_PLACERS)[0]
    entries = [t.get_text() for t in skew.legends[0].get_texts()]
    for mark in ("box: quartiles", "line: median", "triangle: mean", "whiskers: ", "1.5 IQR", "circles: "):
        assert any(mark in e for e in entries), mark


def test_plots_label_placers_by_their_short_names() -> None:
    skew = _figures(MANY_PLACERS)[0]
    labels = [t.get_text() for t in skew.axes[0].get_xticklabels()]
    assert labels[0] == "RackAwareLeast\nLoadedReplica\nPlacerVersion0"
    assert labels[-2:] == ["fluvio", "Experimental"]


# --- rebuilding the report --------------------------------------------------------------------------


def _rebuild(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m placement_sim.pipeline.report ARGS`` as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "placement_sim.pipeline.report", *args],
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
