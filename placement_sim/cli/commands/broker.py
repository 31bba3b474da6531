"""``placement-sim broker stop|start|add|remove|slow``: a running simulator's brokers, over its control APIs
(SimulatorBrokerStop/Start/Add/Remove, and SimulatorReplication for a slow follower: docs/control.md)."""

from __future__ import annotations

import argparse
import sys

from controller.dynamics import STOP_MODES
from placement_sim.cli.connection import add_connection_options, run_with_client
from protocol.client import KafkaClient

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    broker = subparsers.add_parser(
        "broker",
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
    slow = actions.add_parser(
        "slow",
        parents=[common],
        help="make a broker's followers copy late or slowly (a slow follower)",
        description="How the broker's follower replicas copy from their leaders: --lag-ms behind them, at most "
        "--records-per-s records a second per partition (0: they copy nothing). A follower that falls behind "
        "leaves the ISR after replica.lag.time.max.ms. --lag-ms 0 --unlimited undoes it.",
    )
    slow.add_argument("broker", type=int, metavar="ID")
    slow.add_argument("--lag-ms", type=int, metavar="N", help="copy N ms behind the leader")
    rate = slow.add_mutually_exclusive_group()
    rate.add_argument(
        "--records-per-s", type=float, metavar="R", help="copy at most R records/s per partition"
    )
    rate.add_argument("--unlimited", action="store_true", help="no limit on the copy rate (the default)")
    for parser in (stop, start, add, remove, slow):
        add_connection_options(parser)
        parser.set_defaults(func=broker_command)


async def _slow(client: KafkaClient, args: argparse.Namespace) -> int:
    if args.lag_ms is None and args.records_per_s is None and not args.unlimited:
        print("placement-sim broker slow: give --lag-ms, --records-per-s or --unlimited", file=sys.stderr)
        return 2
    if (args.lag_ms is not None and args.lag_ms < 0) or (
        args.records_per_s is not None and args.records_per_s < 0
    ):
        print("placement-sim broker slow: --lag-ms and --records-per-s must not be negative", file=sys.stderr)
        return 2
    rate: float | None = -1  # unchanged
    if args.unlimited:
        rate = None
    elif args.records_per_s is not None:
        rate = args.records_per_s
    await client.set_replication(args.broker, args.lag_ms, rate)
    said = []
    if args.lag_ms is not None:
        said.append(f"{args.lag_ms} ms behind their leaders")
    if args.unlimited:
        said.append("at any rate")
    elif args.records_per_s is not None:
        said.append(f"at most {args.records_per_s:g} records/s per partition")
    print(f"Broker {args.broker}'s followers copy {' and '.join(said)}.")
    return 0


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
        elif args.broker_action == "remove":
            await client.remove_broker(broker)
            print(f"Broker {broker} removed.")
        else:
            return await _slow(client, args)
        return 0

    return run_with_client(args, action)
