"""``python -m placement_sim.pipeline.report OUT [--scenario ID] [--report FILE]``: rebuilds a finished
sweep's report from its output folder alone."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from placement_sim.pipeline import output
from placement_sim.pipeline.report.data import UnknownScenarioError, load_report_data, saved_report_scenario
from placement_sim.pipeline.report.page import write_report


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
