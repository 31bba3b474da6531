"""Scenario files for the command line (``simulate``, ``serve --scenario``): the file read by
:func:`controller.scenario.load_scenario`, its ``[cluster] file`` (a cluster file, relative to the
scenario) read here, where cluster files are read (:mod:`placement_sim.cli.clusterfile`)."""

from __future__ import annotations

from pathlib import Path

from controller.scenario import Scenario, load_scenario
from placement_sim.cli.clusterfile import ClusterFileError, load_cluster_file

__all__ = ["read_scenario"]


def read_scenario(path: str | Path) -> Scenario:
    """The scenario of ``path`` with its cluster file's brokers and topics; ScenarioError otherwise."""
    scenario = load_scenario(path)
    if scenario.cluster_file is None:
        return scenario
    cluster_path = Path(path).parent / scenario.cluster_file
    try:
        view = load_cluster_file(cluster_path)
    except ClusterFileError as exc:
        raise scenario.error("cluster.file", str(exc)) from None
    topics: dict[str, list[tuple[int, ...]]] = {}
    for (topic, partition), replicas in sorted(view.assignments.items()):
        lists = topics.setdefault(topic, [])
        if partition != len(lists):
            raise scenario.error(
                "cluster.file",
                f"{cluster_path}: topic {topic!r} has no partition {len(lists)}: partitions are 0, 1, ...",
            )
        lists.append(tuple(replicas))
    return scenario.with_cluster(view.brokers, topics)
