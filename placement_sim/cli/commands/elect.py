"""``placement-sim elect --preferred|--unclean [TOPIC[:P] ...]``: leader elections with Kafka's ElectLeaders
(as ``kafka-leader-election.sh``): every partition that needs one when none is named, every partition of a
topic named alone. One line per partition with its outcome; exit 1 when one failed (ELECTION_NOT_NEEDED
is no failure)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from placement_sim.cli.connection import add_connection_options, describe_error, run_with_client
from protocol.client import KafkaClient
from protocol.codes import ApiKey, ErrorCode

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    elect = subparsers.add_parser(
        "elect",
        parents=[common],
        description="Leader elections over Kafka's ElectLeaders, as kafka-leader-election.sh.",
    )
    kind = elect.add_mutually_exclusive_group(required=True)
    kind.add_argument(
        "--preferred", dest="unclean", action="store_false", help="the first replica leads again"
    )
    kind.add_argument(
        "--unclean", dest="unclean", action="store_true", help="a replica outside the ISR may lead"
    )
    elect.add_argument("partitions", nargs="*", metavar="TOPIC[:P]", help="default: every partition")
    add_connection_options(elect)
    elect.set_defaults(func=elect_command)


async def _targets(client: KafkaClient, names: list[str]) -> list[dict[str, Any]] | None:
    """ElectLeaders' TopicPartitions: None for every partition; a topic alone: all of its partitions."""
    if not names:
        return None
    by_topic: dict[str, list[int]] = {}
    whole = []
    for name in names:
        topic, sep, partition = name.rpartition(":")
        if sep and partition.isdigit():
            by_topic.setdefault(topic, []).append(int(partition))
        else:
            whole.append(name)
    if whole:
        response = await client.send(
            "MetadataRequest", {"Topics": [{"Name": n} for n in whole], "AllowAutoTopicCreation": False}
        )
        for topic in response["Topics"]:
            indexes = sorted(p["PartitionIndex"] for p in topic["Partitions"])
            by_topic.setdefault(topic["Name"], []).extend(indexes or [0])
    return [{"Topic": t, "Partitions": p} for t, p in by_topic.items()]


def elect_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        version = client.choose_version(ApiKey.ELECT_LEADERS)
        if args.unclean and version < 1:
            print(
                "placement-sim: the server knows only preferred elections (ElectLeaders v0)", file=sys.stderr
            )
            return 1
        request = {
            "ElectionType": 1 if args.unclean else 0,
            "TopicPartitions": await _targets(client, args.partitions),
            "TimeoutMs": int(args.timeout * 1000),
        }
        response = await client.send("ElectLeadersRequest", request, version=version)
        status = 0
        if response.get("ErrorCode", 0) != 0:
            print(f"placement-sim: {describe_error(response['ErrorCode'], None)}", file=sys.stderr)
            status = 1
        for topic in response["ReplicaElectionResults"]:
            for p in sorted(topic["PartitionResult"], key=lambda r: r["PartitionId"]):
                name = f"{topic['Topic']}-{p['PartitionId']}"
                code = p["ErrorCode"]
                if code == ErrorCode.NONE:
                    print(f"{name}: leader elected")
                elif code == ErrorCode.ELECTION_NOT_NEEDED:
                    print(f"{name}: no election needed")
                else:
                    print(f"{name}: {describe_error(code, p['ErrorMessage'])}")
                    status = 1
        return status

    return run_with_client(args, action)
