"""``placement-sim simulate SCENARIO.toml [--seed N] [--json]``: plays a scenario file in process on a
virtual clock, without sockets (:mod:`controller.scenario.simulation`), and prints what happened in
order: each step, the events of the cluster's log (as ``placement-sim events`` prints them) and, at each
snapshot, a summary and the partition table of ``partitions describe``. The same file and seed print
the same bytes. A step that fails is printed with its error and the run carries on; the exit code is
then 1."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from controller.cluster import LeaderRecoveryState
from controller.events import Event, show_value
from controller.scenario import ScenarioError
from controller.scenario.player import StepResult
from controller.scenario.simulation import Simulation, simulate
from placement_sim.cli.commands.partitions import partition_row, table_lines
from placement_sim.cli.options import add_property_option, positive_int
from placement_sim.cli.scenario_file import read_scenario

__all__ = ["register", "simulation_json", "simulation_lines", "step_line"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "simulate",
        parents=[common],
        description="Play a scenario (TOML: cluster, settings, timed steps; docs/scenarios.md) on a virtual "
        "clock without sockets, printing the steps, the event log and the snapshots.",
    )
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument("--seed", type=int, metavar="N", help="simulator.seed (default: the file's, else 0)")
    p.add_argument(
        "--json", action="store_true", help="one JSON document (the same bytes for the same file and seed)"
    )
    p.add_argument(
        "--partitions",
        type=positive_int,
        metavar="N",
        help="every create-topic step that the placer places creates N partitions (a scaled run)",
    )
    add_property_option(p, "set any server property over the file's settings (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        scenario = read_scenario(args.scenario)
        if args.partitions is not None:
            scenario = scenario.with_partitions(args.partitions)
        simulation = asyncio.run(simulate(scenario, args.seed, dict(args.set)))
    except ScenarioError as exc:
        print(f"placement-sim: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(simulation_json(simulation), indent=1) + "\n")
    else:
        sys.stdout.write("".join(line + "\n" for line in simulation_lines(simulation)))
    return 1 if simulation.failed_steps else 0


def step_line(result: StepResult) -> str:
    """``10000 ms step 3: stop-broker 1 (crash)``, with ``FAILED`` and the error when it failed."""
    step = result.step
    name = f"step {step.index}" if step.index >= 0 else "cluster file"
    if result.error is not None:
        return f"{result.at_ms} ms {name} FAILED: {step.describe()}: {result.error}"
    return f"{result.at_ms} ms {name}: {step.describe()}"


def step_lines(result: StepResult) -> list[str]:
    """The step's line, its details and its snapshot (summary, then table), as printed."""
    lines = [step_line(result), *(f"  {d}" for d in result.details)]
    snapshot = result.snapshot
    if snapshot is not None:
        lines.append(f"  {snapshot.summary()}")
        if snapshot.table:
            rows = (
                partition_row(
                    name,
                    c.index,
                    c.leader,
                    c.leader_epoch,
                    c.partition_epoch,
                    c.replicas,
                    c.isr,
                    c.status,
                    c.leader_recovery_state == LeaderRecoveryState.RECOVERING,
                    c.high_watermark,
                    list(zip(c.replicas, c.leo, strict=True)),
                    elr=c.elr,
                    last_known_elr=c.last_known_elr,
                )
                for name, copies in snapshot.partitions_by_topic
                for c in copies
            )
            lines += [f"  {line}" for line in table_lines(rows)]
    return lines


def simulation_lines(simulation: Simulation) -> list[str]:
    scenario = simulation.scenario
    title = f"{scenario.name} ({scenario.source})" if scenario.name else scenario.source
    lines = [f"# scenario {title}, seed {simulation.seed}"]
    for entry in simulation.entries:
        if isinstance(entry, Event):
            lines.append(str(entry))
        else:
            lines += step_lines(entry)
    failed = len(simulation.failed_steps)
    lines.append(f"# end at {simulation.end_ms} ms; {failed} step(s) failed")
    return lines


def _event(event: Event) -> dict[str, Any]:
    return {
        "type": "event",
        "seq": event.seq,
        "time_ms": event.time,
        "kind": event.kind,
        "subject": event.subject,
        "changes": [[name, show_value(before), show_value(after)] for name, before, after in event.changes],
        "cause": event.cause,
    }


def _step(result: StepResult) -> dict[str, Any]:
    step = result.step
    entry: dict[str, Any] = {
        "type": "step",
        "index": step.index,
        "time_ms": result.at_ms,
        "action": step.action,
        "description": step.describe(),
        "error": result.error,
        "details": list(result.details),
    }
    snapshot = result.snapshot
    if snapshot is not None:
        entry["snapshot"] = {
            "label": snapshot.label,
            "partitions": snapshot.partitions,
            "offline": snapshot.offline,
            "under_replicated": snapshot.under_replicated,
            "leaders": {str(b): n for b, n in sorted(snapshot.leaders.items())},
            "topics": snapshot.topics,
        }
    return entry


def simulation_json(simulation: Simulation) -> dict[str, Any]:
    """The run as a JSON document: the scenario, seed, end, and the timeline of steps and events."""
    return {
        "scenario": simulation.scenario.name,
        "source": simulation.scenario.source,
        "seed": simulation.seed,
        "end_ms": simulation.end_ms,
        "failed_steps": len(simulation.failed_steps),
        "timeline": [_event(e) if isinstance(e, Event) else _step(e) for e in simulation.entries],
    }
