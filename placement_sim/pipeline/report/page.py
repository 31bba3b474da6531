"""The report's HTML: one self-contained page of the tables and plots, and writing it."""

from __future__ import annotations

import html
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from placement_sim.pipeline import failover_report
from placement_sim.pipeline.aggregates import AGGREGATES
from placement_sim.pipeline.report.data import REPORT_SCENARIO_KEY, ReportData, _shortened, short_placer_names
from placement_sim.pipeline.report.plots import _png, failure_impact_figure, leaders_figure, skew_figure
from placement_sim.pipeline.report.tables import _Column, _table, summary_sentences

log = logging.getLogger(__name__)


# --- HTML ------------------------------------------------------------------------------------------

_CSS = """
*, *::before, *::after { box-sizing: border-box; }
body { font-family: system-ui, sans-serif; margin: 0 auto; padding: 1.5em 2em 3em; max-width: 1320px;
       color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.3em; }
h2 { font-size: 1.25em; margin-top: 2.2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; margin: 1.6em 0 0.3em; }
.table-box { max-width: 100%; overflow-x: auto; margin: 0.4em 0; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { padding: 0.3em 0.5em; border-bottom: 1px solid #e4e4e4; text-align: right; background: #fff; }
th { background: #f4f4f4; font-weight: 600; vertical-align: bottom; max-width: 8em; overflow-wrap: break-word; }
td { white-space: nowrap; font-variant-numeric: tabular-nums; }
.keys-1 :is(th, td):nth-child(-n+1), .keys-2 :is(th, td):nth-child(-n+2),
.keys-3 :is(th, td):nth-child(-n+3) { text-align: left; max-width: none; }
:is(th, td):first-child { position: sticky; left: 0; }
img { display: block; max-width: 100%; height: auto; margin: 0.6em 0; }
.note, .hint { color: #555; font-size: 0.9em; }
.note { max-width: 75em; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.2em 1em; }
dt { font-weight: 600; } dd { margin: 0; overflow-wrap: anywhere; }
dl.glossary { font-size: 0.85em; color: #444; margin: 0.3em 0 1.6em; max-width: 75em; }
ul.summary { padding-left: 1.2em; } ul.summary li { margin: 0.3em 0; }
"""

#: How the report names the keys of ``sweep.json``.
_INFO_LABELS = {
    "started": "started",
    "mode": "ran on",
    "placers": "placers",
    "scenarios": "scenarios",
    "runs": "runs",
    "seconds": "time of the runs (s; the command's total adds the report)",
    "output": "output folder",
}

#: The parts of the per-placer aggregate, each its own table: (heading, columns after the placer).
_BY_PLACER_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Balance over brokers",
        (
            "runs",
            "runs_placed",
            "leaders_skew_mean",
            "leaders_skew_worst",
            "replicas_skew_mean",
            "replicas_skew_worst",
            "leaders_within_10pct_mean",
            "replicas_within_10pct_mean",
            "balance_bound_share",
        ),
    ),
    (
        "Rack spread and losing a rack",
        (
            "rack_violations_total",
            "runs_with_rack_violations_share",
            "rack_failure_leader_growth_mean",
            "rack_failure_leader_growth_worst",
            "rack_failure_offline_partitions_worst",
        ),
    ),
    ("Failed requests and time", ("failed_requests", "placer_ms_mean")),
)


def _img(png: str, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{png}">'


def _names_note(names: Mapping[str, str], placers: Iterable[str]) -> str:
    """Below a plot: the full names of the placers it shows by a short name."""
    shown = set(placers)
    pairs = [(short, full) for short, full in _shortened(names) if full in shown]
    if not pairs:
        return ""
    text = "; ".join(f"{html.escape(short)} = <code>{html.escape(full)}</code>" for short, full in pairs)
    return f'<p class="note">Placer names in this plot: {text}.</p>'


def _by_placer_tables(by_placer: pd.DataFrame) -> list[str]:
    parts = []
    listed: set[str] = {"placer"}
    for heading, columns in _BY_PLACER_PARTS:
        present = [c for c in columns if c in by_placer.columns]
        if present:
            parts += [
                f"<h3>{html.escape(heading)}</h3>",
                _table(by_placer[["placer", *present]], 1, "by_placer"),
            ]
            listed.update(present)
    rest = [c for c in by_placer.columns if c not in listed]
    if rest:
        parts += ["<h3>Other figures</h3>", _table(by_placer[["placer", *rest]], 1, "by_placer")]
    return parts


def _scenario_tables(
    details: Mapping[str, Mapping[str, Any]], placers: Sequence[str], names: Mapping[str, str]
) -> str:
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
    parts = [
        "<h3>This scenario's figures per placer</h3>",
        _table(summary[[c for c in keep if c in summary.columns]]),
    ]
    if racks:
        per_rack = pd.DataFrame([{"rack": rack, **counts} for rack, counts in sorted(racks.items())])
        parts += [
            '<p class="note">Leaders per rack: how many partitions a broker of each rack leads, per placer '
            "(count).</p>",
            _table(per_rack, columns={p: _Column(names[p], "int") for p in present}),
        ]
    return "\n".join(parts)


def render_report(data: ReportData) -> str:
    """The report as one HTML document."""
    by_placer = data.aggregates.get("by_placer")
    placers = list(by_placer["placer"]) if by_placer is not None else sorted(set(data.skews["placer"]))
    names = short_placer_names([*placers, *data.details])
    titles = {agg.name: agg.title for agg in AGGREGATES}
    body: list[str] = ["<h1>Placer evaluation</h1>"]
    if by_placer is not None and not by_placer.empty:
        body += [
            "<h2>Summary</h2>",
            '<ul class="summary">',
            *(f"<li>{sentence}</li>" for sentence in summary_sentences(by_placer, names)),
            "</ul>",
        ]
    body += ["<h2>This sweep</h2>", '<dl class="info">']
    for key, value in data.info.items():
        if key != REPORT_SCENARIO_KEY:
            label = _INFO_LABELS.get(key, key.replace("_", " "))
            body.append(f"<dt>{html.escape(label)}</dt><dd>{html.escape(value)}</dd>")
    shortened = _shortened(names)
    if shortened:
        text = "; ".join(f"{html.escape(s)} = <code>{html.escape(f)}</code>" for s, f in shortened)
        body.append(f"<dt>short placer names</dt><dd>{text}</dd>")
    body.append("</dl>")
    if by_placer is not None:
        body += [f"<h2>{html.escape(titles['by_placer'])}</h2>", *_by_placer_tables(by_placer)]
    if not data.skews.empty:
        body += [
            "<h2>Skew distribution per placer</h2>",
            _img(_png(skew_figure(data.skews, placers, names)), "leader and replica skew per placer"),
            '<p class="note">One box per placer over its runs that placed at least one partition. '
            "Box = quartiles (the middle half of the runs), line = median, triangle = mean, whiskers = the "
            "furthest runs within 1.5 IQR (1.5 times the box's height) of the box, circles = runs beyond "
            "them; the dashed line at 1.0 is perfect balance.</p>",
            _names_note(names, placers),
        ]
    if data.scenario and data.details:
        present = [p for p in placers if p in data.details]
        body += [
            f"<h2>Leaders per broker in {html.escape(data.scenario)}</h2>",
            _img(
                _png(leaders_figure(data.details, placers, data.scenario, names)),
                f"leaders per broker in {data.scenario}",
            ),
            '<p class="note">Bars: how many partitions each broker leads, one bar per placer; below each '
            "group, the broker's id and rack.</p>",
            _names_note(names, present),
            _scenario_tables(data.details, placers, names),
        ]
    impact = data.aggregates.get("failure_impact")
    if impact is not None and not impact.empty:
        body += [
            f"<h2>{html.escape(titles['failure_impact'])}</h2>",
            _img(
                _png(failure_impact_figure(impact, placers, names)), "leader growth per placer after a loss"
            ),
            '<p class="note">Bars: mean leader growth over every loss of one rack (or data centre) in the '
            "runs that placed; black mark: the worst loss; dashed line at 1.0: no broker carries more "
            "leaders than the busiest one did before.</p>",
            _names_note(names, set(impact["placer"])),
            _table(impact, 2, "failure_impact"),
        ]
    failovers = data.aggregates.get("failover_impact")
    body += failover_report.section(failovers, titles["failover_impact"], names)
    if failovers is not None and not failovers.empty:
        body.append(_table(failovers, 3, "failover_impact"))
    errors = data.aggregates.get("failures_by_error")
    if errors is not None:
        body.append(f"<h2>{html.escape(titles['failures_by_error'])}</h2>")
        body.append(
            _table(errors, 3, "failures_by_error") if not errors.empty else "<p>No request failed.</p>"
        )
    family = data.aggregates.get("by_placer_family")
    if family is not None:
        body += [f"<h2>{html.escape(titles['by_placer_family'])}</h2>", _table(family, 2, "by_placer_family")]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>placement-sim sweep report</title>"
        f"<style>{_CSS}</style></head><body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body></html>\n"
    )


def write_report(data: ReportData, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(data), encoding="utf-8")
    log.info("wrote %s", path)
    return path
