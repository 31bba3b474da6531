"""``placement-sim place``: computes one placement and prints it as Fluvio's documentation draws them.

The placement runs in this process, through the server's own placement service: the placer is
loaded by name (``--placer``), configured with ``simulator.seed`` (``--seed``) and any
``--set KEY=VALUE`` properties, and asked once to place on the cluster of ``--cluster FILE`` (default:
the embedded 6 brokers in 3 racks), with the server's request checks, deferral to the default placer
and check of the result. With ``--bootstrap`` a running server is asked instead.

The output (:mod:`placement_sim.cli.render`) is the replica map, then the leaders and followers per rack as running
totals, as in Fluvio's replica assignment tables; ``--json`` prints the same as one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from controller.config import ISOLATION, PLACER, ServerConfig
from controller.defaults import DEFAULT_BROKERS
from controller.placement.api import ClusterView, PlacementSpec, UsableBroker
from controller.placement.builtin.java_random import SEED_KEY
from controller.placement.loader import DEFAULT_PLACER
from controller.placement.service import PlacementFailure, PlacementService
from placement_sim.cli.clusterfile import ClusterFileError, load_cluster_file
from placement_sim.cli.connection import describe_cluster, describe_error, run_with_client
from placement_sim.cli.options import add_bootstrap_option, add_property_option, broker_id_list
from placement_sim.cli.placement_outcome import PlacementError
from placement_sim.cli.render import placement_to_json, render_placement
from protocol.client import ErrorResponse, KafkaClient

__all__ = [
    "PlacementError",
    "add_placement_arguments",
    "cluster_from_args",
    "configs_from_args",
    "error_to_json",
    "inputs_from_args",
    "place_in_process",
    "register",
    "spec_from_args",
]


# ---------------------------------------------------------------------------------------------- arguments


def add_placement_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments that describe what to place, on which cluster, shared by ``place`` and ``compare``."""
    parser.add_argument(
        "--partitions", "-p", type=int, required=True, metavar="N", help="number of partitions"
    )
    parser.add_argument(
        "--replication-factor", "-r", type=int, required=True, metavar="R", help="replicas per partition"
    )
    parser.add_argument(
        "--cluster",
        metavar="FILE",
        help="cluster file (JSON brokers and optional assignments); default: 6 brokers in 3 racks",
    )
    parser.add_argument("--topic", metavar="NAME", help="the topic name the placer sees")
    parser.add_argument("--start-partition", type=int, default=0, metavar="N", help="first partition id")
    parser.add_argument(
        "--broker-ids", type=broker_id_list, metavar="IDS", help="place only on these brokers, e.g. 1,2,3"
    )
    parser.add_argument("--seed", type=int, metavar="N", help=f"{SEED_KEY}: makes placements repeatable")
    add_property_option(parser, "a property for the placer's configure() (repeatable)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "place",
        parents=[common],
        description="Place partitions with a placer in this process and print the replica map, then "
        "leaders and followers per rack (running totals).",
    )
    add_placement_arguments(p)
    p.add_argument(
        "--placer",
        metavar="NAME",
        help=f"short name, dotted path or file.py (default {DEFAULT_PLACER}; in-process only)",
    )
    remote = p.add_argument_group(
        "asking a running server",
        "With --bootstrap the server places (CreateReplicaPlacement) with its own placer on its own brokers, "
        "so --cluster, --placer, --seed and --set do not apply.",
    )
    add_bootstrap_option(
        remote, default=None, help="ask the simulator listening here instead of placing in-process"
    )
    remote.add_argument(
        "--force-simple",
        action="store_true",
        help="ForceSimplePlacement: Kafka's classic rack-unaware algorithm instead of the server's placer",
    )
    remote.add_argument(
        "--timeout-ms", type=int, default=60000, metavar="MS", help="the request's timeoutMs (default 60000)"
    )
    remote.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS", help="connect timeout (default 30)"
    )
    p.set_defaults(func=run)


def inputs_from_args(args: argparse.Namespace) -> tuple[ClusterView, PlacementSpec] | None:
    """The cluster and the spec the arguments describe; None (after saying why) for a bad cluster file."""
    try:
        cluster = cluster_from_args(args)
    except ClusterFileError as exc:
        print(f"placement-sim: {exc}", file=sys.stderr)
        return None
    return cluster, spec_from_args(args)


def cluster_from_args(args: argparse.Namespace) -> ClusterView:
    """The ``--cluster`` file's cluster, or the embedded default one; ClusterFileError if unreadable."""
    if args.cluster:
        return load_cluster_file(args.cluster)
    return ClusterView(DEFAULT_BROKERS)


def spec_from_args(args: argparse.Namespace) -> PlacementSpec:
    return PlacementSpec(
        start_partition=args.start_partition,
        num_partitions=args.partitions,
        num_replicas=args.replication_factor,
        topic=args.topic,
        broker_ids=args.broker_ids,
    )


def configs_from_args(args: argparse.Namespace) -> dict[str, str]:
    """What the placer's ``configure()`` receives: the ``--set`` properties and ``--seed``."""
    configs = dict(args.set)
    if args.seed is not None:
        configs[SEED_KEY] = str(args.seed)
    return configs


# ---------------------------------------------------------------------------------------------- placing


def place_in_process(
    placer_name: str, configs: Mapping[str, str], spec: PlacementSpec, cluster: ClusterView
) -> list[list[int]]:
    """Places ``spec`` on ``cluster`` with the placer, in this process, as the server would.

    The request goes through the server's placement service (its request checks, the deferral to the
    default placer, the check of the result), with the placer loaded inline. Raises PlacementError
    (with the error the server would answer) when there is no valid placement.
    """
    return asyncio.run(_place(placer_name, configs, spec, cluster))


async def _place(
    placer_name: str, configs: Mapping[str, str], spec: PlacementSpec, cluster: ClusterView
) -> list[list[int]]:
    # A placer that cannot be loaded, or malformed properties, are the user's mistakes: they propagate
    # (PlacerLoadError, ConfigError) and the command line reports them with exit code 2.
    config = ServerConfig.from_properties({**configs, PLACER: placer_name, ISOLATION: "inline"})
    service = await PlacementService.start(config.placer_setup(), config.placement_limits(), lambda: cluster)
    try:
        return await service.place(spec)
    except PlacementFailure as failure:
        kind = failure.kind or failure.code.name
        raise PlacementError(kind, failure.code, failure.message, failure.not_applicable) from None
    finally:
        await service.close()


def error_to_json(error: PlacementError) -> dict[str, Any]:
    return {"error": {"kind": error.kind, "code": error.error, "message": error.message}}


# ---------------------------------------------------------------------------------------------- command


def run(args: argparse.Namespace) -> int:
    if args.bootstrap:
        return run_remote(args)
    if args.force_simple:
        print("placement-sim: --force-simple asks a server: give --bootstrap", file=sys.stderr)
        return 2
    placer = args.placer or DEFAULT_PLACER
    inputs = inputs_from_args(args)
    if inputs is None:
        return 2
    cluster, spec = inputs
    try:
        replicas = place_in_process(placer, configs_from_args(args), spec, cluster)
    except PlacementError as exc:
        return _print_failure(args, {"placer": placer}, exc)
    _print_placement(args, {"placer": placer}, placer, spec, cluster.brokers, replicas)
    return 0


def run_remote(args: argparse.Namespace) -> int:
    """``place --bootstrap``: the placement from a running server (CreateReplicaPlacement), as tables or JSON."""
    local_only = [
        option
        for option, given in (
            ("--cluster", args.cluster),
            ("--placer", args.placer),
            ("--seed", args.seed is not None),
            ("--set", args.set),
        )
        if given
    ]
    if local_only:
        print(
            f"placement-sim: {', '.join(local_only)}: the server places with its own placer and brokers; "
            "leave out --bootstrap to place in-process",
            file=sys.stderr,
        )
        return 2
    spec = spec_from_args(args)
    where = {"bootstrap": args.bootstrap}

    async def action(client: KafkaClient) -> int:
        brokers = await _server_brokers(client)
        try:
            replicas = await client.create_replica_placement(
                spec.num_partitions,
                spec.num_replicas,
                node_ids=spec.broker_ids or (),
                force_simple=args.force_simple,
                topic=spec.topic,
                start_partition=spec.start_partition,
                timeout_ms=args.timeout_ms,
            )
        except ErrorResponse as exc:
            return _print_failure(args, where, PlacementError("ErrorResponse", exc.code, exc.message or ""))
        if brokers is None:  # the server does not describe its cluster: the brokers the placement names
            brokers = [UsableBroker(b, None, False) for b in sorted({r for rs in replicas for r in rs})]
        _print_placement(args, where, args.bootstrap, spec, brokers, replicas)
        return 0

    return run_with_client(args, action)


async def _server_brokers(client: KafkaClient) -> list[UsableBroker] | None:
    """The server's brokers with their racks, fenced ones included (DescribeCluster), or None."""
    if 60 not in client.api_versions:
        return None
    response = await describe_cluster(client)
    if response["ErrorCode"] != 0:
        return None
    return [
        UsableBroker(b["BrokerId"], b["Rack"], bool(b.get("IsFenced", False)))
        for b in sorted(response["Brokers"], key=lambda b: b["BrokerId"])
    ]


def _print_failure(args: argparse.Namespace, where: dict[str, str], error: PlacementError) -> int:
    if args.json:
        print(json.dumps({**where, **error_to_json(error)}, indent=2))
    elif error.kind == "ErrorResponse":
        print(
            f"placement-sim: {describe_error(error.code, error.message)}",
            file=sys.stderr,
        )
    else:
        print(f"placement-sim: {error}", file=sys.stderr)
    return 1


def _print_placement(
    args: argparse.Namespace,
    where: dict[str, str],
    source: str,
    spec: PlacementSpec,
    brokers: Sequence[UsableBroker],
    replicas: list[list[int]],
) -> None:
    if args.json:
        print(json.dumps({**where, **placement_to_json(brokers, spec.start_partition, replicas)}, indent=2))
        return
    topic = f" of {spec.topic}" if spec.topic else ""
    usable = len(ClusterView(tuple(brokers)).usable(spec))
    print(
        f"{source}: {spec.num_partitions} partition(s){topic} x {spec.num_replicas} replica(s) "
        f"on {usable} broker(s)\n"
    )
    print(render_placement(brokers, spec.start_partition, replicas), end="")
