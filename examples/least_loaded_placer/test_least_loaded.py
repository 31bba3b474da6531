"""The example plugin's own tests: the conformance kit, its behaviour, and loading it by name."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from controller.placement import ClusterView, PlacementSpec, UsableBroker, load_placer, resolve_placer_class
from controller.placement.testing import check_placer

HERE = Path(__file__).parent
# The way a server configured with replica.placer.class.name=<this> finds the class.
BY_FILE = f"{HERE / 'least_loaded.py'}:LeastLoadedPlacer"


def test_passes_the_conformance_kit() -> None:
    check_placer(resolve_placer_class(BY_FILE), max_examples=200)


def test_fills_the_least_loaded_brokers_first() -> None:
    brokers = tuple(UsableBroker(i, f"rack-{i % 2}", False) for i in range(4))
    busy = ClusterView(brokers, assignments={("old", 0): (0, 1), ("old", 1): (0, 1)})
    placer = load_placer(BY_FILE, {"simulator.seed": "1"})
    [replicas] = placer.place(PlacementSpec(0, 1, 2), busy)
    assert sorted(replicas) == [2, 3]


def test_spreads_leaders_replicas_and_racks_evenly() -> None:
    brokers = tuple(UsableBroker(i, f"rack-{i % 3}", False) for i in range(9))
    placer = load_placer(BY_FILE, {"simulator.seed": "7"})
    result = placer.place(PlacementSpec(0, 18, 3), ClusterView(brokers))
    assert set(Counter(r[0] for r in result).values()) == {2}
    assert set(Counter(b for r in result for b in r).values()) == {6}
    assert all(len({b % 3 for b in r}) == 3 for r in result)


def test_loads_by_dotted_path_like_an_installed_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    placer = load_placer("least_loaded.LeastLoadedPlacer", {"simulator.seed": "3"})
    assert type(placer).__name__ == "LeastLoadedPlacer"
    same = load_placer(BY_FILE, {"simulator.seed": "3"})
    cluster = ClusterView(tuple(UsableBroker(i, None, i == 0) for i in range(5)))
    assert placer.place(PlacementSpec(0, 6, 2), cluster) == same.place(PlacementSpec(0, 6, 2), cluster)
