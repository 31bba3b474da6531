"""``placement-sim serve``: runs the simulator until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING

from controller.assembly import create_server
from controller.config import LISTENERS, PLACER, SEED, ConfigError, ServerConfig
from controller.config.values import parse_listener
from controller.eventloop import loop_factory, loop_name
from controller.offload import collect_as_a_server
from placement_sim.cli.options import add_property_option

if TYPE_CHECKING:
    from controller.scenario import Scenario
    from controller.scenario.player import StepResult


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "serve",
        parents=[common],
        description="Run the simulator. With no options: 6 brokers in 3 racks, the striped placer, 127.0.0.1:9092.",
        epilog="The cluster: --set simulator.brokers=0:rack-a,1:rack-b,2:rack-c (ID or ID:RACK, comma-separated; "
        "--set simulator.brokers=0,1,2 for brokers without racks), --set simulator.brokers.fenced=2 for brokers "
        "that start fenced. Every setting, its default and meaning: placement-sim settings "
        "(docs/configuration.md).",
    )
    p.add_argument("--config", metavar="FILE", help="server.properties file")
    p.add_argument(
        "--listen",
        metavar="[NAME://]HOST:PORT",
        help="listener address (port 0 picks a free port); without NAME:// the configured listener's name, "
        "and so its security protocol, is kept",
    )
    p.add_argument(
        "--placer", metavar="NAME", help="replica.placer.class.name (short name, dotted path or file.py)"
    )
    p.add_argument(
        "--seed", type=int, metavar="N", help="simulator.seed: makes every placement deterministic"
    )
    p.add_argument(
        "--scenario",
        metavar="FILE",
        help="play a scenario file (docs/scenarios.md): its brokers and settings configure the server (the "
        "options above win), its steps fire at their times after start",
    )
    add_property_option(p, "set any property (repeatable)")
    p.set_defaults(func=run)


def overrides_from(args: argparse.Namespace) -> dict[str, str]:
    overrides: dict[str, str] = dict(args.set)
    if args.listen:
        overrides[LISTENERS] = args.listen
    if args.placer:
        overrides[PLACER] = args.placer
    if args.seed is not None:
        overrides[SEED] = str(args.seed)
    return overrides


def run(args: argparse.Namespace) -> int:
    overrides = overrides_from(args)
    scenario = None
    if args.scenario:  # imported only when asked for: a server starts sooner without
        from controller.scenario import ScenarioError
        from controller.scenario.simulation import scenario_settings
        from placement_sim.cli.scenario_file import read_scenario

        try:
            scenario = read_scenario(args.scenario)
        except ScenarioError as exc:
            print(f"placement-sim: {exc}", file=sys.stderr)
            return 2
        overrides = {**scenario_settings(scenario), **overrides}
    try:
        if args.listen and "://" not in args.listen:
            parse_listener(args.listen, "--listen")  # a mistake is told in the words the user typed
            # The address moves, the listener stays what the configuration makes it: a SASL_SSL listener
            # is not served as PLAINTEXT because its address was given on the command line.
            configured = ServerConfig.load(
                args.config, {k: v for k, v in overrides.items() if k != LISTENERS}
            )
            overrides[LISTENERS] = f"{configured.listener.name}://{args.listen}"
        config = ServerConfig.load(args.config, overrides)
    except ConfigError as exc:
        if scenario is None or exc.key not in scenario.settings:
            raise
        print(f"placement-sim: {scenario.error(f'settings.{exc.key}', str(exc))}", file=sys.stderr)
        return 2
    try:
        with asyncio.Runner(loop_factory=loop_factory(config.event_loop)) as runner:
            return runner.run(_serve(config, scenario))
    except BrokenPipeError:
        raise  # its reader went away: handled as for every command
    except OSError as exc:
        print(f"placement-sim: cannot listen on {config.listener}: {exc.strerror or exc}", file=sys.stderr)
        return 2


async def _serve(config: ServerConfig, scenario: Scenario | None = None) -> int:
    server = await create_server(config)
    await server.start()
    collect_as_a_server()  # this process only serves
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    brokers = ", ".join(
        f"{b.id}{'@' + b.rack if b.rack else ''}{' (fenced)' if b.fenced else ''}" for b in config.brokers
    )
    print(
        f"placer {server.controller.placements.placer_label}; brokers {brokers}; "
        f"event loop {loop_name(asyncio.get_running_loop())}",
        flush=True,
    )
    protocol = config.listener.security_protocol
    print(f"listening on {server.bootstrap} ({protocol})", flush=True)
    endpoints = server.endpoints
    brokers_on = ", ".join(f"{b}={h}:{p}" for b, (h, p) in sorted(endpoints.items()))
    print(f"brokers on {brokers_on} ({protocol})", flush=True)
    if scenario is not None:
        start = server.controller.scenarios.play(scenario, on_step=_print_step).start_ms
        print(f"scenario {scenario.source}: {len(scenario.steps)} step(s) from {start} ms", flush=True)
    serving = asyncio.ensure_future(server.serve_forever())
    await stop.wait()
    serving.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await serving
    await server.stop()
    print("stopped", flush=True)
    return 0


async def _print_step(result: StepResult) -> None:
    """A scenario step's line (and snapshot) as ``simulate`` prints it; a failed one says why. The table
    of a big snapshot is formatted off the event loop (its copies of the partitions do not change)."""
    from controller.offload import off_loop
    from placement_sim.cli.commands.simulate import step_lines

    size = result.snapshot.partitions if result.snapshot is not None and result.snapshot.table else 0
    lines = await off_loop(size, step_lines, result)
    print("\n".join(lines), flush=True)
