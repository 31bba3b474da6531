"""A scenario run in process on a virtual clock, without sockets: ``placement-sim simulate``.

The controller is the server's own (:class:`controller.app.Controller`: the placer, the election policy,
the dynamics, the data path, the request faults), started with the scenario's brokers and settings and
``simulator.clock=virtual``; no listener is opened. The steps are scheduled on its clock
(:class:`~controller.scenario.player.ScenarioPlayer`) and the clock is moved to the scenario's end:
every step, session timeout, replication tick and election happens at its own virtual time, so the same
file and seed give the same event log, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.app import Controller
from controller.clock import VirtualClock
from controller.config import LISTENERS, ServerConfig
from controller.embedded import server_properties
from controller.events import Event
from controller.plugins.properties import ConfigError
from controller.scenario.player import StepResult
from controller.scenario.spec import Scenario

__all__ = ["DEFAULT_SEED", "Simulation", "config_of", "scenario_properties", "scenario_settings", "simulate"]

#: The seed of a scenario that names none (``[scenario] seed``, ``--seed``).
DEFAULT_SEED = 0


@dataclass(frozen=True, repr=False)
class Simulation:
    """A run: what happened, in order: the events of the cluster's log and the steps' results."""

    scenario: Scenario
    seed: int
    end_ms: int
    entries: tuple[Event | StepResult, ...]

    def __repr__(self) -> str:
        # Short: asyncio makes the repr of a finished task with its result (Runner.run checking the SIGINT
        # handler does, on Python 3.11), and a run of 100,000 partitions printed whole took seconds.
        return f"Simulation({self.scenario.source!r}, seed={self.seed}, end_ms={self.end_ms}, {len(self.entries)} entries)"

    @property
    def failed_steps(self) -> list[StepResult]:
        return [e for e in self.entries if isinstance(e, StepResult) and e.error is not None]


def scenario_settings(scenario: Scenario) -> dict[str, str]:
    """The server properties the file gives (``serve --scenario``): its brokers, settings and seed."""
    props = server_properties(brokers=scenario.brokers, seed=scenario.seed)
    del props[LISTENERS]
    props.update(scenario.settings)
    return props


def scenario_properties(
    scenario: Scenario,
    seed: int | None = None,
    overrides: Mapping[str, str] | None = None,
    clock: str | None = None,
) -> dict[str, str]:
    """The server properties a scenario runs with: its brokers and settings, the seed (``seed``, else the
    file's, else :data:`DEFAULT_SEED`), then ``overrides`` (the command line's ``--set``)."""
    chosen = seed if seed is not None else scenario.seed if scenario.seed is not None else DEFAULT_SEED
    props = server_properties(brokers=scenario.brokers, seed=chosen, clock=clock)
    props.update(scenario.settings)
    props.update(overrides or {})
    return props


def config_of(scenario: Scenario, props: Mapping[str, str]) -> ServerConfig:
    """The server configuration; a setting the server refuses is a ScenarioError at its line."""
    try:
        return ServerConfig.from_properties(props)
    except ConfigError as exc:
        key = exc.key
        if key is not None and key in scenario.settings:
            raise scenario.error(f"settings.{key}", str(exc)) from None
        raise


async def simulate(
    scenario: Scenario, seed: int | None = None, overrides: Mapping[str, str] | None = None
) -> Simulation:
    """Runs ``scenario`` to its end on a virtual clock (see the module docstring)."""
    props = scenario_properties(scenario, seed, overrides, clock="virtual")
    config = config_of(scenario, props)
    controller = await Controller.start(config)
    events = controller.cluster.events
    entries: list[Any] = []
    seen = 0

    def flush(upto: int) -> None:
        nonlocal seen
        if upto > seen:
            for event in events.iter_since(seen):
                if event.seq > upto:
                    break
                entries.append(event)
            seen = upto

    def on_step(result: StepResult) -> None:
        flush(result.seq_before)
        entries.append(result)
        flush(events.last_seq)

    try:
        clock = controller.clock
        assert isinstance(clock, VirtualClock)
        controller.scenarios.play(scenario, on_step=on_step)
        end = await clock.advance(scenario.duration_ms)
        flush(events.last_seq)
    finally:
        await controller.close()
    return Simulation(scenario, int(config.seed), end, tuple(entries))
