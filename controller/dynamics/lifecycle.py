"""Brokers that stop, come back, join and leave, and how the controller notices.

Four ways to stop a broker (``stop_broker(id, mode)``):

- ``crash``: its listener closes every connection and refuses new ones;
- ``hang``: its listener accepts and reads but never answers (a suspended process);
- ``isolate``: it still answers clients, from the metadata it had, but the controller no longer hears it;
- ``controlled``: a clean shutdown.

Kafka's style (KRaft): brokers heartbeat every ``broker.heartbeat.interval.ms``; one the controller has
not heard from for ``broker.session.timeout.ms`` after its last heartbeat is fenced (one broker per
controller event), which removes it from every ISR and moves its leaders. A controlled shutdown moves
its leaders and ISR memberships first, then the broker stops at its next heartbeat. A broker that comes
back registers again (a new broker epoch; a new process must wait until the old session has expired)
and is unfenced at its first heartbeat, which elects leaders for the partitions that have none. Brokers
added at runtime start fenced and are unfenced at their first heartbeat.

Fluvio's style (its SC): an SPU is offline as soon as its connection to the SC drops (a crash, a
shutdown) or once it has been silent for ``simulator.election.fluvio.health.timeout.ms`` (hung,
isolated); going offline starts an election for every replica set it led and takes it out of the live
replica sets it followed in. An SPU that comes back is online at once and starts an election for every
replica set that is Offline.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from controller.clock import Clock, Timer
from controller.cluster import NO_LEADER, Cluster, PartitionStatus, Process
from controller.config import ServerConfig
from controller.dynamics.replication import Replication
from controller.election.api import Trigger
from controller.election.rules import target_isr_without
from controller.election.service import Change, ElectionService

log = logging.getLogger(__name__)

__all__ = ["STOP_MODES", "FluvioLifecycle", "KafkaLifecycle", "Lifecycle", "Network"]

#: ``stop_broker`` modes, and the process state each leaves the broker in.
STOP_MODES = {
    "crash": Process.CRASHED,
    "hang": Process.HUNG,
    "isolate": Process.ISOLATED,
    "controlled": Process.STOPPED,
}


class Network(Protocol):
    """The server side of a broker's process: its listener follows the process state."""

    async def broker_changed(self, broker_id: int, process: Process | None) -> None:
        """``process`` None: the broker was removed (its listener goes away)."""


class Lifecycle:
    """Brokers' registration and liveness: the controls; how the controller (:class:`KafkaLifecycle`) or
    the SC (:class:`FluvioLifecycle`) notices is the subclasses'."""

    def __init__(
        self,
        config: ServerConfig,
        cluster: Cluster,
        clock: Clock,
        elections: ElectionService,
        replication: Replication,
        network: Network | None = None,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.elections = elections
        self.replication = replication
        self.network = network
        self._timers: dict[int, Timer] = {}
        #: Runs a controller event (under the controller's lock); set by the owner.
        self.run_event: Callable[[Callable[[], Awaitable[None]]], Awaitable[None]] = _run_now

    async def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _schedule(self, broker: int, when: int, action: Callable[[], Awaitable[None]], name: str) -> None:
        old = self._timers.pop(broker, None)
        if old is not None:
            old.cancel()

        async def fire() -> None:
            self._timers.pop(broker, None)
            await self.run_event(action)

        self._timers[broker] = self.clock.call_at(when, fire, name)

    def _cancel(self, broker: int) -> None:
        timer = self._timers.pop(broker, None)
        if timer is not None:
            timer.cancel()

    def _last_heartbeat(self, broker: int, now: int) -> int:
        b = self.cluster.broker_state(broker)
        assert b is not None
        interval = self.config.heartbeat_interval_ms
        return b.registered_at + (now - b.registered_at) // interval * interval

    def _next_heartbeat(self, broker: int, now: int) -> int:
        return self._last_heartbeat(broker, now) + self.config.heartbeat_interval_ms

    async def _network(self, broker: int, process: Process | None) -> None:
        if self.network is not None:
            await self.network.broker_changed(broker, process)

    def _require(self, broker: int) -> None:
        b = self.cluster.broker_state(broker)
        if b is None or not b.registered:
            raise KeyError(f"no broker {broker} is registered")

    # ------------------------------------------------------------------------------------- controls

    async def stop_broker(self, broker: int, mode: str) -> None:
        if mode not in STOP_MODES:
            raise ValueError(f"mode must be one of {', '.join(STOP_MODES)}, not {mode!r}")
        self._require(broker)
        b = self.cluster.broker_state(broker)
        assert b is not None
        if b.process in (Process.CRASHED, Process.STOPPED):
            raise ValueError(f"broker {broker} is already stopped ({b.process.value})")
        if mode == "controlled":
            await self._controlled_shutdown(broker)
            return
        process = STOP_MODES[mode]
        self.cluster.update_broker(broker, f"stop_broker({mode})", process=process)
        await self._network(broker, process)
        if b.fenced:
            return  # the controller already counts it out
        await self._stopped(broker, process, self.clock.now())

    async def start_broker(self, broker: int) -> None:
        self._require(broker)
        b = self.cluster.broker_state(broker)
        assert b is not None
        now = self.clock.now()
        if b.process in (Process.CRASHED, Process.STOPPED):
            await self._network(broker, Process.UP)
            await self._restarted(broker, now)
            return
        if b.process in (Process.HUNG, Process.ISOLATED):
            self.cluster.update_broker(broker, "resumed", process=Process.UP)
            await self._network(broker, Process.UP)
            self._cancel(broker)
            if b.fenced or b.in_controlled_shutdown:
                await self._resumed(broker, now)
            return
        if b.in_controlled_shutdown:
            self._cancel(broker)  # the old process's shutdown is over: it will not stop the new one
            await self._restarted(broker, now)
            return
        if b.held_fenced:
            self.cluster.update_broker(broker, "started", held_fenced=False)
            await self._held_start(broker, now)

    async def add_broker(self, broker: int, rack: str | None) -> None:
        existing = self.cluster.broker_state(broker)
        if existing is not None and existing.registered:
            raise ValueError(f"broker {broker} is already registered")
        if not 0 <= broker <= 2**31 - 1:
            raise ValueError(f"broker id {broker} is out of range")
        now = self.clock.now()
        self.cluster.add_broker(broker, rack, now, "broker registered")
        await self._network(broker, Process.UP)
        await self._registered(broker, now)

    async def remove_broker(self, broker: int) -> None:
        self._require(broker)
        self._cancel(broker)
        await self._unregistering(broker)
        self.cluster.update_broker(broker, "broker unregistered", registered=False, process=Process.STOPPED)
        await self._network(broker, None)

    # ------------------------------------------------------------------------------------- the style's

    async def _controlled_shutdown(self, broker: int) -> None:
        """``stop_broker(broker, "controlled")``."""
        raise NotImplementedError

    async def _stopped(self, broker: int, process: Process, now: int) -> None:
        """The unfenced ``broker``'s process stopped serving (crashed, hung) or went silent (isolated)."""
        raise NotImplementedError

    async def _restarted(self, broker: int, now: int) -> None:
        """A crashed or stopped broker's new process is up (its listener too); or a new process of a
        broker in controlled shutdown replaces the old one (which stopped meanwhile)."""
        raise NotImplementedError

    async def _resumed(self, broker: int, now: int) -> None:
        """A broker that was hung or isolated is heard from again: fenced meanwhile, or in the middle of a
        controlled shutdown."""
        raise NotImplementedError

    async def _held_start(self, broker: int, now: int) -> None:
        """A broker kept fenced from the start (``simulator.brokers.fenced``) is started."""
        raise NotImplementedError

    async def _registered(self, broker: int, now: int) -> None:
        """A broker added at runtime is registered (fenced)."""
        raise NotImplementedError

    async def _unregistering(self, broker: int) -> None:
        """``broker`` is about to be unregistered."""
        raise NotImplementedError


class KafkaLifecycle(Lifecycle):
    """Kafka's KRaft controller: heartbeats, the session timeout, fencing and controlled shutdown."""

    async def _stopped(self, broker: int, process: Process, now: int) -> None:
        last = self._last_heartbeat(broker, now)
        self._schedule(
            broker,
            last + self.config.session_timeout_ms,
            lambda: self._session_expired(broker),
            f"session timeout of broker {broker}",
        )

    async def _restarted(self, broker: int, now: int) -> None:
        b = self.cluster.broker_state(broker)
        assert b is not None
        if b.in_controlled_shutdown:
            # A new process of a broker in controlled shutdown registers at once, its old session valid
            # or not (ClusterControlManager.registerBroker since Kafka 4.1, KAFKA-19047).
            await self._register_again(broker, "new process registered; the controlled shutdown is over")
            return
        if not b.fenced and broker in self._timers:
            # The old process's session is still valid: the new one registers once it has expired.
            self.cluster.update_broker(
                broker, "new process started; waits for the old session to expire", process=Process.UP
            )
            return
        # A process that crashed left no clean-shutdown mark: its registration says so (Kafka's
        # previousBrokerEpoch), and the controller takes it out of the ELR.
        await self._register_again(broker, "new process registered", unclean=b.process is Process.CRASHED)

    async def _resumed(self, broker: int, now: int) -> None:
        b = self.cluster.broker_state(broker)
        assert b is not None
        if b.in_controlled_shutdown:
            # The process goes on with the shutdown it had begun: its heartbeats still ask to shut down,
            # and the controller lets it at the next one (it leads nothing and is in no ISR since the
            # shutdown began; Kafka's BrokerHeartbeatManager.shouldShutDown).
            self._shut_down_at_next_heartbeat(broker, now)
            return
        self._unfence_at_next_heartbeat(broker, now, "heartbeats resumed")

    async def _held_start(self, broker: int, now: int) -> None:
        self._unfence_at_next_heartbeat(broker, now, "first heartbeat after start")

    async def _registered(self, broker: int, now: int) -> None:
        self._unfence_at_next_heartbeat(broker, now, "first heartbeat after registration")

    async def _unregistering(self, broker: int) -> None:
        b = self.cluster.broker_state(broker)
        assert b is not None
        if not b.fenced:
            await self._leave_in_sync_sets(broker, "broker unregistered", fence=True)

    async def _session_expired(self, broker: int) -> None:
        b = self.cluster.broker_state(broker)
        if b is None or not b.registered or b.fenced or b.heartbeating:
            return
        await self._leave_in_sync_sets(
            broker,
            f"broker {broker} fenced: no heartbeat for broker.session.timeout.ms={self.config.session_timeout_ms}",
            fence=True,
        )
        if b.process is Process.UP:  # a new process was waiting for the old session to expire
            await self._register_again(
                broker, "new process registered after the old session expired", unclean=True
            )

    async def _leave_in_sync_sets(
        self, broker: int, cause: str, fence: bool = False, shutdown: bool = False
    ) -> None:
        """Kafka's handleBrokerFenced / handleBrokerInControlledShutdown / handleBrokerUnregistered. With
        eligible leader replicas on, the last ISR member leaves too (and becomes an ELR member)."""
        if fence:
            self.cluster.update_broker(broker, cause, fenced=True)
        if shutdown:
            self.cluster.update_broker(broker, cause, in_controlled_shutdown=True)
        keep_last = self.config.elr_version < 1
        changes = [
            # The target ISR, positional: 0.5 µs less a call.
            Change(p, target_isr_without(p.isr, broker, keep_last))
            for p in self.cluster.partitions_on(broker)
            if broker in p.isr or p.leader == broker
        ]
        await self.elections.change(changes, cause, results=False)

    async def _controlled_shutdown(self, broker: int) -> None:
        await self._leave_in_sync_sets(
            broker,
            f"broker {broker} in controlled shutdown: leaders and ISR memberships move away",
            shutdown=True,
        )
        self._shut_down_at_next_heartbeat(broker, self.clock.now())

    def _shut_down_at_next_heartbeat(self, broker: int, now: int) -> None:
        """A broker in controlled shutdown stops at its next heartbeat."""

        async def shut_down() -> None:
            self.cluster.update_broker(
                broker,
                "controlled shutdown complete",
                in_controlled_shutdown=False,
                fenced=True,
                process=Process.STOPPED,
            )
            await self._network(broker, Process.STOPPED)

        self._schedule(broker, self._next_heartbeat(broker, now), shut_down, f"shutdown of broker {broker}")

    async def _register_again(self, broker: int, cause: str, unclean: bool = False) -> None:
        """A new process registers (fenced, unfenced at its first heartbeat). ``unclean``: the old one
        crashed; with eligible leader replicas on the broker leaves every ISR and ELR first (Kafka's
        ``handleBrokerUncleanShutdown``): a crash may have lost what it had not flushed."""
        b = self.cluster.broker_state(broker)
        assert b is not None
        now = self.clock.now()
        self.cluster.update_broker(
            broker,
            cause,
            process=Process.UP,
            fenced=True,
            # A new incarnation registers afresh (Kafka's ClusterControlManager.registerBroker): a controlled
            # shutdown its old process began and never finished (it crashed) is over.
            in_controlled_shutdown=False,
            epoch=b.epoch + 1,
            registered_at=now,
            held_fenced=False,
        )
        if unclean and self.config.elr_version >= 1:
            changes = [
                Change(p, target_isr_without(p.isr, broker, keep_last=False), unclean_shutdown=broker)
                for p in self.cluster.partitions_on(broker)
                if broker in p.isr or broker in p.elr
            ]
            await self.elections.change(
                changes, f"broker {broker} registered after an unclean shutdown", results=False
            )
        self._unfence_at_next_heartbeat(broker, now, "first heartbeat after registration")

    def _unfence_at_next_heartbeat(self, broker: int, now: int, cause: str) -> None:
        self._schedule(
            broker,
            self._next_heartbeat(broker, now),
            lambda: self._unfence(broker, cause),
            f"unfence broker {broker}",
        )

    async def _unfence(self, broker: int, cause: str) -> None:
        b = self.cluster.broker_state(broker)
        if b is None or not b.registered or not b.fenced or not b.heartbeating:
            return
        self.cluster.update_broker(broker, f"broker {broker} unfenced: {cause}", fenced=False)
        leaderless = [
            Change(p, trigger=Trigger.BROKER_ONLINE)
            for p in self.cluster.partitions()
            if p.leader == NO_LEADER
        ]
        await self.elections.change(leaderless, f"broker {broker} unfenced", results=False)
        self.replication.touch_broker(broker)


class FluvioLifecycle(Lifecycle):
    """Fluvio's SC: an SPU is offline when its connection drops or after the health timeout, online as
    soon as it is heard from."""

    async def _controlled_shutdown(self, broker: int) -> None:
        self._cancel(broker)  # a health timer of the process before it (hung or isolated) is over
        self.cluster.update_broker(broker, "shut down", process=Process.STOPPED)
        await self._network(broker, Process.STOPPED)
        await self._spu_offline(broker, "SPU shut down: its connection to the SC closed")

    async def _stopped(self, broker: int, process: Process, now: int) -> None:
        if process is Process.CRASHED:
            await self._spu_offline(broker, "SPU crashed: its connection to the SC dropped")
            return
        timeout = self.config.fluvio_health_timeout_ms
        self._schedule(
            broker,
            now + timeout,
            lambda: self._spu_offline(
                broker, f"SPU silent for simulator.election.fluvio.health.timeout.ms={timeout}"
            ),
            f"health timeout of SPU {broker}",
        )

    async def _restarted(self, broker: int, now: int) -> None:
        # The old process's health timer (it hung, then crashed) must not take the new one offline.
        self._cancel(broker)
        self.cluster.update_broker(broker, "SPU started", process=Process.UP)
        await self._spu_online(broker, "SPU registered with the SC")

    async def _resumed(self, broker: int, now: int) -> None:
        await self._spu_online(broker, "SPU heard from again")

    async def _held_start(self, broker: int, now: int) -> None:
        await self._spu_online(broker, "SPU online")

    async def _registered(self, broker: int, now: int) -> None:
        await self._spu_online(broker, "SPU registered with the SC")

    async def _unregistering(self, broker: int) -> None:
        # An unregistered SPU's replica sets go to election as an offline SPU's do.
        await self._spu_offline(broker, "SPU unregistered")

    async def _spu_offline(self, broker: int, cause: str) -> None:
        b = self.cluster.broker_state(broker)
        if b is None or b.fenced:
            return
        self.cluster.update_broker(broker, cause, fenced=True)
        changes = []
        for p in self.cluster.partitions_on(broker):
            lrs = [r for r in p.isr if r != broker]
            if p.leader == broker:
                changes.append(
                    Change(p, target_isr=lrs, trigger=Trigger.LEADER_OFFLINE, failed_leader=broker)
                )
            elif broker in p.isr:
                changes.append(Change(p, lrs))  # the target LRS
        await self.elections.change(changes, f"SPU {broker} offline")

    async def _spu_online(self, broker: int, cause: str) -> None:
        self.cluster.update_broker(broker, cause, fenced=False, held_fenced=False)
        offline = [
            Change(p, trigger=Trigger.BROKER_ONLINE, failed_leader=p.last_leader)
            for p in self.cluster.partitions_on(broker)
            if p.status is PartitionStatus.OFFLINE
        ]
        await self.elections.change(offline, f"SPU {broker} online")
        self.replication.touch_broker(broker)


async def _run_now(action: Callable[[], Awaitable[None]]) -> None:
    await action()
