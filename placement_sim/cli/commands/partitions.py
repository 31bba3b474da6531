"""``placement-sim partitions describe [TOPIC]``: every partition as the simulator holds it
(SimulatorPartitionState), one a line, in a table in the manner of Fluvio's ``fluvio partition list``:
leader and epochs, replicas, the in-sync set (ISR, Fluvio's LRS), status, high watermark, the leader's
log end offset and each follower's."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from placement_sim.cli.connection import add_connection_options, describe_error, run_with_client
from protocol.client import KafkaClient

__all__ = ["partition_table", "register"]

COLUMNS = (
    "TOPIC",
    "PARTITION",
    "LEADER",
    "EPOCH",
    "REPLICAS",
    "ISR",
    "STATUS",
    "HW",
    "LEO",
    "FOLLOWER OFFSETS",
)


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    partitions = subparsers.add_parser(
        "partitions",
        help="describe the partitions of a running simulator",
        description="Partitions as the simulator holds them (its control APIs).",
    )
    actions = partitions.add_subparsers(dest="partitions_action", metavar="ACTION", required=True)
    describe = actions.add_parser(
        "describe", parents=[common], help="leader, epochs, ISR, status and offsets of every partition"
    )
    describe.add_argument("topic", nargs="?", metavar="TOPIC", help="one topic (default: all)")
    add_connection_options(describe)
    describe.set_defaults(func=describe_command)


def _ids(ids: list[int]) -> str:
    return "[" + ", ".join(map(str, ids)) + "]"


def partition_table(topics: list[dict[str, Any]]) -> list[str]:
    """The table's lines (a header, then one line per partition)."""
    rows = [COLUMNS]
    for topic in topics:
        for p in topic["Partitions"]:
            if p["ErrorCode"] != 0:
                continue
            offsets = {r["BrokerId"]: r["LogEndOffset"] for r in p["ReplicaStates"]}
            leader = p["LeaderId"]
            status = p["Status"] + (" (recovering)" if p["LeaderRecoveryState"] == 1 else "")
            followers = ", ".join(f"{b}:{leo}" for b, leo in offsets.items() if b != leader)
            rows.append(
                (
                    topic["Name"],
                    str(p["PartitionIndex"]),
                    str(leader) if leader >= 0 else "none",
                    f"{p['LeaderEpoch']}/{p['PartitionEpoch']}",
                    _ids(p["Replicas"]),
                    _ids(p["Isr"]),
                    status,
                    str(p["HighWatermark"]),
                    str(offsets[leader]) if leader in offsets else "-",
                    f"[{followers}]",
                )
            )
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    # One format for every row: a scenario's snapshot prints 100,000 of them.
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return [line.format(*row).rstrip() for row in rows]


def describe_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        topics = await client.partition_state(None if args.topic is None else [args.topic])
        status = 0
        for topic in topics:
            if topic["ErrorCode"] != 0:
                print(
                    f"placement-sim: topic {topic['Name']}: {describe_error(topic['ErrorCode'], None)}",
                    file=sys.stderr,
                )
                status = 1
        if any(t["ErrorCode"] == 0 for t in topics) or not topics:
            print("\n".join(partition_table(topics)))
        return status

    return run_with_client(args, action)
