"""What the Spark executors run: Arrow batches in, Arrow batches out (``mapInArrow``).

Kept apart from the driver code so that an executor imports only what a run needs (the controller's
placement code and pyarrow; no pandas, no matplotlib).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Protocol

import pyarrow as pa

from placement_sim.pipeline.failover import FailoverPlan
from placement_sim.pipeline.grid import WorkloadSpec, family_from_document, workload_from_document
from placement_sim.pipeline.records import to_record_batch
from placement_sim.pipeline.runner import run_scenario
from placement_sim.pipeline.scenarios import ClusterShape, ScenarioSpec, expand_family, scenario_id

__all__ = ["FAMILY_SCHEMA", "SHAPE_SCHEMA", "WORKLOAD_SCHEMA", "expand_families", "run_batches"]

FAMILY_SCHEMA = "family string, family_json string"
SHAPE_SCHEMA = "family string, shape string, shape_json string"
WORKLOAD_SCHEMA = "workload string, workload_json string"


class Counter(Protocol):
    def add(self, value: int) -> None: ...


def expand_families(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Cluster families (FAMILY_SCHEMA) to their shapes (SHAPE_SCHEMA)."""
    for batch in batches:
        families, shapes, shape_json = [], [], []
        for text in batch.column("family_json").to_pylist():
            family = family_from_document(json.loads(text))
            for shape in expand_family(family):
                families.append(family.name)
                shapes.append(shape.name)
                shape_json.append(shape.to_json())
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(families, pa.string()),
                pa.array(shapes, pa.string()),
                pa.array(shape_json, pa.string()),
            ],
            names=["family", "shape", "shape_json"],
        )


@lru_cache(maxsize=256)
def _workload(text: str) -> WorkloadSpec:
    return workload_from_document(json.loads(text))


def run_batches(
    batches: Iterator[pa.RecordBatch],
    configs: Mapping[str, str],
    counter: Counter | None = None,
    plan: FailoverPlan | None = None,
) -> Iterator[pa.RecordBatch]:
    """Runs to do (shape_json, workload_json, seed, placer) to results (``records.result_schema()``)."""
    for batch in batches:
        results = []
        for row in batch.select(["shape_json", "workload_json", "seed", "placer"]).to_pylist():
            shape = ClusterShape.from_json(row["shape_json"])
            workload = _workload(row["workload_json"])
            seed = int(row["seed"])
            spec = ScenarioSpec(scenario_id(shape.name, workload.name, seed), shape, workload, seed)
            results.append(run_scenario(spec, row["placer"], configs, plan))
        if counter is not None:
            counter.add(len(results))
        yield to_record_batch(results)
