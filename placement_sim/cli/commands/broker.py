"""``placement-sim broker stop|start|add|remove``: a running simulator's brokers, over its control APIs
(SimulatorBrokerStop/Start/Add/Remove, docs/control.md)."""

from __future__ import annotations

import argparse

from controller.dynamics import STOP_MODES
from placement_sim.cli.connection import add_connection_options, run_with_client
from protocol.client import KafkaClient

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    broker = subparsers.add_parser(
        "broker",
        help="stop, start, add and remove brokers of a running simulator",
        description="Stop, start, add and remove brokers of a running simulator (its control APIs).",
    )
    actions = broker.add_subparsers(dest="broker_action", metavar="ACTION", required=True)
    stop = actions.add_parser(
        "stop",
        parents=[common],
        help="stop a broker: crash, hang, isolate or a controlled shutdown",
        description="crash: connections closed, new ones refused; hang: reads, never answers; isolate: "
        "answers clients, the controller no longer hears it; controlled: a clean shutdown.",
    )
    stop.add_argument("broker", type=int, metavar="ID")
    stop.add_argument(
        "--mode", choices=list(STOP_MODES), default="crash", help="how it stops (default crash)"
    )
    start = actions.add_parser(
        "start", parents=[common], help="start a stopped broker, resume a hung or isolated one"
    )
    start.add_argument("broker", type=int, metavar="ID")
    add = actions.add_parser("add", parents=[common], help="register a new broker")
    add.add_argument("broker", type=int, metavar="ID")
    add.add_argument("--rack", metavar="RACK", help="its rack (default none)")
    remove = actions.add_parser("remove", parents=[common], help="unregister a broker")
    remove.add_argument("broker", type=int, metavar="ID")
    for parser in (stop, start, add, remove):
        add_connection_options(parser)
        parser.set_defaults(func=broker_command)


def broker_command(args: argparse.Namespace) -> int:
    broker = args.broker

    async def action(client: KafkaClient) -> int:
        if args.broker_action == "stop":
            await client.stop_broker(broker, args.mode)
            print(f"Broker {broker} stopped ({args.mode}).")
        elif args.broker_action == "start":
            await client.start_broker(broker)
            print(f"Broker {broker} started.")
        elif args.broker_action == "add":
            await client.add_broker(broker, args.rack)
            print(f"Broker {broker} added" + (f" on rack {args.rack}." if args.rack else "."))
        else:
            await client.remove_broker(broker)
            print(f"Broker {broker} removed.")
        return 0

    return run_with_client(args, action)
