"""``report.html``: one self-contained page (tables plus matplotlib plots as embedded PNGs).

It needs no Spark to read, nor to build: :func:`load_report_data` reads a sweep's output folder with
pyarrow, so ``python -m pipeline.report OUT`` rebuilds the report of any finished sweep.

Plots: the skew distribution per placer, leaders per broker in one chosen scenario, and the failure
impact (losing a rack, losing a data centre) per placer.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from matplotlib.figure import Figure

from pipeline import output
from pipeline.aggregates import AGGREGATES

log = logging.getLogger(__name__)

__all__ = ["ReportData", "load_report_data", "render_report", "report_data", "write_report"]

#: The metrics columns the report plots.
SKEW_COLUMNS = ("placer", "partitions", "leaders_skew", "replicas_skew")

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #e4e4e4; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; } .note { color: #555; font-size: 0.9em; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; } dt { font-weight: 600; }
"""

_GLOSSARY = [
    (
        "skew",
        "most replicas (or leaders) on one broker divided by the mean; 1.0 is perfectly even, "
        "0.0 when nothing was placed",
    ),
    (
        "within 10%",
        "share of brokers whose count is within +-10% of the mean (Cruise Control's balance bound); "
        "balance_bound_share is the share of runs where every broker is within it for replicas and leaders",
    ),
    ("rack violations", "partitions spread over fewer racks than min(replication factor, racks)"),
    (
        "leader growth",
        "after losing every broker of one rack (or data centre), the most leaders on a surviving "
        "broker divided by the most leaders on any broker before",
    ),
    ("offline partitions", "partitions with no surviving replica on an unfenced broker after the loss"),
]


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows; small enough to collect to the driver."""

    info: Mapping[str, str]
    aggregates: Mapping[str, pd.DataFrame]
    skews: pd.DataFrame  # SKEW_COLUMNS, one row per run
    scenario: str | None = None
    details: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # placer -> to_dict()


def pick_scenario(scenarios: Sequence[str], wanted: str | None) -> str | None:
    """``wanted`` when the sweep has it, else the first scenario in sort order."""
    if not scenarios:
        return None
    if wanted is not None and wanted in scenarios:
        return wanted
    if wanted is not None:
        log.warning("report: scenario %r is not in this sweep; plotting %s instead", wanted, min(scenarios))
    return min(scenarios)


def report_data(
    info: Mapping[str, str],
    aggregates: Mapping[str, pa.Table],
    skews: pa.Table,
    scenario: str | None,
    details: pa.Table,
) -> ReportData:
    """ReportData from Arrow tables: ``details`` has the columns placer and details (JSON)."""
    return ReportData(
        info=dict(info),
        aggregates={name: table.to_pandas() for name, table in aggregates.items()},
        skews=skews.to_pandas(),
        scenario=scenario,
        details={
            p: json.loads(d)
            for p, d in zip(
                details.column("placer").to_pylist(), details.column("details").to_pylist(), strict=True
            )
        },
    )


def load_report_data(
    out: str | Path, scenario: str | None = None, info: Mapping[str, str] | None = None
) -> ReportData:
    """Reads what the report needs from a sweep's output folder (no Spark)."""
    out = Path(out)
    if not (out / output.METRICS).is_dir():
        raise FileNotFoundError(f"{out / output.METRICS} does not exist: is {out} a sweep output folder?")
    metrics = ds.dataset(out / output.METRICS, format="parquet")
    skews = metrics.to_table(columns=list(SKEW_COLUMNS))
    scenarios = pc.unique(metrics.to_table(columns=["scenario"]).column("scenario")).to_pylist()
    chosen = pick_scenario(scenarios, scenario)
    details = metrics.to_table(columns=["placer", "details"], filter=ds.field("scenario") == chosen)
    aggregates = {}
    for agg in AGGREGATES:
        folder = out / output.AGGREGATES / agg.name
        if folder.is_dir():
            aggregates[agg.name] = output.read_table(out / output.AGGREGATES, agg.name)
    if info is None:
        sweep_file = out / output.SWEEP_FILE
        info = json.loads(sweep_file.read_text()) if sweep_file.is_file() else {"output": str(out)}
    return report_data({k: str(v) for k, v in info.items()}, aggregates, skews, chosen, details)


# --- plots -----------------------------------------------------------------------------------------


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _placer_colors(placers: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {p: cmap(i % 10) for i, p in enumerate(placers)}


def plot_skew(skews: pd.DataFrame, placers: Sequence[str]) -> str:
    """Box plots of leader and replica skew per placer (runs that placed nothing left out)."""
    placed = skews[skews["partitions"] > 0]
    fig = Figure(figsize=(11, 4.2))
    for ax, column, title in zip(
        fig.subplots(1, 2),
        ("leaders_skew", "replicas_skew"),
        ("leaders per broker", "replicas per broker"),
        strict=True,
    ):
        data = [placed.loc[placed["placer"] == p, column].to_numpy() for p in placers]
        ax.boxplot(data, tick_labels=list(placers), showmeans=True)
        ax.axhline(1.0, color="#999", linewidth=0.8, linestyle="--")
        ax.set_title(f"skew of {title} (max / mean)")
        ax.tick_params(axis="x", labelrotation=20)
    return _png(fig)


def plot_leaders(details: Mapping[str, Mapping[str, Any]], placers: Sequence[str], scenario: str) -> str:
    """Grouped bars: leaders on each broker of ``scenario``, one bar per placer."""
    present = [p for p in placers if p in details]
    brokers = details[present[0]]["brokers"]
    fig = Figure(figsize=(min(16.0, max(6.0, 0.25 * len(brokers) * len(present) + 3)), 4.2))
    ax = fig.subplots()
    colors = _placer_colors(placers)
    width = 0.8 / max(1, len(present))
    for i, placer in enumerate(present):
        counts = [b["leaders"] for b in details[placer]["brokers"]]
        xs = [j + (i - (len(present) - 1) / 2) * width for j in range(len(counts))]
        label = placer if sum(counts) else f"{placer} (placed nothing)"
        ax.bar(xs, counts, width=width, label=label, color=colors[placer])
    labels = [f"{b['id']}\n{b['rack'] or '-'}" for b in brokers]
    ax.set_xticks(range(len(brokers)), labels, fontsize=7 if len(brokers) > 12 else 9)
    ax.set_ylabel("leaders")
    ax.set_title(f"leaders per broker (broker id / rack) in {scenario}")
    ax.legend(fontsize=8)
    return _png(fig)


def plot_failure_impact(impact: pd.DataFrame, placers: Sequence[str]) -> str:
    """Bars of mean leader growth per placer, one panel per scope, worst case as a marker."""
    scopes = [s for s in ("rack", "dc") if s in set(impact["scope"])] + sorted(
        set(impact["scope"]) - {"rack", "dc"}
    )
    fig = Figure(figsize=(5.5 * len(scopes), 4.2))
    axes = fig.subplots(1, len(scopes), squeeze=False)[0]
    colors = _placer_colors(placers)
    names = {"rack": "losing one rack", "dc": "losing one data centre"}
    for ax, scope in zip(axes, scopes, strict=True):
        rows = impact[impact["scope"] == scope].set_index("placer")
        present = [p for p in placers if p in rows.index]
        means = [rows.loc[p, "leader_growth_mean"] for p in present]
        worst = [rows.loc[p, "leader_growth_worst"] for p in present]
        ax.bar(range(len(present)), means, color=[colors[p] for p in present], label="mean")
        ax.scatter(range(len(present)), worst, color="black", marker="_", s=400, label="worst", zorder=3)
        ax.set_xticks(range(len(present)), present, rotation=20)
        ax.set_title(f"leader growth, {names.get(scope, scope)}")
        ax.set_ylabel("most leaders on a survivor / most before")
        ax.legend(fontsize=8)
    return _png(fig)


# --- HTML ------------------------------------------------------------------------------------------


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, border=0, float_format=lambda x: f"{x:.3f}", na_rep="-")


def _img(png: str, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{png}">'


def _scenario_tables(details: Mapping[str, Mapping[str, Any]], placers: Sequence[str]) -> str:
    present = [p for p in placers if p in details]
    summary = pd.DataFrame(
        [{"placer": p, **{k: v for k, v in details[p]["summary"].items()}} for p in present]
    )
    keep = [
        "placer",
        "partitions",
        "leaders_skew",
        "replicas_skew",
        "rack_violations",
        "rack_failure_max_leaders",
        "rack_failure_leader_growth",
    ]
    racks: dict[str, dict[str, int]] = {}
    for p in present:
        for r in details[p]["racks"]:
            racks.setdefault(r["rack"], {})[p] = r["leaders"]
    parts = [_table(summary[[c for c in keep if c in summary.columns]])]
    if racks:
        per_rack = pd.DataFrame([{"rack": rack, **counts} for rack, counts in sorted(racks.items())])
        parts.append("<p>Leaders per rack:</p>" + _table(per_rack))
    return "\n".join(parts)


def render_report(data: ReportData) -> str:
    """The report as one HTML document."""
    by_placer = data.aggregates.get("by_placer")
    placers = list(by_placer["placer"]) if by_placer is not None else sorted(set(data.skews["placer"]))
    titles = {agg.name: agg.title for agg in AGGREGATES}
    body: list[str] = ["<h1>Placer evaluation</h1>", "<dl>"]
    body += [f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in data.info.items()]
    body.append("</dl>")
    if by_placer is not None:
        body += [f"<h2>{html.escape(titles['by_placer'])}</h2>", _table(by_placer)]
    if not data.skews.empty:
        body += [
            "<h2>Skew distribution per placer</h2>",
            _img(plot_skew(data.skews, placers), "skew per placer"),
            '<p class="note">One point per scenario; the dashed line is perfect balance. Runs that placed '
            "nothing are left out.</p>",
        ]
    if data.scenario and data.details:
        body += [
            f"<h2>Leaders per broker in {html.escape(data.scenario)}</h2>",
            _img(plot_leaders(data.details, placers, data.scenario), "leaders per broker"),
            _scenario_tables(data.details, placers),
        ]
    impact = data.aggregates.get("failure_impact")
    if impact is not None and not impact.empty:
        body += [
            f"<h2>{html.escape(titles['failure_impact'])}</h2>",
            _img(plot_failure_impact(impact, placers), "failure impact per placer"),
            _table(impact),
        ]
    errors = data.aggregates.get("failures_by_error")
    if errors is not None:
        body.append(f"<h2>{html.escape(titles['failures_by_error'])}</h2>")
        body.append(_table(errors) if not errors.empty else "<p>No request failed.</p>")
    family = data.aggregates.get("by_placer_family")
    if family is not None:
        body += [f"<h2>{html.escape(titles['by_placer_family'])}</h2>", _table(family)]
    body.append("<h2>Reading the figures</h2><dl>")
    body += [f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in _GLOSSARY]
    body.append("</dl>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>placement-sim sweep report</title>'
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(data: ReportData, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(data), encoding="utf-8")
    log.info("wrote %s", path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.report", description="Rebuilds report.html from a sweep's output folder."
    )
    parser.add_argument("out", help="the sweep's output folder")
    parser.add_argument("--scenario", help="the scenario whose leaders per broker are plotted")
    parser.add_argument("--report", help="where to write the report (default: OUT/report.html)")
    args = parser.parse_args(argv)
    try:
        data = load_report_data(args.out, args.scenario)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path = write_report(data, args.report or Path(args.out) / output.REPORT_FILE)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
