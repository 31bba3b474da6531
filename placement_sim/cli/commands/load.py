"""``placement-sim load TOPIC``: records arriving at every partition leader of a topic, the synthetic
produce load of the replication model (SimulatorProduceLoad, docs/control.md; a scenario's ``produce``
step), which moves log end offsets, the high watermark and the ISR as a real producer's records do."""

from __future__ import annotations

import argparse
import sys

from placement_sim.cli.connection import add_connection_options, run_with_client
from protocol.client import KafkaClient

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "load",
        parents=[common],
        description="Records arriving at every partition leader of TOPIC (the replication model's load, as a "
        "scenario's produce step); 0 stops it. For real records from a client, see produce.",
    )
    p.add_argument("topic", metavar="TOPIC")
    rate = p.add_mutually_exclusive_group(required=True)
    rate.add_argument("--records-per-s", type=float, metavar="R", help="records a second per partition")
    rate.add_argument(
        "--total-records-per-s", type=float, metavar="R", help="records a second spread over the partitions"
    )
    add_connection_options(p)
    p.set_defaults(func=load_command)


def load_command(args: argparse.Namespace) -> int:
    rate = args.records_per_s if args.records_per_s is not None else args.total_records_per_s
    if rate < 0:
        print("placement-sim load: the rate must not be negative", file=sys.stderr)
        return 2

    async def action(client: KafkaClient) -> int:
        per_partition = rate
        if args.total_records_per_s is not None:
            [topic] = await client.partition_state([args.topic])
            count = len(topic["Partitions"]) or 1
            per_partition = rate / count
        await client.produce_load(args.topic, per_partition)
        if per_partition == 0:
            print(f"Load on {args.topic} stopped.")
        else:
            print(f"Load on {args.topic}: {per_partition:g} records/s per partition.")
        return 0

    return run_with_client(args, action)
