"""``placement-sim compare``: the same placement by several placers, their metrics side by side.

Each placer is loaded fresh, configured alike (``--seed``, ``--set``) and places the same topic on the
same cluster; the metrics (:mod:`controller.placement.metrics`) cover the cluster after the placement:
the cluster file's existing assignments plus the new topic. A placer that fails shows its error; one
that does not apply to the cluster (it raised ``PlacerNotApplicableError``: ``multi-level`` on racks that
are not paths, say) is shown as not applicable, with its reason. The exit status is 1 only when a placer
failed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence

from controller.placement.api import ClusterView, PlacementSpec
from controller.placement.loader import BUILTIN_PLACERS, resolve_placer_class
from controller.placement.metrics import compute_metrics
from placement_sim.cli.commands.place import (
    add_placement_arguments,
    configs_from_args,
    error_to_json,
    inputs_from_args,
    place_in_process,
)
from placement_sim.cli.placement_outcome import Comparison, PlacementError
from placement_sim.cli.render import render_comparison

__all__ = ["Comparison", "compare_placers", "register"]

#: The topic name the new partitions get in the metrics when ``--topic`` is not given.
DEFAULT_TOPIC = "placed"


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated placer names")
    return names


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "compare",
        parents=[common],
        description="Place the same topic with each placer (in-process) and print balance, rack spread "
        "and rack-failure metrics side by side.",
    )
    add_placement_arguments(p)
    p.add_argument(
        "--placers",
        type=_names,
        default=list(BUILTIN_PLACERS),
        metavar="NAMES",
        help=f"comma-separated placer names (default: {','.join(BUILTIN_PLACERS)})",
    )
    p.set_defaults(func=run)


def compare_placers(
    names: Sequence[str], configs: Mapping[str, str], spec: PlacementSpec, cluster: ClusterView
) -> list[Comparison]:
    """Places ``spec`` with every named placer and measures the cluster after each placement."""
    topic = spec.topic or DEFAULT_TOPIC
    for name in names:  # every name resolves before anything is placed (PlacerLoadError otherwise)
        resolve_placer_class(name)
    results: list[Comparison] = []
    for name in names:
        try:
            replicas = place_in_process(name, configs, spec, cluster)
        except PlacementError as exc:
            results.append(Comparison(name, error=exc))
            continue
        assignments = dict(cluster.assignments)
        for offset, r in enumerate(replicas):
            assignments[(topic, spec.start_partition + offset)] = tuple(r)
        results.append(Comparison(name, metrics=compute_metrics(cluster.brokers, assignments)))
    return results


def _to_json(spec: PlacementSpec, comparisons: Sequence[Comparison]) -> dict[str, object]:
    placers: list[dict[str, object]] = []
    for c in comparisons:
        if c.metrics is not None:
            placers.append({"placer": c.placer, "metrics": c.metrics.to_dict()})
        else:
            assert c.error is not None
            shown = {"not_applicable": c.not_applicable} if c.not_applicable is not None else {}
            placers.append({"placer": c.placer, **shown, **error_to_json(c.error)})
    return {
        "partitions": spec.num_partitions,
        "replication_factor": spec.num_replicas,
        "topic": spec.topic or DEFAULT_TOPIC,
        "start_partition": spec.start_partition,
        "placers": placers,
    }


def run(args: argparse.Namespace) -> int:
    inputs = inputs_from_args(args)
    if inputs is None:
        return 2
    cluster, spec = inputs
    comparisons = compare_placers(args.placers, configs_from_args(args), spec, cluster)
    if args.json:
        print(json.dumps(_to_json(spec, comparisons), indent=2))
    else:
        print(
            f"{spec.num_partitions} partition(s) x {spec.num_replicas} replica(s) on "
            f"{len(cluster.usable(spec))} broker(s); metrics of the cluster after the placement\n"
        )
        print(render_comparison(comparisons), end="")
    return 0 if all(c.metrics is not None or c.not_applicable is not None for c in comparisons) else 1
