"""``placement-sim partitions describe [TOPIC]``: every partition as the simulator holds it
(SimulatorPartitionState), one a line, in a table in the manner of Fluvio's ``fluvio partition list``:
leader and epochs, replicas, the in-sync set (ISR, Fluvio's LRS), status, high watermark, the leader's
log end offset and each follower's; and, when some partition shown has them, its eligible leader replicas
and last known ELR (KIP-966: the leader a leaderless partition last had)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from placement_sim.cli.connection import add_connection_options, describe_error, run_with_client
from protocol.client import KafkaClient

__all__ = ["partition_row", "partition_table", "register", "table_lines"]

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
#: Shown when some partition of the table has eligible leader replicas or a last known ELR.
ELR_COLUMNS = ("ELR", "LAST KNOWN ELR")


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    partitions = subparsers.add_parser(
        "partitions",
        description="Partitions as the simulator holds them (its control APIs).",
    )
    actions = partitions.add_subparsers(dest="partitions_action", metavar="ACTION", required=True)
    describe = actions.add_parser(
        "describe", parents=[common], help="leader, epochs, ISR, status and offsets of every partition"
    )
    describe.add_argument(
        "topics",
        nargs="*",
        metavar="TOPIC[:P]",
        help="topics, or single partitions as TOPIC:P (as elect takes them; default: every partition)",
    )
    add_connection_options(describe)
    describe.set_defaults(func=describe_command)


def _ids(ids: list[int]) -> str:
    return "[" + ", ".join(map(str, ids)) + "]"


def partition_row(
    topic: str,
    index: int,
    leader: int,
    leader_epoch: int,
    partition_epoch: int,
    replicas: Sequence[int],
    isr: Sequence[int],
    status: str,
    recovering: bool,
    high_watermark: int,
    offsets: Sequence[tuple[int, int]],
    last_stable_offset: int = -1,
    elr: Sequence[int] = (),
    last_known_elr: Sequence[int] = (),
) -> tuple[str, ...]:
    """One partition's cells; ``offsets`` are (broker, log end offset) in replica order; the last stable
    offset is shown beside the high watermark when an open transaction holds it below. The last two
    cells, the ELR and the last known ELR, are empty strings when both are empty."""
    leader_offset = "-"
    followers = []
    for broker, leo in offsets:
        if broker == leader:
            leader_offset = str(leo)
        else:
            followers.append(f"{broker}:{leo}")
    return (
        topic,
        str(index),
        str(leader) if leader >= 0 else "none",
        f"{leader_epoch}/{partition_epoch}",
        _ids(replicas),
        _ids(isr),
        status + (" (recovering)" if recovering else ""),
        str(high_watermark) if last_stable_offset < 0 else f"{high_watermark} (LSO {last_stable_offset})",
        leader_offset,
        f"[{', '.join(followers)}]",
        *((_ids(elr), _ids(last_known_elr)) if elr or last_known_elr else ("", "")),
    )


def table_lines(rows: Iterable[tuple[str, ...]]) -> list[str]:
    """The table's lines: a header, then one line per row of :func:`partition_row` (the ELR columns only
    when some row has them)."""
    rows = list(rows)
    if any(row[-2] for row in rows):
        every = [(*COLUMNS, *ELR_COLUMNS), *((*row[:-2], row[-2] or "[]", row[-1] or "[]") for row in rows)]
    else:
        every = [COLUMNS, *(row[:-2] for row in rows)]
    widths = [max(map(len, column)) for column in zip(*every, strict=True)]
    # One format for every row: a scenario's snapshot prints 100,000 of them.
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return [line.format(*row).rstrip() for row in every]


def partition_table(topics: list[dict[str, Any]]) -> list[str]:
    """The table's lines (a header, then one line per partition) of SimulatorPartitionState's topics."""
    return table_lines(
        partition_row(
            topic["Name"],
            p["PartitionIndex"],
            p["LeaderId"],
            p["LeaderEpoch"],
            p["PartitionEpoch"],
            p["Replicas"],
            p["Isr"],
            p["Status"],
            p["LeaderRecoveryState"] == 1,
            p["HighWatermark"],
            [(r["BrokerId"], r["LogEndOffset"]) for r in p["ReplicaStates"]],
            p.get("LastStableOffset", -1),
            p.get("EligibleLeaderReplicas", ()),
            p.get("LastKnownElr", ()),
        )
        for topic in topics
        for p in topic["Partitions"]
        if p["ErrorCode"] == 0
    )


def wanted_partitions(names: list[str]) -> list[str | tuple[str, list[int]]] | None:
    """SimulatorPartitionState's topics for ``TOPIC`` / ``TOPIC:P`` words (None: every topic)."""
    if not names:
        return None
    whole: list[str] = []
    some: dict[str, list[int]] = {}
    for name in names:
        topic, sep, partition = name.rpartition(":")
        if sep and partition.isdigit() and topic:
            some.setdefault(topic, []).append(int(partition))
        else:
            whole.append(name)
    return [*dict.fromkeys(whole), *((t, sorted(set(ps))) for t, ps in some.items() if t not in whole)]


def describe_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        topics = await client.partition_state(wanted_partitions(args.topics))
        status = 0
        for topic in topics:
            if topic["ErrorCode"] != 0:
                print(
                    f"placement-sim: topic {topic['Name']}: {describe_error(topic['ErrorCode'], None)}",
                    file=sys.stderr,
                )
                status = 1
            for p in topic["Partitions"]:
                if p["ErrorCode"] != 0:
                    where = f"{topic['Name']}-{p['PartitionIndex']}"
                    print(f"placement-sim: {where}: {describe_error(p['ErrorCode'], None)}", file=sys.stderr)
                    status = 1
        shown = any(p["ErrorCode"] == 0 for t in topics for p in t["Partitions"])
        if shown or not topics:
            print("\n".join(partition_table(topics)))
        return status

    return run_with_client(args, action)
