"""``report.html``: one self-contained page (tables plus matplotlib plots as embedded PNGs).

It needs no Spark to read, nor to build: :func:`load_report_data` reads a sweep's output folder with
pyarrow, so ``python -m placement_sim.pipeline.report OUT`` rebuilds the report of any finished sweep, for the
scenario the sweep plotted (saved in ``OUT/sweep.json``) unless ``--scenario`` names another.

The page, top to bottom: a summary that ranks the placers on the main figures, one sentence each; what
ran; the per-placer tables; the skew distribution per placer; leaders per broker in one chosen
scenario; the failure impact (losing a rack, losing a data centre) per placer; failed requests by error
code; the figures per cluster family. Every table has human column titles with units and the
definitions of its columns right below it. It fits a 1,400 px wide window: a table too wide for the
page scrolls inside its own box, and long placer names are shortened in the plots (their full names
are given next to each plot).
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import logging
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from matplotlib.figure import Figure

from placement_sim.pipeline import failover_report, output
from placement_sim.pipeline.aggregates import AGGREGATES

log = logging.getLogger(__name__)

__all__ = [
    "REPORT_SCENARIO_KEY",
    "ReportData",
    "UnknownScenarioError",
    "failure_impact_figure",
    "fit_xticklabels",
    "leaders_figure",
    "load_report_data",
    "plot_labels",
    "render_report",
    "report_data",
    "saved_report_scenario",
    "short_placer_names",
    "skew_figure",
    "summary_sentences",
    "write_report",
]

#: The metrics columns the report plots.
SKEW_COLUMNS = ("placer", "partitions", "leaders_skew", "replicas_skew")

#: The key of ``OUT/sweep.json`` that names the scenario whose leaders per broker the report plots.
REPORT_SCENARIO_KEY = "report_scenario"


class UnknownScenarioError(LookupError):
    """A scenario the sweep did not run."""

    def __init__(self, scenario: str, scenarios: Sequence[str]) -> None:
        self.scenario = scenario
        self.scenarios = sorted(scenarios)
        examples = ", ".join(self.scenarios[:3]) + (", ..." if len(self.scenarios) > 3 else "")
        super().__init__(
            f"scenario {scenario!r} is not in this sweep; it ran {len(self.scenarios):,} scenario(s): {examples}"
        )


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows; small enough to collect to the driver."""

    info: Mapping[str, str]
    aggregates: Mapping[str, pd.DataFrame]
    skews: pd.DataFrame  # SKEW_COLUMNS, one row per run
    scenario: str | None = None
    details: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # placer -> to_dict()


def pick_scenario(scenarios: Sequence[str], wanted: str | None, strict: bool = False) -> str | None:
    """``wanted`` when the sweep has it, else the first scenario in sort order.

    With ``strict`` a ``wanted`` scenario the sweep does not have raises :class:`UnknownScenarioError`.
    """
    if not scenarios:
        return None
    if wanted is not None and wanted in scenarios:
        return wanted
    if wanted is not None:
        if strict:
            raise UnknownScenarioError(wanted, scenarios)
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
    out: str | Path,
    scenario: str | None = None,
    info: Mapping[str, str] | None = None,
    strict: bool = False,
) -> ReportData:
    """Reads what the report needs from a sweep's output folder (no Spark).

    A ``scenario`` the sweep did not run is replaced by the first one (with a warning), or with
    ``strict`` raises :class:`UnknownScenarioError`.
    """
    out = Path(out)
    if not (out / output.METRICS).is_dir():
        raise FileNotFoundError(f"{out / output.METRICS} does not exist: is {out} a sweep output folder?")
    metrics = ds.dataset(out / output.METRICS, format="parquet")
    skews = metrics.to_table(columns=list(SKEW_COLUMNS))
    scenarios = pc.unique(metrics.to_table(columns=["scenario"]).column("scenario")).to_pylist()
    chosen = pick_scenario(scenarios, scenario, strict)
    details = metrics.to_table(columns=["placer", "details"], filter=ds.field("scenario") == chosen)
    aggregates = {}
    for agg in AGGREGATES:
        folder = out / output.AGGREGATES / agg.name
        if folder.is_dir():
            aggregates[agg.name] = output.read_table(out / output.AGGREGATES, agg.name)
    if info is None:
        sweep_file = out / output.SWEEP_FILE
        info = _read_json(sweep_file) if sweep_file.is_file() else {"output": str(out)}
    return report_data({k: str(v) for k, v in info.items()}, aggregates, skews, chosen, details)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def saved_report_scenario(out: str | Path) -> tuple[str | None, str]:
    """The scenario the sweep in ``out`` plotted, and the file that says so.

    ``sweep.json`` records the scenario the report plotted (the grid's ``[report] scenario``, or
    ``--report-scenario``); for an older output folder without it, the grid's ``[report] scenario`` in
    ``grid.json``. (None, "") when neither names one: the sweep then plotted the first scenario.
    """
    out = Path(out)
    sweep_file = out / output.SWEEP_FILE
    if sweep_file.is_file():
        scenario = _read_json(sweep_file).get(REPORT_SCENARIO_KEY)
        if scenario:
            return str(scenario), str(sweep_file)
    grid_file = out / output.GRID_FILE
    if grid_file.is_file():
        report = _read_json(grid_file).get("report") or {}
        if isinstance(report, Mapping) and report.get("scenario"):
            return str(report["scenario"]), str(grid_file)
    return None, ""


# --- placer names ----------------------------------------------------------------------------------


def _label_starts(name: str) -> list[int]:
    """Where the short labels of ``name`` may start, longest label first: after each dot of a dotted
    module path, after each slash of a file path, and after the ``:`` before a class name."""
    head, sep, tail = name.rpartition(":")
    has_class = bool(sep and head and tail and not re.search(r"[/\\]", tail))
    prefix = head if has_class else name
    separators = r"[/\\]" if re.search(r"[/\\]|\.py$", prefix) else r"\."
    starts = [0, *(m.end() for m in re.finditer(separators, prefix) if m.end() < len(prefix))]
    return starts + [len(head) + 1] if has_class else starts


def short_placer_names(placers: Iterable[str]) -> dict[str, str]:
    """A short label per placer for the plots and the summary.

    A dotted path or a file path becomes its class name (``my.module.MyPlacer`` and
    ``path/to/my_placer.py:MyPlacer`` -> ``MyPlacer``; ``path/to/my_placer.py`` -> ``my_placer.py``);
    built-in and entry-point names stay as they are. Placers whose labels would be the same keep as
    much of the end of their names as it takes to tell them apart.
    """
    placers = list(dict.fromkeys(placers))
    starts = {p: _label_starts(p) for p in placers}
    keep = dict.fromkeys(placers, 1)  # how many label starts, counted from the end, to go back
    while True:
        labels = {p: p[starts[p][-keep[p]] :] for p in placers}
        seen: dict[str, list[str]] = {}
        for p, label in labels.items():
            seen.setdefault(label, []).append(p)
        clashes = [p for group in seen.values() if len(group) > 1 for p in group if keep[p] < len(starts[p])]
        if not clashes:
            return labels
        for p in clashes:
            keep[p] += 1


def _shortened(names: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(short, full) for full, short in names.items() if short != full]


# --- formatting ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Column:
    """How a table shows one column: its title (with its unit) and its number format."""

    title: str
    kind: str = "float3"  # text, int, float2, float3, pct


#: Column titles and formats, by column name (the same name means the same thing in every table).
_COLUMNS: dict[str, _Column] = {
    # keys
    "placer": _Column("placer", "text"),
    "family": _Column("cluster family", "text"),
    "scope": _Column("what is lost", "text"),
    "rack": _Column("rack", "text"),
    "error_code": _Column("error code", "text"),
    "error": _Column("error", "text"),
    # by placer (and family)
    "runs": _Column("runs", "int"),
    "runs_placed": _Column("runs that placed (count)", "int"),
    "leaders_skew_mean": _Column("mean leader skew (max/mean)"),
    "leaders_skew_worst": _Column("worst leader skew (max/mean)"),
    "replicas_skew_mean": _Column("mean replica skew (max/mean)"),
    "replicas_skew_worst": _Column("worst replica skew (max/mean)"),
    "leaders_within_10pct_mean": _Column("brokers within ±10% on leaders (mean %)", "pct"),
    "replicas_within_10pct_mean": _Column("brokers within ±10% on replicas (mean %)", "pct"),
    "balance_bound_share": _Column("runs within the balance bound (%)", "pct"),
    "rack_violations_total": _Column("rack violations, all runs (count)", "int"),
    "runs_with_rack_violations_share": _Column("runs with rack violations (%)", "pct"),
    "rack_failure_leader_growth_mean": _Column("mean leader growth, worst rack lost (ratio)"),
    "rack_failure_leader_growth_worst": _Column("worst leader growth, any rack lost (ratio)"),
    "rack_failure_offline_partitions_worst": _Column(
        "worst offline partitions, any rack lost (count)", "int"
    ),
    "failed_requests": _Column("failed requests, all runs (count)", "int"),
    "placer_ms_mean": _Column("mean placer time per run (ms)", "float2"),
    # failure impact
    "losses": _Column("losses (count)", "int"),
    "offline_partitions_mean": _Column("mean offline partitions (count)", "float2"),
    "offline_partitions_worst": _Column("worst offline partitions (count)", "int"),
    "moved_leaders_mean": _Column("mean moved leaders (count)", "float2"),
    "max_leaders_mean": _Column("mean most leaders on a survivor (count)", "float2"),
    "max_leaders_worst": _Column("worst most leaders on a survivor (count)", "int"),
    "leader_growth_mean": _Column("mean leader growth (ratio)"),
    "leader_growth_worst": _Column("worst leader growth (ratio)"),
    # failed requests by error
    "requests": _Column("failed requests (count)", "int"),
    # one scenario's figures per placer
    "partitions": _Column("partitions placed (count)", "int"),
    "leaders_skew": _Column("leader skew (max/mean)"),
    "replicas_skew": _Column("replica skew (max/mean)"),
    "rack_violations": _Column("rack violations (count)", "int"),
    "rack_failure_max_leaders": _Column("most leaders on a survivor, worst rack lost (count)", "int"),
    "rack_failure_leader_growth": _Column("leader growth, worst rack lost (ratio)"),
}

#: Where a column means something else in one aggregate: (aggregate, column) -> column.
_AGGREGATE_COLUMNS: dict[tuple[str, str], _Column] = {
    ("failures_by_error", "runs"): _Column("runs with this error (count)", "int"),
}

#: The glossary: (term, definition, the columns it explains). Each table lists the terms of its columns.
_TERMS: tuple[tuple[str, str, frozenset[str]], ...] = (
    (
        "runs",
        "one run is one scenario (cluster shape, workload, seed) through one placer; a run placed when it "
        "placed at least one partition. The balance and failure figures, and their means and worst "
        "cases, cover the runs that placed",
        frozenset({"runs", "runs_placed"}),
    ),
    (
        "skew (max/mean)",
        "the most leaders (or replicas) on one broker divided by the mean per broker; 1.0 is perfectly "
        "even, 0.0 when nothing was placed",
        frozenset(
            {
                "leaders_skew_mean",
                "leaders_skew_worst",
                "replicas_skew_mean",
                "replicas_skew_worst",
                "leaders_skew",
                "replicas_skew",
            }
        ),
    ),
    (
        "within ±10%",
        "the share of brokers whose count is within ±10% of the mean, Cruise Control's default balance "
        "bound; a run is within the balance bound when every broker is, for both leaders and replicas",
        frozenset({"leaders_within_10pct_mean", "replicas_within_10pct_mean", "balance_bound_share"}),
    ),
    (
        "rack violations",
        "partitions spread over fewer racks than min(replication factor, racks)",
        frozenset({"rack_violations_total", "runs_with_rack_violations_share", "rack_violations"}),
    ),
    (
        "what is lost",
        "rack: every broker of one rack; dc: every broker of one data centre (the top level of "
        "multi-level racks); level<k>: a level in between. One loss per rack per run that placed",
        frozenset({"scope", "losses"}),
    ),
    (
        "leader growth (ratio)",
        "after losing every broker of a rack (or data centre), the most leaders on a surviving broker "
        "divided by the most leaders on any broker before; 1.0 means no broker carries more than the "
        "busiest one did. 'Worst rack lost' takes, in each run, the rack whose loss is worst",
        frozenset(
            {
                "rack_failure_leader_growth_mean",
                "rack_failure_leader_growth_worst",
                "rack_failure_leader_growth",
                "leader_growth_mean",
                "leader_growth_worst",
            }
        ),
    ),
    (
        "most leaders on a survivor",
        "the most leaders any surviving broker carries after the loss",
        frozenset({"max_leaders_mean", "max_leaders_worst", "rack_failure_max_leaders"}),
    ),
    (
        "offline partitions",
        "partitions with no surviving replica on an unfenced broker after the loss",
        frozenset(
            {"rack_failure_offline_partitions_worst", "offline_partitions_mean", "offline_partitions_worst"}
        ),
    ),
    (
        "moved leaders",
        "partitions whose leader was lost; their first surviving replica leads them",
        frozenset({"moved_leaders_mean"}),
    ),
    (
        "failed requests",
        "topic creations and partition additions the placement service answered with an error, as a "
        "client of the server would see them (Kafka's error codes)",
        frozenset({"failed_requests", "requests", "error_code", "error"}),
    ),
    (
        "placer time",
        "wall-clock time of a run's requests through the placement service (the placer and the "
        "server's checks of its results), mean over the runs",
        frozenset({"placer_ms_mean"}),
    ),
)


def _cell(value: Any, kind: str) -> str:
    """One value as the report shows it; "-" for a missing one."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "-"
    if kind == "int":
        return f"{int(value):,}"
    if kind == "float2":
        return f"{float(value):,.2f}"
    if kind == "float3":
        return f"{float(value):,.3f}"
    if kind == "pct":
        return f"{float(value):.0%}"
    return str(value)


def _column(name: str, series: pd.Series, aggregate: str | None) -> _Column:
    if aggregate is not None and (aggregate, name) in _AGGREGATE_COLUMNS:
        return _AGGREGATE_COLUMNS[(aggregate, name)]
    if name in _COLUMNS:
        return _COLUMNS[name]
    if pd.api.types.is_integer_dtype(series):
        return _Column(name.replace("_", " "), "int")
    if pd.api.types.is_float_dtype(series):
        return _Column(name.replace("_", " "))
    return _Column(name.replace("_", " "), "text")


def _table(
    frame: pd.DataFrame,
    keys: int = 1,
    aggregate: str | None = None,
    columns: Mapping[str, _Column] | None = None,
) -> str:
    """``frame`` as a table in its own scrolling box, its first ``keys`` columns left-aligned, then
    the definitions of its columns."""
    specs = [
        (name, (columns or {}).get(name) or _column(name, frame[name], aggregate)) for name in frame.columns
    ]
    head = "".join(
        f'<th scope="col" title="{html.escape(name)}">{html.escape(spec.title)}</th>' for name, spec in specs
    )
    rows = [
        "<tr>"
        + "".join(
            f"<td>{html.escape(_cell(value, spec.kind))}</td>"
            for value, (_, spec) in zip(row, specs, strict=True)
        )
        + "</tr>"
        for row in frame.itertuples(index=False, name=None)
    ]
    table = (
        f'<div class="table-box"><table class="keys-{min(keys, 3)}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n'
        + "\n".join(rows)
        + "\n</tbody></table></div>"
    )
    redefined = {name for (agg, name) in _AGGREGATE_COLUMNS if agg == aggregate}
    return table + _glossary(c for c in frame.columns if c not in redefined and c not in (columns or {}))


def _glossary(columns: Iterable[str]) -> str:
    """The definitions of the terms that ``columns`` use, as a small list right below their table."""
    names = set(columns)
    terms = [(term, text) for term, text, explains in _TERMS if explains & names]
    if not terms:
        return ""
    items = "".join(f"<dt>{html.escape(term)}</dt><dd>{html.escape(text)}.</dd>" for term, text in terms)
    return f'<dl class="glossary">{items}</dl>'


def _and(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# --- summary ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Headline:
    """One main figure of the per-placer aggregate, ranked in the summary."""

    column: str
    noun: str  # "mean leader skew"
    best: str  # how the best one is said: "lowest", "highest", "fewest"
    higher_is_better: bool
    kind: str
    hint: str


_HEADLINES: tuple[_Headline, ...] = (
    _Headline(
        "leaders_skew_mean",
        "mean leader skew",
        "lowest",
        False,
        "float3",
        "most leaders on one broker / mean per broker; 1.0 is perfectly even",
    ),
    _Headline(
        "replicas_skew_mean",
        "mean replica skew",
        "lowest",
        False,
        "float3",
        "most replicas on one broker / mean per broker; 1.0 is perfectly even",
    ),
    _Headline(
        "balance_bound_share",
        "share of runs within the balance bound",
        "highest",
        True,
        "pct",
        "every broker within ±10% of the mean, for leaders and replicas",
    ),
    _Headline(
        "rack_violations_total",
        "rack violations",
        "fewest",
        False,
        "int",
        "partitions on fewer racks than min(replication factor, racks), over all runs",
    ),
    _Headline(
        "rack_failure_leader_growth_mean",
        "mean leader growth when the worst rack is lost",
        "lowest",
        False,
        "float3",
        "most leaders on a surviving broker / most before; 1.0 is no growth",
    ),
    _Headline(
        "failed_requests",
        "failed requests",
        "fewest",
        False,
        "int",
        "requests answered with an error code, over all runs",
    ),
)


def _placer_html(placer: str, names: Mapping[str, str], bold: bool = False) -> str:
    short = names.get(placer, placer)
    title = f' title="{html.escape(placer)}"' if short != placer else ""
    tag = "b" if bold else "span"
    return f"<{tag}{title}>{html.escape(short)}</{tag}>"


def _ranking(headline: _Headline, values: Sequence[tuple[str, Any]], names: Mapping[str, str]) -> str:
    """One sentence ranking the placers on ``headline`` (HTML)."""
    known = [(p, float(v)) for p, v in values if v is not None and not pd.isna(v)]
    missing = [p for p, v in values if v is None or pd.isna(v)]
    known.sort(key=lambda pv: -pv[1] if headline.higher_is_better else pv[1])
    groups: list[tuple[str, list[str]]] = []  # (value as shown, placers), best first
    for placer, value in known:
        shown = _cell(value, headline.kind)
        if groups and groups[-1][0] == shown:
            groups[-1][1].append(placer)
        else:
            groups.append((shown, [placer]))
    order = {p: i for i, (p, _) in enumerate(values)}
    groups = [(shown, sorted(group, key=order.__getitem__)) for shown, group in groups]  # ties as listed
    if not groups:
        sentence = f"No placer has a {headline.noun}"
    else:
        shown, first = groups[0]
        winners = _and([_placer_html(p, names, bold=True) for p in first])
        if len(known) == 1:
            sentence = f"{winners} has a {headline.noun} of {shown}"
        elif len(groups) == 1:
            every = "both" if len(first) == 2 else "all"
            sentence = f"{winners} {every} have the same {headline.noun} ({shown})"
        else:
            verb = "has" if len(first) == 1 else "share"
            sentence = f"{winners} {verb} the {headline.best} {headline.noun} ({shown}), then " + _and(
                [f"{_and([_placer_html(p, names) for p in group])} ({v})" for v, group in groups[1:]]
            )
    if missing:
        who = _and([_placer_html(p, names) for p in missing])
        sentence += f"; {who} placed nothing, so {'it has' if len(missing) == 1 else 'they have'} no figure"
    return f"{sentence}."


def summary_sentences(by_placer: pd.DataFrame, names: Mapping[str, str] | None = None) -> list[str]:
    """The summary's sentences (HTML): one per main figure of ``by_placer`` that ranks the placers,
    then, when some runs placed nothing, one that says how many runs of each placer placed."""
    placers = list(by_placer["placer"])
    names = names if names is not None else short_placer_names(placers)
    sentences = []
    for headline in _HEADLINES:
        if headline.column not in by_placer.columns:
            continue
        ranking = _ranking(headline, list(zip(placers, by_placer[headline.column], strict=True)), names)
        sentences.append(f'{ranking} <span class="hint">({html.escape(headline.hint)})</span>')
    if {"runs", "runs_placed"} <= set(by_placer.columns):
        partial = [
            (placer, int(runs), int(placed))
            for placer, runs, placed in zip(placers, by_placer["runs"], by_placer["runs_placed"], strict=True)
            if placed != runs
        ]
        if partial:
            counts = _and(
                [f"{_placer_html(p, names)} in {placed:,} of {runs:,}" for p, runs, placed in partial]
            )
            sentences.append(
                f"Not every run placed a partition: {counts}; the balance and failure figures cover the runs "
                "that placed."
            )
    return sentences


# --- plots -----------------------------------------------------------------------------------------


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _placer_colors(placers: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {p: cmap(i % 10) for i, p in enumerate(placers)}


#: Room between two neighbouring x labels, in pixels.
_LABEL_GAP = 4.0
#: Placer labels in plots: at most this many characters a line, and this many lines.
_LABEL_WIDTH = 16
_LABEL_LINES = 3
#: With more placers than this, a figure's panels go one above the other (each then has the full width).
_SIDE_BY_SIDE_PLACERS = 4


def _wrap_label(text: str, width: int = _LABEL_WIDTH, lines: int | None = _LABEL_LINES) -> str:
    """``text`` on lines of at most ``width`` characters, broken where its words meet (``camelCase``
    humps, ``_``, ``-``, ``.``, ``/``, ``:``); past ``lines`` lines the last one ends in an ellipsis."""
    if len(text) <= width:
        return text
    pieces = [p for p in re.split(r"(?<=[._\-/:\\])|(?<=[a-z0-9])(?=[A-Z])", text) if p]
    out: list[str] = []
    for piece in pieces:
        while len(piece) > width:  # a word longer than a line is cut
            out.append(piece[:width])
            piece = piece[width:]
        if out and len(out[-1]) + len(piece) <= width:
            out[-1] += piece
        else:
            out.append(piece)
    if lines is not None and len(out) > lines:
        out = [*out[: lines - 1], out[lines - 1][: width - 1] + "\u2026"]
    return "\n".join(out)


def plot_labels(placers: Sequence[str], names: Mapping[str, str]) -> dict[str, str]:
    """The label of each placer in the plots: its short name, wrapped onto a few short lines (the
    figures' notes give the full names). Labels that a cut would make alike are not cut."""
    labels = {p: _wrap_label(names[p]) for p in placers}
    if len(set(labels.values())) < len(labels):
        labels = {p: _wrap_label(names[p], lines=None) for p in placers}
    return labels


def _panels(fig: Figure, count: int, placers: int) -> list[Any]:
    """``count`` axes side by side, or one above the other when there are many placers to label."""
    if placers > _SIDE_BY_SIDE_PLACERS:
        return list(fig.subplots(count, 1, squeeze=False)[:, 0])
    return list(fig.subplots(1, count, squeeze=False)[0])


def _panels_size(count: int, placers: int, width: float = 5.5) -> tuple[float, float]:
    if placers > _SIDE_BY_SIDE_PLACERS:
        return (11.0, 4.2 * count + 1.0)
    return (max(7.0, width * count), 5.2)


def fit_xticklabels(fig: Figure, axes: Sequence[Any]) -> None:
    """Keeps the x tick labels of ``axes`` apart: level when they fit side by side, else turned 30
    degrees, else upright, and in a smaller font when even upright labels would touch. The figure's
    constrained layout makes room for them below the axes."""
    fig.draw_without_rendering()
    for ax in axes:
        labels = sorted(
            (t for t in ax.get_xticklabels() if t.get_text()), key=lambda t: t.get_window_extent().x0
        )
        if len(labels) < 2:
            continue
        boxes = [t.get_window_extent() for t in labels]
        centres = [(b.x0 + b.x1) / 2 for b in boxes]
        spacing = min(b - a for a, b in zip(centres, centres[1:], strict=False))
        side_by_side = all(
            (a.width + b.width) / 2 + _LABEL_GAP <= cb - ca
            for a, b, ca, cb in zip(boxes, boxes[1:], centres, centres[1:], strict=False)
        )
        if side_by_side:
            continue
        height = max(b.height for b in boxes) + _LABEL_GAP
        if spacing * math.sin(math.radians(30)) >= height:
            for t in labels:
                t.set_rotation(30)
                t.set_horizontalalignment("right")
                t.set_rotation_mode("anchor")
            continue
        if spacing < height:
            scale = max(0.5, spacing / height)
            for t in labels:
                t.set_fontsize(t.get_fontsize() * scale)
        for t in labels:
            t.set_rotation(90)
            t.set_horizontalalignment("center")
    fig.draw_without_rendering()


def skew_figure(skews: pd.DataFrame, placers: Sequence[str], names: Mapping[str, str]) -> Figure:
    """Box plots of leader and replica skew per placer (runs that placed nothing left out)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    placed = skews[skews["partitions"] > 0]
    fig = Figure(figsize=_panels_size(2, len(placers)), layout="constrained")
    axes = _panels(fig, 2, len(placers))
    colors = _placer_colors(placers)
    labels = plot_labels(placers, names)
    for ax, column, what in zip(axes, ("leaders_skew", "replicas_skew"), ("leader", "replica"), strict=True):
        data = [placed.loc[placed["placer"] == p, column].to_numpy() for p in placers]
        parts = ax.boxplot(
            data,
            tick_labels=[labels[p] for p in placers],
            showmeans=True,
            patch_artist=True,
            medianprops={"color": "black", "linewidth": 1.6},
            meanprops={"marker": "^", "markerfacecolor": "white", "markeredgecolor": "black"},
            flierprops={"marker": "o", "markerfacecolor": "none", "markeredgecolor": "#444"},
        )
        for box, placer in zip(parts["boxes"], placers, strict=True):
            box.set_facecolor((*colors[placer][:3], 0.45))
        for i, values in enumerate(data, start=1):
            if not len(values):
                ax.text(i, 1.0, "placed\nnothing", ha="center", va="bottom", fontsize=8, color="#555")
        ax.axhline(1.0, color="#777", linewidth=0.8, linestyle="--")
        ax.set_title(f"{what} skew per run")
        ax.set_xlabel("placer")
        ax.set_ylabel(f"{what} skew (max / mean per broker)")
    handles = [
        Patch(facecolor="#ddd", edgecolor="black", label="box: quartiles (middle half of the runs)"),
        Line2D([], [], color="black", linewidth=1.6, label="line: median"),
        Line2D(
            [],
            [],
            linestyle="none",
            marker="^",
            markerfacecolor="white",
            markeredgecolor="black",
            label="triangle: mean",
        ),
        Line2D([], [], color="black", linewidth=1.0, label="whiskers: furthest runs within 1.5 IQR"),
        Line2D(
            [],
            [],
            linestyle="none",
            marker="o",
            markerfacecolor="none",
            markeredgecolor="#444",
            label="circles: runs beyond the whiskers",
        ),
        Line2D([], [], color="#777", linewidth=0.8, linestyle="--", label="dashed: 1.0, perfectly even"),
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    fit_xticklabels(fig, axes)
    return fig


def leaders_figure(
    details: Mapping[str, Mapping[str, Any]], placers: Sequence[str], scenario: str, names: Mapping[str, str]
) -> Figure:
    """Grouped bars: leaders on each broker of ``scenario``, one bar per placer."""
    from matplotlib.ticker import MaxNLocator

    present = [p for p in placers if p in details]
    brokers = details[present[0]]["brokers"]
    fig = Figure(
        figsize=(min(16.0, max(7.0, 0.25 * len(brokers) * len(present) + 4)), 4.6), layout="constrained"
    )
    ax = fig.subplots()
    colors = _placer_colors(placers)
    labels = plot_labels(present, names)
    width = 0.8 / max(1, len(present))
    for i, placer in enumerate(present):
        counts = [b["leaders"] for b in details[placer]["brokers"]]
        xs = [j + (i - (len(present) - 1) / 2) * width for j in range(len(counts))]
        label = labels[placer] if sum(counts) else f"{labels[placer]}\n(placed nothing)"
        ax.bar(xs, counts, width=width, label=label, color=colors[placer])
    ticks = [f"{b['id']}\n{b['rack'] or '-'}" for b in brokers]
    ax.set_xticks(range(len(brokers)), ticks, fontsize=7 if len(brokers) > 12 else 9)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("broker (id, rack)")
    ax.set_ylabel("leaders (count)")
    ax.set_title(f"leaders per broker in {scenario}")
    fig.legend(loc="outside right upper", title="placer", fontsize=8, title_fontsize=8)
    fit_xticklabels(fig, [ax])
    return fig


def failure_impact_figure(impact: pd.DataFrame, placers: Sequence[str], names: Mapping[str, str]) -> Figure:
    """Bars of mean leader growth per placer, one panel per scope, worst case as a mark."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    scopes = [s for s in ("rack", "dc") if s in set(impact["scope"])] + sorted(
        set(impact["scope"]) - {"rack", "dc"}
    )
    shown = [p for p in placers if p in set(impact["placer"])]
    fig = Figure(figsize=_panels_size(len(scopes), len(shown)), layout="constrained")
    axes = _panels(fig, len(scopes), len(shown))
    colors = _placer_colors(placers)
    labels = plot_labels(shown, names)
    titles = {"rack": "losing one rack", "dc": "losing one data centre"}
    for ax, scope in zip(axes, scopes, strict=True):
        rows = impact[impact["scope"] == scope].set_index("placer")
        present = [p for p in shown if p in rows.index]
        means = [rows.loc[p, "leader_growth_mean"] for p in present]
        worst = [rows.loc[p, "leader_growth_worst"] for p in present]
        ax.bar(range(len(present)), means, color=[colors[p] for p in present])
        ax.scatter(range(len(present)), worst, color="black", marker="_", s=400, zorder=3)
        ax.axhline(1.0, color="#777", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(present)), [labels[p] for p in present])
        ax.set_title(titles.get(scope, f"losing one {scope}"))
        ax.set_xlabel("placer")
        ax.set_ylabel("leader growth (ratio)")
    handles = [
        Patch(facecolor="#bbb", label="bar: mean over the losses (colour: placer)"),
        Line2D([], [], color="black", marker="_", markersize=14, linestyle="none", label="mark: worst loss"),
        Line2D([], [], color="#777", linewidth=0.8, linestyle="--", label="dashed: 1.0, no growth"),
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    fit_xticklabels(fig, axes)
    return fig


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
    "seconds": "time (s)",
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m placement_sim.pipeline.report",
        description="Rebuilds report.html from a sweep's output folder.",
    )
    parser.add_argument("out", help="the sweep's output folder")
    parser.add_argument(
        "--scenario",
        help="the scenario whose leaders per broker are plotted (default: the one the sweep plotted)",
    )
    parser.add_argument("--report", help="where to write the report (default: OUT/report.html)")
    args = parser.parse_args(argv)
    try:
        if args.scenario is not None:
            scenario, source = args.scenario, "--scenario"
        else:
            scenario, source = saved_report_scenario(args.out)
        try:
            data = load_report_data(args.out, scenario, strict=True)
        except UnknownScenarioError as exc:
            raise ValueError(f"{exc} (the scenario comes from {source})") from None
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path = write_report(data, args.report or Path(args.out) / output.REPORT_FILE)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
