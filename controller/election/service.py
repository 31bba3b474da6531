"""Partition changes as the controller makes them: the target in-sync set, the election, the epochs.

One piece of code for every change that may move a leader: a broker fenced, shutting down, unfenced or
removed (:mod:`controller.dynamics`), ElectLeaders, the automatic preferred rebalance, and a Fluvio
candidate that did not confirm. Big changes run in slices of :data:`SLICE` partitions with the event
loop free in between, so other clients are served while 100,000 partitions fail over.

Kafka's style applies a change at once, as one record of KRaft's ``PartitionChangeBuilder``: the
leader epoch goes up when the leader changes, the partition epoch on every change, an unclean leader
becomes the ISR alone. Fluvio's style runs seed 003's handshake: ``Election``, then ``CandidateFound``
with the best candidate, then ``Online`` when the candidate confirms its promotion, or, when it does not
(a fault you can set) and the promotion timer runs out, the next candidate; ``Offline`` when none is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.clock import Clock
from controller.cluster import NO_LEADER, Cluster, PartitionState
from controller.config import ServerConfig
from controller.config.topic_configs import UNCLEAN_LEADER_ELECTION_ENABLE
from controller.election import rules
from controller.election.api import STYLES, PartitionView, Trigger
from controller.election.loader import ELECTION_POLICIES
from controller.offload import gc_paused
from controller.plugins.isolation import PluginError, Runner, start_runner

log = logging.getLogger(__name__)

__all__ = ["SLICE", "Change", "ChangeResult", "ElectionService"]

#: How many partitions one policy call (and one uninterrupted step of the event loop) covers.
SLICE = 500
#: Changes of more partitions than this (a broker's fencing in any sizeable cluster) run with the
#: garbage collector paused: what they write, one record per partition, outlives them, and collecting
#: meanwhile only walks it again and again.
GC_PAUSED_ABOVE = 20


@dataclass(slots=True)
class Change:
    """A change to ask for: the partition's target in-sync set (None: as it is) and, when set, an election.

    Without a trigger the controller elects only if the current leader can no longer lead (Kafka's
    ONLINE election inside every partition change).
    """

    partition: PartitionState
    target_isr: list[int] | None = None
    trigger: Trigger | None = None
    #: Fluvio: candidates that already failed to confirm.
    excluded: frozenset[int] = frozenset()
    #: The broker whose loss asked for the change (Fluvio measures candidates against it).
    failed_leader: int = NO_LEADER


@dataclass(slots=True)
class ChangeResult:
    """What came of a change: ``changed`` when a record was written; ``error`` names an ElectLeaders error."""

    partition: PartitionState
    changed: bool = False
    error: str | None = None
    message: str | None = None
    leader: int = NO_LEADER
    fields: list[tuple[str, Any, Any]] = field(default_factory=list)


class ElectionService:
    """Runs the configured election policy (isolated like placers) and applies its choices."""

    def __init__(self, config: ServerConfig, cluster: Cluster, clock: Clock, runner: Runner) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.runner = runner
        style = runner.attributes.get("style") or "kafka"
        if style not in STYLES:
            raise ValueError(
                f"election policy {runner.label}: style {style!r} is not one of {', '.join(STYLES)}"
            )
        self.style: str = style
        #: Fluvio: brokers whose promotions fail (a fault tests set).
        self.promotion_faults: set[int] = set()
        #: Called with every partition whose leader or in-sync set changed (replication keeps up with it).
        self.on_change: Callable[[PartitionState], None] = lambda partition: None
        self._promotion_timers: dict[tuple[str, int], Any] = {}

    @classmethod
    async def start(cls, config: ServerConfig, cluster: Cluster, clock: Clock) -> ElectionService:
        runner = await start_runner(
            ELECTION_POLICIES,
            config.election_policy,
            config.plugin_properties(),
            config.election_isolation,
            config.placer_start_ms / 1000,
            config.placer_max_memory_mb,
        )
        return cls(config, cluster, clock, runner)

    @property
    def policy_label(self) -> str:
        return self.runner.label

    async def close(self) -> None:
        for timer in self._promotion_timers.values():
            timer.cancel()
        await self.runner.close()

    # ------------------------------------------------------------------------------------- helpers

    def unclean_allowed(self, partition: PartitionState) -> bool:
        """The topic's ``unclean.leader.election.enable`` as the controller has it (per topic, at run time)."""
        return bool(self.cluster.topic_config(partition.topic, UNCLEAN_LEADER_ELECTION_ENABLE, None))

    def alive(self) -> frozenset[int]:
        return self.cluster.active_ids()

    def _needs_election(self, change: Change, isr: Sequence[int], alive: frozenset[int]) -> bool:
        if change.trigger is not None:
            return True
        if self.style == "fluvio":
            return False  # the SC elects only when an SPU goes offline or comes back (or when asked)
        # Every Kafka partition change tries an election unless the leader is still valid.
        leader = change.partition.leader
        return leader == NO_LEADER or leader not in isr or leader not in alive

    def _view(
        self, change: Change, isr: list[int], alive: frozenset[int], unclean_allowed: bool
    ) -> PartitionView:
        p = change.partition
        trigger = change.trigger or Trigger.LEADER_OFFLINE
        failed = change.failed_leader if change.failed_leader != NO_LEADER else p.leader
        eligibility = rules.eligible_leaders(
            p.replicas, isr, alive, trigger, unclean_allowed, self.style, failed, change.excluded
        )
        last_leader = p.leader if p.leader != NO_LEADER else p.last_leader
        hw = p.high_watermark
        return PartitionView(
            p.topic,
            p.index,
            tuple(p.replicas),
            tuple(isr),
            p.leader,
            last_leader,
            tuple(p.leo),
            tuple(min(leo, hw) for leo in p.leo),
            alive,
            eligibility.eligible,
            eligibility.unclean,
            trigger,
        )

    # ------------------------------------------------------------------------------------- changes

    async def change(self, changes: Sequence[Change], cause: str) -> list[ChangeResult]:
        """Applies ``changes`` in order, electing where needed; slices of :data:`SLICE` partitions."""
        results: list[ChangeResult] = []
        with gc_paused() if len(changes) > GC_PAUSED_ABOVE else contextlib.nullcontext():
            for start in range(0, len(changes), SLICE):
                batch = changes[start : start + SLICE]
                results.extend(await self._change_slice(batch, cause))
                if start + SLICE < len(changes):
                    await asyncio.sleep(0)  # other clients are served between slices
        return results

    async def _change_slice(self, batch: Sequence[Change], cause: str) -> list[ChangeResult]:
        alive = self.alive()
        isrs: list[list[int]] = []
        to_elect: list[int] = []
        views: list[PartitionView] = []
        unclean_by_topic: dict[str, bool] = {}
        for i, change in enumerate(batch):
            isr = list(change.target_isr) if change.target_isr is not None else list(change.partition.isr)
            isrs.append(isr)
            if self._needs_election(change, isr, alive):
                topic = change.partition.topic
                unclean = unclean_by_topic.get(topic)
                if unclean is None:
                    unclean = unclean_by_topic[topic] = self.unclean_allowed(change.partition)
                to_elect.append(i)
                views.append(self._view(change, isr, alive, unclean))
        answers: dict[int, tuple[int, ...]] = {}
        failures: dict[int, str] = {}
        if views:
            try:
                deadline = asyncio.get_running_loop().time() + self.config.placer_start_ms / 1000
                candidate_lists = await self.runner.call((views,), deadline)
            except PluginError as error:
                log.error("election policy %s failed: %s", error.label, error.message)
                candidate_lists = None
                for i in to_elect:
                    failures[i] = f"{error.label}: {error.message}"
            if candidate_lists is not None:
                if len(candidate_lists) != len(views):
                    problem = f"returned {len(candidate_lists)} answer(s) for {len(views)} partition(s)"
                    for i in to_elect:
                        failures[i] = f"{self.runner.label} {problem}"
                else:
                    for i, view, candidates in zip(to_elect, views, candidate_lists, strict=True):
                        problem = rules.candidates_problem(view, candidates)
                        if problem is not None:
                            failures[i] = f"{self.runner.label} {problem}"
                            log.error("election policy %s for %s-%d", failures[i], view.topic, view.partition)
                        else:
                            answers[i] = tuple(candidates)
        results: list[ChangeResult | None] = []  # None until written
        views_by_index = dict(zip(to_elect, views, strict=True))
        fluvio = self.style == "fluvio"
        # Kafka's changes are written together (one record each, in order); a partition named twice, or
        # a Fluvio election in between, first writes what came before, so each change sees the last.
        pending: list[tuple[int, PartitionState, dict[str, Any], str]] = []
        pending_ids: set[int] = set()

        def write() -> None:
            written = self.cluster.update_partitions((p, fields, why) for _, p, fields, why in pending)
            for (position, p, _, _), recorded in zip(pending, written, strict=True):
                self.on_change(p)
                results[position] = ChangeResult(p, changed=True, leader=p.leader, fields=recorded)
            pending.clear()
            pending_ids.clear()

        for i, change in enumerate(batch):
            p = change.partition
            if pending and (id(p) in pending_ids or (fluvio and i in views_by_index)):
                write()
            if failures and i in failures:
                results.append(ChangeResult(p, error="UNKNOWN_SERVER_ERROR", message=failures[i]))
                continue
            view = views_by_index.get(i)
            if fluvio and view is not None:
                results.append(self._fluvio_apply(change, isrs[i], view, answers.get(i, ()), cause))
                continue
            update = self._kafka_change(change, isrs[i], view, answers.get(i), cause)
            if update is None:
                results.append(ChangeResult(p, leader=p.leader))
            else:
                results.append(None)
                pending.append((len(results) - 1, p, *update))
                pending_ids.add(id(p))
        if pending:
            write()
        return [r for r in results if r is not None]

    def _kafka_change(
        self,
        change: Change,
        isr: list[int],
        view: PartitionView | None,
        candidates: tuple[int, ...] | None,
        cause: str,
    ) -> tuple[dict[str, Any], str] | None:
        """Kafka's change record for one partition (the fields to set, and why), None when nothing changes."""
        p = change.partition
        leader = p.leader
        unclean = False
        if view is not None:
            leader = candidates[0] if candidates else NO_LEADER
            unclean = view.unclean and leader != NO_LEADER
        if leader == NO_LEADER and not isr:
            isr = list(p.isr)
        fields: dict[str, Any] = {}
        if unclean:
            isr = [leader]
        if isr != p.isr:
            fields["isr"] = isr
        if leader != p.leader:
            self._new_leader_fields(p, leader, unclean, fields)
        if not fields:
            return None
        fields["partition_epoch"] = p.partition_epoch + 1
        why = (
            cause if not unclean else f"{cause}; unclean election: {leader} was not in the ISR {list(p.isr)}"
        )
        return fields, why

    def _new_leader_fields(
        self, p: PartitionState, leader: int, unclean: bool, fields: dict[str, Any]
    ) -> None:
        # Kafka bumps the leader epoch whenever a change record sets the leader, to -1 included.
        fields["leader"] = leader
        fields["leader_epoch"] = p.leader_epoch + 1
        fields["last_leader"] = p.leader if p.leader != NO_LEADER else p.last_leader
        if leader == NO_LEADER:
            fields["status"] = "Offline"
            return
        fields["status"] = "Online"
        leader_leo = p.leo[p.replicas.index(leader)]
        fields["epoch_start_offset"] = leader_leo
        # Followers drop what the new leader does not have (Kafka truncates them to the epoch's start).
        truncated = [min(leo, leader_leo) for leo in p.leo]
        if truncated != p.leo:
            fields["leo"] = truncated
        if unclean:
            fields["recovering"] = True  # until the new leader reports its log recovered
            if p.high_watermark > leader_leo:
                fields["high_watermark"] = leader_leo

    # ------------------------------------------------------------------------------------- Fluvio

    def _fluvio_apply(
        self, change: Change, isr: list[int], view: PartitionView, candidates: tuple[int, ...], cause: str
    ) -> ChangeResult:
        p = change.partition
        recorded: list[tuple[str, Any, Any]] = []
        if isr != p.isr:
            recorded += self.cluster.update_partition(
                p, cause, isr=isr, partition_epoch=p.partition_epoch + 1
            )
        election: dict[str, Any] = {}
        if p.leader != NO_LEADER and p.leader not in view.alive:
            # The replica set has no leader while it elects one: clients see LEADER_NOT_AVAILABLE.
            self._new_leader_fields(p, NO_LEADER, False, election)
            election["partition_epoch"] = p.partition_epoch + 1
        election.update(status="Election", candidate=NO_LEADER)
        recorded += self.cluster.update_partition(p, cause, **election)
        if not candidates:
            fields: dict[str, Any] = {"status": "Offline"}
            recorded += self.cluster.update_partition(p, f"{cause}; no eligible candidate", **fields)
            self.on_change(p)
            return ChangeResult(p, changed=True, leader=p.leader, fields=recorded)
        candidate = candidates[0]
        recorded += self.cluster.update_partition(
            p, f"{cause}; candidate {candidate} notified", status="CandidateFound", candidate=candidate
        )
        if candidate in self.promotion_faults:
            self._wait_for_promotion(p, candidate, change, cause)
            return ChangeResult(p, changed=True, leader=p.leader, fields=recorded)
        recorded += self._promoted(p, candidate, cause)
        return ChangeResult(p, changed=True, leader=p.leader, fields=recorded)

    def _promoted(self, p: PartitionState, candidate: int, cause: str) -> list[tuple[str, Any, Any]]:
        """The candidate confirmed: it leads, the partition is Online, the LRS follows it."""
        timer = self._promotion_timers.pop((p.topic, p.index), None)
        if timer is not None:
            timer.cancel()
        fields: dict[str, Any] = {"status": "Online", "candidate": NO_LEADER}
        if candidate != p.leader:
            self._new_leader_fields(p, candidate, False, fields)
            fields["status"] = "Online"
        isr = [r for r in p.replicas if r in p.isr or r == candidate]
        if isr != p.isr:
            fields["isr"] = isr
        fields["partition_epoch"] = p.partition_epoch + 1
        recorded = self.cluster.update_partition(
            p, f"{cause}; candidate {candidate} confirmed its promotion", **fields
        )
        self.on_change(p)
        return recorded

    def _wait_for_promotion(self, p: PartitionState, candidate: int, change: Change, cause: str) -> None:
        key = (p.topic, p.index)
        old = self._promotion_timers.pop(key, None)
        if old is not None:
            old.cancel()

        async def expired() -> None:
            self._promotion_timers.pop(key, None)
            if p.status != "CandidateFound" or p.candidate != candidate:
                return
            retry = Change(
                p,
                trigger=Trigger.CANDIDATE_TIMEOUT,
                excluded=change.excluded | {candidate},
                failed_leader=change.failed_leader if change.failed_leader != NO_LEADER else p.leader,
            )
            await self.change(
                [retry],
                f"candidate {candidate} did not confirm within {self.config.fluvio_promotion_timeout_ms} ms",
            )

        self._promotion_timers[key] = self.clock.call_later(
            self.config.fluvio_promotion_timeout_ms, expired, f"promotion of {candidate} for {p.name}"
        )

    def confirm_pending(self, broker: int) -> None:
        """Fluvio: a broker whose promotion faults were cleared confirms the promotions it was asked for."""
        for p in self.cluster.partitions():
            if p.status == "CandidateFound" and p.candidate == broker:
                self._promoted(p, broker, "promotion fault cleared")

    def pending_candidates(self) -> Iterable[PartitionState]:
        return (p for p in self.cluster.partitions() if p.status == "CandidateFound")
