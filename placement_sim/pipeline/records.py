"""The Arrow layout of sweep results: one row per (scenario, placer) run.

A row holds the run's keys, its request counts, one column per scalar of
``PlacementMetrics.summary()`` (typed once per process from the metrics library), the JSON of
``PlacementMetrics.to_dict()``, and four nested columns (placements, failed requests, rack losses,
failure simulations)
that the writers split into tables of their own. Both the Spark job and the single-process path build
their batches with :func:`to_record_batch`; :data:`SPLITS` says how the tables are cut from them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from controller.placement.api import UsableBroker
from controller.placement.metrics import compute_metrics
from placement_sim.pipeline.failover import FailoverRun
from placement_sim.pipeline.runner import RunResult
from placement_sim.pipeline.scenarios import brokers_for

log = logging.getLogger(__name__)

__all__ = [
    "KEY_COLUMNS",
    "NESTED_COLUMNS",
    "SPLITS",
    "TIMING_COLUMNS",
    "Split",
    "metric_columns",
    "result_schema",
    "split_table",
    "to_record_batch",
]

#: Identify a run: the scenario id and its parts, and the placer.
KEY_FIELDS: tuple[pa.Field, ...] = (
    pa.field("scenario", pa.string(), nullable=False),
    pa.field("family", pa.string(), nullable=False),
    pa.field("shape", pa.string(), nullable=False),
    pa.field("workload", pa.string(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("placer", pa.string(), nullable=False),
)
KEY_COLUMNS: tuple[str, ...] = tuple(f.name for f in KEY_FIELDS)

#: The cluster's fencing and what happened to the workload's requests.
RUN_FIELDS: tuple[pa.Field, ...] = (
    pa.field("fenced_brokers", pa.int32(), nullable=False),
    pa.field("operations", pa.int32(), nullable=False),
    pa.field("skipped", pa.int32(), nullable=False),
    pa.field("failures", pa.int32(), nullable=False),
    pa.field("placer_seconds", pa.float64(), nullable=False),
    # Of the failures, those of a placer that does not apply to the cluster, and its first reason ("": none).
    pa.field("not_applicable_failures", pa.int32(), nullable=False),
    pa.field("not_applicable", pa.string(), nullable=False),
)

#: Wall-clock time: not deterministic, so left out when two sweeps are compared.
TIMING_COLUMNS: tuple[str, ...] = ("placer_seconds",)


def _struct(*fields: tuple[str, pa.DataType]) -> pa.StructType:
    return pa.struct([pa.field(name, t, nullable=False) for name, t in fields])


def _list(t: pa.DataType) -> pa.ListType:
    return pa.list_(pa.field("element", t, nullable=False))


_FAILOVER_TYPES = {
    "str": pa.string(),
    "int": pa.int64(),
    "int | None": pa.int64(),
    "bool | None": pa.bool_(),
}


PLACEMENT_TYPE = _struct(("topic", pa.string()), ("partition", pa.int32()), ("replicas", _list(pa.int32())))
FAILURE_TYPE = _struct(
    ("op", pa.int32()),
    ("topic", pa.string()),
    ("error_code", pa.int16()),
    ("error", pa.string()),
    ("message", pa.string()),
)
#: One failure simulation (``failover.FailoverRun``), field for field; the static figures may be null.
FAILOVER_TYPE = pa.struct(
    [
        pa.field(f.name, _FAILOVER_TYPES[f.type], nullable=f.type.endswith("None"))
        for f in dataclasses.fields(FailoverRun)
    ]
)
RACK_LOSS_TYPE = _struct(
    ("rack", pa.string()),
    ("scope", pa.string()),
    ("lost_brokers", pa.int32()),
    ("offline_partitions", pa.int32()),
    ("moved_leaders", pa.int32()),
    ("max_leaders", pa.int32()),
)

NESTED_FIELDS: tuple[pa.Field, ...] = (
    pa.field("placement_list", _list(PLACEMENT_TYPE), nullable=False),
    pa.field("failure_list", _list(FAILURE_TYPE), nullable=False),
    pa.field("rack_loss_list", _list(RACK_LOSS_TYPE), nullable=False),
    pa.field("failover_list", _list(FAILOVER_TYPE), nullable=False),
)
NESTED_COLUMNS: tuple[str, ...] = tuple(f.name for f in NESTED_FIELDS)
DETAILS_FIELD = pa.field("details", pa.string(), nullable=False)


@dataclass(frozen=True)
class Split:
    """An output table cut from the nested results: ``keys`` repeated for each element of ``column``."""

    name: str
    column: str
    keys: tuple[str, ...]


#: The tables besides ``metrics`` (which is every column but the nested ones).
SPLITS: tuple[Split, ...] = (
    Split("placements", "placement_list", ("scenario", "placer")),
    Split("failures", "failure_list", ("scenario", "placer")),
    Split("rack_losses", "rack_loss_list", ("scenario", "family", "placer", "leaders_max")),
    Split("failovers", "failover_list", ("scenario", "family", "shape", "workload", "seed", "placer")),
)

# A cluster with rack paths, so every summary scalar shows up in the probe.
_PROBE_BROKERS = (
    UsableBroker(0, "/dc-1/rack-1", False),
    UsableBroker(1, "/dc-2/rack-1", False),
    UsableBroker(2, "/dc-2/rack-2", True),
)


def _arrow_type(name: str, value: object) -> pa.DataType:
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, float):
        return pa.float64()
    raise TypeError(f"PlacementMetrics.summary()[{name!r}] is {type(value).__name__}, not a number")


@lru_cache(maxsize=1)
def metric_columns() -> tuple[pa.Field, ...]:
    """One column per ``summary()`` scalar, typed from a probe run of the metrics library."""
    summary = compute_metrics(_PROBE_BROKERS, {("probe", 0): (0, 1, 2), ("probe", 1): (1, 0)}).summary()
    reserved = {f.name for f in (*KEY_FIELDS, *RUN_FIELDS, *NESTED_FIELDS, DETAILS_FIELD)}
    clash = sorted(reserved & set(summary))
    if clash:
        raise ValueError(f"metric names {clash} clash with the sweep's own columns")
    return tuple(pa.field(name, _arrow_type(name, value), nullable=False) for name, value in summary.items())


def result_schema() -> pa.Schema:
    """The schema of the batches :func:`to_record_batch` builds."""
    return pa.schema([*KEY_FIELDS, *RUN_FIELDS, *metric_columns(), DETAILS_FIELD, *NESTED_FIELDS])


def _scalar_columns(run: RunResult) -> tuple[object, ...]:
    s = run.scenario
    fenced = sum(1 for b in brokers_for(s.shape, s.seed) if b.fenced)
    return (
        s.scenario,
        s.shape.family,
        s.shape.name,
        s.workload.name,
        s.seed,
        run.placer,
        fenced,
        run.operations,
        run.skipped,
        len(run.failures),
        run.seconds,
        run.not_applicable_requests,
        run.not_applicable,
    )


def _metric_value(field: pa.Field, run: RunResult) -> object:
    try:
        value = run.metrics[field.name]
    except KeyError:
        raise ValueError(
            f"{run.scenario.scenario} / {run.placer}: the metrics have no {field.name!r}"
        ) from None
    if pa.types.is_int64(field.type) and isinstance(value, float):
        if not value.is_integer():
            raise TypeError(
                f"{run.scenario.scenario} / {run.placer}: metric {field.name} is {value}, "
                "where the metrics library gave an integer before"
            )
        return int(value)
    return value


def _nested_array(items_per_run: Sequence[Sequence[tuple[Any, ...]]], list_type: pa.ListType) -> pa.Array:
    """A list<struct> array from one sequence of tuples (in the struct's field order) per run."""
    struct_type: pa.StructType = list_type.value_type
    offsets = pa.array(list(accumulate((len(items) for items in items_per_run), initial=0)), pa.int32())
    flat = [item for items in items_per_run for item in items]
    columns = list(zip(*flat, strict=True)) if flat else [()] * struct_type.num_fields
    children = [pa.array(column, type=field.type) for column, field in zip(columns, struct_type, strict=True)]
    structs = pa.StructArray.from_arrays(children, fields=list(struct_type))
    return pa.ListArray.from_arrays(offsets, structs, type=list_type)


_NESTED_ITEMS: dict[str, Callable[[RunResult], list[tuple[Any, ...]]]] = {
    "placement_list": lambda run: [(p.topic, p.partition, p.replicas) for p in run.placements],
    "failure_list": lambda run: [(f.op, f.topic, f.error_code, f.error, f.message) for f in run.failures],
    "rack_loss_list": lambda run: [
        (r.rack, r.scope, r.lost_brokers, r.offline_partitions, r.moved_leaders, r.max_leaders)
        for r in run.rack_losses
    ],
    "failover_list": lambda run: [dataclasses.astuple(f) for f in run.failovers],
}


def to_record_batch(runs: Sequence[RunResult]) -> pa.RecordBatch:
    """One row per run, in :func:`result_schema`."""
    schema = result_schema()
    scalar_fields = (*KEY_FIELDS, *RUN_FIELDS)
    rows = [_scalar_columns(run) for run in runs]
    arrays: list[pa.Array] = [
        pa.array([row[i] for row in rows], type=field.type) for i, field in enumerate(scalar_fields)
    ]
    arrays.extend(pa.array([_metric_value(f, run) for run in runs], type=f.type) for f in metric_columns())
    arrays.append(pa.array([run.details for run in runs], type=pa.string()))
    for field in NESTED_FIELDS:
        items = _NESTED_ITEMS[field.name]
        arrays.append(_nested_array([items(run) for run in runs], field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def metrics_columns(schema: pa.Schema) -> list[str]:
    """The columns of the ``metrics`` table: everything but the nested lists."""
    return [name for name in schema.names if name not in NESTED_COLUMNS]


def split_table(results: pa.Table, split: Split) -> pa.Table:
    """The ``split`` table of the single-process path: ``split.keys`` repeated per list element."""
    lists = results.column(split.column).combine_chunks()
    parents = pc.list_parent_indices(lists)
    flat = pc.list_flatten(lists)
    table = pa.table({k: pc.take(results.column(k), parents) for k in split.keys})
    for i, field in enumerate(flat.type):
        table = table.append_column(field.name, flat.field(i))
    return table
