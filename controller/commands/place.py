"""``placement-sim place``: computes one placement and prints it as Fluvio's documentation draws them.

The placement runs in this process, through the server's own placement service: the placer is
loaded by name (``--placer``), configured with ``simulator.seed`` (``--seed``) and any
``--set KEY=VALUE`` properties, and asked once to place on the cluster of ``--cluster FILE`` (default:
the embedded 6 brokers in 3 racks), with the server's request checks, deferral to the default placer
and check of the result. With ``--bootstrap`` a running server is asked instead.

The output is the replica map, then the leaders and followers per rack as running totals, as in
Fluvio's replica assignment tables; ``--json`` prints the same as one JSON document.
:func:`render_placement` and :func:`placement_to_json` only need the brokers and the replica lists,
so a placement obtained any other way (from a server, say) is shown the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from controller.cluster import Cluster
from controller.commands.admin_connection import describe_cluster, describe_error, run_with_client
from controller.config import ISOLATION, PLACER, ConfigError, ServerConfig
from controller.defaults import DEFAULT_BROKERS
from controller.placement.api import ClusterView, PlacementSpec, UsableBroker
from controller.placement.clusterfile import ClusterFileError, load_cluster_file
from controller.placement.java_random import SEED_KEY
from controller.placement.loader import DEFAULT_PLACER, PlacerLoadError
from controller.placements import PlacementFailure, PlacementRequest, PlacementService
from protocol.client import ErrorResponse, KafkaClient
from protocol.errors import error_by_name

__all__ = [
    "PlacementError",
    "add_placement_arguments",
    "cluster_from_args",
    "configs_from_args",
    "error_to_json",
    "inputs_from_args",
    "place_in_process",
    "placement_to_json",
    "register",
    "render_placement",
    "spec_from_args",
]

NO_RACK = "-"


class PlacementError(Exception):
    """A placement that gave no replicas.

    ``kind`` names what went wrong (the class of the exception the placer raised, ``Deferred``,
    ``MalformedPlacement``, ``TimedOut``, ``PlacerLoadError``, or the error name itself when the request
    was refused before any placer ran); ``error`` is the error name the server would answer with.
    """

    def __init__(self, kind: str, error: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.error = error
        self.message = message

    def __str__(self) -> str:
        if self.kind == self.error:
            return f"{self.error}: {self.message}"
        return f"{self.kind} ({self.error}): {self.message}"


# ---------------------------------------------------------------------------------------------- arguments


def _broker_id_list(text: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated broker ids, got {text!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("expected at least one broker id")
    return ids


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


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
        "--broker-ids", type=_broker_id_list, metavar="IDS", help="place only on these brokers, e.g. 1,2,3"
    )
    parser.add_argument("--seed", type=int, metavar="N", help=f"{SEED_KEY}: makes placements repeatable")
    parser.add_argument(
        "--set",
        type=_property,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a property for the placer's configure() (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "place",
        help="place one topic in-process and print the replica map",
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
    remote.add_argument(
        "--bootstrap",
        metavar="HOST:PORT",
        help="ask the simulator listening here instead of placing in-process",
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
    try:
        config = ServerConfig.from_properties({**configs, PLACER: placer_name, ISOLATION: "inline"})
    except ConfigError as exc:
        raise PlacementError("ConfigError", "INVALID_CONFIG", str(exc)) from None
    try:
        service = await PlacementService.start(config, Cluster(cluster.brokers, seed=config.seed))
    except PlacerLoadError as exc:
        raise PlacementError("PlacerLoadError", "REPLICA_PLACEMENT_FAILED", str(exc)) from None
    request = PlacementRequest(
        num_partitions=spec.num_partitions,
        replication_factor=spec.num_replicas,
        node_ids=spec.broker_ids or (),
        topic=spec.topic,
        start_partition=spec.start_partition,
    )
    try:
        return await service.place(request, cluster)
    except PlacementFailure as failure:
        raise PlacementError(failure.kind or failure.error, failure.error, failure.message) from None
    finally:
        await service.close()


# ---------------------------------------------------------------------------------------------- output


def _rack_columns(brokers: Sequence[UsableBroker]) -> tuple[list[str], dict[int, str], str]:
    """Column names and each broker's column: racks when any broker has one, else brokers."""
    if any(b.rack is not None for b in brokers):
        column = {b.id: b.rack if b.rack is not None else NO_RACK for b in brokers}
        return sorted(set(column.values())), column, "rack"
    column = {b.id: str(b.id) for b in brokers}
    return [str(b.id) for b in sorted(brokers, key=lambda b: b.id)], column, "broker"


def _replica_map(start_partition: int, replicas_lists: Sequence[Sequence[int]]) -> list[str]:
    cells = [str(list(r)) for r in replicas_lists]
    width = max([len("Replicas"), *map(len, cells)])
    rule = "-" * (width + 18)
    lines = [rule, f"| Partition |  {'Replicas':<{width}}  |", rule]
    for offset, cell in enumerate(cells):
        lines.append(f"| {start_partition + offset:>7}   |  {cell:<{width}}  |")
    lines.append(rule)
    return lines


def _per_rack(
    brokers: Sequence[UsableBroker], start_partition: int, replicas_lists: Sequence[Sequence[int]]
) -> list[str]:
    names, column, kind = _rack_columns(brokers)
    leaders: Counter[str] = Counter()
    followers: Counter[str] = Counter()
    rows: list[tuple[int, str, list[str]]] = []
    for offset, replicas in enumerate(replicas_lists):
        for i, broker in enumerate(replicas):
            (followers if i else leaders)[column.get(broker, NO_RACK)] += 1
        cells = [
            f"[{leaders[n] or ' '}] {followers[n] or ''}".rstrip() if leaders[n] or followers[n] else ""
            for n in names
        ]
        rows.append((start_partition + offset, str(list(replicas)), cells))
    header_names = names if kind == "rack" else [f"broker {n}" for n in names]
    widths = [
        max(len(h), len(f"[{leaders[n]}] {followers[n]}"), len(str(followers[n])) + 4)
        for h, n in zip(header_names, names, strict=True)
    ]
    replica_width = max([len("Replicas"), *(len(r[1]) for r in rows)])
    lead = 9 + 3 + 3 + replica_width + 3  # "Partition" + " | " + pad + replicas + gap

    def line(first: str, cells: Sequence[str]) -> str:
        return (first + "".join(f"{c:<{w}}  " for c, w in zip(cells, widths, strict=True))).rstrip()

    rule = "-" * (lead + sum(w + 2 for w in widths) - 2)
    title = f"{'Partition':>9} |   {'Replicas':<{replica_width}}   "
    lines = [rule, line(title, header_names), rule]
    for partition, replicas, cells in rows:
        lines.append(line(f"{partition:>8}  |   {replicas:<{replica_width}}   ", cells))
    lines.append(rule)
    label = lead - 12
    lines.append(line(f"{'':<{label}}{'Leaders':<12}", [f"{leaders[n]:>3}" for n in names]))
    lines.append(line(f"{'':<{label}}{'Followers':<12}", [f"{followers[n]:>3}" for n in names]))
    lines.append(rule)
    return lines


def render_placement(
    brokers: Sequence[UsableBroker], start_partition: int, replicas_lists: Sequence[Sequence[int]]
) -> str:
    """The replica map, then leaders ``[n]`` and followers per rack as running totals, with totals.

    Without racks the second table has a column per broker; brokers without a rack count under ``-``.
    """
    _, _, per = _rack_columns(brokers)
    lines = ["Replica map", *_replica_map(start_partition, replicas_lists), ""]
    lines += [
        f"[leaders] followers per {per}, running totals",
        *_per_rack(brokers, start_partition, replicas_lists),
    ]
    return "\n".join(lines) + "\n"


def placement_to_json(
    brokers: Sequence[UsableBroker], start_partition: int, replicas_lists: Sequence[Sequence[int]]
) -> dict[str, Any]:
    """The placement as a JSON-able document: partitions, then leaders and followers per broker and rack."""
    leaders: Counter[int] = Counter(r[0] for r in replicas_lists if r)
    followers: Counter[int] = Counter(b for r in replicas_lists for b in r[1:])
    racks: dict[str, dict[str, Any]] = {}
    for b in sorted(brokers, key=lambda b: b.id):
        if b.rack is None:
            continue
        entry = racks.setdefault(b.rack, {"rack": b.rack, "brokers": [], "leaders": 0, "followers": 0})
        entry["brokers"].append(b.id)
        entry["leaders"] += leaders[b.id]
        entry["followers"] += followers[b.id]
    return {
        "partitions": [
            {"partition": start_partition + offset, "replicas": list(replicas)}
            for offset, replicas in enumerate(replicas_lists)
        ],
        "brokers": [
            {
                "id": b.id,
                "rack": b.rack,
                "fenced": b.fenced,
                "leaders": leaders[b.id],
                "followers": followers[b.id],
            }
            for b in sorted(brokers, key=lambda b: b.id)
        ],
        "racks": [racks[name] for name in sorted(racks)],
    }


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
            return _print_failure(args, where, PlacementError("ErrorResponse", exc.name, exc.message or ""))
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
            f"placement-sim: {describe_error(error_by_name(error.error).code, error.message)}",
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
