"""A small sweep on Spark local[2], checked against values worked out by hand from Fluvio's Replica Assignment documentation, and
against the single-process path."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from placement_sim.pipeline.aggregates import AGGREGATES, TIMING_MEASURES
from placement_sim.pipeline.records import TIMING_COLUMNS

UNBALANCED = "unbalanced-1-2-3/fluvio-example/s0"
BALANCED = "balanced-4x3/balanced-example/s0"
RACKS_4_1_5 = "unbalanced-4-1-5/fluvio-example/s0"

# Fluvio's replica assignment documentation, example 2: 6 SPUs in racks of 1, 2 and 3, 6 partitions x 3 replicas.
FLUVIO_DOC_UNBALANCED = [[3, 2, 0], [2, 0, 4], [0, 4, 1], [4, 1, 5], [1, 5, 3], [5, 3, 2]]
# Racks of 4, 1 and 5 brokers (rack-a: 0-3, rack-b: 4, rack-c: 5-9), worked by hand with the documentation's
# three stages. Matrix, largest rack first: rack-c 5 6 7 8 9 / rack-a 0 1 2 3 / rack-b 4. Read
# diagonally (a rack's column wraps, SPUs already taken are skipped): 5 1 4 6 2 7 3 8 0 9. Partition p
# takes 3 consecutive SPUs from position p.
RACKS_4_1_5_MAP = [[5, 1, 4], [1, 4, 6], [4, 6, 2], [6, 2, 7], [2, 7, 3], [7, 3, 8]]
# Fluvio's replica assignment documentation, example 1: 12 SPUs in 4 racks of 3, 12 partitions x 4 replicas.
FLUVIO_DOC_BALANCED = [
    [0, 4, 8, 9], [4, 8, 9, 1], [8, 9, 1, 5], [9, 1, 5, 6], [1, 5, 6, 10], [5, 6, 10, 2],
    [6, 10, 2, 3], [10, 2, 3, 7], [2, 3, 7, 11], [3, 7, 11, 0], [7, 11, 0, 4], [11, 0, 4, 8],
]  # fmt: skip


def _run(frame: pd.DataFrame, scenario: str, placer: str) -> pd.DataFrame:
    return frame[(frame["scenario"] == scenario) & (frame["placer"] == placer)]


def _metrics_row(spark_sweep, read_table, scenario: str, placer: str) -> pd.Series:
    rows = _run(read_table(spark_sweep.out, "metrics"), scenario, placer)
    assert len(rows) == 1
    return rows.iloc[0]


def _replica_lists(spark_sweep, read_table, scenario: str, placer: str) -> list[list[int]]:
    rows = _run(read_table(spark_sweep.out, "placements"), scenario, placer).sort_values("partition")
    return [list(r) for r in rows["replicas"]]


def test_fluvio_on_the_unbalanced_example_leads_3_2_1_per_rack(spark_sweep, read_table) -> None:
    assert _replica_lists(spark_sweep, read_table, UNBALANCED, "fluvio") == FLUVIO_DOC_UNBALANCED
    row = _metrics_row(spark_sweep, read_table, UNBALANCED, "fluvio")
    racks = {r["rack"]: r["leaders"] for r in json.loads(row["details"])["racks"]}
    assert racks == {"rack-c": 3, "rack-b": 2, "rack-a": 1}
    # Every broker leads one partition and holds three replicas.
    assert (row["leaders_min"], row["leaders_max"], row["leaders_skew"]) == (1, 1, 1.0)
    assert (row["replicas_min"], row["replicas_max"]) == (3, 3)


def test_rack_violations_of_the_unbalanced_example(spark_sweep, read_table) -> None:
    row = _metrics_row(spark_sweep, read_table, UNBALANCED, "fluvio")
    # [4, 1, 5] (partition 3), [1, 5, 3] and [5, 3, 2] each put two replicas in rack-c.
    assert row["rack_violations"] == 3
    violations = json.loads(row["details"])["rack_violations"]
    assert violations == [{"topic": "topic-0", "partition": p} for p in (3, 4, 5)]
    assert _replica_lists(spark_sweep, read_table, UNBALANCED, "fluvio")[3] == [4, 1, 5]


def test_rack_violations_of_racks_4_1_5(spark_sweep, read_table) -> None:
    assert _replica_lists(spark_sweep, read_table, RACKS_4_1_5, "fluvio") == RACKS_4_1_5_MAP
    row = _metrics_row(spark_sweep, read_table, RACKS_4_1_5, "fluvio")
    # [6, 2, 7], [2, 7, 3] and [7, 3, 8] put two replicas in rack-c, rack-a and rack-c.
    assert row["rack_violations"] == 3
    assert json.loads(row["details"])["rack_violations"] == [
        {"topic": "topic-0", "partition": p} for p in (3, 4, 5)
    ]
    # Leaders 5, 1, 4, 6, 2, 7: three in rack-c, two in rack-a, one in rack-b; 0, 3, 8, 9 lead none.
    racks = {r["rack"]: r["leaders"] for r in json.loads(row["details"])["racks"]}
    assert racks == {"rack-a": 2, "rack-b": 1, "rack-c": 3}
    assert (row["leaders_min"], row["leaders_max"]) == (0, 1)
    assert (row["replicas_min"], row["replicas_max"]) == (0, 3)


def test_losing_the_largest_of_racks_4_1_5(spark_sweep, read_table) -> None:
    losses = _run(read_table(spark_sweep.out, "rack_losses"), RACKS_4_1_5, "fluvio").set_index("rack")
    # rack-c (5-9) led partitions 0, 3 and 5: their leadership moves to 1, 2 and 3, so brokers 1 and 2
    # lead two partitions each; every partition keeps a replica outside rack-c.
    assert losses.loc["rack-c", ["lost_brokers", "offline_partitions", "moved_leaders", "max_leaders"]].tolist() == [
        5, 0, 3, 2,
    ]  # fmt: skip
    # Losing rack-a moves partitions 1 and 4 to 4 and 7; losing rack-b moves partition 2 to 6.
    assert losses.loc["rack-a", ["moved_leaders", "max_leaders"]].tolist() == [2, 2]
    assert losses.loc["rack-b", ["moved_leaders", "max_leaders"]].tolist() == [1, 2]
    row = _metrics_row(spark_sweep, read_table, RACKS_4_1_5, "fluvio")
    assert (row["rack_failure_max_leaders"], row["rack_failure_leader_growth"]) == (2, 2.0)


def test_fluvio_on_balanced_4x3_racks_is_perfectly_even(spark_sweep, read_table) -> None:
    assert _replica_lists(spark_sweep, read_table, BALANCED, "fluvio") == FLUVIO_DOC_BALANCED
    row = _metrics_row(spark_sweep, read_table, BALANCED, "fluvio")
    racks = {r["rack"]: r["leaders"] for r in json.loads(row["details"])["racks"]}
    assert racks == {"rack-a": 3, "rack-b": 3, "rack-c": 3, "rack-d": 3}
    assert (row["leaders_skew"], row["replicas_skew"], row["rack_leaders_skew"]) == (1.0, 1.0, 1.0)
    assert (row["leaders_within_10pct"], row["replicas_within_10pct"]) == (1.0, 1.0)
    assert row["rack_violations"] == 0


def test_losing_the_largest_rack_overloads_a_small_rack(spark_sweep, read_table) -> None:
    losses = _run(read_table(spark_sweep.out, "rack_losses"), UNBALANCED, "fluvio").set_index("rack")
    # rack-c (3, 4, 5) led partitions 0, 3 and 5: their leadership moves to 2, 1 and 2, so broker 2
    # ends up with 3 leaders where every broker had 1.
    assert losses.loc["rack-c", ["lost_brokers", "offline_partitions", "moved_leaders", "max_leaders"]].tolist() == [
        3, 0, 3, 3,
    ]  # fmt: skip
    assert losses.loc["rack-a", "max_leaders"] == 2 and losses.loc["rack-b", "max_leaders"] == 2
    assert set(losses["scope"]) == {"rack"}
    row = _metrics_row(spark_sweep, read_table, UNBALANCED, "fluvio")
    assert (row["rack_failure_max_leaders"], row["rack_failure_leader_growth"]) == (3, 3.0)


def test_losing_any_rack_of_the_balanced_example_doubles_the_busiest_broker(spark_sweep, read_table) -> None:
    losses = _run(read_table(spark_sweep.out, "rack_losses"), BALANCED, "fluvio")
    assert losses[["rack", "moved_leaders", "max_leaders", "offline_partitions"]].values.tolist() == [
        [rack, 3, 2, 0] for rack in ("rack-a", "rack-b", "rack-c", "rack-d")
    ]


def test_data_centre_losses_are_their_own_scope(spark_sweep, read_table) -> None:
    losses = _run(
        read_table(spark_sweep.out, "rack_losses"), "multi-dc-3x2x2/fluvio-example/s0", "multi-level"
    )
    dcs = losses[losses["scope"] == "dc"]
    assert sorted(dcs["rack"]) == ["/dc-1", "/dc-2", "/dc-3"]
    assert (dcs["lost_brokers"] == 4).all()
    # Three replicas spread over three data centres: losing one never takes a partition offline.
    assert (dcs["offline_partitions"] == 0).all()
    assert sorted(losses.loc[losses["scope"] == "rack", "rack"])[:2] == ["/dc-1/rack-1", "/dc-1/rack-2"]
    impact = spark_sweep.aggregates["failure_impact"].to_pandas()
    assert {"dc", "rack"} <= set(impact.loc[impact["placer"] == "multi-level", "scope"])


def test_placement_failures_are_aggregated_by_error_code(spark_sweep, read_table, thirdparty_placer) -> None:
    errors = (
        spark_sweep.aggregates["failures_by_error"].to_pandas().set_index(["placer", "error_code", "error"])
    )
    # 4 replicas on the 3-broker cluster, once per seed.
    for placer in ("fluvio", "striped", thirdparty_placer):
        assert errors.loc[(placer, 38, "INVALID_REPLICATION_FACTOR"), ["requests", "runs"]].tolist() == [2, 2]
    # Rack ids must be paths for the multi-level placer.
    assert errors.loc[("multi-level", 1001, "REPLICA_PLACEMENT_FAILED"), "requests"] > 0
    failures = read_table(spark_sweep.out, "failures")
    refused = failures[(failures["placer"] == "fluvio")]
    assert set(refused["scenario"]) == {"no-rack-3/balanced-example/s0", "no-rack-3/balanced-example/s1"}
    assert refused["message"].str.contains("need 1 more SPU").all()
    assert (refused["error_code"] == 38).all()


def test_per_placer_aggregates_agree_with_the_metrics_table(spark_sweep, read_table, small_grid) -> None:
    metrics = read_table(spark_sweep.out, "metrics")
    by_placer = spark_sweep.aggregates["by_placer"].to_pandas().set_index("placer")
    assert list(by_placer.index) == sorted(small_grid.placers)
    assert (by_placer["runs"] == small_grid.scenario_count).all()
    for placer, rows in metrics.groupby("placer"):
        placed = rows[rows["partitions"] > 0]
        assert by_placer.loc[placer, "runs_placed"] == len(placed)
        assert by_placer.loc[placer, "failed_requests"] == rows["failures"].sum()
        assert by_placer.loc[placer, "rack_violations_total"] == rows["rack_violations"].sum()
        assert by_placer.loc[placer, "leaders_skew_worst"] == placed["leaders_skew"].max()
        assert by_placer.loc[placer, "leaders_skew_mean"] == pytest.approx(placed["leaders_skew"].mean())


def test_a_third_party_placer_shipped_as_a_file_runs_on_the_executors(
    spark_sweep,
    read_table,
    thirdparty_placer,
) -> None:
    assert _replica_lists(spark_sweep, read_table, UNBALANCED, thirdparty_placer) == [
        [5, 4, 3], [4, 3, 2], [3, 2, 1], [2, 1, 0], [1, 0, 5], [0, 5, 4],
    ]  # fmt: skip
    row = _metrics_row(spark_sweep, read_table, UNBALANCED, thirdparty_placer)
    assert row["failures"] == 0 and row["partitions"] == 6


def _comparable(frame: pd.DataFrame) -> pd.DataFrame:
    drop = [c for c in (*TIMING_COLUMNS, *TIMING_MEASURES) if c in frame.columns]
    return frame.drop(columns=drop)


@pytest.mark.parametrize("table", ["metrics", "placements", "failures", "rack_losses"])
def test_the_single_process_path_gives_identical_tables(spark_sweep, local_sweep, read_table, table) -> None:
    spark_table = _comparable(read_table(spark_sweep.out, table))
    local_table = _comparable(read_table(local_sweep.out, table))
    assert len(spark_table) > 0
    pd.testing.assert_frame_equal(spark_table, local_table, check_exact=True)


@pytest.mark.parametrize("name", [agg.name for agg in AGGREGATES])
def test_the_single_process_path_gives_the_same_aggregates(spark_sweep, local_sweep, name) -> None:
    spark_agg = _comparable(spark_sweep.aggregates[name].to_pandas())
    local_agg = _comparable(local_sweep.aggregates[name].to_pandas())
    # Means are exact sums over the count on both paths (math.fsum): the same bits.
    pd.testing.assert_frame_equal(spark_agg, local_agg, check_exact=True)


def test_both_paths_report_progress_up_to_every_run(
    spark_sweep, local_sweep, spark_progress, local_progress, small_grid
) -> None:
    total = small_grid.run_count
    for reports in (spark_progress, local_progress):
        assert reports[-1] == (total, total)
        done = [d for d, _ in reports]
        assert done == sorted(done) and all(t == total for _, t in reports)


def test_scenarios_are_expanded_on_the_executors(spark, small_grid, monkeypatch) -> None:
    from placement_sim.pipeline import scenarios, spark_tasks
    from placement_sim.pipeline.spark_job import scenario_frame

    expected = sorted(
        (s.shape.name, s.workload.name, s.seed, placer)
        for s in scenarios.iter_scenarios(small_grid)
        for placer in small_grid.placers
    )

    def on_the_driver(*args: object) -> None:
        raise AssertionError("cluster shapes expanded on the driver")

    # The executors' Python workers import these modules afresh: only the driver sees the patch.
    monkeypatch.setattr(spark_tasks, "expand_family", on_the_driver)
    monkeypatch.setattr(scenarios, "expand_family", on_the_driver)
    frame = scenario_frame(spark, small_grid)
    rows = frame.select("shape", "workload", "seed", "placer").collect()
    assert sorted((r["shape"], r["workload"], r["seed"], r["placer"]) for r in rows) == expected
