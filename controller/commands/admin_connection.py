"""Shared by the commands that talk to a running simulator: --bootstrap, --timeout, and error reporting."""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from protocol.client import ClientError, KafkaClient
from protocol.errors import error_by_code

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap",
        metavar="HOST:PORT",
        default=DEFAULT_BOOTSTRAP,
        help=f"the simulator (or any Kafka broker) to talk to (default {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="connect and request timeout (default 30)",
    )


def run_with_client(args: argparse.Namespace, action: Callable[[KafkaClient], Awaitable[int]]) -> int:
    """Connects to ``--bootstrap``, runs ``action`` and closes; connection problems print and return 1."""

    async def main() -> int:
        try:
            client = await KafkaClient.connect(
                args.bootstrap, connect_timeout=args.timeout, request_timeout=args.timeout
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
