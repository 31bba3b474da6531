"""``placement-sim sweep``: evaluates placers over a grid of cluster shapes and workloads on Spark."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from placement_sim.cli.options import add_property_option

if TYPE_CHECKING:
    from placement_sim.pipeline.sweep import SweepResult

DEFAULT_OUT = "sweep-out"

_SUMMARY_COLUMNS = (
    ("placer", "placer", "{}"),
    ("runs", "runs", "{:,}"),
    ("leaders_skew_mean", "leader skew", "{:.3f}"),
    ("replicas_skew_mean", "replica skew", "{:.3f}"),
    ("balance_bound_share", "in bound", "{:.0%}"),
    ("rack_violations_total", "rack viol.", "{:,}"),
    ("rack_failure_leader_growth_mean", "rack loss growth", "{:.2f}"),
    ("failed_requests", "failed req.", "{:,}"),
)


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "sweep",
        parents=[common],
        description=(
            "Run every scenario of a grid (cluster shapes x workloads x seeds) through every placer on Spark, "
            "write placements and metrics as Parquet, per-placer aggregates, and OUT/report.html. "
            "With no --grid, the built-in default grid runs on local[*] in a few minutes."
        ),
    )
    p.add_argument("--grid", metavar="FILE", help="grid file, .toml or .json (default: the built-in grid)")
    p.add_argument(
        "--placers",
        metavar="LIST",
        help="comma-separated placers, replacing the grid's: short names, package.module.Class, module:Class",
    )
    p.add_argument(
        "--failures",
        metavar="LIST",
        help="comma-separated failure kinds simulated on every placement, replacing the grid's: "
        "none, broker, rack, dc, rolling, slow-follower",
    )
    p.add_argument(
        "--policies",
        metavar="LIST",
        help="comma-separated election policies the failures run under, replacing the grid's: "
        "kafka, fluvio, package.module.Class, file.py",
    )
    p.add_argument(
        "--out", metavar="DIR", default=DEFAULT_OUT, help=f"output folder or URI (default: {DEFAULT_OUT})"
    )
    p.add_argument(
        "--master", metavar="URL", help="Spark master (default: local[*], or the one spark-submit was given)"
    )
    p.add_argument("--no-spark", action="store_true", help="run in this process, without Spark")
    p.add_argument("--seeds", type=int, metavar="N", help="use seeds 0..N-1 instead of the grid's")
    p.add_argument(
        "--partitions", type=int, metavar="N", help="Spark tasks for the runs (default: 4 per core)"
    )
    p.add_argument(
        "--py-files",
        metavar="LIST",
        help="comma-separated .py/.zip/.egg files shipped to the executors (third-party placers)",
    )
    add_property_option(p, "Spark setting (repeatable)", flag="--conf")
    p.add_argument("--no-placements", action="store_true", help="do not write the placements table")
    p.add_argument("--report", metavar="FILE", help="where to write the report (default: OUT/report.html)")
    p.add_argument(
        "--report-scenario", metavar="ID", help="scenario whose leaders per broker the report plots"
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines, and Spark logs errors only")
    p.add_argument(
        "--print-default-grid", action="store_true", help="print the built-in grid (TOML) and exit"
    )
    p.set_defaults(func=run)


def _print_summary(result: SweepResult) -> None:
    """The per-placer figures; requests refused because a placer does not apply to a cluster are not
    counted as failed, but listed below the table with one of the placer's reasons."""
    table = result.aggregates.get("by_placer")
    if table is None:
        return
    rows = table.to_pylist()
    not_applicable = {row["placer"]: row for row in _rows(result, "not_applicable")}
    for row in rows:
        shown = not_applicable.get(row["placer"])
        if shown and row.get("failed_requests") is not None:
            row["failed_requests"] -= shown["requests_not_applicable"]
    header = [title for _, title, _ in _SUMMARY_COLUMNS]
    cells = [
        [fmt.format(row[key]) if row.get(key) is not None else "-" for key, _, fmt in _SUMMARY_COLUMNS]
        for row in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    for line in (header, *cells):
        print(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w)
                for i, (v, w) in enumerate(zip(line, widths, strict=True))
            )
        )
    for row in rows:
        shown = not_applicable.get(row["placer"])
        if shown and shown["runs_not_applicable"]:
            print(
                f"{row['placer']}: not applicable to {shown['runs_not_applicable']:,} of {row['runs']:,} runs "
                f"({shown['requests_not_applicable']:,} requests), e.g.: {shown['not_applicable_reason']}"
            )


def _print_failovers(result: SweepResult) -> None:
    """One line per simulated failure kind: the placer and policy with the fewest partition-seconds
    without a leader, or the pairs that tie and what broke the tie (the report's sentence)."""
    table = result.aggregates.get("failover_impact")
    if table is None or table.num_rows == 0:
        return
    from placement_sim.pipeline.failover_report import FAILURE_TITLES, MEASURE_NAMES, figure_value, standings

    for kind, s in standings(table.to_pandas()).items():
        title = FAILURE_TITLES.get(kind, kind)
        figure = f"{figure_value(s.value)} partition-seconds without a leader on average"
        placer, policy = s.best
        if len(s.tied) == 1:
            print(f"{title}: best {placer} with the {policy} election policy, {figure}")
        elif s.broken_by is None:
            pairs = ", ".join(f"{p} with {q}" for p, q in s.tied)
            print(f"{title}: {len(s.tied)} pairs tie on every measure, {figure}: {pairs}")
        else:
            print(
                f"{title}: {len(s.tied)} pairs tie at {figure}; the fewest {MEASURE_NAMES[s.broken_by]} picks "
                f"{placer} with the {policy} election policy"
            )


def _rows(result: SweepResult, aggregate: str) -> list[dict[str, object]]:
    table = result.aggregates.get(aggregate)
    return table.to_pylist() if table is not None else []


def run(args: argparse.Namespace) -> int:
    from placement_sim.pipeline.default_grid import DEFAULT_GRID_TOML, default_grid
    from placement_sim.pipeline.grid import GridError, load_grid
    from placement_sim.pipeline.output import is_local

    if args.print_default_grid:
        print(DEFAULT_GRID_TOML, end="")
        return 0
    try:
        grid = load_grid(args.grid) if args.grid else default_grid()
        if args.placers:
            grid = grid.with_placers(args.placers.split(","))
        if args.seeds is not None:
            grid = grid.with_seeds(args.seeds)
        if args.failures:
            grid = grid.with_failures(args.failures.split(","))
        if args.policies:
            grid = grid.with_policies(args.policies.split(","))
        conf = dict(args.conf)
    except (GridError, ValueError) as exc:
        print(f"placement-sim sweep: {exc}", file=sys.stderr)
        return 2
    if args.no_spark and not is_local(args.out):
        print(f"placement-sim sweep: --no-spark writes local folders only, not {args.out}", file=sys.stderr)
        return 2
    if args.partitions is not None and args.partitions <= 0:
        print("placement-sim sweep: --partitions must be positive", file=sys.stderr)
        return 2
    py_files = [f.strip() for f in (args.py_files or "").split(",") if f.strip()]
    from placement_sim.pipeline.progress import ConsoleProgress
    from placement_sim.pipeline.sweep import (
        SweepInterrupted,
        add_local_py_files,
        check_placers,
        check_policies,
        run_sweep,
    )

    # A placer or policy that cannot be loaded is told before anything is printed or run (one line, exit 2).
    add_local_py_files(py_files)
    check_placers(grid.placers, grid.placer_configs)
    if grid.failures:
        check_policies(grid.election_policies, grid.placer_configs)

    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit
    master = args.master or ("the spark-submit master" if submitted else "local[*]")
    mode = "in this process" if args.no_spark else f"on Spark ({master})"
    print(
        f"sweep: {_count(grid.scenario_count, 'scenario')} x {_count(len(grid.placers), 'placer')} = "
        f"{_count(grid.run_count, 'run')} {mode}",
        file=sys.stderr,
    )
    if grid.failures:
        print(
            f"sweep: each run goes through {len(grid.failures)} failure kind(s) x "
            f"{len(grid.election_policies)} election policy(ies)",
            file=sys.stderr,
        )
    try:
        result = run_sweep(
            grid,
            args.out,
            use_spark=not args.no_spark,
            master=args.master,
            conf=conf,
            py_files=py_files,
            partitions=args.partitions,
            write_placements=not args.no_placements,
            report=args.report,
            report_scenario=args.report_scenario,
            progress=None if args.quiet else ConsoleProgress(),
            quiet=args.quiet,
        )
    except SweepInterrupted as stopped:
        print(f"placement-sim sweep: {stopped}", file=sys.stderr)
        return 130
    _print_summary(result)
    _print_failovers(result)
    runs_seconds = result.info.get("seconds")
    timing = f"{result.seconds:.1f}s"
    if runs_seconds is not None:  # the report's time: the runs alone, before the report and Spark's stop
        timing = f"{runs_seconds}s ({result.seconds:.1f}s with the report)"
    print(f"{_count(result.runs, 'run')} in {timing}; tables in {result.out}; report: {result.report}")
    return 0


def _count(n: int, noun: str) -> str:
    """``1 placer``, ``2 placers``, ``1,000 runs``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
