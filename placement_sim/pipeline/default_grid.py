"""The grid ``placement-sim sweep`` runs when no ``--grid`` is given.

``placement-sim sweep --print-default-grid`` prints it: a starting point for a grid of your own.
"""

from __future__ import annotations

from placement_sim.pipeline.grid import Grid, parse_grid

__all__ = ["DEFAULT_GRID_TOML", "default_grid"]

DEFAULT_GRID_TOML = """\
# placement-sim sweep grid. Every list in a [[clusters]] entry is an axis; a family expands to the
# cross product of its axes. Scenarios = cluster shapes x workloads x seeds; each runs through every placer.

seeds = 12
placers = ["striped", "legacy", "fluvio", "fluvio-fair", "multi-level"]

[report]
# Fluvio's unbalanced example (its Replica Assignment documentation): racks of 1, 2 and 3 brokers, one topic of 6 partitions x 3.
scenario = "unbalanced-1-2-3/fluvio-example/s0"

[placer_configs]
# Server properties every placer's configure() receives; simulator.seed is set per scenario.

[[clusters]]
name = "balanced"
racks = [2, 3, 4, 6]
brokers_per_rack = [2, 3]
fenced_share = [0.0, 0.15]

[[clusters]]
name = "unbalanced"
rack_sizes = [[1, 2, 3], [4, 1, 5], [2, 2, 6], [1, 1, 1, 5]]

[[clusters]]
name = "no-rack"
brokers = [3, 6, 12]

[[clusters]]
name = "multi-dc"
levels = [[3, 2]]
brokers_per_rack = [2]
fenced_share = [0.0, 0.15]

[[workloads]]
name = "fluvio-example"
topics = 1
partitions = 6
replication_factor = 3

[[workloads]]
name = "many-small-topics"
topics = 40
partitions = [1, 2, 3, 6]
replication_factor = { values = [1, 2, 3], weights = [1, 3, 6] }
partition_additions = 8
added_partitions = [1, 2]

[[workloads]]
name = "few-large-topics"
topics = 4
partitions = [24, 48, 96]
replication_factor = 3
partition_additions = 2
added_partitions = [12, 24]
"""


def default_grid() -> Grid:
    return parse_grid(DEFAULT_GRID_TOML, "toml", source="the built-in default grid")
