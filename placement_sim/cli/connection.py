"""Shared by the commands that talk to a running simulator: --bootstrap, --timeout, and error reporting.

A request that carries a server-side timeout (CreateTopics' ``timeoutMs``, CreateReplicaPlacement's) is
sent with ``--timeout``; the client itself waits :data:`ANSWER_MARGIN` seconds longer, so that the
server's REQUEST_TIMED_OUT reaches the user instead of a client-side timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from placement_sim.cli.options import add_bootstrap_option
from protocol.client import ClientError, KafkaClient
from protocol.errors import error_by_code

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
