"""The per-placer aggregates of a sweep, declared once and computed by Spark SQL or by pandas.

The Spark job runs them as Spark SQL over the Parquet tables; the single-process path runs the same
declarations with pandas, so a sweep without Spark gets the same report. Every figure aggregates
columns the metrics library computed (``PlacementMetrics.summary()`` and its rack failures) or the
failure simulations wrote (``failovers``). Means are exact (:mod:`placement_sim.pipeline.exact`): both
paths give the same bits.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from placement_sim.pipeline.exact import SQL_NAME, fsum_mean

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger(__name__)

__all__ = ["AGGREGATES", "Aggregate", "Measure", "pandas_aggregates", "spark_aggregates"]


@dataclass(frozen=True)
class Measure:
    """Output column ``name`` = ``func`` over input column ``source`` (``count`` counts rows).

    With ``placed`` only the rows of runs that placed at least one partition count: the balance and
    failure figures of a run that placed nothing (every request failed) say nothing about the placer.
    """

    name: str
    func: str  # count, count_distinct, sum, mean, max
    source: str = ""
    placed: bool = False


@dataclass(frozen=True)
class Aggregate:
    """``measures`` of ``table`` grouped by ``by``, ordered by ``by``."""

    name: str
    title: str
    table: str
    by: tuple[str, ...]
    measures: tuple[Measure, ...]


def _m(name: str, func: str, source: str = "") -> Measure:
    return Measure(name, func, source)


def _p(name: str, func: str, source: str = "") -> Measure:
    return Measure(name, func, source, placed=True)


#: The figures of one run's metrics row, summed up over a group of runs (both metrics aggregates).
_RUN_FIGURES: tuple[Measure, ...] = (
    _m("runs", "count"),
    _p("runs_placed", "count"),
    _p("leaders_skew_mean", "mean", "leaders_skew"),
    _p("leaders_skew_worst", "max", "leaders_skew"),
    _p("replicas_skew_mean", "mean", "replicas_skew"),
    _p("replicas_skew_worst", "max", "replicas_skew"),
    _p("balance_bound_share", "mean", "within_balance_bound"),
    _m("rack_violations_total", "sum", "rack_violations"),
    _p("rack_failure_leader_growth_mean", "mean", "rack_failure_leader_growth"),
    _m("failed_requests", "sum", "failures"),
)

AGGREGATES: tuple[Aggregate, ...] = (
    Aggregate(
        "by_placer",
        "Per placer: balance, rack spread, failure impact and failed requests over all scenarios",
        "metrics",
        ("placer",),
        (
            *_RUN_FIGURES,
            _p("leaders_within_10pct_mean", "mean", "leaders_within_10pct"),
            _p("replicas_within_10pct_mean", "mean", "replicas_within_10pct"),
            _p("runs_with_rack_violations_share", "mean", "has_rack_violations"),
            _p("rack_failure_leader_growth_worst", "max", "rack_failure_leader_growth"),
            _p("rack_failure_offline_partitions_worst", "max", "rack_failure_max_offline_partitions"),
            _m("placer_ms_mean", "mean", "placer_ms"),
        ),
    ),
    Aggregate(
        "by_placer_family", "Per placer and cluster family", "metrics", ("family", "placer"), _RUN_FIGURES
    ),
    Aggregate(
        "failure_impact",
        "Failure impact per placer: losing one rack, or one data centre (top level of multi-level racks)",
        "rack_losses",
        ("scope", "placer"),
        (
            _p("losses", "count"),
            _p("offline_partitions_mean", "mean", "offline_partitions"),
            _p("offline_partitions_worst", "max", "offline_partitions"),
            _p("moved_leaders_mean", "mean", "moved_leaders"),
            _p("max_leaders_mean", "mean", "max_leaders"),
            _p("max_leaders_worst", "max", "max_leaders"),
            _p("leader_growth_mean", "mean", "leader_growth"),
            _p("leader_growth_worst", "max", "leader_growth"),
        ),
    ),
    Aggregate(
        "failover_impact",
        "Simulated failures per failure kind, election policy and placer (the controller's dynamics on "
        "a virtual clock), beside the static formula's figures",
        "failovers",
        ("failure", "policy", "placer"),
        (
            _m("runs", "count"),
            _m("leaderless_partition_s_mean", "mean", "leaderless_partition_s"),
            _m("leaderless_partition_s_worst", "max", "leaderless_partition_s"),
            _m("offline_worst_mean", "mean", "offline_worst"),
            _m("offline_worst_max", "max", "offline_worst"),
            _m("offline_after_failure_mean", "mean", "offline_after_failure"),
            _m("offline_end_max", "max", "offline_end"),
            _m("under_replicated_partition_s_mean", "mean", "under_replicated_partition_s"),
            _m("leader_moves_mean", "mean", "leader_moves"),
            _m("leader_epoch_bumps_mean", "mean", "leader_epoch_bumps"),
            _m("max_leaders_after_failure_mean", "mean", "max_leaders_after_failure"),
            _m("max_leaders_after_recovery_mean", "mean", "max_leaders_after_recovery"),
            _m("unsafe_elections_total", "sum", "unsafe_elections"),
            _m("records_at_risk_total", "sum", "records_at_risk"),
            _m("settle_s_mean", "mean", "settle_s"),
            _m("settle_s_worst", "max", "settle_s"),
            _m("static_offline_mean", "mean", "static_offline"),
            _m("static_max_leaders_mean", "mean", "static_max_leaders"),
            _m("static_disagreements", "sum", "disagrees"),
            _m("policy_errors", "sum", "policy_error"),
        ),
    ),
    Aggregate(
        "not_applicable",
        "Per placer: the runs on clusters it does not apply to (PlacerNotApplicableError), and one reason",
        "metrics",
        ("placer",),
        (
            _m("runs_not_applicable", "sum", "not_applicable_run"),
            _m("requests_not_applicable", "sum", "not_applicable_failures"),
            _m("not_applicable_reason", "max", "not_applicable"),
        ),
    ),
    Aggregate(
        "failures_by_error",
        "Failed placement requests per placer and error code",
        "failures",
        ("placer", "error_code", "error"),
        (
            _m("requests", "count"),
            _m("runs", "count_distinct", "scenario"),
        ),
    ),
)

#: Columns computed per row before aggregating, per table: the same definition for Spark and pandas.
#: ``placed``: the run placed at least one partition. ``within_balance_bound``: every broker within
#: +-10% of the mean for both replicas and leaders. ``leader_growth``: a rack loss's most leaders on a
#: surviving broker over the most before (the library's ``rack_failure_leader_growth`` for one rack).


def _spark_derived() -> list[tuple[str, str, Callable[[], Column]]]:
    from pyspark.sql import functions as F

    return [
        ("metrics", "placed", lambda: F.col("partitions") > 0),
        (
            "metrics",
            "within_balance_bound",
            lambda: ((F.col("leaders_within_10pct") >= 1.0) & (F.col("replicas_within_10pct") >= 1.0)).cast(
                "double"
            ),
        ),
        ("metrics", "has_rack_violations", lambda: (F.col("rack_violations") > 0).cast("double")),
        ("metrics", "placer_ms", lambda: F.col("placer_seconds") * 1000.0),
        ("metrics", "not_applicable_run", lambda: (F.col("not_applicable_failures") > 0).cast("int")),
        ("rack_losses", "placed", lambda: F.col("leaders_max") > 0),
        ("rack_losses", "leader_growth", lambda: F.try_divide(F.col("max_leaders"), F.col("leaders_max"))),
        ("failovers", "leaderless_partition_s", lambda: F.col("leaderless_partition_ms") / 1000.0),
        (
            "failovers",
            "under_replicated_partition_s",
            lambda: F.col("under_replicated_partition_ms") / 1000.0,
        ),
        ("failovers", "settle_s", lambda: F.col("settle_ms") / 1000.0),
        ("failovers", "disagrees", lambda: F.coalesce(F.col("static_disagrees").cast("int"), F.lit(0))),
        ("failovers", "policy_error", lambda: (F.col("error") != "").cast("int")),
    ]


_PANDAS_DERIVED: list[tuple[str, str, Callable[[pd.DataFrame], pd.Series]]] = [
    ("metrics", "placed", lambda d: d["partitions"] > 0),
    (
        "metrics",
        "within_balance_bound",
        lambda d: ((d["leaders_within_10pct"] >= 1.0) & (d["replicas_within_10pct"] >= 1.0)).astype(
            "float64"
        ),
    ),
    ("metrics", "has_rack_violations", lambda d: (d["rack_violations"] > 0).astype("float64")),
    ("metrics", "placer_ms", lambda d: d["placer_seconds"] * 1000.0),
    ("metrics", "not_applicable_run", lambda d: (d["not_applicable_failures"] > 0).astype("int32")),
    ("rack_losses", "placed", lambda d: d["leaders_max"] > 0),
    (
        "rack_losses",
        "leader_growth",
        lambda d: d["max_leaders"] / d["leaders_max"].where(d["leaders_max"] > 0),
    ),
    ("failovers", "leaderless_partition_s", lambda d: d["leaderless_partition_ms"] / 1000.0),
    ("failovers", "under_replicated_partition_s", lambda d: d["under_replicated_partition_ms"] / 1000.0),
    ("failovers", "settle_s", lambda d: d["settle_ms"] / 1000.0),
    (
        "failovers",
        "disagrees",
        lambda d: d["static_disagrees"].map(lambda v: 1 if v is True else 0).astype("int32"),
    ),
    ("failovers", "policy_error", lambda d: (d["error"] != "").astype("int32")),
]

#: Columns that depend on wall-clock time (differ between two runs of the same sweep).
TIMING_MEASURES: tuple[str, ...] = ("placer_ms_mean",)

_SQL_FUNCS = {
    "count": "COUNT({})",
    "count_distinct": "COUNT(DISTINCT {})",
    "sum": "SUM({})",
    "mean": f"{SQL_NAME}(COLLECT_LIST({{}}))",
    "max": "MAX({})",
}


def _quote(name: str) -> str:
    return f"`{name}`"


def _sql_measure(m: Measure) -> str:
    source = "1" if m.func == "count" else _quote(m.source)
    if m.placed:
        source = f"CASE WHEN `placed` THEN {source} END"
    return f"{_SQL_FUNCS[m.func].format(source)} AS {_quote(m.name)}"


def aggregate_sql(agg: Aggregate, view: str) -> str:
    """The Spark SQL text of one aggregate over a temporary view of its table."""
    by = ", ".join(_quote(c) for c in agg.by)
    measures = ", ".join(_sql_measure(m) for m in agg.measures)
    return f"SELECT {by}, {measures} FROM {view} GROUP BY {by} ORDER BY {by}"


def spark_aggregates(spark: SparkSession, tables: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
    """Every aggregate whose table is present, as Spark SQL over temporary views."""
    spark.udf.register(SQL_NAME, fsum_mean, "double")
    frames = dict(tables)
    for table, name, expr in _spark_derived():
        if table in frames:
            frames[table] = frames[table].withColumn(name, expr())
    result: dict[str, DataFrame] = {}
    for agg in AGGREGATES:
        if agg.table not in frames:
            continue
        view = f"sweep_{agg.table}"
        frames[agg.table].createOrReplaceTempView(view)
        result[agg.name] = spark.sql(aggregate_sql(agg, view))
    return result


def _measure_dtype(m: Measure, frame: pd.DataFrame) -> str:
    """Spark's result types: COUNT and SUM of integers are 64-bit, MAX keeps its type, AVG is a double.

    A MAX over the rows of placing runs may find none: integers are then nullable, as in Spark.
    """
    if m.func in ("count", "count_distinct"):
        return "int64"
    if m.func == "max":
        dtype = str(frame[m.source].dtype)
        return dtype.capitalize() if m.placed and dtype.startswith("int") else dtype
    if m.func == "sum" and pd.api.types.is_integer_dtype(frame[m.source]):
        return "int64"
    return "float64"


def _pandas_one(agg: Aggregate, frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        columns = {c: pd.Series(dtype=frame[c].dtype) for c in agg.by}
        columns.update({m.name: pd.Series(dtype=_measure_dtype(m, frame)) for m in agg.measures})
        return pd.DataFrame(columns)
    work = frame[list(agg.by)].copy()
    spec: dict[str, tuple[str, str]] = {}
    for i, m in enumerate(agg.measures):
        column = f"__m{i}"
        if m.func == "count":
            work[column] = frame["placed"].astype("int64") if m.placed else 1
            spec[m.name] = (column, "sum")
            continue
        values = frame[m.source]
        if m.placed:
            values = values.astype(_measure_dtype(m, frame) if m.func == "max" else "float64").where(
                frame["placed"]
            )
        work[column] = values
        if m.func == "mean":
            spec[m.name] = (column, _exact_mean)
        else:
            spec[m.name] = (column, "nunique" if m.func == "count_distinct" else m.func)
    grouped = work.groupby(list(agg.by), sort=True, dropna=False).agg(**spec).reset_index()
    for m in agg.measures:
        grouped[m.name] = grouped[m.name].astype(_measure_dtype(m, frame))
    return grouped


def _exact_mean(values: pd.Series) -> float:
    mean = fsum_mean(values.dropna().tolist())
    return math.nan if mean is None else mean


def pandas_aggregates(tables: Mapping[str, pa.Table]) -> dict[str, pa.Table]:
    """Every aggregate whose table is present, computed with pandas (the single-process path)."""
    frames = {name: table.to_pandas() for name, table in tables.items()}
    for table, name, fn in _PANDAS_DERIVED:
        if table in frames:
            frame = frames[table]
            frame[name] = fn(frame)  # on an empty table too: the column keeps its type, as in Spark
    result: dict[str, pa.Table] = {}
    for agg in AGGREGATES:
        if agg.table in frames:
            table = pa.Table.from_pandas(_pandas_one(agg, frames[agg.table]), preserve_index=False)
            result[agg.name] = table.replace_schema_metadata(None)  # plain Arrow types, as Spark writes
    return result
