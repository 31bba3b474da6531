"""``placement-sim produce`` / ``consume``: write and read one partition's records over Kafka's protocol.

Both use the project's own client (:mod:`protocol.client`) on the ``--bootstrap`` connection alone: the
simulator serves Produce, Fetch and ListOffsets on its bootstrap listener as the partition's leader
would (against a real Kafka, point ``--bootstrap`` at the partition's leader).

They read and print lines as Kafka's console tools do (``LineMessageReader`` and
``DefaultMessageFormatter`` in Kafka's tools). ``produce`` reads records from stdin (or ``--record``),
one a line, and by default a whole line is a record's value, with no key (``parse.key=false``);
``--property parse.key=true`` splits each line at the first ``key.separator`` (``--property
key.separator=SEP``, a tab by default) into key and value, and ``-k SEP`` says both at once. A line
without the separator is an error, as in Kafka ("No key separator found on line number N: 'LINE'").
Records go in batches of ``--batch`` with ``--acks``; it prints the offsets each batch got.

``consume`` prints each record's value (``null`` for none), and its key before ``key.separator`` with
``--property print.key=true``; ``--offsets`` prefixes each with its offset. It starts at
``--from-beginning``, ``--offset N`` or the end, and reads until ``--max-messages N`` (``--max N``)
records or, without it, the end of the partition (its high watermark) as it is when the command starts.
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
#: Kafka's default ``key.separator`` for both console tools.
_DEFAULT_SEPARATOR = "\t"
#: The ``--property`` names each command reads, with Kafka's defaults.
_PRODUCE_PROPERTIES = {"parse.key": "false", "key.separator": _DEFAULT_SEPARATOR}
_CONSUME_PROPERTIES = {"print.key": "false", "key.separator": _DEFAULT_SEPARATOR}


class _LineError(ValueError):
    """A line or ``--property`` the command cannot use: its message is printed as it is."""


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    produce = subparsers.add_parser(
        "produce",
        parents=[common],
        help="write records (lines from stdin) to a partition",
        description="Write records to one partition, one a line from stdin (or --record), as "
        "kafka-console-producer does: a line is a value, or KEY<SEP>VALUE with -k SEP.",
    )
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument("--partition", "-p", type=int, default=0, metavar="N", help="partition (default 0)")
    produce.add_argument(
        "--record", action="append", metavar="LINE", help="a record's line (repeatable; no stdin)"
    )
    produce.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="parse.key=true|false (default false), key.separator=SEP (default a tab)",
    )
    produce.add_argument(
        "--key-separator",
        "-k",
        metavar="SEP",
        help="lines are KEY<SEP>VALUE: parse.key=true and key.separator=SEP",
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
        help="print a partition's records, one a line",
        description="Print one partition's records, one a line, as kafka-console-consumer does: the "
        "value, and the key first with --property print.key=true.",
    )
    consume.add_argument("topic", metavar="TOPIC")
    consume.add_argument("--partition", "-p", type=int, default=0, metavar="N", help="partition (default 0)")
    start = consume.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the log start offset")
    start.add_argument("--offset", type=int, metavar="N", help="start at offset N")
    consume.add_argument(
        "--max-messages",
        "--max",
        dest="max_messages",
        type=int,
        metavar="N",
        help="stop after N records (default: at the partition's end)",
    )
    consume.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="print.key=true|false (default false), key.separator=SEP (default a tab)",
    )
    consume.add_argument("--offsets", action="store_true", help="prefix each record with its offset")
    add_connection_options(consume)
    consume.set_defaults(func=consume_command)


def _properties(given: list[str], known: dict[str, str]) -> dict[str, str]:
    """``--property NAME=VALUE`` options over Kafka's defaults; a name not in ``known`` is an error."""
    out = dict(known)
    for item in given:
        name, separator, value = item.partition("=")
        if not separator:
            raise _LineError(f"--property {item}: expected NAME=VALUE")
        if name not in known:
            raise _LineError(f"--property {name}: not one of {', '.join(sorted(known))}")
        out[name] = value
    return out


def _true(properties: dict[str, str], name: str) -> bool:
    return properties[name].strip().lower() == "true"


def parse_record(line: str, separator: str | None = None, number: int = 1) -> tuple[bytes | None, bytes]:
    """A line as (key, value): the whole line is the value when ``separator`` is None (Kafka's
    ``parse.key=false``), else it splits at the first ``separator`` (``ValueError`` when there is none)."""
    if separator is None:
        return None, line.encode()
    key, found, value = line.partition(separator)
    if not found:
        raise _LineError(f"No key separator found on line number {number}: '{line}'")
    return key.encode(), value.encode()


def _separator(args: argparse.Namespace) -> str | None:
    """The key separator produce splits lines at (None: lines are values)."""
    properties = _properties(args.property, _PRODUCE_PROPERTIES)
    if args.key_separator is not None:
        return str(args.key_separator)
    return properties["key.separator"] if _true(properties, "parse.key") else None


def _records(args: argparse.Namespace, separator: str | None) -> Iterator[tuple[bytes | None, bytes]]:
    lines = args.record if args.record is not None else (line.rstrip("\n") for line in sys.stdin)
    for number, line in enumerate(lines, 1):
        if line:
            yield parse_record(line, separator, number)


def produce_command(args: argparse.Namespace) -> int:
    from controller.records.batch import client_batch

    acks = _ACKS[args.acks]
    timeout_ms = int(args.timeout * 1000)
    try:
        separator = _separator(args)
    except _LineError as error:
        print(f"placement-sim: {error}", file=sys.stderr)
        return 1

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

        try:
            for record in _records(args, separator):
                pending.append(record)
                if len(pending) >= args.batch and await send():
                    return 1
        except _LineError as error:  # the lines before it are sent; the command stops there
            if pending and await send():
                return 1
            print(f"placement-sim: {error}", file=sys.stderr)
            return 1
        if pending and await send():
            return 1
        return 0

    return run_with_client(args, action)


def consume_command(args: argparse.Namespace) -> int:
    from controller.records.records import iter_records

    try:
        properties = _properties(args.property, _CONSUME_PROPERTIES)
    except _LineError as error:
        print(f"placement-sim: {error}", file=sys.stderr)
        return 1
    print_key = _true(properties, "print.key")
    key_separator = properties["key.separator"]

    def text_of(data: bytes | None) -> str:
        return "null" if data is None else data.decode(errors="replace")

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
        limit = args.max_messages
        while (limit is None and offset < end) or (limit is not None and printed < limit):
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
                if limit is not None and printed >= limit:
                    break
                if limit is None and record.offset >= end:
                    break
                text = text_of(record.value)
                if print_key:
                    text = f"{text_of(record.key)}{key_separator}{text}"
                print(f"{record.offset}: {text}" if args.offsets else text)
                printed += 1
                offset = record.offset + 1
        return 0

    return run_with_client(args, action)
