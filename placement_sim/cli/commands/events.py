"""``placement-sim events [--since N] [--follow]``: a running simulator's event log (SimulatorEvents), one
event a line as ``ServerThread.events()`` prints them; ``--follow`` keeps asking for new ones."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from controller.events import Event
from placement_sim.cli.connection import add_connection_options, run_with_client
from protocol.client import KafkaClient

__all__ = ["event_line", "register"]

#: Events asked for per request.
PAGE = 10000


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    events = subparsers.add_parser(
        "events",
        parents=[common],
        description="Every change of broker and partition state, in order, with its clock time and cause.",
    )
    events.add_argument("--since", type=int, default=0, metavar="SEQ", help="events after this one")
    events.add_argument("--follow", "-f", action="store_true", help="keep showing new events until stopped")
    events.add_argument(
        "--interval", type=float, default=0.2, metavar="SECONDS", help="how often --follow asks (default 0.2)"
    )
    add_connection_options(events)
    events.set_defaults(func=events_command)


def event_line(event: dict[str, Any]) -> str:
    """One SimulatorEvents entry as the in-process log prints it."""
    changes = tuple((c["Field"], c["Before"], c["After"]) for c in event["Changes"])
    return str(Event(event["Seq"], event["TimeMs"], event["Kind"], event["Subject"], changes, event["Cause"]))


def events_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        position = args.since
        while True:
            last, events = await client.events(position, PAGE)
            for event in events:
                print(event_line(event), flush=args.follow)
            if events:
                position = events[-1]["Seq"]
            if position >= last and not args.follow:
                return 0
            if position >= last:
                await asyncio.sleep(args.interval)

    return run_with_client(args, action)
