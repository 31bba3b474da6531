"""The report's text: tables with column titles, units and definitions, and the summary sentences that
rank the placers."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from placement_sim.pipeline.report.data import short_placer_names

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
