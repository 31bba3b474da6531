"""The layout of a sweep's output folder, shared by the Spark job and the single-process path.

::

    OUT/metrics/          Parquet: one row per (scenario, placer) run (keys, counts, metric scalars, details)
    OUT/placements/       Parquet: one row per placed partition (scenario, placer, topic, partition, leader, replicas)
    OUT/failures/         Parquet: one row per request answered with an error
    OUT/rack_losses/      Parquet: one row per rack (every level) per run: what losing it does
    OUT/failovers/        Parquet: one row per failure simulation (run x failure kind x election policy)
    OUT/aggregates/NAME/  Parquet: the per-placer aggregates (see pipeline.aggregates)
    OUT/grid.json         the grid the sweep ran
    OUT/sweep.json        what ran: mode, counts, seconds, and the scenario the report plots
    OUT/report.html       the self-contained report
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

log = logging.getLogger(__name__)

__all__ = [
    "AGGREGATES",
    "FAILOVERS",
    "FAILURES",
    "GRID_FILE",
    "METRICS",
    "PLACEMENTS",
    "REPORT_FILE",
    "SWEEP_FILE",
    "is_local",
    "local_path",
    "read_table",
    "remove_table",
    "write_json",
    "write_table",
]

METRICS = "metrics"
PLACEMENTS = "placements"
FAILURES = "failures"
FAILOVERS = "failovers"
AGGREGATES = "aggregates"
GRID_FILE = "grid.json"
SWEEP_FILE = "sweep.json"
REPORT_FILE = "report.html"


def is_local(out: str) -> bool:
    """True for a plain path or a ``file:`` URI; False for ``hdfs://``, ``s3a://`` and the like."""
    scheme = urlparse(out).scheme
    return scheme in ("", "file") or len(scheme) == 1  # a Windows drive letter is not a scheme


def local_path(out: str) -> Path:
    return Path(urlparse(out).path if urlparse(out).scheme == "file" else out)


def write_table(table: pa.Table, out: str | Path, name: str) -> Path:
    """Writes ``table`` as ``OUT/NAME/part-00000.parquet``, replacing what was there."""
    folder = Path(out) / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    path = folder / "part-00000.parquet"
    pq.write_table(table, path)
    log.debug("wrote %d row(s) to %s", table.num_rows, path)
    return path


def remove_table(out: str | Path, name: str) -> None:
    """Removes ``OUT/NAME`` if it exists."""
    folder = Path(out) / name
    if folder.is_dir():
        shutil.rmtree(folder)


def read_table(out: str | Path, name: str, columns: list[str] | None = None) -> pa.Table:
    """Reads ``OUT/NAME`` (a folder of Parquet files, as either path writes it)."""
    folder = Path(out) / name
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist: is {out} a sweep output folder?")
    return pq.read_table(folder, columns=columns)


def write_json(data: Mapping[str, Any], out: str | Path, name: str) -> Path:
    path = Path(out) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
