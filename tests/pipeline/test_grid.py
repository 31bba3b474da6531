"""The grid format: TOML and JSON, axes, distributions, defaults and error messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement_sim.pipeline.default_grid import DEFAULT_GRID_TOML, default_grid
from placement_sim.pipeline.grid import Distribution, GridError, grid_from_mapping, load_grid, parse_grid

MINIMAL = """
seeds = 3
[[clusters]]
name = "flat"
racks = [3, 4]
brokers_per_rack = [2, 3]
fenced_share = [0.0, 0.25]
[[workloads]]
name = "w"
topics = 2
partitions = [1, 2]
replication_factor = 2
"""


def test_toml_grid_spans_the_cross_product_of_its_axes() -> None:
    grid = parse_grid(MINIMAL)
    assert grid.seeds == (0, 1, 2)
    assert grid.shape_count == 2 * 2 * 2
    assert grid.scenario_count == 8 * 1 * 3
    assert grid.placers == ("striped", "legacy", "fluvio", "fluvio-fair", "multi-level")
    assert grid.run_count == grid.scenario_count * 5


def test_json_grid_reads_like_the_same_toml(tmp_path: Path) -> None:
    toml_grid = parse_grid(MINIMAL)
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(toml_grid.to_json()))
    assert load_grid(path) == toml_grid


def test_distributions_accept_a_constant_a_list_or_weights() -> None:
    grid = parse_grid(
        MINIMAL.replace(
            "replication_factor = 2", "replication_factor = { values = [1, 3], weights = [1, 3] }"
        )
    )
    w = grid.workloads[0]
    assert w.partitions == Distribution((1, 2))
    assert w.replication_factor == Distribution((1, 3), (1.0, 3.0))
    assert w.added_partitions == Distribution((1,))


def test_the_default_grid_parses_and_is_documented_by_print() -> None:
    grid = default_grid()
    assert grid == parse_grid(DEFAULT_GRID_TOML)
    assert {f.layout for f in grid.clusters} == {"racks", "rack_sizes", "brokers", "levels"}
    assert grid.report_scenario == "unbalanced-1-2-3/fluvio-example/s0"
    assert grid.scenario_count == grid.shape_count * len(grid.workloads) * len(grid.seeds)


def test_placers_and_seeds_can_be_replaced() -> None:
    grid = parse_grid(MINIMAL).with_placers(["fluvio", " my.module.Placer "]).with_seeds(5)
    assert grid.placers == ("fluvio", "my.module.Placer")
    assert grid.seeds == (0, 1, 2, 3, 4)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("racks = [3, 4]", "racks = [3, 3]"), "clusters[0].racks: value 3 appears twice"),
        (("racks = [3, 4]", "racks = [3, 4]\nbrokers = [2]"), "exactly one layout key"),
        (("brokers_per_rack = [2, 3]", ""), "clusters[0].brokers_per_rack: required with racks"),
        (
            ("fenced_share = [0.0, 0.25]", "fenced_share = [1.0]"),
            "fenced_share[0]: must be a number in [0, 1)",
        ),
        (("topics = 2", "topics = 0"), "workloads[0].topics: must be an integer >= 1, got 0"),
        (("partitions = [1, 2]", "partitions = []"), "workloads[0].partitions: must be a non-empty list"),
        (("seeds = 3", "seeds = 3\nseed = 4"), "unknown key(s) seed"),
        (('name = "w"', 'name = "w x"'), "workloads[0].name: must be a non-empty name"),
    ],
)
def test_malformed_grids_are_refused_naming_the_key(change: tuple[str, str], message: str) -> None:
    with pytest.raises(GridError) as err:
        parse_grid(MINIMAL.replace(*change), source="g.toml")
    assert message in str(err.value)
    assert str(err.value).startswith("g.toml: ")


def test_a_grid_needs_clusters_and_workloads() -> None:
    with pytest.raises(GridError, match=r"clusters: at least one \[\[clusters\]\] entry is required"):
        grid_from_mapping({"workloads": []})


def test_unreadable_and_invalid_files_say_so(tmp_path: Path) -> None:
    with pytest.raises(GridError, match="cannot read grid file"):
        load_grid(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("seeds = [")
    with pytest.raises(GridError, match="bad.toml: not valid TOML"):
        load_grid(bad)


def test_level_names_must_cover_the_deepest_layout() -> None:
    text = MINIMAL.replace(
        "racks = [3, 4]\nbrokers_per_rack = [2, 3]",
        'levels = [[2, 2, 2]]\nbrokers_per_rack = [1]\nlevel_names = ["region", "zone"]',
    )
    with pytest.raises(GridError, match="3 names needed"):
        parse_grid(text)
