"""Failures in the sweep: simulated by the controller's own dynamics and election code on a virtual
clock, hand-worked against small clusters, identical on Spark and in a single process."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from placement_sim.cli.main import main
from placement_sim.pipeline.failover import FAILURE_KINDS, FailoverPlan, Timeline
from placement_sim.pipeline.failover_report import UNIT, best_per_failure, failover_sentences, heatmap_figure
from placement_sim.pipeline.grid import GridError, grid_from_mapping, parse_grid
from placement_sim.pipeline.records import TIMING_COLUMNS
from placement_sim.pipeline.runner import run_scenario
from placement_sim.pipeline.scenarios import iter_scenarios
from placement_sim.pipeline.sweep import SweepResult, run_sweep

HERE = Path(__file__).parent
POLICY_FILE = HERE.parent / "support" / "thirdparty_policy.py"
POLICY = "thirdparty_policy.LastEligiblePolicy"

#: Brokers 0, 1 in rack-a, 2, 3 in rack-b, 4, 5 in rack-c; one topic of 6 partitions, RF 2 or 1.
THREE_RACKS = """
seeds = [0]
placers = ["fluvio"]
failures = ["rack"]
election_policies = ["kafka"]

[[clusters]]
name = "three-racks"
racks = [3]
brokers_per_rack = [2]

[[workloads]]
name = "rf2"
topics = 1
partitions = 6
replication_factor = 2

[[workloads]]
name = "rf1"
topics = 1
partitions = 6
replication_factor = 1
"""


def _sweep(text: str, out: Path, **kwargs: object) -> SweepResult:
    return run_sweep(parse_grid(text), str(out), use_spark=False, **kwargs)  # type: ignore[arg-type]


def _rows(out: str | Path, table: str) -> dict[tuple[str, str, str, str], dict[str, object]]:
    frame = pq.read_table(Path(out) / table).to_pandas()
    return {
        (r["workload"], r["placer"], r["failure"], r["policy"]): r for r in frame.to_dict(orient="records")
    }


@pytest.fixture(scope="module")
def three_racks(tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    return _sweep(THREE_RACKS, tmp_path_factory.mktemp("three-racks"))


def test_fluvio_places_the_three_rack_topics_one_replica_per_rack(three_racks: SweepResult) -> None:
    placements = pq.read_table(Path(three_racks.out) / "placements").to_pandas()
    by_scenario = {
        s: [list(r) for r in group.sort_values("partition")["replicas"]]
        for s, group in placements.groupby("scenario")
    }
    # The input of the hand-worked failures below.
    assert by_scenario["three-racks-3x2/rf2/s0"] == [[0, 3], [3, 4], [4, 1], [1, 2], [2, 5], [5, 0]]
    assert by_scenario["three-racks-3x2/rf1/s0"] == [[0], [3], [4], [1], [2], [5]]


def test_losing_rack_b_under_rf2_moves_two_leaders_and_loses_no_partition(three_racks: SweepResult) -> None:
    row = _rows(three_racks.out, "failovers")[("rf2", "fluvio", "rack", "kafka")]
    # Warm-up 4 s, rack-b (brokers 2, 3) crashes at t0 = 4000 ms. Their last heartbeat was at 4000 ms
    # (every 2000 ms from registration at 0), so KRaft fences them at 4000 + 9000 (session timeout).
    assert row["target"] == "rack-b"
    assert row["lost_brokers"] == 2
    # They led partition 1 [3, 4] and partition 4 [2, 5]: both unavailable for those 9 s, then led by
    # the other replica (4 and 5); no partition has both replicas in rack-b.
    assert row["offline_worst"] == 2
    assert row["leaderless_partition_ms"] == 2 * 9000
    assert row["offline_after_failure"] == 0
    # Leaders after the failure: 0 -> p0, 1 -> p3, 4 -> p1 p2, 5 -> p4 p5: at most 2 (the static
    # formula says the same).
    assert row["max_leaders_after_failure"] == 2
    assert (row["static_offline"], row["static_max_leaders"], row["static_disagrees"]) == (0, 2, False)
    # Partitions 0 [0, 3], 1 [3, 4], 3 [1, 2], 4 [2, 5] lose a replica from the ISR at the fencing (t0 +
    # 9 s); the brokers start again at t0 + 12 s, register, are unfenced at their first heartbeat 2 s later
    # and catch up at the replication tick of that millisecond (ticks every 1000 ms): 4 x 5 s.
    assert row["under_replicated_partition_ms"] == 4 * 5000
    # Two leaders move away, and the preferred-leader election after recovery moves them back: 4 moves,
    # each one leader epoch.
    assert (row["leader_moves"], row["leader_epoch_bumps"]) == (4, 4)
    assert row["max_leaders_after_recovery"] == 1
    assert row["settle_ms"] == 9000
    assert (row["unsafe_elections"], row["records_at_risk"], row["offline_end"]) == (0, 0, 0)


def test_losing_rack_c_under_rf1_takes_its_two_partitions_offline_until_it_returns(
    three_racks: SweepResult,
) -> None:
    row = _rows(three_racks.out, "failovers")[("rf1", "fluvio", "rack", "kafka")]
    assert row["target"] == "rack-c"
    # Partitions 2 [4] and 5 [5] have no other replica: unavailable from the crash at t0 until brokers
    # 4 and 5 are unfenced again at t0 + 12 s + 2 s (first heartbeat after registering again).
    assert row["offline_after_failure"] == 2
    assert row["offline_worst"] == 2
    assert row["leaderless_partition_ms"] == 2 * 14000
    # Eligible leader replicas on (the default, as Kafka 4.1+): at the fencing (t0 + 9 s) the last ISR
    # member leaves the ISR for the ELR, so each is under-replicated (an empty ISR) until it is elected
    # again at t0 + 14 s; with them off Kafka 3.x keeps it listed and this is 0.
    assert row["under_replicated_partition_ms"] == 2 * 5000
    # Each goes leaderless at the fencing and is led again at the unfencing: 2 leader moves, 4 epochs.
    assert (row["leader_moves"], row["leader_epoch_bumps"]) == (2, 4)
    assert row["max_leaders_after_failure"] == 1
    assert (row["static_offline"], row["static_max_leaders"], row["static_disagrees"]) == (1 * 2, 1, False)
    assert row["offline_end"] == 0


DATA_CENTRES = """
seeds = [0]
placers = ["multi-level", "striped"]
failures = ["dc"]
election_policies = ["kafka"]

[[clusters]]
name = "three-dcs"
levels = [[3, 2]]
brokers_per_rack = [1]

[[workloads]]
name = "rf2"
topics = 1
partitions = 6
replication_factor = 2
"""


def test_multi_level_keeps_every_partition_led_after_a_data_centre_loss_where_striped_does_not(
    tmp_path: Path,
) -> None:
    result = _sweep(DATA_CENTRES, tmp_path)
    rows = _rows(result.out, "failovers")
    multi = rows[("rf2", "multi-level", "dc", "kafka")]
    striped = rows[("rf2", "striped", "dc", "kafka")]
    # /dc-2 holds brokers 2 (/dc-2/rack-1) and 3 (/dc-2/rack-2): the same brokers for both placers.
    assert multi["target"] == striped["target"] == "/dc-2"
    # multi-level puts the two replicas in two data centres; striped stripes over the six racks, so
    # partition 3 lands on [2, 3], both in /dc-2.
    assert multi["offline_after_failure"] == 0
    assert striped["offline_after_failure"] == 1
    assert striped["static_offline"] == 1


def test_fluvios_lag_rule_leaves_a_partition_offline_where_the_static_formula_moves_it(
    tmp_path: Path,
) -> None:
    text = THREE_RACKS.replace('failures = ["rack"]', 'failures = ["slow-follower"]').replace(
        'election_policies = ["kafka"]', 'election_policies = ["kafka", "fluvio"]'
    )
    rows = _rows(_sweep(text, tmp_path).out, "failovers")
    kafka = rows[("rf2", "fluvio", "slow-follower", "kafka")]
    fluvio = rows[("rf2", "fluvio", "slow-follower", "fluvio")]
    # Broker 2 crashes; broker 5 copies 3 s behind (300 records at 100 records/s), still in the ISR.
    # Partition 4 [2, 5]: Kafka elects 5 (in the ISR) after the session timeout; Fluvio's SC notices the
    # crash at once but 5 lags the old leader by 300 >= 4 records, so no candidate: offline until broker
    # 2 comes back 12 s later.
    assert kafka["target"] == fluvio["target"] == "broker 2, slow broker 5"
    assert (kafka["leaderless_partition_ms"], kafka["offline_after_failure"]) == (9000, 0)
    assert (fluvio["leaderless_partition_ms"], fluvio["offline_after_failure"]) == (12000, 1)
    assert (fluvio["settle_ms"], kafka["settle_ms"]) == (0, 9000)
    assert fluvio["static_offline"] == 0
    assert fluvio["static_disagrees"] is True
    assert kafka["static_disagrees"] is False


def test_an_unclean_election_behind_the_high_watermark_counts_the_records_at_risk() -> None:
    grid = parse_grid(
        THREE_RACKS.replace(
            "[[clusters]]",
            '[placer_configs]\n"unclean.leader.election.enable" = "true"\n'
            '"replica.lag.time.max.ms" = "2000"\n\n[[clusters]]',
            1,
        )
    )
    scenario = next(iter_scenarios(grid))  # rf2: partition 4 is [2, 5]
    plan = FailoverPlan(("slow-follower",), ("kafka", "fluvio"), 100.0)
    kafka, fluvio = run_scenario(scenario, "fluvio", grid.placer_configs, plan).failovers
    assert kafka.target == "broker 2, slow broker 5"
    # Broker 5 copies 3 s behind: 300 records at 100 records/s. With replica.lag.time.max.ms = 2000 it
    # leaves the ISR, and the high watermark follows the leader alone. Broker 2 crashes: 5 stops where it
    # was, 300 records below the high watermark. At the fencing Kafka's controller, allowed to, elects it
    # uncleanly: one election behind the high watermark, 300 acknowledged records at risk.
    assert (kafka.unsafe_elections, kafka.records_at_risk) == (1, 300)
    assert (kafka.offline_after_failure, kafka.leaderless_partition_ms) == (0, 9000)
    # Fluvio's SC elects only from the live replica set: no candidate, offline until broker 2 is back.
    assert (fluvio.unsafe_elections, fluvio.records_at_risk) == (0, 0)
    assert (fluvio.offline_after_failure, fluvio.leaderless_partition_ms) == (1, 12000)


# --- grid and command line ---------------------------------------------------------------------------


def test_the_grid_reads_failures_policies_and_load_and_writes_them_back() -> None:
    grid = parse_grid(
        THREE_RACKS.replace('failures = ["rack"]', 'failures = ["none", "broker", "dc"]\nproduce_load = 25')
    )
    assert grid.failures == ("none", "broker", "dc")
    assert grid.election_policies == ("kafka",)
    assert grid.failover_plan == FailoverPlan(("none", "broker", "dc"), ("kafka",), 25.0)
    assert grid_from_mapping(grid.to_json()) == grid
    assert grid.with_failures(["rolling"]).with_policies(["fluvio", POLICY]).failover_plan == FailoverPlan(
        ("rolling",), ("fluvio", POLICY), 25.0
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"failures": ["meteor"]}, "failures: unknown failure kind 'meteor' (one of none, broker, rack"),
        ({"failures": ["rack", "rack"]}, "failures: failure kind 'rack' appears twice"),
        ({"election_policies": []}, "election_policies: must be a non-empty list of election policy names"),
        ({"produce_load": -1}, "produce_load: must be a non-negative number of records per second, got -1"),
    ],
)
def test_bad_failure_settings_are_named(change: dict[str, object], message: str) -> None:
    document = {**parse_grid(THREE_RACKS).to_json(), **change}
    with pytest.raises(GridError) as info:
        grid_from_mapping(document)
    assert message in str(info.value)


def test_a_grid_without_failures_simulates_none(tmp_path: Path) -> None:
    grid = parse_grid(THREE_RACKS.replace('failures = ["rack"]\n', ""))
    assert grid.failures == ()
    run_sweep(grid, str(tmp_path), use_spark=False)
    assert pq.read_table(tmp_path / "failovers").num_rows == 0


def test_the_sweep_command_takes_failures_and_policies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(THREE_RACKS)
    out = tmp_path / "out"
    argv = ["sweep", "--grid", str(grid), "--no-spark", "--quiet", "--out", str(out)]
    assert main([*argv, "--failures", "broker,rolling", "--policies", "kafka,fluvio"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if " election policy, " in line]
    assert [line.split(":")[0] for line in printed] == ["A broker crash", "A rolling restart"]
    assert all(line.endswith("partition-seconds without a leader on average") for line in printed)
    frame = pq.read_table(out / "failovers").to_pandas()
    assert sorted(set(zip(frame["failure"], frame["policy"], strict=True))) == [
        ("broker", "fluvio"),
        ("broker", "kafka"),
        ("rolling", "fluvio"),
        ("rolling", "kafka"),
    ]
    assert len(frame) == 2 * 2 * 2  # two scenarios x two kinds x two policies
    assert main([*argv, "--failures", "flood"]) == 2
    assert "unknown failure kind 'flood'" in capsys.readouterr().err
    # A policy that cannot be loaded stops the sweep before any work, naming it.
    assert main([*argv, "--failures", "broker", "--policies", "kafka,nosuch.Policy"]) == 2
    assert "election policy 'nosuch.Policy': cannot import module 'nosuch'" in capsys.readouterr().err


def test_every_kind_is_repeatable_and_a_kind_that_does_not_apply_gives_no_row() -> None:
    grid = parse_grid(THREE_RACKS)
    scenario = next(iter_scenarios(grid))
    plan = FailoverPlan(FAILURE_KINDS, ("kafka", "fluvio"), 50.0, Timeline(failure_ms=10_000, tick_ms=500))
    first = run_scenario(scenario, "fluvio", {}, plan).failovers
    again = run_scenario(scenario, "fluvio", {}, plan).failovers
    assert first == again
    # No multi-level racks: no data centre to lose.
    kinds = [f.failure for f in first]
    assert kinds == [k for k in FAILURE_KINDS if k != "dc" for _ in range(2)]
    rolling = [f for f in first if f.failure == "rolling"]
    assert [f.target for f in rolling] == ["6 brokers in turn"] * 2
    # A controlled shutdown moves leaders before the broker stops: nothing is ever unavailable.
    assert [f.leaderless_partition_ms for f in rolling] == [0, 0]
    assert all(dataclasses.asdict(f)["error"] == "" for f in first)


# --- Spark and the single process ------------------------------------------------------------------

FAILURE_GRID = f"""
seeds = 2
placers = ["fluvio", "striped", "multi-level"]
failures = {list(FAILURE_KINDS)!r}
election_policies = ["kafka", "fluvio", "{POLICY}"]
produce_load = 40

[[clusters]]
name = "racks"
rack_sizes = [[1, 2, 3]]

[[clusters]]
name = "multi-dc"
levels = [[3, 2]]
brokers_per_rack = [1]

[[workloads]]
name = "w"
topics = 2
partitions = [2, 4]
replication_factor = [2, 3]
"""


@pytest.fixture(scope="module")
def failure_sweeps(
    spark: object, tmp_path_factory: pytest.TempPathFactory
) -> tuple[SweepResult, SweepResult]:
    grid = parse_grid(FAILURE_GRID.replace("'", '"'))
    on_spark = run_sweep(
        grid,
        str(tmp_path_factory.mktemp("failures-spark")),
        spark=spark,  # type: ignore[arg-type]
        py_files=[str(POLICY_FILE)],
    )
    local = run_sweep(
        grid, str(tmp_path_factory.mktemp("failures-local")), use_spark=False, py_files=[str(POLICY_FILE)]
    )
    return on_spark, local


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.drop(columns=[c for c in TIMING_COLUMNS if c in frame.columns])
    keys = [c for c in ("scenario", "placer", "failure", "policy") if c in frame.columns]
    return frame.sort_values(keys).reset_index(drop=True)


def test_spark_and_the_single_process_write_the_same_failovers(failure_sweeps) -> None:
    on_spark, local = failure_sweeps
    spark_table = _sorted(pq.read_table(Path(on_spark.out) / "failovers").to_pandas())
    local_table = _sorted(pq.read_table(Path(local.out) / "failovers").to_pandas())
    # Every kind and every policy (the third-party one shipped as a file) ran on the executors.
    assert set(spark_table["failure"]) == set(FAILURE_KINDS)
    assert set(spark_table["policy"]) == {"kafka", "fluvio", POLICY}
    pd.testing.assert_frame_equal(spark_table, local_table, check_exact=True)


def test_the_failover_aggregates_are_identical_bit_for_bit(failure_sweeps) -> None:
    on_spark, local = failure_sweeps
    spark_agg = on_spark.aggregates["failover_impact"].to_pandas()
    local_agg = local.aggregates["failover_impact"].to_pandas()
    assert len(spark_agg) == len(FAILURE_KINDS) * 3 * 3
    pd.testing.assert_frame_equal(spark_agg, local_agg, check_exact=True)
    # Counts are exact: every failover row is counted once.
    rows = pq.read_table(Path(local.out) / "failovers").num_rows
    assert int(local_agg["runs"].sum()) == rows


# --- the report ----------------------------------------------------------------------------------------


def test_the_best_pair_has_the_fewest_leaderless_seconds_then_the_fewest_offline() -> None:
    impact = pd.DataFrame(
        {
            "failure": ["rack", "rack", "rack", "broker"],
            "policy": ["kafka", "fluvio", "kafka", "kafka"],
            "placer": ["striped", "striped", "fluvio", "fluvio"],
            "leaderless_partition_s_mean": [9.0, 4.5, 4.5, 2.0],
            "offline_worst_mean": [1.0, 2.0, 1.0, 1.0],
            "under_replicated_partition_s_mean": [0.0, 0.0, 0.0, 0.0],
        }
    )
    assert best_per_failure(impact) == {"broker": ("fluvio", "kafka", 2.0), "rack": ("fluvio", "kafka", 4.5)}
    assert failover_sentences(impact) == [
        "A broker crash: <b>fluvio</b> placement with the <b>kafka</b> election policy does best, 2.00 "
        "partition-seconds without a leader on average.",
        "Losing a rack: 2 pairs tie at 4.50 partition-seconds without a leader on average (<b>fluvio</b> with "
        "<b>kafka</b> and <b>striped</b> with <b>fluvio</b>); the fewest partitions offline at the worst moment "
        "(1.00) breaks the tie: <b>fluvio</b> placement with the <b>kafka</b> election policy (worst: striped "
        "with kafka, 9.00).",
    ]


def test_pairs_that_tie_on_every_measure_are_written_as_a_tie() -> None:
    """Under Fluvio's policy every placer scored 0.0: no "best" pair is named, the tie is."""
    impact = pd.DataFrame(
        {
            "failure": ["broker"] * 3 + ["rack"] * 2,
            "policy": ["fluvio", "fluvio", "kafka", "fluvio", "fluvio"],
            "placer": ["legacy", "striped", "striped", "legacy", "striped"],
            "leaderless_partition_s_mean": [0.0, 0.0, 3.0, 1.0, 1.0],
            "offline_worst_mean": [0.0, 0.0, 1.0, 2.0, 2.0],
            "under_replicated_partition_s_mean": [5.0, 5.0, 0.0, 1.0, 0.5],
        }
    )
    broker, rack = failover_sentences(impact)
    assert broker == (
        "A broker crash: 2 pairs tie on every measure, 0.00 partition-seconds without a leader on average: "
        "<b>legacy</b> with <b>fluvio</b> and <b>striped</b> with <b>fluvio</b> (worst: striped with kafka, 3.00)."
    )
    assert "does best" not in broker
    assert rack.endswith(
        "the fewest under-replicated partition-seconds (0.50) breaks the tie: <b>striped</b> placement with the "
        "<b>fluvio</b> election policy."
    )


def test_the_heat_map_has_a_colour_bar_with_its_unit_readable_figures_and_every_tied_best_outlined() -> None:
    impact = pd.DataFrame(
        {
            "failure": ["broker"] * 4,
            "policy": ["fluvio", "fluvio", "kafka", "kafka"],
            "placer": ["legacy", "striped", "legacy", "striped"],
            "leaderless_partition_s_mean": [0.0, 0.0, 3.0, 12.5],
            "offline_worst_mean": [0.0, 0.0, 1.0, 1.0],
            "under_replicated_partition_s_mean": [5.0, 5.0, 0.0, 0.0],
        }
    )
    figure = heatmap_figure(impact)
    panel, bar = figure.axes  # one failure kind, and its colour bar
    assert bar.get_ylabel() == UNIT and "partition-seconds" in UNIT
    assert bar.get_ylim() == (0.0, 12.5)  # the scale runs from 0 to the worst cell
    figures = {t.get_text(): t.get_fontsize() for t in panel.texts}
    assert set(figures) == {"0.00", "3.00", "12.5"} and min(figures.values()) >= 10
    outlined = sorted((r.get_x() + 0.46, r.get_y() + 0.46) for r in panel.patches)
    assert outlined == [(0.0, 0.0), (0.0, 1.0)]  # both 0.0 cells (fluvio: legacy and striped) tie


def test_the_report_shows_a_heat_map_and_a_sentence_per_failure_kind(tmp_path: Path) -> None:
    text = DATA_CENTRES.replace('failures = ["dc"]', 'failures = ["dc", "broker"]').replace(
        'election_policies = ["kafka"]', 'election_policies = ["kafka", "fluvio"]'
    )
    result = _sweep(text, tmp_path)
    page = Path(result.report).read_text()
    start = page.index("<h2>Simulated failures per failure kind")
    section = page[start : page.index("</table>", start)]
    sentences = re.findall(r"<li>(.*?)</li>", section)
    assert [s.split(":")[0] for s in sentences] == ["A broker crash", "Losing a data centre"]
    assert 'alt="partition-seconds without a leader per placer and election policy' in section
    # The same sentences as computed from the aggregate itself.
    impact = result.aggregates["failover_impact"].to_pandas()
    assert sentences == failover_sentences(impact, {})
    assert set(impact["failure"]) == {"dc", "broker"} and set(impact["policy"]) == {"kafka", "fluvio"}
