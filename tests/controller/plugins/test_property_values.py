"""Properties given from Python may be numbers and booleans wherever properties are taken: the server
(ServerThread, the pytest fixtures), the plugin loaders, both conformance kits and the sweep's grid; a
plugin always receives them as text, as a properties file holds them."""

from __future__ import annotations

from collections.abc import Mapping

from controller.election import ElectionPolicy
from controller.election.loader import load_policy
from controller.election.testing import check_policy
from controller.embedded import ServerThread
from controller.placement import PlacementSpec, ReplicaPlacer, load_placer
from controller.placement.testing import check_placer
from placement_sim.pipeline.grid import parse_grid

PYTHON_VALUES = {"my.number": 1500, "my.flag": True, "my.ratio": 0.5}
AS_TEXT = {"my.number": "1500", "my.flag": "true", "my.ratio": "0.5"}


class TextReadingPlacer(ReplicaPlacer):
    """Reads its properties as a plugin may: with str methods (``int`` has no ``strip``)."""

    seen: dict[str, str] = {}

    def configure(self, configs: Mapping[str, str]) -> None:
        TextReadingPlacer.seen = {key: configs[key].strip() for key in AS_TEXT}

    def place(self, spec: PlacementSpec, cluster):
        return None  # the default placer places


class TextReadingPolicy(ElectionPolicy):
    seen: dict[str, str] = {}

    def configure(self, configs: Mapping[str, str]) -> None:
        TextReadingPolicy.seen = {key: configs[key].strip() for key in AS_TEXT}

    def elect(self, partitions):
        return [list(view.eligible) for view in partitions]


def test_the_server_takes_numbers_and_booleans() -> None:
    properties = {"broker.session.timeout.ms": 1500, "auto.create.topics.enable": True}
    with ServerThread.start(properties=properties, clock="virtual") as server:
        config = server.server.controller.config
        assert (config.session_timeout_ms, config.auto_create_topics) == (1500, True)


def test_the_pytest_factory_takes_numbers_and_booleans(placement_sim_factory) -> None:
    server = placement_sim_factory(properties={"broker.session.timeout.ms": 1500})
    assert server.server.controller.config.session_timeout_ms == 1500


def test_the_loaders_give_plugins_text() -> None:
    # loaded by file: the file's own module, so its own classes
    assert type(load_placer(f"{__file__}:TextReadingPlacer", PYTHON_VALUES)).seen == AS_TEXT
    assert type(load_policy(f"{__file__}:TextReadingPolicy", PYTHON_VALUES)).seen == AS_TEXT


def test_the_placement_kit_gives_placers_text() -> None:
    TextReadingPlacer.seen = {}
    report = check_placer(TextReadingPlacer, max_examples=5, configs=PYTHON_VALUES, raise_on_failure=False)
    assert report.passed and TextReadingPlacer.seen == AS_TEXT


def test_the_election_kit_gives_policies_text() -> None:
    TextReadingPolicy.seen = {}
    report = check_policy(TextReadingPolicy, max_examples=5, configs=PYTHON_VALUES, raise_on_failure=False)
    assert report.passed and TextReadingPolicy.seen == AS_TEXT
    assert check_policy("fluvio", max_examples=5, configs={"simulator.election.fluvio.max.lag": 3}).passed


def test_the_grid_takes_numbers_and_booleans_in_placer_configs() -> None:
    grid = parse_grid(
        """
placers = ["legacy"]
[placer_configs]
"simulator.placer.legacy.fixed.start.index" = 0
"simulator.placer.fluvio.ignore.rack" = true
[[clusters]]
name = "flat"
brokers = [3]
[[workloads]]
name = "one"
topics = 1
partitions = 1
replication_factor = 1
"""
    )
    assert grid.placer_configs == {
        "simulator.placer.legacy.fixed.start.index": "0",
        "simulator.placer.fluvio.ignore.rack": "true",
    }
