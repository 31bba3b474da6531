"""``placement-sim clock advance MS``: moves a running simulator's virtual clock (SimulatorClockAdvance),
firing every timer on the way: session timeouts, replication ticks, delayed answers."""

from __future__ import annotations

import argparse

from placement_sim.cli.connection import add_connection_options, run_with_client
from protocol.client import KafkaClient

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    clock = subparsers.add_parser(
        "clock",
        description="Move the virtual clock of a simulator started with simulator.clock=virtual.",
    )
    actions = clock.add_subparsers(dest="clock_action", metavar="ACTION", required=True)
    advance = actions.add_parser("advance", parents=[common], help="move the clock MS milliseconds ahead")
    advance.add_argument("ms", type=int, metavar="MS")
    add_connection_options(advance)
    advance.set_defaults(func=advance_command)


def advance_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        print(f"Clock at {await client.advance_clock(args.ms)} ms.")
        return 0

    return run_with_client(args, action)
