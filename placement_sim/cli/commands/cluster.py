"""``placement-sim cluster describe``: the cluster id, the controller and the brokers of a running simulator."""

from __future__ import annotations

import argparse
import sys

from placement_sim.cli.connection import (
    add_connection_options,
    describe_cluster,
    describe_error,
    run_with_client,
)
from protocol.client import KafkaClient

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    cluster = subparsers.add_parser(
        "cluster",
        description="Describe the cluster over Kafka's protocol (DescribeCluster).",
    )
    actions = cluster.add_subparsers(dest="cluster_action", metavar="ACTION", required=True)
    describe = actions.add_parser(
        "describe", parents=[common], help="cluster id, controller, brokers with listeners and racks"
    )
    add_connection_options(describe)
    describe.set_defaults(func=describe_command)


def describe_command(args: argparse.Namespace) -> int:
    async def action(client: KafkaClient) -> int:
        response = await describe_cluster(client)
        if response["ErrorCode"] != 0:
            print(
                f"placement-sim: {describe_error(response['ErrorCode'], response.get('ErrorMessage'))}",
                file=sys.stderr,
            )
            return 1
        print(f"Cluster ID: {response['ClusterId']}")
        print(f"Controller: {response['ControllerId']}")
        print(f"Brokers: {len(response['Brokers'])}")
        for broker in sorted(response["Brokers"], key=lambda b: b["BrokerId"]):
            rack = broker["Rack"] if broker["Rack"] is not None else "-"
            fenced = "\tfenced" if broker.get("IsFenced") else ""
            print(
                f"\tBroker: {broker['BrokerId']}\tAddress: {broker['Host']}:{broker['Port']}\tRack: {rack}{fenced}"
            )
        return 0

    return run_with_client(args, action)
