"""``placement-sim scenario load FILE``: a running simulator plays a scenario file's steps from now on
(SimulatorScenarioLoad, docs/scenarios.md); its brokers and settings stay the server's."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from placement_sim.cli.connection import add_connection_options, run_with_client
from protocol.client import KafkaClient

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    scenario = subparsers.add_parser(
        "scenario",
        description="Scenario files (docs/scenarios.md) played by a running simulator.",
    )
    actions = scenario.add_subparsers(dest="scenario_action", metavar="ACTION", required=True)
    load = actions.add_parser(
        "load",
        parents=[common],
        help="schedule a scenario file's steps from now on",
        description="The server schedules the file's steps, each t after now on its clock; a failing step "
        "is logged and the others still run. The file's cluster and settings are not applied.",
    )
    load.add_argument("file", metavar="SCENARIO.toml")
    add_connection_options(load)
    load.set_defaults(func=load_command)


def load_command(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(
            f"placement-sim: cannot read scenario file {path}: {getattr(exc, 'strerror', None) or exc}",
            file=sys.stderr,
        )
        return 2

    async def action(client: KafkaClient) -> int:
        answer = await client.load_scenario(text, str(path))
        print(f"Loaded {answer['Steps']} step(s) from {path}, from {answer['StartMs']} ms.")
        if answer["Ignored"]:
            print(f"Not applied to a running server: {', '.join(answer['Ignored'])}.")
        return 0

    return run_with_client(args, action)
