"""Sweep throughput: the Spark path on local[2] against the single-process path, same grid, same run.

    .venv/bin/python benchmarks/pipeline.py [--seeds 100] [--master local[2]] [--placers a,b]

The grid is the built-in one (25 cluster shapes x 3 workloads) plus a workload of growing topics;
``--seeds 100`` makes 10,000 scenarios, each run through every placer. Both paths write the same
Parquet tables and aggregates (no report). The single-process path is the reference: ratio = Spark's
scenarios/s over the single-process path's.
Target: Spark, session start included, no slower than the single process (exit 1 if it misses).

Then the failure grid: the same shapes and workloads over ``--failure-seeds`` seeds and
``--failure-placers``, each run going through every failure kind (``--failures``) under every election
policy (``--policies``), simulated by the controller's dynamics (``placement_sim.pipeline.failover``).
It runs in the single process twice, without and with the failures (the difference is the added cost
of the failures), and on Spark in the same session. Targets (exit 1 if one is missed): Spark's job no
slower than the single process on the failure grid too; and a simulated failure adds at most 3x a run's
cost: the added cost per simulation (one failure kind under one policy on one placement) over the cost of
a run without failures (placement and metrics, the static rack-loss formula included), both the
single process's. A run goes through several simulations (every applicable kind x policy), so the whole
grid's added cost is that many times larger; both figures are printed. Then the floor, in the same run:
the static metrics alone (``compute_metrics``), and a simulation in which no time passes (the cluster,
the policy and the dynamics built and closed: what no speed-up of the replication model removes).

``--failure-scales 2,4`` times both paths with failures again on the failure grid at those seed counts, in
the same session, and fits each path's seconds to a fixed cost plus a cost per run: where Spark's line
crosses the single process's is the grid size from which Spark is the faster (the targets stay those of
the ``--failure-seeds`` grid).

    .venv/bin/python benchmarks/pipeline.py --seeds 4 --failure-seeds 1
    .venv/bin/python benchmarks/pipeline.py --failure-only      # the failure grid alone
    .venv/bin/python benchmarks/pipeline.py --failure-only --failure-scales 2,4
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.placement.metrics import compute_metrics  # noqa: E402
from placement_sim.pipeline.default_grid import default_grid  # noqa: E402
from placement_sim.pipeline.failover import FAILURE_KINDS, FailoverPlan, Timeline, simulate_failovers  # noqa: E402
from placement_sim.pipeline.grid import Distribution, Grid, WorkloadSpec  # noqa: E402
from placement_sim.pipeline.local_job import run_sweep_local  # noqa: E402
from placement_sim.pipeline.progress import ConsoleProgress  # noqa: E402
from placement_sim.pipeline.runner import run_scenario  # noqa: E402
from placement_sim.pipeline.scenarios import brokers_for, iter_scenarios  # noqa: E402

#: The most a simulated failure may add to a run's cost, per simulation.
TARGET_ADDED_PER_SIMULATION = 3.0

#: A workload the built-in grid lacks: few topics that keep growing by partition additions.
GROWING_TOPICS = WorkloadSpec(
    name="growing-topics",
    topics=5,
    partitions=Distribution((3, 6)),
    replication_factor=Distribution((2, 3)),
    partition_additions=20,
    added_partitions=Distribution((1, 3)),
)


def benchmark_grid(seeds: int, placers: list[str] | None) -> Grid:
    """The built-in grid (25 cluster shapes x 3 workloads) plus GROWING_TOPICS, over ``seeds`` seeds."""
    grid = default_grid()
    grid = replace(grid, workloads=(*grid.workloads, GROWING_TOPICS)).with_seeds(seeds)
    return grid.with_placers(placers) if placers else grid


def _row(name: str, scenarios: int, runs: int, seconds: float, reference: float) -> list[str]:
    rate = scenarios / seconds
    return [name, f"{scenarios:,}", f"{runs:,}", f"{seconds:.1f}", f"{rate:,.0f}", f"{rate / reference:.2f}"]


def _print_table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(rows[0], widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows[1:]:
        print(
            "| "
            + " | ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
            + " |"
        )


def failure_grid(args: argparse.Namespace) -> Grid:
    """The benchmark grid scaled down, with the failure kinds and election policies."""
    grid = benchmark_grid(args.failure_seeds, args.failure_placers.split(","))
    return grid.with_failures(args.failures.split(",")).with_policies(args.policies.split(","))


def _timed_local(grid: Grid, out: Path, progress: ConsoleProgress | None) -> tuple[float, float]:
    """Seconds of wall clock and of the process's CPU."""
    started, cpu = time.perf_counter(), time.process_time()
    run_sweep_local(grid, out, write_placements=False, progress=progress)
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seeds", type=int, default=100, help="seeds per (shape, workload); 100 = 10,000 scenarios"
    )
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--placers", help="comma-separated placers (default: the five built-ins)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--failure-seeds", type=int, default=1, help="seeds of the failure grid (0: skip it)")
    parser.add_argument(
        "--failure-placers",
        default="striped,multi-level",
        help="placers of the failure grid (comma-separated)",
    )
    parser.add_argument("--failures", default=",".join(FAILURE_KINDS), help="failure kinds (comma-separated)")
    parser.add_argument("--policies", default="kafka,fluvio", help="election policies (comma-separated)")
    parser.add_argument(
        "--failure-only", action="store_true", help="only the failure grid (skips the placement grid)"
    )
    parser.add_argument(
        "--failure-scales",
        default="",
        help="more seed counts of the failure grid at which both paths are timed (comma-separated)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.failure_only:
        if args.failure_seeds < 1:
            parser.error("--failure-only needs --failure-seeds of 1 or more")
        return _failure_only(args)
    grid = benchmark_grid(args.seeds, args.placers.split(",") if args.placers else None)
    progress = None if args.quiet else ConsoleProgress(interval=10)
    print(
        f"grid: {grid.scenario_count:,} scenarios x {len(grid.placers)} placers; cpus: {os.cpu_count()}",
        file=sys.stderr,
    )

    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        print("single-process path ...", file=sys.stderr)
        started = time.perf_counter()
        run_sweep_local(grid, Path(tmp) / "local", progress=progress)
        local_seconds = time.perf_counter() - started
        local_rows = pq.read_table(Path(tmp) / "local" / "metrics", columns=["scenario"]).num_rows

        from placement_sim.pipeline.spark_job import run_sweep_spark, spark_session

        print(f"Spark path on {args.master} ...", file=sys.stderr)
        started = time.perf_counter()
        spark = spark_session(args.master)
        session_seconds = time.perf_counter() - started
        try:
            progress = None if args.quiet else ConsoleProgress(interval=10)
            started = time.perf_counter()
            sweep = run_sweep_spark(spark, grid, str(Path(tmp) / "spark"), progress=progress)
            spark_seconds = time.perf_counter() - started
            spark_rows = spark.read.parquet(str(Path(tmp) / "spark" / "metrics")).count()
            failures = _failure_benchmark(args, spark, Path(tmp)) if args.failure_seeds > 0 else None
        finally:
            spark.stop()

    if spark_rows != local_rows:
        print(f"error: Spark wrote {spark_rows} metric rows, the single-process path {local_rows}")
        return 1
    reference = grid.scenario_count / local_seconds
    rows = [
        ["path (placement grid)", "scenarios", "runs", "seconds", "scenarios/s", "ratio"],
        _row("single process (reference)", grid.scenario_count, grid.run_count, local_seconds, reference),
        _row(f"Spark {args.master}, job", grid.scenario_count, grid.run_count, spark_seconds, reference),
        _row(
            f"Spark {args.master}, job + session start",
            grid.scenario_count,
            grid.run_count,
            spark_seconds + session_seconds,
            reference,
        ),
    ]
    _print_table(rows)
    ratio = local_seconds / (spark_seconds + session_seconds)
    met = "meets" if ratio >= 1.0 else "misses"
    print(f"\nSpark: {sweep.partitions} tasks; session start {session_seconds:.1f}s")
    print(
        f"Target: Spark (job + session start) no slower than the single process: ratio {ratio:.2f}, {met} it"
    )
    ok = ratio >= 1.0
    if failures is not None:
        print()
        ok = _report_failures(failures) and ok
    return 0 if ok else 1


def _failure_only(args: argparse.Namespace) -> int:
    """``--failure-only``: the failure grid's part of the run, in its own Spark session."""
    from placement_sim.pipeline.spark_job import spark_session

    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        spark = spark_session(args.master)
        try:
            failures = _failure_benchmark(args, spark, Path(tmp))
        finally:
            spark.stop()
    return 0 if _report_failures(failures) else 1


def _failure_benchmark(args: argparse.Namespace, spark: object, tmp: Path) -> dict[str, object]:
    """The failure grid: single process without and with failures, then Spark with them."""
    from placement_sim.pipeline.spark_job import run_sweep_spark

    grid = failure_grid(args)
    quiet = args.quiet
    print(
        f"failure grid: {grid.run_count:,} runs x {len(grid.failures)} kinds x "
        f"{len(grid.election_policies)} policies ...",
        file=sys.stderr,
    )
    plain = replace(grid, failures=())
    print("  single process, placement only (a first pass warms up, untimed) ...", file=sys.stderr)
    _timed_local(plain, tmp / "f-warm", None)
    without, without_cpu = _timed_local(
        plain, tmp / "f-plain", None if quiet else ConsoleProgress(interval=10)
    )
    print("  single process, with failures ...", file=sys.stderr)
    local, local_cpu = _timed_local(grid, tmp / "f-local", None if quiet else ConsoleProgress(interval=10))
    simulations = pq.read_table(tmp / "f-local" / "failovers", columns=["failure"]).num_rows
    print(f"  Spark {args.master}, with failures ...", file=sys.stderr)
    started = time.perf_counter()
    progress = None if quiet else ConsoleProgress(interval=10)
    run_sweep_spark(spark, grid, str(tmp / "f-spark"), write_placements=False, progress=progress)  # type: ignore[arg-type]
    on_spark = time.perf_counter() - started
    spark_simulations = spark.read.parquet(str(tmp / "f-spark" / "failovers")).count()  # type: ignore[attr-defined]
    scales = [(grid.run_count, local, on_spark)]
    for seeds in sorted({int(n) for n in args.failure_scales.split(",") if n.strip()} - {args.failure_seeds}):
        larger = grid.with_seeds(seeds)
        print(
            f"  at {seeds} seeds ({larger.run_count:,} runs): single process, then Spark ...", file=sys.stderr
        )
        seconds, _ = _timed_local(larger, tmp / f"s{seeds}-local", None)
        started = time.perf_counter()
        run_sweep_spark(spark, larger, str(tmp / f"s{seeds}-spark"), write_placements=False)  # type: ignore[arg-type]
        scales.append((larger.run_count, seconds, time.perf_counter() - started))
    print("  the floor: static metrics, simulations without time ...", file=sys.stderr)
    return {
        **_floor(grid),
        "grid": grid,
        "without": without,
        "local": local,
        "without_cpu": without_cpu,
        "local_cpu": local_cpu,
        "spark": on_spark,
        "simulations": simulations,
        "spark_simulations": spark_simulations,
        "master": args.master,
        "scales": scales,
    }


def _floor(grid: Grid) -> dict[str, float]:
    """Per run of the failure grid: the static metrics alone, and (per kind x policy) a simulation in which
    no time passes; seconds of the process's CPU in all."""
    static = still = 0.0
    simulations = 0
    zero = Timeline(warmup_ms=0, failure_ms=0, recovery_ms=0, rebalance_ms=0)
    for scenario in iter_scenarios(grid):
        brokers = brokers_for(scenario.shape, scenario.seed)
        for placer in grid.placers:
            run = run_scenario(scenario, placer, grid.placer_configs)
            assignments = {(p.topic, p.partition): p.replicas for p in run.placements}
            if not assignments:
                continue
            started = time.process_time()
            metrics = compute_metrics(brokers, assignments)
            static += time.process_time() - started
            plan = FailoverPlan(
                failures=("none",) * len(grid.failures),
                policies=grid.election_policies,
                produce_load=grid.failover_plan.produce_load,
                timeline=zero,
            )
            started = time.process_time()
            simulate_failovers(
                scenario.scenario, scenario.seed, brokers, assignments, metrics, grid.placer_configs, plan
            )
            still += time.process_time() - started
            simulations += len(plan.failures) * len(plan.policies)
    return {"static": static, "still": still, "still_simulations": simulations}


def _report_failures(f: dict[str, object]) -> bool:
    grid: Grid = f["grid"]  # type: ignore[assignment]
    without, local, on_spark = float(f["without"]), float(f["local"]), float(f["spark"])  # type: ignore[arg-type]
    simulations = int(f["simulations"])  # type: ignore[call-overload]
    if f["spark_simulations"] != simulations:
        print(f"error: Spark wrote {f['spark_simulations']} failover rows, the single process {simulations}")
        return False
    reference = grid.scenario_count / local
    rows = [
        ["path (failure grid)", "scenarios", "runs", "seconds", "scenarios/s", "ratio"],
        _row("single process, placement only", grid.scenario_count, grid.run_count, without, reference),
        _row(
            "single process, with failures (reference)", grid.scenario_count, grid.run_count, local, reference
        ),
        _row(
            f"Spark {f['master']}, job, with failures",
            grid.scenario_count,
            grid.run_count,
            on_spark,
            reference,
        ),
    ]
    _print_table(rows)
    # The cost ratios from the process's CPU time (a shared machine stretches wall clock unevenly).
    without_cpu, local_cpu = float(f["without_cpu"]), float(f["local_cpu"])  # type: ignore[arg-type]
    added = local_cpu - without_cpu
    per_simulation = added / max(simulations, 1)
    per_run = without_cpu / grid.run_count
    added_ratio = per_simulation / per_run
    print(
        f"\nFailures: {simulations:,} simulations ({', '.join(grid.failures)} x "
        f"{', '.join(grid.election_policies)}), {simulations / grid.run_count:.1f} per run; added CPU in the "
        f"single process {added:.1f}s ({added / max(without_cpu, 1e-9):.1f}x the placement-only sweep's "
        f"{without_cpu:.1f}s), {per_simulation * 1000:.2f} ms per simulation against "
        f"{per_run * 1000:.2f} ms per run without failures: {added_ratio:.2f}x per simulation"
    )
    static, still = float(f["static"]), float(f["still"])  # type: ignore[arg-type]
    still_each = still / max(int(f["still_simulations"]), 1)  # type: ignore[call-overload]
    rows = [
        ["cost (single process, CPU)", "ms", "x a run"],
        ["a run without failures (reference)", f"{per_run * 1000:.2f}", "1.00"],
        [
            "  of which the static metrics (rack losses included)",
            f"{static / grid.run_count * 1000:.2f}",
            f"{static / grid.run_count / per_run:.2f}",
        ],
        ["a simulated failure, added", f"{per_simulation * 1000:.2f}", f"{added_ratio:.2f}"],
        [
            "  of which a simulation in which no time passes",
            f"{still_each * 1000:.2f}",
            f"{still_each / per_run:.2f}",
        ],
    ]
    print()
    _print_table(rows)
    _report_scales(f["scales"], str(f["master"]))  # type: ignore[arg-type]
    ratio = local / on_spark
    met = "meets" if ratio >= 1.0 else "misses"
    print(
        f"\nTarget: Spark's job (session already started) no slower than the single process on the failure "
        f"grid: ratio {ratio:.2f}, {met} it"
    )
    cheap = added_ratio <= TARGET_ADDED_PER_SIMULATION
    print(
        f"Target: a simulated failure adds at most {TARGET_ADDED_PER_SIMULATION:g}x a run's cost (per "
        f"simulation): {added_ratio:.2f}x, {'meets' if cheap else 'misses'} it"
    )
    return ratio >= 1.0 and cheap


def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares ``seconds = fixed + per_run * runs``: (fixed, per_run)."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    per_run = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return mean_y - per_run * mean_x, per_run


def _report_scales(scales: list[tuple[int, float, float]], master: str) -> None:
    """The failure grid at several sizes: both paths' seconds, and where Spark's fitted line crosses."""
    if len(scales) < 2:
        return
    rows = [["runs (failure grid)", "single process s", f"Spark {master} job s", "ratio"]]
    rows += [[f"{r:,}", f"{a:.1f}", f"{b:.1f}", f"{a / b:.2f}"] for r, a, b in sorted(scales)]
    print()
    _print_table(rows)
    local_fixed, local_each = _fit([(r, a) for r, a, _ in scales])
    spark_fixed, spark_each = _fit([(r, b) for r, _, b in scales])
    line = (
        f"\nFitted: single process {local_fixed:.1f}s + {local_each * 1000:.1f} ms a run; Spark's job "
        f"{spark_fixed:.1f}s + {spark_each * 1000:.1f} ms a run"
    )
    if spark_each < local_each:
        cross = (spark_fixed - local_fixed) / (local_each - spark_each)
        line += f": Spark is the faster from about {max(cross, 0):,.0f} runs"
    else:
        line += ": Spark costs as much a run or more, and does not overtake at any size"
    print(line)


if __name__ == "__main__":
    sys.exit(main())
