"""``placement-sim topics create|list|describe|alter|delete``: topic administration on a running simulator.

These speak Kafka's protocol (CreateTopics, Metadata, DescribeConfigs, CreatePartitions, DeleteTopics), so
they work against any Kafka broker too, and take what ``kafka-topics.sh`` users type (Kafka's
``TopicCommand``): ``--bootstrap-server``, ``-p``, ``-r``, ``--config k=v``, the topic as ``--topic NAME``,
``--if-not-exists`` on create, ``--if-exists`` on alter and delete, and the action as a flag
(``topics --describe --topic orders``). ``describe`` prints Kafka's layout: a topic line (with the
topic's non-default configs), then one line per partition with its leader, replicas (in placement order)
and in-sync replicas; ``--under-replicated-partitions`` and ``--unavailable-partitions`` keep only those
partitions, as in Kafka.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from placement_sim.cli.assignment_file import AssignmentFileError, read_replica_assignment
from placement_sim.cli.connection import (
    add_connection_options,
    describe_error,
    kafka_uuid,
    run_with_client,
)
from placement_sim.cli.options import property_pair
from protocol.client import KafkaClient
from protocol.codes import ApiKey, ErrorCode

__all__ = ["format_topic", "register", "rewrite_argv"]

ACTIONS = ("create", "list", "describe", "alter", "delete")

#: Whether ``describe`` shows a Metadata partition entry, given the live broker ids.
PartitionFilter = Callable[[dict[str, Any], set[int]], bool]


def rewrite_argv(argv: list[str]) -> list[str]:
    """``topics --describe ...`` (kafka-topics.sh's action flags) as ``topics describe ...``."""
    at = argv.index("topics")
    rest = argv[at + 1 :]
    if any(word in ACTIONS for word in rest if not word.startswith("-")):
        return argv
    flags = [word for word in rest if word in {f"--{action}" for action in ACTIONS}]
    if len(flags) != 1:
        return argv  # none, or several: argparse's usage message says what is wrong
    rest.remove(flags[0])
    return [*argv[: at + 1], flags[0][2:], *rest]


def _add_name(parser: argparse.ArgumentParser, required: bool, help: str) -> None:
    parser.add_argument("name", metavar="NAME", nargs="?", help=help)
    parser.add_argument("--topic", metavar="NAME", help="the topic, as kafka-topics.sh takes it")
    parser.set_defaults(name_required=required)


def _topic_name(args: argparse.Namespace) -> str | None:
    """The topic of ``NAME`` or ``--topic NAME``; a usage error when both differ or a needed one is missing."""
    if args.name is not None and args.topic is not None and args.name != args.topic:
        args.parser.error(f"two topic names: {args.name} and --topic {args.topic}")
    name: str | None = args.name if args.name is not None else args.topic
    if name is None and args.name_required:
        args.parser.error("a topic is needed: NAME or --topic NAME")
    return name


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    topics = subparsers.add_parser(
        "topics",
        description="Create, list, describe, alter (add partitions to) and delete topics over Kafka's protocol.",
    )
    actions = topics.add_subparsers(dest="topics_action", metavar="ACTION", required=True)

    create = actions.add_parser(
        "create",
        parents=[common],
        help="create a topic, placed by the server's placer or by an assignment file",
        description="Create a topic. Without --partitions or --replication-factor the server's defaults "
        "(num.partitions, default.replication.factor) apply.",
    )
    _add_name(create, True, "the topic")
    create.add_argument("--partitions", "-p", type=int, metavar="N", help="number of partitions")
    create.add_argument("--replication-factor", "-r", type=int, metavar="R", help="replicas per partition")
    create.add_argument(
        "--replica-assignment",
        metavar="FILE",
        help='a JSON replica map: [{"id": 0, "replicas": [0, 1, 2]}, ...] (instead of N and R)',
    )
    create.add_argument(
        "--config",
        action="append",
        type=property_pair,
        default=[],
        metavar="KEY=VALUE",
        help="a topic config, e.g. min.insync.replicas=2 (repeatable)",
    )
    create.add_argument(
        "--validate-only", action="store_true", help="check and compute the placement, create nothing"
    )
    create.add_argument(
        "--if-not-exists", action="store_true", help="a topic that exists already is not an error"
    )
    add_connection_options(create)
    create.set_defaults(func=create_command, parser=create)

    listing = actions.add_parser("list", parents=[common], help="list the topic names, one a line")
    add_connection_options(listing)
    listing.set_defaults(func=list_command)

    describe = actions.add_parser(
        "describe", parents=[common], help="show topics with leaders, replicas and ISR"
    )
    _add_name(describe, False, "one topic (default: all)")
    describe.add_argument(
        "--under-replicated-partitions",
        action="store_true",
        help="only partitions whose ISR is smaller than their replicas",
    )
    describe.add_argument(
        "--unavailable-partitions", action="store_true", help="only partitions without a leader"
    )
    add_connection_options(describe)
    describe.set_defaults(func=describe_command, parser=describe)

    alter = actions.add_parser(
        "alter",
        parents=[common],
        help="add partitions to a topic (CreatePartitions)",
        description="Grow a topic to N partitions; the new ones are placed by the server's placer.",
    )
    _add_name(alter, True, "the topic")
    alter.add_argument(
        "--partitions", "-p", type=int, required=True, metavar="N", help="the new partition count"
    )
    alter.add_argument(
        "--validate-only", action="store_true", help="check and compute the placement, change nothing"
    )
    alter.add_argument("--if-exists", action="store_true", help="a topic that does not exist is not an error")
    add_connection_options(alter)
    alter.set_defaults(func=alter_command, parser=alter)

    delete = actions.add_parser("delete", parents=[common], help="delete a topic")
    _add_name(delete, True, "the topic")
    delete.add_argument(
        "--if-exists", action="store_true", help="a topic that does not exist is not an error"
    )
    add_connection_options(delete)
    delete.set_defaults(func=delete_command, parser=delete)


def create_command(args: argparse.Namespace) -> int:
    args.name = _topic_name(args)
    assignments: list[dict[str, Any]] = []
    if args.replica_assignment is not None:
        if args.partitions is not None or args.replication_factor is not None:
            print(
                "placement-sim: --replica-assignment cannot be combined with --partitions or --replication-factor",
                file=sys.stderr,
            )
            return 2
        try:
            assignments = [
                {"PartitionIndex": pid, "BrokerIds": replicas}
                for pid, replicas in read_replica_assignment(args.replica_assignment)
            ]
        except AssignmentFileError as exc:
            print(f"placement-sim: {exc}", file=sys.stderr)
            return 2
    request = {
        "Topics": [
            {
                "Name": args.name,
                "NumPartitions": -1 if args.partitions is None else args.partitions,
                "ReplicationFactor": -1 if args.replication_factor is None else args.replication_factor,
                "Assignments": assignments,
                "Configs": [{"Name": key, "Value": value} for key, value in args.config],
            }
        ],
        "timeoutMs": int(args.timeout * 1000),
        "validateOnly": args.validate_only,
    }

    async def action(client: KafkaClient) -> int:
        response = await client.send("CreateTopicsRequest", request)
        [result] = response["Topics"]
        if result["ErrorCode"] == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return 0  # as kafka-topics.sh: nothing to say
        if result["ErrorCode"] != 0:
            return _topic_failed(args.name, result)
        if args.validate_only:
            print(
                f"Topic {args.name} is valid: {result.get('NumPartitions', -1)} partition(s), replication factor "
                f"{result.get('ReplicationFactor', -1)} (validate only: nothing was created)."
            )
            return 0
        print(f"Created topic {args.name}.")
        return await _describe(client, [args.name])

    return run_with_client(args, action)


def describe_command(args: argparse.Namespace) -> int:
    name = _topic_name(args)
    keep = _partition_filter(args.under_replicated_partitions, args.unavailable_partitions)
    return run_with_client(args, lambda client: _describe(client, None if name is None else [name], keep))


def _partition_filter(under_replicated: bool, unavailable: bool) -> PartitionFilter | None:
    """Kafka's describe filters (``TopicCommand.PartitionDescription``): under-replicated is an ISR
    smaller than the replicas; unavailable is no leader, or a leader that is not a live broker. With
    both flags a partition of either kind is shown."""
    if not (under_replicated or unavailable):
        return None

    def keep(partition: dict[str, Any], live: set[int]) -> bool:
        return (under_replicated and len(partition["IsrNodes"]) < len(partition["ReplicaNodes"])) or (
            unavailable and partition["LeaderId"] not in live
        )

    return keep


async def _describe(client: KafkaClient, names: list[str] | None, keep: PartitionFilter | None = None) -> int:
    topics = None if names is None else [{"Name": n} for n in names]
    response = await client.send("MetadataRequest", {"Topics": topics, "AllowAutoTopicCreation": False})
    status = 0
    found = sorted((t for t in response["Topics"] if t["ErrorCode"] == 0), key=lambda t: t["Name"] or "")
    configs = await _non_default_configs(client, [t["Name"] for t in found])
    moving = await _reassignments(client, [t["Name"] for t in found])
    for topic in sorted(response["Topics"], key=lambda t: t["Name"] or ""):
        if topic["ErrorCode"] != 0:
            print(
                f"placement-sim: topic {topic['Name']}: {describe_error(topic['ErrorCode'], None)}",
                file=sys.stderr,
            )
            status = 1
            continue
        lines = format_topic(topic, configs.get(topic["Name"], ""), moving.get(topic["Name"]))
        if keep is None:
            print("\n".join(lines))
            continue
        # Kafka's filtered describe: the matching partition lines alone
        partitions = sorted(topic["Partitions"], key=lambda p: p["PartitionIndex"])
        live = {broker["NodeId"] for broker in response["Brokers"]}  # Metadata lists the unfenced brokers
        for partition, line in zip(partitions, lines[1:], strict=True):
            if keep(partition, live):
                print(line)
    return status


#: DescribeConfigs' resource type of a topic, and the source of a value that is Kafka's default.
_TOPIC_RESOURCE = 2
_DEFAULT_CONFIG = 5


async def _non_default_configs(client: KafkaClient, names: list[str]) -> dict[str, str]:
    """``key=value,...`` of each topic's configs that are not Kafka's defaults, as ``kafka-topics.sh``
    shows them (none against a server without DescribeConfigs)."""
    if not names or 32 not in client.api_versions:
        return {}
    response = await client.send(
        "DescribeConfigsRequest",
        {
            "Resources": [
                {"ResourceType": _TOPIC_RESOURCE, "ResourceName": name, "ConfigurationKeys": None}
                for name in names
            ],
            "IncludeSynonyms": False,
        },
    )
    return {
        result["ResourceName"]: ",".join(
            f"{c['Name']}={c['Value']}"
            for c in result["Configs"]
            if c.get("ConfigSource", _DEFAULT_CONFIG) != _DEFAULT_CONFIG and not c["IsSensitive"]
        )
        for result in response["Results"]
        if result["ErrorCode"] == 0
    }


async def _reassignments(client: KafkaClient, names: list[str]) -> dict[str, dict[int, dict[str, Any]]]:
    """The reassignments in progress of the topics ``names`` (ListPartitionReassignments), by topic and
    partition, as ``kafka-topics.sh --describe`` shows them (none against a server without the API)."""
    if not names or ApiKey.LIST_PARTITION_REASSIGNMENTS not in client.api_versions:
        return {}
    response = await client.send("ListPartitionReassignmentsRequest", {"TimeoutMs": 30_000, "Topics": None})
    wanted = set(names)
    return {
        t["Name"]: {p["PartitionIndex"]: p for p in t["Partitions"]}
        for t in response["Topics"]
        if t["Name"] in wanted
    }


def format_topic(
    topic: dict[str, Any], configs: str = "", reassignments: dict[int, dict[str, Any]] | None = None
) -> list[str]:
    """Kafka's ``kafka-topics.sh --describe`` lines for one Metadata topic entry, with its non-default
    ``configs`` (``key=value,...``) and the ListPartitionReassignments entries of its partitions being
    reassigned (their adding and removing replicas; the replication factor leaves out adding ones)."""
    partitions = sorted(topic["Partitions"], key=lambda p: p["PartitionIndex"])
    moving = reassignments or {}
    rf = len(partitions[0]["ReplicaNodes"]) if partitions else 0
    if partitions and partitions[0]["PartitionIndex"] in moving:
        rf -= len(moving[partitions[0]["PartitionIndex"]]["AddingReplicas"])
    topic_id = topic.get("TopicId")
    lines = [
        f"Topic: {topic['Name']}\tTopicId: {kafka_uuid(topic_id) if topic_id else ''}\t"
        f"PartitionCount: {len(partitions)}\tReplicationFactor: {rf}\tConfigs: {configs}"
    ]
    for p in partitions:
        leader = p["LeaderId"] if p["LeaderId"] >= 0 else "none"
        line = (
            f"\tTopic: {topic['Name']}\tPartition: {p['PartitionIndex']}\tLeader: {leader}\t"
            f"Replicas: {_ids(p['ReplicaNodes'])}\tIsr: {_ids(p['IsrNodes'])}"
        )
        reassignment = moving.get(p["PartitionIndex"])
        if reassignment is not None:
            line += (
                f"\tAdding Replicas: {_ids(reassignment['AddingReplicas'])}"
                f"\tRemoving Replicas: {_ids(reassignment['RemovingReplicas'])}"
            )
        if p.get("OfflineReplicas"):
            line += f"\tOffline: {_ids(p['OfflineReplicas'])}"
        lines.append(line)
    return lines


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


def _topic_failed(name: str, result: dict[str, Any]) -> int:
    print(
        f"placement-sim: topic {name}: {describe_error(result['ErrorCode'], result.get('ErrorMessage'))}",
        file=sys.stderr,
    )
    return 1


def list_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        response = await client.send("MetadataRequest", {"Topics": None, "AllowAutoTopicCreation": False})
        for name in sorted(t["Name"] for t in response["Topics"] if t["ErrorCode"] == 0):
            print(name)
        return 0

    return run_with_client(args, action)


def alter_command(args: argparse.Namespace) -> int:
    args.name = _topic_name(args)
    request = {
        "Topics": [{"Name": args.name, "Count": args.partitions, "Assignments": None}],
        "TimeoutMs": int(args.timeout * 1000),
        "ValidateOnly": args.validate_only,
    }

    async def action(client: KafkaClient) -> int:
        response = await client.send("CreatePartitionsRequest", request)
        [result] = response["Results"]
        if result["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and args.if_exists:
            return 0
        if result["ErrorCode"] != 0:
            return _topic_failed(args.name, result)
        if args.validate_only:
            print(
                f"Topic {args.name} can grow to {args.partitions} partition(s) (validate only: nothing changed)."
            )
            return 0
        print(f"Topic {args.name} now has {args.partitions} partition(s).")
        return await _describe(client, [args.name])

    return run_with_client(args, action)


def delete_command(args: argparse.Namespace) -> int:
    args.name = _topic_name(args)

    async def action(client: KafkaClient) -> int:
        version = client.choose_version(20)
        data: dict[str, Any] = {"TimeoutMs": int(args.timeout * 1000)}
        if version >= 6:
            data["Topics"] = [{"Name": args.name}]
        else:
            data["TopicNames"] = [args.name]
        response = await client.send("DeleteTopicsRequest", data, version=version)
        [result] = response["Responses"]
        if result["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and args.if_exists:
            return 0
        if result["ErrorCode"] != 0:
            return _topic_failed(args.name, result)
        print(f"Deleted topic {args.name}.")
        return 0

    return run_with_client(args, action)
