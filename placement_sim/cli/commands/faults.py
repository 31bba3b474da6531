"""``placement-sim faults add|list|clear``: request faults of a running simulator (SimulatorFaultsAdd,
List, Clear), written in the compact syntax of ``simulator.faults`` (docs/control.md)."""

from __future__ import annotations

import argparse
import sys

from controller.faults import FaultSyntaxError, parse_faults
from placement_sim.cli.connection import add_connection_options, run_with_client
from protocol.client import KafkaClient

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    faults = subparsers.add_parser(
        "faults",
        description="Request faults: answer an error, late, never, or close the connection (docs/control.md).",
    )
    actions = faults.add_subparsers(dest="faults_action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add",
        parents=[common],
        help="add faults, e.g. 'error=NOT_CONTROLLER api=CreateTopics once'",
        description="Faults in the syntax of simulator.faults: an action (error=NAME, delay=MS, drop, "
        "close=before|after, blackhole), matches (api=NAME[@MIN-MAX], broker=ID, client=TEXT, topic=NAME, "
        "partition=N, group=NAME) and a trigger (once, call=N, times=N, always, p=P); several separated by ;.",
    )
    add.add_argument("spec", nargs="+", metavar="FAULT", help="the fault's words")
    listing = actions.add_parser("list", parents=[common], help="the faults, in order, with their counts")
    clear = actions.add_parser("clear", parents=[common], help="remove faults (all when no id is given)")
    clear.add_argument("ids", type=int, nargs="*", metavar="ID")
    for parser in (add, listing, clear):
        add_connection_options(parser)
        parser.set_defaults(func=faults_command)


def faults_command(args: argparse.Namespace) -> int:
    specs = []
    if args.faults_action == "add":
        try:
            specs = parse_faults(" ".join(args.spec))
        except FaultSyntaxError as exc:
            print(f"placement-sim: {exc}", file=sys.stderr)
            return 2
        if not specs:
            print("placement-sim: no fault given", file=sys.stderr)
            return 2

    async def action(client: KafkaClient) -> int:
        if args.faults_action == "add":
            ids = await client.add_faults(spec.to_wire() for spec in specs)
            for fault_id, spec in zip(ids, specs, strict=True):
                print(f"Added fault {fault_id}: {spec}")
        elif args.faults_action == "list":
            faults = await client.list_faults()
            print(f"{'ID':>4}  {'FIRED':>6}  {'CALLS':>6}  FAULT")
            for fault in faults:
                print(f"{fault['Id']:>4}  {fault['Fired']:>6}  {fault['Calls']:>6}  {fault['Spec']}")
        else:
            cleared = await client.clear_faults(args.ids or None)
            print(f"Cleared {cleared} fault(s).")
        return 0

    return run_with_client(args, action)
