"""The sweep in one process, without Spark: the same runs, tables and aggregates as the Spark job.

It calls :func:`placement_sim.pipeline.runner.run_scenario` for every (scenario, placer) of the grid in order,
builds the same Arrow batches, streams the same Parquet tables out with pyarrow, and computes the
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
import pyarrow.parquet as pq

from placement_sim.pipeline import aggregates, output
from placement_sim.pipeline.grid import Grid
from placement_sim.pipeline.progress import ProgressCallback
from placement_sim.pipeline.records import (
    SPLITS,
    metrics_columns,
    result_schema,
    split_table,
    to_record_batch,
)
from placement_sim.pipeline.runner import RunResult, run_scenario
from placement_sim.pipeline.scenarios import ScenarioSpec, iter_scenarios

log = logging.getLogger(__name__)

__all__ = ["LocalSweep", "iter_results", "run_sweep_local", "results_table"]

BATCH_RUNS = 256


@dataclass(frozen=True)
class LocalSweep:
    """What a single-process sweep produced."""

    out: Path
    runs: int
    scenarios: int
    seconds: float
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
        plan = grid.failover_plan
        runs: list[RunResult] = [run_scenario(s, p, grid.placer_configs, plan) for s, p in chunk]
        done += len(runs)
        if progress:
            progress(done, total)
        yield to_record_batch(runs)


def results_table(grid: Grid, progress: ProgressCallback | None = None) -> pa.Table:
    """Every run of the grid as one table in :func:`placement_sim.pipeline.records.result_schema`."""
    return pa.Table.from_batches(list(iter_results(grid, progress)), schema=result_schema())


def output_tables(results: pa.Table, write_placements: bool = True) -> dict[str, pa.Table]:
    """The ``metrics`` table and the split tables, as both paths write them."""
    tables = {output.METRICS: results.select(metrics_columns(results.schema))}
    for split in SPLITS:
        if split.name == output.PLACEMENTS and not write_placements:
            continue
        tables[split.name] = split_table(results, split)
    return tables


#: Rows buffered per table before they are written as one Parquet row group.
ROW_GROUP_ROWS = 65_536

#: The columns the aggregates read; what else the tables hold (placements, details) is only written.
_AGGREGATED = {output.METRICS, output.FAILURES, "rack_losses", output.FAILOVERS}


class _TableWriters:
    """Streams tables to ``OUT/NAME/part-00000.parquet`` in row groups of about ROW_GROUP_ROWS."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._pending: dict[str, list[pa.Table]] = {}

    def write(self, name: str, table: pa.Table) -> None:
        pending = self._pending.setdefault(name, [])
        pending.append(table)
        if sum(t.num_rows for t in pending) >= ROW_GROUP_ROWS:
            self._flush(name)

    def _flush(self, name: str) -> None:
        tables = self._pending.pop(name, [])
        if not tables:
            return
        table = pa.concat_tables(tables)
        writer = self._writers.get(name)
        if writer is None:
            folder = self.out / name
            output.remove_table(self.out, name)
            folder.mkdir(parents=True)
            writer = self._writers[name] = pq.ParquetWriter(folder / "part-00000.parquet", table.schema)
        writer.write_table(table)

    def close(self) -> None:
        for name in list(self._pending):
            self._flush(name)
        for writer in self._writers.values():
            writer.close()


def run_sweep_local(
    grid: Grid,
    out: str | Path,
    *,
    write_placements: bool = True,
    progress: ProgressCallback | None = None,
) -> LocalSweep:
    """Runs the grid in this process and writes its tables and aggregates under ``out``.

    The tables are written as the runs finish; only the columns the aggregates need stay in memory.
    """
    started = time.perf_counter()
    out = Path(out)
    if not write_placements:
        output.remove_table(out, output.PLACEMENTS)  # a table left by an earlier sweep would not match
    writers = _TableWriters(out)
    kept: dict[str, list[pa.Table]] = {}
    try:
        for batch in iter_results(grid, progress):
            for name, table in output_tables(pa.Table.from_batches([batch]), write_placements).items():
                writers.write(name, table)
                if name in _AGGREGATED:
                    kept.setdefault(name, []).append(
                        table.drop_columns(["details"]) if name == output.METRICS else table
                    )
    finally:
        writers.close()
    tables = {name: pa.concat_tables(parts) for name, parts in kept.items()}
    agg = aggregates.pandas_aggregates(tables)
    for name, table in agg.items():
        output.write_table(table, out / output.AGGREGATES, name)
    return LocalSweep(
        out=out,
        runs=grid.run_count,
        scenarios=grid.scenario_count,
        seconds=time.perf_counter() - started,
        aggregates=agg,
    )
