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

The package by job: :mod:`.data` (what a sweep wrote, read back), :mod:`.tables` (tables, glossary and
summary sentences), :mod:`.plots` (the figures), :mod:`.page` (the HTML page) and :mod:`.command`
(``python -m placement_sim.pipeline.report``).
"""

from __future__ import annotations

from placement_sim.pipeline.report.command import main
from placement_sim.pipeline.report.data import (
    REPORT_SCENARIO_KEY,
    SKEW_COLUMNS,
    ReportData,
    UnknownScenarioError,
    load_report_data,
    pick_scenario,
    report_data,
    saved_report_scenario,
    short_placer_names,
)
from placement_sim.pipeline.report.page import render_report, write_report
from placement_sim.pipeline.report.plots import (
    failure_impact_figure,
    fit_xticklabels,
    leaders_figure,
    plot_labels,
    skew_figure,
)
from placement_sim.pipeline.report.tables import summary_sentences

__all__ = [
    "REPORT_SCENARIO_KEY",
    "SKEW_COLUMNS",
    "ReportData",
    "UnknownScenarioError",
    "failure_impact_figure",
    "fit_xticklabels",
    "leaders_figure",
    "load_report_data",
    "main",
    "pick_scenario",
    "plot_labels",
    "render_report",
    "report_data",
    "saved_report_scenario",
    "short_placer_names",
    "skew_figure",
    "summary_sentences",
    "write_report",
]
