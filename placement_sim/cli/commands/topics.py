"""``placement-sim topics create|list|describe|alter|delete``: topic administration on a running simulator.

These speak Kafka's protocol (CreateTopics, Metadata, DescribeConfigs, CreatePartitions, DeleteTopics), so they work
against any Kafka broker too, and take the options ``kafka-topics.sh`` users type (``--bootstrap-server``,
``-p``, ``-r``). ``describe`` prints Kafka's layout: a topic line, then one line per partition with its
leader, replicas (in placement order) and in-sync replicas.
"""

from __future__ import annotations

import argparse
import sys
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

__all__ = ["format_topic", "register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    topics = subparsers.add_parser(
        "topics",
        help="create, list, describe, alter and delete topics on a running simulator",
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
    create.add_argument("name", metavar="NAME")
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
    add_connection_options(create)
    create.set_defaults(func=create_command)

    listing = actions.add_parser("list", parents=[common], help="list the topic names, one a line")
    add_connection_options(listing)
    listing.set_defaults(func=list_command)

    describe = actions.add_parser(
        "describe", parents=[common], help="show topics with leaders, replicas and ISR"
    )
    describe.add_argument("name", metavar="NAME", nargs="?", help="one topic (default: all)")
    add_connection_options(describe)
    describe.set_defaults(func=describe_command)

    alter = actions.add_parser(
        "alter",
        parents=[common],
        help="add partitions to a topic (CreatePartitions)",
        description="Grow a topic to N partitions; the new ones are placed by the server's placer.",
    )
    alter.add_argument("name", metavar="NAME")
    alter.add_argument(
        "--partitions", "-p", type=int, required=True, metavar="N", help="the new partition count"
    )
    alter.add_argument(
        "--validate-only", action="store_true", help="check and compute the placement, change nothing"
    )
    add_connection_options(alter)
    alter.set_defaults(func=alter_command)

    delete = actions.add_parser("delete", parents=[common], help="delete a topic")
    delete.add_argument("name", metavar="NAME")
    add_connection_options(delete)
    delete.set_defaults(func=delete_command)


def create_command(args: argparse.Namespace) -> int:
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
    return run_with_client(args, lambda client: _describe(client, None if args.name is None else [args.name]))


async def _describe(client: KafkaClient, names: list[str] | None) -> int:
    topics = None if names is None else [{"Name": n} for n in names]
    response = await client.send("MetadataRequest", {"Topics": topics, "AllowAutoTopicCreation": False})
    status = 0
    found = sorted((t for t in response["Topics"] if t["ErrorCode"] == 0), key=lambda t: t["Name"] or "")
    configs = await _non_default_configs(client, [t["Name"] for t in found])
    for topic in sorted(response["Topics"], key=lambda t: t["Name"] or ""):
        if topic["ErrorCode"] != 0:
            print(
                f"placement-sim: topic {topic['Name']}: {describe_error(topic['ErrorCode'], None)}",
                file=sys.stderr,
            )
            status = 1
            continue
        print("\n".join(format_topic(topic, configs.get(topic["Name"], ""))))
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


def format_topic(topic: dict[str, Any], configs: str = "") -> list[str]:
    """Kafka's ``kafka-topics.sh --describe`` lines for one Metadata topic entry, with its non-default
    ``configs`` (``key=value,...``)."""
    partitions = sorted(topic["Partitions"], key=lambda p: p["PartitionIndex"])
    rf = len(partitions[0]["ReplicaNodes"]) if partitions else 0
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
    request = {
        "Topics": [{"Name": args.name, "Count": args.partitions, "Assignments": None}],
        "TimeoutMs": int(args.timeout * 1000),
        "ValidateOnly": args.validate_only,
    }

    async def action(client: KafkaClient) -> int:
        response = await client.send("CreatePartitionsRequest", request)
        [result] = response["Results"]
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
    async def action(client: KafkaClient) -> int:
        version = client.choose_version(20)
        data: dict[str, Any] = {"TimeoutMs": int(args.timeout * 1000)}
        if version >= 6:
            data["Topics"] = [{"Name": args.name}]
        else:
            data["TopicNames"] = [args.name]
        response = await client.send("DeleteTopicsRequest", data, version=version)
        [result] = response["Responses"]
        if result["ErrorCode"] != 0:
            return _topic_failed(args.name, result)
        print(f"Deleted topic {args.name}.")
        return 0

    return run_with_client(args, action)
