"""One (scenario, placer) run, in this process: requests in order, the server's error table, metrics."""

from __future__ import annotations

import json

import pytest

from controller.placement.loader import PlacerLoadError, resolve_placer_class
from placement_sim.pipeline.grid import ClusterFamily, Distribution, WorkloadSpec
from placement_sim.pipeline.runner import run_scenario
from placement_sim.pipeline.scenarios import ScenarioSpec, expand_family, operations_for, scenario_id
from tests.support.placers import PLACERS_FILE


def scenario(family: ClusterFamily, workload: WorkloadSpec, seed: int = 0) -> ScenarioSpec:
    (shape,) = expand_family(family)
    return ScenarioSpec(scenario_id(shape.name, workload.name, seed), shape, workload, seed)


UNBALANCED = ClusterFamily("unbalanced", rack_sizes=((1, 2, 3),))
ONE_TOPIC_6x3 = WorkloadSpec("fluvio-example", 1, Distribution((6,)), Distribution((3,)))
MIXED = WorkloadSpec("mixed", 4, Distribution((1, 2)), Distribution((2,)), 3, Distribution((1,)))


def test_fluvio_on_the_documented_unbalanced_racks_places_the_documented_map() -> None:
    run = run_scenario(scenario(UNBALANCED, ONE_TOPIC_6x3), "fluvio")
    assert [(p.topic, p.partition, list(p.replicas)) for p in run.placements] == [
        ("topic-0", 0, [3, 2, 0]),
        ("topic-0", 1, [2, 0, 4]),
        ("topic-0", 2, [0, 4, 1]),
        ("topic-0", 3, [4, 1, 5]),
        ("topic-0", 4, [1, 5, 3]),
        ("topic-0", 5, [5, 3, 2]),
    ]
    details = json.loads(run.details)
    leaders = {r["rack"]: r["leaders"] for r in details["racks"]}
    assert leaders == {"rack-c": 3, "rack-b": 2, "rack-a": 1}
    # [4, 1, 5], [1, 5, 3] and [5, 3, 2] put two replicas in rack-c.
    assert run.metrics["rack_violations"] == 3
    assert {"topic": "topic-0", "partition": 3} in details["rack_violations"]
    assert run.failures == () and run.operations == 1 and run.skipped == 0


def test_losing_the_largest_rack_moves_three_leaders_onto_broker_2() -> None:
    run = run_scenario(scenario(UNBALANCED, ONE_TOPIC_6x3), "fluvio")
    losses = {loss.rack: loss for loss in run.rack_losses}
    rack_c = losses["rack-c"]
    assert (rack_c.scope, rack_c.lost_brokers, rack_c.offline_partitions) == ("rack", 3, 0)
    assert (rack_c.moved_leaders, rack_c.max_leaders) == (3, 3)
    assert run.metrics["rack_failure_max_leaders"] == 3
    assert run.metrics["rack_failure_leader_growth"] == 3.0


def test_a_replication_factor_above_the_brokers_is_recorded_with_its_error_code() -> None:
    workload = WorkloadSpec("too-many", 2, Distribution((2,)), Distribution((7,)), 1, Distribution((1,)))
    run = run_scenario(scenario(UNBALANCED, workload), "striped")
    assert [(f.error_code, f.error) for f in run.failures] == [(38, "INVALID_REPLICATION_FACTOR")] * 2
    assert "cannot be reached because only 6 broker(s) are registered" in run.failures[0].message
    assert run.skipped == 1  # the addition's topic was never created
    assert run.placements == ()
    assert run.metrics["partitions"] == 0


def test_multi_level_refuses_flat_rack_names_as_a_placement_failure() -> None:
    run = run_scenario(scenario(UNBALANCED, ONE_TOPIC_6x3), "multi-level")
    assert [(f.error_code, f.error) for f in run.failures] == [(1001, "REPLICA_PLACEMENT_FAILED")]
    # ... because it does not apply to the cluster: the run says so, with the placer's reason.
    assert run.not_applicable_requests == 1
    assert run.not_applicable.startswith("Multi-level rack awareness needs every rack id to be a path")
    assert run_scenario(scenario(UNBALANCED, ONE_TOPIC_6x3), "fluvio").not_applicable == ""


def test_each_run_gets_a_fresh_placer_that_sees_its_calls_in_order_and_the_cluster_so_far() -> None:
    placer = f"{PLACERS_FILE}:RecordingPlacer"
    calls = resolve_placer_class(placer).calls  # type: ignore[attr-defined]
    calls.clear()
    spec = scenario(UNBALANCED, MIXED)
    run = run_scenario(spec, placer)
    run_scenario(spec, placer)
    assert len({c[0] for c in calls}) == 2  # two runs, two placer instances (serial numbers)
    ops = operations_for(MIXED, 0)
    first_run = calls[: len(ops)]
    expected = []
    for i, op in enumerate(ops):
        start = sum(o.num_partitions for o in ops[:i] if o.topic == op.topic)
        placed_before = sum(o.num_partitions for o in ops[:i])
        expected.append((op.topic, start, op.num_partitions, placed_before))
    assert [c[1:] for c in first_run] == expected  # in order; the ClusterView holds every earlier partition
    assert any(op.kind == "add" for op in ops)
    assert len(run.placements) == sum(op.num_partitions for op in ops)


def test_a_deferring_placer_gets_the_default_placers_answer() -> None:
    spec = scenario(UNBALANCED, MIXED, seed=3)
    deferred = run_scenario(spec, f"{PLACERS_FILE}:Deferring")
    striped = run_scenario(spec, "striped")
    assert deferred.placements == striped.placements
    assert deferred.failures == ()


def test_an_async_placer_is_awaited() -> None:
    run = run_scenario(scenario(UNBALANCED, ONE_TOPIC_6x3), f"{PLACERS_FILE}:AsyncPlacer")
    assert [list(p.replicas) for p in run.placements][:2] == [[0, 1, 2], [1, 2, 3]]


def test_a_malformed_result_is_a_placement_failure_naming_the_problem() -> None:
    run = run_scenario(scenario(UNBALANCED, ONE_TOPIC_6x3), f"{PLACERS_FILE}:UnknownBroker")
    (failure,) = run.failures
    assert failure.error == "REPLICA_PLACEMENT_FAILED"
    assert "unknown broker(s) [4242]" in failure.message


def test_an_unknown_placer_fails_the_run_with_the_loaders_message() -> None:
    with pytest.raises(PlacerLoadError, match="no_such_module"):
        run_scenario(scenario(UNBALANCED, ONE_TOPIC_6x3), "no_such_module.Placer")


def test_the_seed_reaches_seeded_placers() -> None:
    family = ClusterFamily("flat", racks=(3,), brokers_per_rack=(2,))
    workload = WorkloadSpec("w", 3, Distribution((4,)), Distribution((2,)))
    a = run_scenario(scenario(family, workload, seed=1), "striped")
    b = run_scenario(scenario(family, workload, seed=1), "striped")
    c = run_scenario(scenario(family, workload, seed=2), "striped")
    assert a.placements == b.placements
    assert a.placements != c.placements
