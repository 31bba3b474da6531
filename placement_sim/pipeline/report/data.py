"""The report's data: what a sweep wrote, read back with pyarrow (no Spark), the scenario whose leaders
the report plots, and the short names placers are shown by."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from placement_sim.pipeline import output
from placement_sim.pipeline.aggregates import AGGREGATES

log = logging.getLogger(__name__)


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
