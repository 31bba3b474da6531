"""``placement-sim transactions list|describe``: a running simulator's transactions, as Kafka's
``kafka-transactions.sh`` shows them.

- ``list [--state S]... [--producer-id N]... [--duration-ms MS]``: ListTransactions (the bootstrap
  listener answers for every broker), then each transactional id's coordinator (FindCoordinator):
  ``TransactionalId Coordinator ProducerId TransactionState``;
- ``describe --transactional-id ID``: DescribeTransactions: ``CoordinatorId TransactionalId ProducerId
  ProducerEpoch TransactionState TransactionTimeoutMs CurrentTransactionStartTimeMs
  TransactionDurationMs TopicPartitions`` (``None`` and -1 where no transaction is open).

An error the server answers is printed with its name and the command exits 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from placement_sim.cli.connection import add_connection_options, describe_error, run_with_client
from protocol.client import KafkaClient

__all__ = ["register"]

_TRANSACTION_KEY = 1


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    command = subparsers.add_parser(
        "transactions",
        parents=[common],
        description="The transactional ids the coordinators hold, and one transaction's state.",
    )
    actions = command.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every transactional id, filtered")
    listing.add_argument("--state", action="append", default=[], help="only this state (repeatable)")
    listing.add_argument(
        "--producer-id", type=int, action="append", default=[], help="only this producer id (repeatable)"
    )
    listing.add_argument(
        "--duration-ms",
        type=int,
        default=-1,
        help="only transactions open longer than this (ListTransactions v1)",
    )
    add_connection_options(listing)
    listing.set_defaults(func=list_command)
    describe = actions.add_parser("describe", help="one transactional id's state")
    describe.add_argument("--transactional-id", required=True, help="the transactional id")
    add_connection_options(describe)
    describe.set_defaults(func=describe_command)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [list(header), *[[str(v) for v in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


async def _coordinators(client: KafkaClient, ids: list[str]) -> dict[str, int]:
    if not ids:
        return {}
    answer = await client.send(
        "FindCoordinatorRequest", {"KeyType": _TRANSACTION_KEY, "CoordinatorKeys": ids}
    )
    return {c["Key"]: c["NodeId"] for c in answer["Coordinators"]}


def list_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        body = {
            "StateFilters": args.state,
            "ProducerIdFilters": args.producer_id,
            "DurationFilter": args.duration_ms,
        }
        answer = await client.send("ListTransactionsRequest", body)
        if answer["ErrorCode"]:
            print(f"placement-sim: {describe_error(answer['ErrorCode'], None)}", file=sys.stderr)
            return 1
        for unknown in answer["UnknownStateFilters"]:
            print(f"placement-sim: no state named {unknown!r}", file=sys.stderr)
        states = sorted(answer["TransactionStates"], key=lambda s: s["TransactionalId"])
        coordinators = await _coordinators(client, [s["TransactionalId"] for s in states])
        rows = [
            (
                s["TransactionalId"],
                coordinators.get(s["TransactionalId"], -1),
                s["ProducerId"],
                s["TransactionState"],
            )
            for s in states
        ]
        print(_table(("TransactionalId", "Coordinator", "ProducerId", "TransactionState"), rows))
        return 0

    return run_with_client(args, action)


def describe_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        answer = await client.send(
            "DescribeTransactionsRequest", {"TransactionalIds": [args.transactional_id]}
        )
        [state] = answer["TransactionStates"]
        if state["ErrorCode"]:
            print(f"placement-sim: {describe_error(state['ErrorCode'], None)}", file=sys.stderr)
            return 1
        coordinator = (await _coordinators(client, [args.transactional_id])).get(args.transactional_id, -1)
        start = state["TransactionStartTimeMs"]
        duration = int(time.time() * 1000) - start if start >= 0 else -1
        partitions = ",".join(f"{t['Topic']}-{p}" for t in state["Topics"] for p in t["Partitions"])
        header = (
            "CoordinatorId",
            "TransactionalId",
            "ProducerId",
            "ProducerEpoch",
            "TransactionState",
            "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs",
            "TransactionDurationMs",
            "TopicPartitions",
        )
        row = (
            coordinator,
            state["TransactionalId"],
            state["ProducerId"],
            state["ProducerEpoch"],
            state["TransactionState"],
            state["TransactionTimeoutMs"],
            start if start >= 0 else "None",
            duration if duration >= 0 else "None",
            partitions,
        )
        print(_table(header, [row]))
        return 0

    return run_with_client(args, action)
