"""A whole sweep: check the placers, run the grid (Spark or single-process), write the report.

This is what ``placement-sim sweep`` calls; tests and the benchmark call it too.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from controller.config import ELECTION_POLICY, ServerConfig
from controller.election.loader import load_policy
from controller.placement.loader import load_placer
from placement_sim.pipeline import output
from placement_sim.pipeline.grid import Grid
from placement_sim.pipeline.local_job import run_sweep_local
from placement_sim.pipeline.progress import ProgressCallback
from placement_sim.pipeline.records import SPLITS
from placement_sim.pipeline.report import (
    REPORT_SCENARIO_KEY,
    SKEW_COLUMNS,
    ReportData,
    load_report_data,
    pick_scenario,
    report_data,
    write_report,
)
from placement_sim.pipeline.runner import placer_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from placement_sim.pipeline.spark_job import SparkSweep

log = logging.getLogger(__name__)

__all__ = [
    "SweepInterrupted",
    "SweepResult",
    "add_local_py_files",
    "check_placers",
    "check_policies",
    "run_sweep",
]


class SweepInterrupted(Exception):
    """Ctrl-C stopped a sweep: its Spark jobs were cancelled, and the tables it had begun (and the run's
    description and report, which they would have replaced) removed, so that none looks complete."""


@dataclass(frozen=True)
class SweepResult:
    """What a sweep did and where it put it."""

    mode: str  # "spark" or "single-process"
    out: str
    report: Path | None
    runs: int
    scenarios: int
    seconds: float
    aggregates: Mapping[str, pa.Table]
    info: Mapping[str, str]


def check_placers(placers: Sequence[str], configs: Mapping[str, str], cluster: bool = False) -> None:
    """Loads and configures every placer once on the driver, as a run will, so that a typo or a bad
    setting fails before any work starts (PlacerLoadError or ConfigError, saying why)."""
    for name in placers:
        props = ServerConfig.from_properties(placer_properties(name, 0, configs)).placer_properties()
        placer = load_placer(name, props)
        close = getattr(placer, "close", None)
        if callable(close):
            close()
        if cluster and ".py" in name:
            log.warning(
                "placer %s is a file path: on a cluster the executors need the same path; "
                "ship the module with --py-files and name it by module instead",
                name,
            )


def check_policies(policies: Sequence[str], configs: Mapping[str, str], cluster: bool = False) -> None:
    """Loads and configures every election policy once on the driver, as a failure simulation will
    (PluginLoadError or ConfigError, saying why, before any work starts)."""
    for name in policies:
        props = ServerConfig.from_properties({**configs, ELECTION_POLICY: name}).plugin_properties()
        policy = load_policy(name, props)
        policy.close()
        if cluster and ".py" in name:
            log.warning(
                "election policy %s is a file path: on a cluster the executors need the same path; "
                "ship the module with --py-files and name it by module instead",
                name,
            )


def add_local_py_files(py_files: Sequence[str]) -> None:
    """Makes ``py_files`` importable in this process, as ``--py-files`` does on Spark's executors.

    A ``.py`` file is importable by its module name (its folder goes on ``sys.path``); a ``.zip`` or
    ``.egg`` goes on ``sys.path`` itself.
    """
    for path in py_files:
        entry = str(Path(path).resolve().parent) if path.endswith(".py") else str(Path(path).resolve())
        if entry not in sys.path:
            sys.path.insert(0, entry)


def _remove_files(out: str, report: Path) -> None:
    """The run's description and report, which an interrupted sweep leaves out of date."""
    if output.is_local(out):
        folder = output.local_path(out)
        for name in (output.GRID_FILE, output.SWEEP_FILE):
            (folder / name).unlink(missing_ok=True)
    report.unlink(missing_ok=True)


def default_report_path(out: str) -> Path:
    return output.local_path(out) / output.REPORT_FILE if output.is_local(out) else Path(output.REPORT_FILE)


def _spark_report_data(sweep: SparkSweep, info: Mapping[str, str], wanted: str | None) -> ReportData:
    from pyspark.sql import functions as F

    metrics = sweep.tables[output.METRICS]
    skews = metrics.select(*SKEW_COLUMNS).toArrow()
    if wanted is not None and metrics.filter(F.col("scenario") == wanted).limit(1).count():
        chosen: str | None = wanted
    else:
        first = metrics.agg(F.min("scenario")).first()
        chosen = pick_scenario([first[0]] if first and first[0] else [], wanted)
    details = metrics.filter(F.col("scenario") == chosen).select("placer", "details").toArrow()
    return report_data(info, sweep.aggregates, skews, chosen, details)


def run_sweep(
    grid: Grid,
    out: str,
    *,
    use_spark: bool = True,
    spark: SparkSession | None = None,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    py_files: Sequence[str] = (),
    partitions: int | None = None,
    write_placements: bool = True,
    report: str | Path | None = None,
    report_scenario: str | None = None,
    progress: ProgressCallback | None = None,
    quiet: bool = False,
) -> SweepResult:
    """Runs ``grid`` and writes its tables under ``out`` plus ``report.html``.

    With ``use_spark`` the runs happen on Spark (``spark`` if given, else a session on ``master``,
    stopped afterwards; ``quiet``: one that logs errors only, with no start banner); without, in this
    process (``out`` must then be a local folder).
    """
    started = time.perf_counter()
    wanted = report_scenario or grid.report_scenario
    report_path = Path(report) if report is not None else default_report_path(out)
    info: dict[str, str] = {
        "started": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "placers": ", ".join(grid.placers),
        "scenarios": f"{grid.scenario_count:,} ({grid.shape_count} cluster shapes x {len(grid.workloads)} "
        f"workloads x {len(grid.seeds)} seeds)",
        "runs": f"{grid.run_count:,}",
        "output": out,
    }
    if not use_spark and not output.is_local(out):
        raise ValueError(f"the single-process path writes local folders only, not {out}")
    add_local_py_files(py_files)  # the driver resolves the placers too
    on_cluster = "PYSPARK_GATEWAY_PORT" in os.environ if master is None else not master.startswith("local")
    check_placers(grid.placers, grid.placer_configs, cluster=use_spark and on_cluster)
    if grid.failures:
        check_policies(grid.election_policies, grid.placer_configs, cluster=use_spark and on_cluster)
        info["failures"] = ", ".join(grid.failures)
        info["election policies"] = ", ".join(grid.election_policies)
        info["produce load"] = f"{grid.produce_load:g} records/s per partition"
    if use_spark:
        from pyspark.sql import SparkSession

        from placement_sim.pipeline.spark_job import (
            cancel_on_interrupt,
            remove_tables_once_idle,
            run_sweep_spark,
            spark_session,
        )

        # Stop the session afterwards only when this sweep started it.
        own_session = spark is None and SparkSession.getActiveSession() is None
        with cancel_on_interrupt() as interrupts:
            session = (
                spark
                if spark is not None
                else spark_session(master, conf=conf, py_files=py_files, quiet=quiet)
            )
            interrupts.session = session
            try:
                if spark is not None:
                    for path in py_files:
                        session.sparkContext.addPyFile(path)
                info["mode"] = f"Spark {session.version} on {session.sparkContext.master}"
                if interrupts.interrupted:  # Ctrl-C while Spark started: nothing was written
                    raise SweepInterrupted("interrupted while Spark started: nothing was written")
                try:
                    sweep = run_sweep_spark(
                        session,
                        grid,
                        out,
                        partitions=partitions,
                        write_placements=write_placements,
                        progress=progress,
                    )
                    info["seconds"] = f"{time.perf_counter() - started:.1f}"
                    data = _spark_report_data(sweep, info, wanted)
                except Exception:
                    if not interrupts.interrupted:
                        raise
                    remove_tables_once_idle(interrupts, session, out)
                    _remove_files(out, report_path)
                    raise SweepInterrupted(
                        f"interrupted: the Spark jobs were cancelled, and the tables begun in {out} removed"
                    ) from None
                if interrupts.interrupted:  # Ctrl-C after the last job: the sweep is complete, kept
                    log.info("Ctrl-C came after the sweep's last Spark job: its tables are complete")
                aggregates = sweep.aggregates
            finally:
                if own_session:
                    session.stop()
    else:
        info["mode"] = "single process"
        try:
            local = run_sweep_local(
                grid, output.local_path(out), write_placements=write_placements, progress=progress
            )
        except KeyboardInterrupt:
            for name in (output.METRICS, *(split.name for split in SPLITS), output.AGGREGATES):
                output.remove_table(output.local_path(out), name)
            _remove_files(out, report_path)
            raise SweepInterrupted(f"interrupted: the tables begun in {out} were removed") from None
        info["seconds"] = f"{time.perf_counter() - started:.1f}"
        data = load_report_data(output.local_path(out), wanted, info)
        aggregates = local.aggregates
    if data.scenario is not None:
        # Saved with the run, so that ``python -m placement_sim.pipeline.report OUT`` plots the same scenario.
        info[REPORT_SCENARIO_KEY] = data.scenario
    if output.is_local(out):
        folder = output.local_path(out)
        output.write_json(grid.to_json(), folder, output.GRID_FILE)
        output.write_json(info, folder, output.SWEEP_FILE)
    written = write_report(data, report_path)
    return SweepResult(
        mode="spark" if use_spark else "single-process",
        out=out,
        report=written,
        runs=grid.run_count,
        scenarios=grid.scenario_count,
        seconds=time.perf_counter() - started,
        aggregates=aggregates,
        info=info,
    )
