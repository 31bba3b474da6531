"""The sweep in one process, without Spark: the same runs, tables and aggregates as the Spark job.

It calls :func:`pipeline.runner.run_scenario` for every (scenario, placer) of the grid in order,
builds the same Arrow batches, writes the same Parquet tables with pyarrow, and computes the
aggregates with pandas.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pyarrow as pa

from pipeline import aggregates, output
from pipeline.grid import Grid
from pipeline.progress import ProgressCallback
from pipeline.records import SPLITS, metrics_columns, result_schema, split_table, to_record_batch
from pipeline.runner import RunResult, run_scenario
from pipeline.scenarios import ScenarioSpec, iter_scenarios

log = logging.getLogger(__name__)

__all__ = ["LocalSweep", "iter_results", "run_sweep_local", "results_table"]

BATCH_RUNS = 256


@dataclass(frozen=True)
class LocalSweep:
    """What a single-process sweep produced."""

    out: Path | None
    runs: int
    scenarios: int
    seconds: float
    tables: Mapping[str, pa.Table]
    aggregates: Mapping[str, pa.Table]


def _pairs(grid: Grid) -> Iterator[tuple[ScenarioSpec, str]]:
    for scenario in iter_scenarios(grid):
        for placer in grid.placers:
            yield scenario, placer


def iter_results(grid: Grid, progress: ProgressCallback | None = None) -> Iterator[pa.RecordBatch]:
    """Record batches of up to :data:`BATCH_RUNS` runs, in grid order."""
    total = grid.run_count
    done = 0
    pairs = _pairs(grid)
    while chunk := list(islice(pairs, BATCH_RUNS)):
        runs: list[RunResult] = [run_scenario(s, p, grid.placer_configs) for s, p in chunk]
        done += len(runs)
        if progress:
            progress(done, total)
        yield to_record_batch(runs)


def results_table(grid: Grid, progress: ProgressCallback | None = None) -> pa.Table:
    """Every run of the grid as one table in :func:`pipeline.records.result_schema`."""
    return pa.Table.from_batches(list(iter_results(grid, progress)), schema=result_schema())


def output_tables(results: pa.Table, write_placements: bool = True) -> dict[str, pa.Table]:
    """The ``metrics`` table and the split tables, as both paths write them."""
    tables = {output.METRICS: results.select(metrics_columns(results.schema))}
    for split in SPLITS:
        if split.name == output.PLACEMENTS and not write_placements:
            continue
        tables[split.name] = split_table(results, split)
    return tables


def run_sweep_local(
    grid: Grid,
    out: str | Path | None,
    *,
    write_placements: bool = True,
    progress: ProgressCallback | None = None,
) -> LocalSweep:
    """Runs the grid in this process; writes the tables under ``out`` unless it is None."""
    started = time.perf_counter()
    results = results_table(grid, progress)
    tables = output_tables(results, write_placements)
    agg = aggregates.pandas_aggregates(tables)
    if out is not None:
        if not write_placements:
            output.remove_table(out, output.PLACEMENTS)  # a table left by an earlier sweep would not match
        for name, table in tables.items():
            output.write_table(table, out, name)
        for name, table in agg.items():
            output.write_table(table, Path(out) / output.AGGREGATES, name)
    return LocalSweep(
        out=Path(out) if out is not None else None,
        runs=grid.run_count,
        scenarios=grid.scenario_count,
        seconds=time.perf_counter() - started,
        tables=tables,
        aggregates=agg,
    )
