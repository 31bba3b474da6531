"""The placer loader: every way to name a placer, and errors that say what is wrong."""

from __future__ import annotations

import importlib.metadata
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from controller.placement import loader
from controller.placement.api import ClusterView, PlacementSpec, UsableBroker
from controller.placement.builtin.java_random import SEED_KEY
from controller.placement.builtin.legacy import LegacyReplicaPlacer
from controller.placement.builtin.striped import StripedReplicaPlacer
from controller.placement.loader import BUILTIN_PLACERS, PlacerLoadError, load_placer, resolve_placer_class

CLUSTER = ClusterView(tuple(UsableBroker(i, f"/dc{i % 3}/r{i % 2}", False) for i in range(6)))
SPEC = PlacementSpec(start_partition=0, num_partitions=4, num_replicas=3)

PLUGIN = """
from controller.placement.api import ReplicaPlacer

class FirstBrokers(ReplicaPlacer):
    def configure(self, configs):
        self.configs = dict(configs)

    def place(self, spec, cluster):
        ids = sorted(b.id for b in cluster.usable(spec) if not b.fenced)
        return [ids[: spec.num_replicas] for _ in range(spec.num_partitions)]
"""


@pytest.mark.parametrize(
    ("name", "class_name"),
    [
        ("striped", "StripedReplicaPlacer"),
        ("legacy", "LegacyReplicaPlacer"),
        ("fluvio", "FluvioReplicaPlacer"),
        ("fluvio-fair", "FluvioFairReplicaPlacer"),
        ("multi-level", "MultiLevelReplicaPlacer"),
    ],
)
def test_short_names(name: str, class_name: str) -> None:
    assert resolve_placer_class(name).__name__ == class_name
    placer = load_placer(name, {SEED_KEY: "1"})
    assert type(placer).__name__ == class_name
    assert len(placer.place(SPEC, CLUSTER)) == 4


def test_every_builtin_has_a_test() -> None:
    assert sorted(BUILTIN_PLACERS) == ["fluvio", "fluvio-fair", "legacy", "multi-level", "striped"]


def test_short_names_tolerate_surrounding_spaces() -> None:
    assert resolve_placer_class("  striped ") is StripedReplicaPlacer


def test_dotted_path_kafka_style() -> None:
    assert (
        resolve_placer_class("controller.placement.builtin.striped.StripedReplicaPlacer")
        is StripedReplicaPlacer
    )


def test_module_colon_class() -> None:
    assert (
        resolve_placer_class("controller.placement.builtin.legacy:LegacyReplicaPlacer") is LegacyReplicaPlacer
    )


def test_configure_receives_the_properties() -> None:
    seeded = load_placer("controller.placement.builtin.striped:StripedReplicaPlacer", {SEED_KEY: "9"})
    again = load_placer("striped", {SEED_KEY: "9"})
    assert seeded.place(SPEC, CLUSTER) == again.place(SPEC, CLUSTER)


def test_file_with_one_placer(tmp_path: Path) -> None:
    path = tmp_path / "first.py"
    path.write_text(PLUGIN)
    placer = load_placer(str(path), {"custom.key": "x"})
    assert type(placer).__name__ == "FirstBrokers"
    assert placer.configs == {"custom.key": "x"}  # type: ignore[attr-defined]
    assert placer.place(SPEC, CLUSTER) == [[0, 1, 2]] * 4
    assert resolve_placer_class(f"{path}:FirstBrokers").__name__ == "FirstBrokers"


def test_file_with_two_placers_needs_a_class_name(tmp_path: Path) -> None:
    path = tmp_path / "two.py"
    path.write_text(PLUGIN + "\n\nclass Second(FirstBrokers):\n    pass\n")
    with pytest.raises(
        PlacerLoadError, match=r"must define exactly one placer class \(found: FirstBrokers, Second\)"
    ):
        resolve_placer_class(str(path))
    assert resolve_placer_class(f"{path}:Second").__name__ == "Second"


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(PlacerLoadError, match="does not exist"):
        resolve_placer_class(str(tmp_path / "missing.py"))
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no luck')\n")
    with pytest.raises(PlacerLoadError, match=r"importing .*broken.py failed: RuntimeError: no luck"):
        resolve_placer_class(str(broken))
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(PlacerLoadError, match=r"must define exactly one placer class \(found: none\)"):
        resolve_placer_class(str(empty))


def _entry_points(*points: EntryPoint):  # type: ignore[no-untyped-def]
    def entry_points(group: str) -> list[EntryPoint]:
        return [p for p in points if p.group == group]

    return entry_points


def test_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    point = EntryPoint(
        "kafka-default", "controller.placement.builtin.striped:StripedReplicaPlacer", loader.ENTRY_POINT_GROUP
    )
    other = EntryPoint(
        "kafka-default", "controller.placement.builtin.legacy:LegacyReplicaPlacer", "another.group"
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(other, point))
    assert resolve_placer_class("kafka-default") is StripedReplicaPlacer


def test_entry_point_that_fails_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    point = EntryPoint("ghost", "no_such_module_here:Placer", loader.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(point))
    with pytest.raises(
        PlacerLoadError, match=r"placer 'ghost': entry point 'no_such_module_here:Placer' failed"
    ):
        resolve_placer_class("ghost")


def test_entry_point_that_is_not_a_placer(monkeypatch: pytest.MonkeyPatch) -> None:
    point = EntryPoint("notaplacer", "collections:OrderedDict", loader.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(point))
    with pytest.raises(PlacerLoadError, match="is not a class with a place\\(\\) method"):
        resolve_placer_class("notaplacer")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "placer name is empty"),
        (
            "stripy",
            r"unknown placer 'stripy': not a built-in \(fluvio, fluvio-fair, legacy, multi-level, striped\)",
        ),
        ("no_such_pkg.Placer", r"placer 'no_such_pkg.Placer': cannot import module 'no_such_pkg'"),
        (
            "controller.placement.builtin.striped.Nope",
            r"'controller.placement.builtin.striped' has no attribute 'Nope'",
        ),
        ("controller.placement.builtin.striped:log", r"'log' is not a class"),
        ("controller.placement.api.ReplicaPlacer", r"ReplicaPlacer is abstract"),
        ("controller.placement.api:UsableBroker", r"is not a class with a place\(\) method"),
    ],
)
def test_clear_errors(name: str, message: str) -> None:
    with pytest.raises(PlacerLoadError, match=message):
        resolve_placer_class(name)


def test_constructor_and_configure_failures_name_the_placer(tmp_path: Path) -> None:
    path = tmp_path / "fussy.py"
    path.write_text(
        PLUGIN.replace(
            "def configure(self, configs):", "def configure(self, configs):\n        int(configs['n'])"
        )
    )
    with pytest.raises(PlacerLoadError, match=r"FirstBrokers.configure\(\) failed: KeyError: 'n'"):
        load_placer(str(path), {})
    needs_args = tmp_path / "needs_args.py"
    needs_args.write_text(PLUGIN + "\n    def __init__(self, size):\n        self.size = size\n")
    with pytest.raises(PlacerLoadError, match=r"FirstBrokers\(\) failed: TypeError"):
        load_placer(str(needs_args))
    with pytest.raises(PlacerLoadError, match="simulator.seed must be an integer"):
        load_placer("striped", {SEED_KEY: "soon"})
