"""A cluster with its dynamics in this process, on a virtual clock: for tests of elections and failures
that need no sockets."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from controller.clock import VirtualClock
from controller.cluster import Cluster, PartitionState
from controller.config import ServerConfig
from controller.dynamics import Dynamics
from controller.events import EventLog
from controller.placement.api import UsableBroker


class Sim:
    """Brokers, topics placed by hand, and the controls; ``p("foo", 0)`` is a partition's state."""

    def __init__(self, dynamics: Dynamics, clock: VirtualClock) -> None:
        self.dynamics = dynamics
        self.clock = clock
        self.cluster = dynamics.cluster

    def topic(self, name: str, replicas: Sequence[Sequence[int]], **configs: str) -> None:
        self.cluster.add_topic(
            name, replicas, {k.replace("_", "."): v for k, v in configs.items()}, now=self.clock.now()
        )

    def p(self, topic: str, index: int = 0) -> PartitionState:
        return self.cluster.partition(topic, index)

    def state(self, topic: str, index: int = 0) -> tuple[int, list[int]]:
        p = self.p(topic, index)
        return p.leader, list(p.isr)

    async def crash(self, *brokers: int, mode: str = "crash") -> None:
        for b in brokers:
            await self.dynamics.stop_broker(b, mode)

    async def fence(self, *brokers: int) -> None:
        """Crashes the brokers and lets their sessions expire (they are fenced one per event, in order)."""
        await self.crash(*brokers)
        await self.dynamics.advance(
            self.dynamics.config.session_timeout_ms + self.dynamics.config.heartbeat_interval_ms
        )

    async def restart(self, *brokers: int) -> None:
        """Starts the brokers again and lets them reach their first heartbeat (unfenced)."""
        for b in brokers:
            await self.dynamics.start_broker(b)
        await self.dynamics.advance(self.dynamics.config.heartbeat_interval_ms)

    async def close(self) -> None:
        await self.dynamics.close()
        await self.clock.close()


async def make_sim(
    brokers: Sequence[int | tuple[int, str | None] | tuple[int, str | None, bool]],
    policy: str = "kafka",
    properties: Mapping[str, str] | None = None,
    exclusive: bool = False,
) -> Sim:
    entries = []
    for b in brokers:
        if isinstance(b, int):
            entries.append(UsableBroker(b, None, False))
        else:
            entries.append(UsableBroker(b[0], b[1], bool(b[2]) if len(b) > 2 else False))
    props: dict[str, Any] = {
        "simulator.clock": "virtual",
        "simulator.election.policy": policy,
        **(properties or {}),
    }
    config = ServerConfig.from_properties(props)
    clock = VirtualClock(exclusive=exclusive)
    cluster = Cluster(entries, seed=0, events=EventLog(clock.now), static_configs=config.properties)
    dynamics = await Dynamics.start(config, cluster, clock, asyncio.Lock())
    return Sim(dynamics, clock)
