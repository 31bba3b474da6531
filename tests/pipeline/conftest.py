"""Fixtures for the sweep tests: one local[2] SparkSession per test session, and one small sweep run
both on Spark and in a single process, shared by the tests that check its tables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from placement_sim.pipeline.grid import Grid, parse_grid
from placement_sim.pipeline.sweep import SweepResult, run_sweep

HERE = Path(__file__).parent
THIRDPARTY_FILE = HERE.parent / "support" / "thirdparty_placer.py"
THIRDPARTY = "thirdparty_placer.DescendingPlacer"

#: Fluvio's documented examples (Fluvio's unbalanced 1-2-3 racks and balanced 4 x 3 racks), unbalanced racks
#: of 4, 1 and 5 brokers, a multi-level cluster, and a 3-broker cluster that cannot take 4 replicas.
SMALL_GRID = f"""
seeds = 2
placers = ["fluvio", "striped", "multi-level", "{THIRDPARTY}"]

[report]
scenario = "unbalanced-1-2-3/fluvio-example/s0"

[[clusters]]
name = "unbalanced"
rack_sizes = [[1, 2, 3], [4, 1, 5]]

[[clusters]]
name = "balanced"
racks = [4]
brokers_per_rack = [3]

[[clusters]]
name = "multi-dc"
levels = [[3, 2]]
brokers_per_rack = [2]

[[clusters]]
name = "no-rack"
brokers = [3]

[[workloads]]
name = "fluvio-example"
topics = 1
partitions = 6
replication_factor = 3

[[workloads]]
name = "balanced-example"
topics = 1
partitions = 12
replication_factor = 4

[[workloads]]
name = "mixed"
topics = 6
partitions = [1, 3]
replication_factor = [1, 2, 3]
partition_additions = 3
added_partitions = [1, 2]
"""


@pytest.fixture(scope="session")
def small_grid() -> Grid:
    return parse_grid(SMALL_GRID)


@pytest.fixture(scope="session")
def spark_progress() -> list[tuple[int, int]]:
    """The (runs done, runs in total) reports of the Spark sweep."""
    return []


@pytest.fixture(scope="session")
def local_progress() -> list[tuple[int, int]]:
    """The (runs done, runs in total) reports of the single-process sweep."""
    return []


@pytest.fixture(scope="session")
def spark_sweep(
    spark: object,
    small_grid: Grid,
    tmp_path_factory: pytest.TempPathFactory,
    spark_progress: list[tuple[int, int]],
) -> SweepResult:
    out = tmp_path_factory.mktemp("spark-sweep")
    return run_sweep(
        small_grid,
        str(out),
        spark=spark,  # type: ignore[arg-type]
        py_files=[str(THIRDPARTY_FILE)],
        progress=lambda done, total: spark_progress.append((done, total)),
    )


@pytest.fixture(scope="session")
def local_sweep(
    small_grid: Grid, tmp_path_factory: pytest.TempPathFactory, local_progress: list[tuple[int, int]]
) -> SweepResult:
    out = tmp_path_factory.mktemp("local-sweep")
    return run_sweep(
        small_grid,
        str(out),
        use_spark=False,
        py_files=[str(THIRDPARTY_FILE)],
        progress=lambda done, total: local_progress.append((done, total)),
    )


#: A placer module in a deep folder with a long class name: named by its file path, it is the longest
#: kind of placer name the report has to show.
LONG_NAMED_PLACER = """
from controller.placement.api import ReplicaPlacer


class RackAwareLeastLoadedReplicaPlacerWithALongName(ReplicaPlacer):
    \"\"\"Every partition on the lowest unfenced broker ids, in order.\"\"\"

    def place(self, spec, cluster):
        ids = sorted(b.id for b in cluster.usable(spec) if not b.fenced)
        return [ids[: spec.num_replicas] for _ in range(spec.num_partitions)]
"""


@pytest.fixture(scope="session")
def long_names_sweep(small_grid: Grid, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    """The small grid through the five built-in placers plus two with long names (a dotted path and a
    file path), in a single process."""
    folder = tmp_path_factory.mktemp("long-names") / "placers_under_evaluation" / "experimental_strategies"
    folder.mkdir(parents=True)
    module = folder / "rack_aware_least_loaded_placement.py"
    module.write_text(LONG_NAMED_PLACER)
    placers = [
        "striped",
        "legacy",
        "fluvio",
        "fluvio-fair",
        "multi-level",
        THIRDPARTY,
        f"{module}:RackAwareLeastLoadedReplicaPlacerWithALongName",
    ]
    return run_sweep(
        small_grid.with_placers(placers),
        str(tmp_path_factory.mktemp("long-names-sweep")),
        use_spark=False,
        py_files=[str(THIRDPARTY_FILE)],
    )


@pytest.fixture(scope="session")
def thirdparty_placer() -> str:
    """The dotted path of the test's third-party placer (shipped with py_files, never installed)."""
    return THIRDPARTY


@pytest.fixture(scope="session")
def read_table() -> Callable[[str | Path, str], pd.DataFrame]:
    """Reads one table of a sweep's output folder as pandas, sorted by its key columns."""

    def read(out: str | Path, name: str) -> pd.DataFrame:
        frame = pq.read_table(Path(out) / name).to_pandas()
        keys = [
            c
            for c in ("scenario", "placer", "topic", "partition", "rack", "op", "scope", "error", "family")
            if c in frame.columns
        ]
        return frame.sort_values(keys).reset_index(drop=True)

    return read
