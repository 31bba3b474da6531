"""Scenario expansion: shapes of a family, their brokers, and the workload's requests."""

from __future__ import annotations

from placement_sim.pipeline.grid import (
    ClusterFamily,
    Distribution,
    WorkloadSpec,
    workload_document,
    workload_from_document,
)
from placement_sim.pipeline.scenarios import (
    brokers_for,
    expand_family,
    iter_scenarios,
    operations_for,
    rack_letters,
)


def test_balanced_racks_are_lettered_and_brokers_numbered_rack_by_rack() -> None:
    (shape,) = expand_family(ClusterFamily("balanced", racks=(4,), brokers_per_rack=(3,)))
    assert shape.name == "balanced-4x3"
    brokers = brokers_for(shape, 0)
    assert [(b.id, b.rack) for b in brokers[:4]] == [
        (0, "rack-a"),
        (1, "rack-a"),
        (2, "rack-a"),
        (3, "rack-b"),
    ]
    assert brokers[-1].id == 11 and brokers[-1].rack == "rack-d"
    assert not any(b.fenced for b in brokers)


def test_explicit_rack_sizes_give_fluvios_unbalanced_example() -> None:
    (shape,) = expand_family(ClusterFamily("unbalanced", rack_sizes=((1, 2, 3),)))
    assert shape.name == "unbalanced-1-2-3"
    racks = {b.id: b.rack for b in brokers_for(shape, 0)}
    assert racks == {0: "rack-a", 1: "rack-b", 2: "rack-b", 3: "rack-c", 4: "rack-c", 5: "rack-c"}


def test_levels_give_multi_level_rack_paths() -> None:
    (shape,) = expand_family(
        ClusterFamily("dc", levels=((3, 2),), brokers_per_rack=(2,), level_names=("dc", "rack"))
    )
    assert shape.name == "dc-3x2x2"
    racks = [b.rack for b in brokers_for(shape, 0)]
    assert racks[:4] == ["/dc-1/rack-1", "/dc-1/rack-1", "/dc-1/rack-2", "/dc-1/rack-2"]
    assert racks[-1] == "/dc-3/rack-2"
    assert len(racks) == 12


def test_brokers_without_racks_and_the_fenced_share() -> None:
    shapes = expand_family(ClusterFamily("plain", brokers=(10,), fenced_share=(0.0, 0.2)))
    assert [s.name for s in shapes] == ["plain-10", "plain-10-fenced0.2"]
    fenced_by_seed = [sorted(b.id for b in brokers_for(shapes[1], seed) if b.fenced) for seed in range(4)]
    assert all(len(f) == 2 for f in fenced_by_seed)
    assert len({tuple(f) for f in fenced_by_seed}) > 1  # the seed picks which
    assert fenced_by_seed[0] == sorted(b.id for b in brokers_for(shapes[1], 0) if b.fenced)  # and repeats
    assert all(b.rack is None for b in brokers_for(shapes[0], 0))


def test_at_least_one_broker_stays_unfenced() -> None:
    (shape,) = expand_family(ClusterFamily("tiny", brokers=(1,), fenced_share=(0.9,)))
    assert [b.fenced for b in brokers_for(shape, 0)] == [False]


def test_workload_requests_are_deterministic_and_additions_follow_their_topic() -> None:
    workload = WorkloadSpec("w", 5, Distribution((1, 2, 3)), Distribution((2, 3)), 4, Distribution((1, 2)))
    ops = operations_for(workload, 7)
    assert ops == operations_for(workload_from_document(workload_document(workload)), 7)
    assert ops != operations_for(workload, 8)
    assert [op.kind for op in ops].count("create") == 5 and len(ops) == 9
    assert ops[0].kind == "create"
    created: dict[str, int] = {}
    for op in ops:
        if op.kind == "create":
            created[op.topic] = op.replication_factor
        else:
            assert created[op.topic] == op.replication_factor
    assert list(created) == [f"topic-{i}" for i in range(5)]


def test_iter_scenarios_is_shapes_x_workloads_x_seeds(small_grid) -> None:
    scenarios = list(iter_scenarios(small_grid))
    assert len(scenarios) == small_grid.scenario_count == 5 * 3 * 2
    assert len({s.scenario for s in scenarios}) == len(scenarios)
    assert scenarios[0].scenario == "unbalanced-1-2-3/fluvio-example/s0"


def test_rack_letters_continue_past_z() -> None:
    assert [rack_letters(i) for i in (0, 1, 25, 26, 27, 51, 52)] == ["a", "b", "z", "aa", "ab", "az", "ba"]
