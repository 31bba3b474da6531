"""Shared by the commands that talk to a running simulator: --bootstrap, --timeout, and error reporting.

A request that carries a server-side timeout (CreateTopics' ``timeoutMs``, CreateReplicaPlacement's) is
sent with ``--timeout``; the client itself waits :data:`ANSWER_MARGIN` seconds longer, so that the
server's REQUEST_TIMED_OUT reaches the user instead of a client-side timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from placement_sim.cli.options import add_bootstrap_option
from protocol.client import ClientError, KafkaClient
from protocol.errors import error_by_code

if TYPE_CHECKING:
    from placement_sim.cli.kafka_session import Session

#: The exit status of a command stopped by Ctrl-C (SIGINT), as a shell reports it.
EXIT_INTERRUPTED = 130

#: How much longer than the server-side timeout the client waits for an answer, in seconds.
ANSWER_MARGIN = 5.0


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_option(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="connect timeout, and the timeout the server gets for the request (default 30)",
    )


def run_with_client(args: argparse.Namespace, action: Callable[[KafkaClient], Awaitable[int]]) -> int:
    """Connects to ``--bootstrap``, runs ``action`` and closes; connection problems print and return 1."""

    async def main() -> int:
        try:
            client = await KafkaClient.connect(
                args.bootstrap, connect_timeout=args.timeout, request_timeout=args.timeout + ANSWER_MARGIN
            )
        except ClientError as exc:
            print(f"placement-sim: {exc}", file=sys.stderr)
            return 1
        try:
            return await action(client)
        except ClientError as exc:
            print(f"placement-sim: {exc}", file=sys.stderr)
            return 1
        finally:
            await client.close()

    return asyncio.run(main())


def run_with_session(
    args: argparse.Namespace,
    action: Callable[[Session, asyncio.Event], Awaitable[int]],
    client_id: str = "placement-sim-client",
) -> int:
    """Connects a :class:`~placement_sim.cli.kafka_session.Session` to ``--bootstrap`` and runs
    ``action(session, interrupted)`` (its connections identified as ``client_id``): the first Ctrl-C sets ``interrupted`` (the action finishes what it
    must and returns), a second one stops it at once (exit 130). A connection that cannot be made, or a
    request that failed for good (``Failed``), prints one line and exits 1."""
    from placement_sim.cli.kafka_session import Failed, Session

    async def main() -> int:
        loop = asyncio.get_running_loop()
        interrupted = asyncio.Event()
        task = asyncio.current_task()

        def on_interrupt() -> None:
            if interrupted.is_set() and task is not None:
                task.cancel()
            interrupted.set()

        handled = False
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop.add_signal_handler(signal.SIGINT, on_interrupt)
            handled = True
        try:
            try:
                session = await Session.connect(args.bootstrap, args.timeout, client_id)
            except ClientError as exc:
                print(f"placement-sim: {exc}", file=sys.stderr)
                return 1
            try:
                return await action(session, interrupted)
            except Failed as failure:
                print(f"placement-sim: {failure}", file=sys.stderr)
                return 1
            finally:
                await session.close()
        except asyncio.CancelledError:
            return EXIT_INTERRUPTED
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGINT)

    return asyncio.run(main())


def describe_error(code: int, message: str | None) -> str:
    """``NAME (code): message`` for an error code from a response (the table's message when it has none)."""
    error = error_by_code(code)
    return f"{error.name} ({code}): {message or error.message}"


def kafka_uuid(value: uuid.UUID) -> str:
    """A topic id the way Kafka prints it: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


async def describe_cluster(client: KafkaClient) -> dict[str, Any]:
    """DescribeCluster in the newest version both sides speak, fenced brokers included (v2)."""
    request = {"IncludeClusterAuthorizedOperations": False, "EndpointType": 1, "IncludeFencedBrokers": True}
    return await client.send("DescribeClusterRequest", request, version=client.choose_version(60))
