"""``placement-sim produce`` / ``consume``: write and read one partition's records over Kafka's protocol.

Both use the project's own client (:mod:`protocol.client`) on the ``--bootstrap`` connection alone: the
simulator serves Produce, Fetch and ListOffsets on its bootstrap listener as the partition's leader
would (against a real Kafka, point ``--bootstrap`` at the partition's leader).

``produce`` reads records from stdin (or ``--record``), one a line: ``key=value`` (the first ``=`` splits;
a line without one is a value with no key), and sends them in batches of ``--batch`` records with
``--acks``; it prints the offsets each batch got. ``consume`` prints ``key=value`` per record (``value``
alone when the record has no key; ``--offsets`` prefixes each with its offset), from
``--from-beginning``, ``--offset N`` or the end, until ``--count`` records or, without it, the end of the
partition (its high watermark) as it is when the command starts.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator

from placement_sim.cli.connection import add_connection_options, describe_error, run_with_client
from protocol.client import KafkaClient

__all__ = ["parse_record", "register"]

_PRODUCE_VERSION = 9
_FETCH_VERSION = 11
_LIST_OFFSETS_VERSION = 7
#: acks=0 is not offered: Kafka never answers it, and the command reports the offsets it got.
_ACKS = {"all": -1, "-1": -1, "1": 1}


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    produce = subparsers.add_parser(
        "produce",
        parents=[common],
        help="write records (key=value lines from stdin) to a partition",
        description="Write records to one partition: key=value lines from stdin, or --record.",
    )
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument("--partition", "-p", type=int, default=0, metavar="N", help="partition (default 0)")
    produce.add_argument(
        "--record", action="append", metavar="KEY=VALUE", help="a record (repeatable; no stdin)"
    )
    produce.add_argument("--acks", choices=sorted(_ACKS), default="all", help="acks (default all)")
    produce.add_argument(
        "--batch", type=int, default=500, metavar="N", help="records per batch (default 500)"
    )
    add_connection_options(produce)
    produce.set_defaults(func=produce_command)

    consume = subparsers.add_parser(
        "consume",
        parents=[common],
        help="read a partition's records as key=value lines",
        description="Read one partition's records, as key=value lines.",
    )
    consume.add_argument("topic", metavar="TOPIC")
    consume.add_argument("--partition", "-p", type=int, default=0, metavar="N", help="partition (default 0)")
    start = consume.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the log start offset")
    start.add_argument("--offset", type=int, metavar="N", help="start at offset N")
    consume.add_argument(
        "--count", type=int, metavar="N", help="stop after N records (default: at the partition's end)"
    )
    consume.add_argument("--offsets", action="store_true", help="prefix each record with its offset")
    add_connection_options(consume)
    consume.set_defaults(func=consume_command)


def parse_record(line: str) -> tuple[bytes | None, bytes]:
    """``key=value`` as (key, value); a line without ``=`` is a value without a key."""
    key, separator, value = line.partition("=")
    if not separator:
        return None, line.encode()
    return key.encode(), value.encode()


def _records(args: argparse.Namespace) -> Iterator[tuple[bytes | None, bytes]]:
    lines = args.record if args.record is not None else (line.rstrip("\n") for line in sys.stdin)
    for line in lines:
        if line:
            yield parse_record(line)


def produce_command(args: argparse.Namespace) -> int:
    from controller.records.batch import client_batch

    acks = _ACKS[args.acks]
    timeout_ms = int(args.timeout * 1000)

    async def action(client: KafkaClient) -> int:
        pending: list[tuple[bytes | None, bytes]] = []

        async def send() -> int:
            batch = client_batch(list(pending), int(time.time() * 1000))
            request = {
                "Acks": acks,
                "TimeoutMs": timeout_ms,
                "TopicData": [
                    {"Name": args.topic, "PartitionData": [{"Index": args.partition, "Records": batch}]}
                ],
            }
            count = len(pending)
            pending.clear()
            response = await client.send("ProduceRequest", request, version=_PRODUCE_VERSION)
            [partition] = response["Responses"][0]["PartitionResponses"]
            if partition["ErrorCode"]:
                print(
                    f"placement-sim: {args.topic}-{args.partition}: "
                    f"{describe_error(partition['ErrorCode'], partition.get('ErrorMessage'))}",
                    file=sys.stderr,
                )
                return 1
            base = partition["BaseOffset"]
            print(f"{args.topic}-{args.partition}: offsets {base}-{base + count - 1}")
            return 0

        for record in _records(args):
            pending.append(record)
            if len(pending) >= args.batch and await send():
                return 1
        if pending and await send():
            return 1
        return 0

    return run_with_client(args, action)


def consume_command(args: argparse.Namespace) -> int:
    from controller.records.records import iter_records

    async def action(client: KafkaClient) -> int:
        async def list_offset(timestamp: int) -> int | None:
            response = await client.send(
                "ListOffsetsRequest",
                {
                    "ReplicaId": -1,
                    "IsolationLevel": 0,
                    "Topics": [
                        {
                            "Name": args.topic,
                            "Partitions": [{"PartitionIndex": args.partition, "Timestamp": timestamp}],
                        }
                    ],
                },
                version=_LIST_OFFSETS_VERSION,
            )
            [partition] = response["Topics"][0]["Partitions"]
            if partition["ErrorCode"]:
                print(
                    f"placement-sim: {args.topic}-{args.partition}: {describe_error(partition['ErrorCode'], None)}",
                    file=sys.stderr,
                )
                return None
            return int(partition["Offset"])

        end = await list_offset(-1)
        if end is None:
            return 1
        if args.offset is not None:
            offset = args.offset
        elif args.from_beginning:
            start = await list_offset(-2)
            if start is None:
                return 1
            offset = start
        else:
            offset = end
        printed = 0
        while (args.count is None and offset < end) or (args.count is not None and printed < args.count):
            response = await client.send(
                "FetchRequest",
                {
                    "ReplicaId": -1,
                    "MaxWaitMs": 500,
                    "MinBytes": 1,
                    "MaxBytes": 1 << 20,
                    "Topics": [
                        {
                            "Topic": args.topic,
                            "Partitions": [
                                {
                                    "Partition": args.partition,
                                    "FetchOffset": offset,
                                    "PartitionMaxBytes": 1 << 20,
                                }
                            ],
                        }
                    ],
                },
                version=_FETCH_VERSION,
            )
            [partition] = response["Responses"][0]["Partitions"]
            if partition["ErrorCode"]:
                print(
                    f"placement-sim: {args.topic}-{args.partition}: {describe_error(partition['ErrorCode'], None)}",
                    file=sys.stderr,
                )
                return 1
            for record in iter_records(partition["Records"] or b""):
                if record.offset < offset:
                    continue
                if args.count is not None and printed >= args.count:
                    break
                if args.count is None and record.offset >= end:
                    break
                value = (record.value or b"").decode(errors="replace")
                text = value if record.key is None else f"{record.key.decode(errors='replace')}={value}"
                print(f"{record.offset}: {text}" if args.offsets else text)
                printed += 1
                offset = record.offset + 1
        return 0

    return run_with_client(args, action)
