"""``placement-sim produce`` / ``consume``: Kafka's console producer and consumer, over Kafka's protocol.

They read and print lines as Kafka's console tools do (``LineMessageReader`` and
``DefaultMessageFormatter`` in Kafka's tools). ``produce`` reads records from stdin (or ``--record``),
one a line, and by default a whole line is a record's value, with no key (``parse.key=false``);
``--property parse.key=true`` splits each line at the first ``key.separator`` (``--property
key.separator=SEP``, a tab by default), and ``-k SEP`` says both at once. A line without the separator is
an error, as in Kafka ("No key separator found on line number N: 'LINE'"): the lines before it are sent
and the command stops. Each line is sent as it comes (within ``--linger-ms``), to ``--partition`` or where
Kafka's partitioner puts it (:mod:`placement_sim.cli.producer`); the offsets each batch got are printed,
and one line on stderr for each record that could not be written.

``consume`` prints each record's value (``null`` for none), its key first with ``--property
print.key=true``, ``Partition:N`` and ``Offset:N`` first with ``print.partition`` / ``print.offset``;
``--offsets`` prefixes each with its offset. It reads ``--partition``, every partition, or its share of
them in ``--group``, and waits for new records until ``--max-messages`` were printed, none came for
``--timeout-ms``, or Ctrl-C (:mod:`placement_sim.cli.consumer`); then it prints ``Processed a total of N
messages`` on stderr, as Kafka's does.

Both retry what Kafka's clients retry (a leader moving, a broker crashing, a coordinator failing over)
with fresh metadata: the producer for ``--timeout`` seconds per record, the consumer while it waits;
``-v`` says what they wait for. Ctrl-C stops reading: the producer first sends what it has read (a second
Ctrl-C stops it at once); both then exit with 130.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from placement_sim.cli.connection import EXIT_INTERRUPTED, add_connection_options, run_with_session
from placement_sim.cli.options import positive_int

if TYPE_CHECKING:
    from placement_sim.cli.kafka_session import Session
    from placement_sim.cli.producer import Line

__all__ = ["parse_record", "register"]

_ACKS = {"all": -1, "-1": -1, "1": 1}
#: Kafka's default ``key.separator`` for both console tools.
_DEFAULT_SEPARATOR = "\t"
#: The ``--property`` names each command reads, with Kafka's defaults.
_PRODUCE_PROPERTIES = {"parse.key": "false", "key.separator": _DEFAULT_SEPARATOR}
_CONSUME_PROPERTIES = {
    "print.key": "false",
    "print.partition": "false",
    "print.offset": "false",
    "key.separator": _DEFAULT_SEPARATOR,
}


class _LineError(ValueError):
    """A line or ``--property`` the command cannot use: its message is printed as it is."""


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    produce = subparsers.add_parser(
        "produce",
        parents=[common],
        description="Write records to a topic, one a line from stdin (or --record), as "
        "kafka-console-producer does: a line is a value, or KEY<SEP>VALUE with -k SEP. Each line is sent as "
        "it comes; records go where Kafka's partitioner puts them (murmur2 of the key; a sticky partition "
        "for records without one) unless --partition says. Retriable errors are retried with fresh metadata "
        "for --timeout seconds (-v says what it waits for); Ctrl-C sends what was read, then exits 130.",
    )
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument(
        "--partition", "-p", type=int, metavar="N", help="write every record to partition N (default: by key)"
    )
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
    produce.add_argument(
        "--acks",
        "--request-required-acks",
        dest="acks",
        choices=sorted(_ACKS),
        default="all",
        help="acks (default all; with all the producer is idempotent, as Kafka's)",
    )
    produce.add_argument(
        "--linger-ms",
        type=int,
        default=1000,
        metavar="MS",
        help="how long a record waits for others to share its batch (linger.ms; default 1000, as "
        "kafka-console-producer's --timeout)",
    )
    produce.add_argument(
        "--batch-size",
        type=positive_int,
        default=16384,
        metavar="BYTES",
        help="a batch is sent once it holds this much (batch.size; default 16384)",
    )
    produce.add_argument(
        "--request-timeout-ms",
        type=positive_int,
        default=1500,
        metavar="MS",
        help="how long the broker may take over one Produce (default 1500, as kafka-console-producer)",
    )
    produce.add_argument(
        "--seed", type=int, metavar="N", help="seed of the sticky partition's choices (records without a key)"
    )
    produce.add_argument(
        "--transactional-id",
        metavar="ID",
        help="write the input as one transaction of ID (transactional.id; acks=all): committed at the end, "
        "aborted when a record fails or on Ctrl-C",
    )
    add_connection_options(produce)
    produce.set_defaults(func=produce_command)

    consume = subparsers.add_parser(
        "consume",
        parents=[common],
        description="Print a topic's records, one a line, as kafka-console-consumer does: the value, and "
        "the key first with --property print.key=true. Reads --partition, every partition, or its share in "
        "--group (committing its position); waits for new records until --max-messages, --timeout-ms "
        "without a record, or Ctrl-C. Retriable errors are retried with fresh metadata (-v says what it "
        "waits for).",
    )
    consume.add_argument("topic", metavar="TOPIC")
    consume.add_argument(
        "--partition", "-p", type=int, metavar="N", help="read partition N only (default: every partition)"
    )
    consume.add_argument(
        "--offset",
        type=_offset,
        metavar="earliest|latest|N",
        help="where partition N (--partition) starts (default latest, or earliest with --from-beginning)",
    )
    consume.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at the log start where no offset is committed (default: at the end)",
    )
    consume.add_argument(
        "--group", metavar="GROUP", help="join GROUP, read the partitions it gives, commit the position"
    )
    consume.add_argument(
        "--max-messages",
        "--max",
        dest="max_messages",
        type=positive_int,
        metavar="N",
        help="stop after N records",
    )
    consume.add_argument(
        "--timeout-ms",
        type=int,
        metavar="MS",
        help="stop when no record came for MS milliseconds (default: wait for ever)",
    )
    consume.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="print.key, print.partition, print.offset=true|false (default false), key.separator=SEP "
        "(default a tab)",
    )
    consume.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed: only the records of committed transactions, up to the last stable offset "
        "(default read_uncommitted: every record, as kafka-console-consumer)",
    )
    consume.add_argument("--offsets", action="store_true", help="prefix each record with its offset")
    add_connection_options(consume)
    consume.set_defaults(func=consume_command)


def _offset(text: str) -> int:
    """``--offset``: ``earliest`` (-2), ``latest`` (-1) or an offset, as kafka-console-consumer reads it."""
    named = {"earliest": -2, "latest": -1}
    if text.strip().lower() in named:
        return named[text.strip().lower()]
    try:
        value = int(text)
    except ValueError:
        value = -3
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"the provided offset value '{text}' is incorrect. Valid values are 'earliest', 'latest', or a "
            "non-negative long."
        )
    return value


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


# ---------------------------------------------------------------------------------------------- produce


def _stdin_lines(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
    """Reads stdin line by line (as typed, on a terminal) in a thread of its own; None at its end."""

    def read() -> None:
        try:
            while True:
                line = sys.stdin.readline()
                loop.call_soon_threadsafe(queue.put_nowait, line or None)
                if not line:
                    return
        except (RuntimeError, ValueError, OSError):  # the loop or stdin closed: the command is over
            return

    threading.Thread(target=read, name="placement-sim-stdin", daemon=True).start()


async def _input_lines(
    args: argparse.Namespace, interrupted: asyncio.Event
) -> AsyncIterator[tuple[int, str]]:
    """(line number, text) of ``--record`` or stdin until its end or Ctrl-C."""
    if args.record is not None:
        for number, text in enumerate(args.record, 1):
            yield number, text
        return
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    _stdin_lines(asyncio.get_running_loop(), queue)
    stop = asyncio.ensure_future(interrupted.wait())
    number = 0
    try:
        while True:
            get = asyncio.ensure_future(queue.get())
            await asyncio.wait([get, stop], return_when=asyncio.FIRST_COMPLETED)
            if not get.done():
                get.cancel()
                return
            text = get.result()
            if text is None:
                return
            number += 1
            yield number, text.rstrip("\n")
    finally:
        stop.cancel()


def produce_command(args: argparse.Namespace) -> int:
    from placement_sim.cli.producer import ConsoleProducer, Line

    try:
        separator = _separator(args)
    except _LineError as error:
        print(f"placement-sim: {error}", file=sys.stderr)
        return 1
    if args.linger_ms < 0:
        print("placement-sim: --linger-ms must not be negative", file=sys.stderr)
        return 2
    if args.transactional_id is not None and (_ACKS[args.acks] != -1 or not args.transactional_id):
        print(
            "placement-sim: --transactional-id needs a non-empty id and --acks all (a transactional "
            "producer is idempotent)",
            file=sys.stderr,
        )
        return 2

    async def action(session: Session, interrupted: asyncio.Event) -> int:
        producer = ConsoleProducer(
            session,
            args.topic,
            partition=args.partition,
            acks=_ACKS[args.acks],
            linger=args.linger_ms / 1000,
            batch_size=args.batch_size,
            request_timeout_ms=args.request_timeout_ms,
            delivery_timeout=args.timeout,
            seed=args.seed,
            transactional_id=args.transactional_id,
        )
        bad_line: list[str] = []

        async def records() -> AsyncIterator[Line]:
            async for number, text in _input_lines(args, interrupted):
                if not text:
                    continue
                try:
                    key, value = parse_record(text, separator, number)
                except _LineError as error:  # the lines before it are sent; the command stops there
                    bad_line.append(str(error))
                    return
                yield Line(number, key, value)

        status = await producer.run(records())
        for error in bad_line:
            print(f"placement-sim: {error}", file=sys.stderr)
        ended = await producer.end_transaction(
            commit=not interrupted.is_set() and not bad_line and not status
        )
        status = status or ended
        if interrupted.is_set():
            return EXIT_INTERRUPTED
        return 1 if bad_line else status

    return run_with_session(args, action, client_id="console-producer")


# ---------------------------------------------------------------------------------------------- consume


def _consume_problem(args: argparse.Namespace) -> str | None:
    """The option combinations kafka-console-consumer refuses, with its words."""
    if args.offset is not None and args.partition is None:
        return "The partition is required when offset is specified."
    if args.offset is not None and args.from_beginning:
        return "Options from-beginning and offset cannot be specified together."
    if args.group is not None and args.partition is not None:
        return "Options group and partition cannot be specified together."
    if args.timeout_ms is not None and args.timeout_ms < 0:
        return "--timeout-ms must not be negative"
    return None


def consume_command(args: argparse.Namespace) -> int:
    from placement_sim.cli.consumer import ConsoleConsumer, Formatter

    problem = _consume_problem(args)
    if problem is not None:
        print(f"placement-sim consume: {problem}", file=sys.stderr)
        return 2
    try:
        properties = _properties(args.property, _CONSUME_PROPERTIES)
    except _LineError as error:
        print(f"placement-sim: {error}", file=sys.stderr)
        return 1
    formatter = Formatter(
        print_key=_true(properties, "print.key"),
        print_partition=_true(properties, "print.partition"),
        print_offset=_true(properties, "print.offset"),
        separator=properties["key.separator"],
        offsets=args.offsets,
    )

    async def action(session: Session, interrupted: asyncio.Event) -> int:
        consumer = ConsoleConsumer(
            session,
            args.topic,
            formatter,
            partition=args.partition,
            start=args.offset,
            from_beginning=args.from_beginning,
            group=args.group,
            max_messages=args.max_messages,
            idle_timeout=None if args.timeout_ms is None else args.timeout_ms / 1000,
            out=lambda line: print(line, flush=True),
            read_committed=args.isolation_level == "read_committed",
        )
        running = asyncio.ensure_future(consumer.run())
        stop = asyncio.ensure_future(interrupted.wait())
        try:
            await asyncio.wait([running, stop], return_when=asyncio.FIRST_COMPLETED)
            if not running.done():
                running.cancel()
                await asyncio.gather(running, return_exceptions=True)
            else:
                running.result()  # Failed: printed by run_with_session
        finally:
            stop.cancel()
            await consumer.close()
            print(f"Processed a total of {consumer.printed} messages", file=sys.stderr)
        return EXIT_INTERRUPTED if interrupted.is_set() else 0

    return run_with_session(args, action, client_id="console-consumer")
