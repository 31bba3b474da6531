"""Partition changes as the controller makes them: the target in-sync set, the election, the epochs.

One piece of code for every change that may move a leader: a broker fenced, shutting down, unfenced or
removed (:mod:`controller.dynamics`), ElectLeaders, the automatic preferred rebalance, and a Fluvio
candidate that did not confirm. Big changes run in slices of :data:`SLICE` partitions with the event
loop free in between, so other clients are served while 100,000 partitions fail over.

:class:`ElectionService` runs the policy (isolated like placers) and checks its answers; how the answer
becomes partition state is the style's: :class:`~controller.election.kafka_style.KafkaElection` (one
record of KRaft's ``PartitionChangeBuilder`` per change) or
:class:`~controller.election.fluvio_style.FluvioElection` (Fluvio's promotion handshake), chosen once by the
policy's style in :func:`controller.election.styles.start_election_service`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.clock import Clock
from controller.cluster import NO_LEADER, Cluster, PartitionState
from controller.config import ServerConfig
from controller.config.topic_configs import MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE
from controller.election import rules
from controller.election.api import ElectionStyle, PartitionView, Trigger
from controller.offload import gc_paused
from controller.plugins.isolation import PluginError, Runner
from protocol.codes import ErrorCode

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
    #: A reassignment's targets (:mod:`controller.reassignment`): the replicas, and the replicas being
    #: added and removed (None: as they are).
    target_replicas: list[int] | None = None
    target_adding: list[int] | None = None
    target_removing: list[int] | None = None
    #: Kafka: a broker back from an unclean shutdown (a crash), which leaves the ISR and the ELR.
    unclean_shutdown: int = NO_LEADER


@dataclass(slots=True)
class ChangeResult:
    """What came of a change: ``changed`` when a record was written; ``error`` an ElectLeaders error."""

    partition: PartitionState
    changed: bool = False
    error: ErrorCode | None = None
    message: str | None = None
    leader: int = NO_LEADER
    fields: list[tuple[str, Any, Any]] = field(default_factory=list)


class ElectionService:
    """Runs the configured election policy (isolated like placers) and applies its choices; a style's
    subclass says what an election does to a partition."""

    style: ElectionStyle
    #: Whether the controller runs Kafka's automatic preferred-leader balancing (``auto.leader.rebalance.enable``).
    preferred_rebalance = False
    #: Whether the controller looks for leaderless partitions of topics that allow unclean elections every
    #: few minutes (KRaft's ``uncleanLeaderElectionCheckIntervalMs``); Fluvio's SC has no such check.
    unclean_check = False

    def __init__(self, config: ServerConfig, cluster: Cluster, clock: Clock, runner: Runner) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.runner = runner
        #: Fluvio: brokers whose promotions fail (a fault tests set).
        self.promotion_faults: set[int] = set()
        #: Called with the partitions whose leader or in-sync set changed, in order, once per batch of
        #: records written (replication keeps up with them; a failover writes 100,000 in a few hundred).
        self.on_changes: Callable[[Sequence[PartitionState]], None] = lambda partitions: None
        #: Called with the changes asked for, before anything is read: the replication model brings the
        #: partitions up to date (coasting, :mod:`controller.dynamics.replication`).
        self.before_change: Callable[[Sequence[Change]], None] = lambda changes: None

    @property
    def policy_label(self) -> str:
        return self.runner.label

    async def close(self) -> None:
        await self.runner.close()

    # ------------------------------------------------------------------------------------- helpers

    def unclean_allowed(self, partition: PartitionState) -> bool:
        """The topic's ``unclean.leader.election.enable`` as the controller has it (per topic, at run time)."""
        return bool(self.cluster.topic_config(partition.topic, UNCLEAN_LEADER_ELECTION_ENABLE, None))

    def elr_min_isr(self, partition: PartitionState) -> int | None:
        """With eligible leader replicas on (``simulator.eligible.leader.replicas.version=1``, Kafka's own
        style only): the topic's ``min.insync.replicas`` as the controller has it; None with them off."""
        if self.config.elr_version < 1:
            return None
        return int(self.cluster.topic_config(partition.topic, MIN_INSYNC_REPLICAS, None))

    def alive(self) -> frozenset[int]:
        return self.cluster.active_ids()

    def elected(self, partition: PartitionState, leader_before: int) -> bool:
        """Whether an ElectLeaders election of ``partition`` (led by ``leader_before``) elected a leader."""
        return partition.leader != leader_before and partition.leader != NO_LEADER

    def set_promotion_fault(self, broker: int, fails: bool) -> None:
        """Fluvio: ``broker``'s promotions fail (it never confirms) until cleared; Kafka has no promotion
        handshake: the fault is kept and has no effect."""
        if fails:
            self.promotion_faults.add(broker)
        else:
            self.promotion_faults.discard(broker)

    # ------------------------------------------------------------------------------------- changes

    async def change(self, changes: Sequence[Change], cause: str, results: bool = True) -> list[ChangeResult]:
        """Applies ``changes`` in order, electing where needed; slices of :data:`SLICE` partitions. With
        ``results`` False (a caller that reads none: a broker's fencing makes 100,000 changes) a style may
        leave out the results of changes that went through, and give only the failed ones."""
        self.before_change(changes)
        made: list[ChangeResult] = []
        with gc_paused() if len(changes) > GC_PAUSED_ABOVE else contextlib.nullcontext():
            for start in range(0, len(changes), SLICE):
                batch = changes[start : start + SLICE]
                made.extend(await self._change_slice(batch, cause, results))
                if start + SLICE < len(changes):
                    await asyncio.sleep(0)  # other clients are served between slices
        return made

    async def _change_slice(self, batch: Sequence[Change], cause: str, wanted: bool) -> list[ChangeResult]:
        to_elect: list[int] = []
        views: list[PartitionView] = []
        plans = self._prepare(batch, self.alive(), to_elect, views)
        answers: dict[int, tuple[int, ...]] = {}
        failures: dict[int, str] = {}
        if views:
            await self._ask_policy(to_elect, views, answers, failures)
        return self._apply(batch, plans, answers, failures, cause, wanted)

    async def _ask_policy(
        self,
        to_elect: list[int],
        views: list[PartitionView],
        answers: dict[int, tuple[int, ...]],
        failures: dict[int, str],
    ) -> None:
        """The policy's candidates for ``views`` (positions ``to_elect`` of the slice) into ``answers``,
        or why not into ``failures``."""
        try:
            deadline = asyncio.get_running_loop().time() + self.config.placer_start_ms / 1000
            candidate_lists = await self.runner.call((views,), deadline)
        except PluginError as error:
            log.error("election policy %s failed: %s", error.label, error.message)
            for i in to_elect:
                failures[i] = f"{error.label}: {error.message}"
            return
        if len(candidate_lists) != len(views):
            problem = f"returned {len(candidate_lists)} answer(s) for {len(views)} partition(s)"
            for i in to_elect:
                failures[i] = f"{self.runner.label} {problem}"
            return
        for i, view, candidates in zip(to_elect, views, candidate_lists, strict=True):
            problem = rules.candidates_problem(view, candidates)
            if problem is not None:
                failures[i] = f"{self.runner.label} {problem}"
                log.error("election policy %s for %s-%d", failures[i], view.topic, view.partition)
            else:
                answers[i] = tuple(candidates)

    def _prepare(
        self, batch: Sequence[Change], alive: frozenset[int], to_elect: list[int], views: list[PartitionView]
    ) -> list[Any]:
        """Per change, the style's plan for it; the positions that need an election go to ``to_elect``,
        with the view to ask the policy about to ``views``."""
        raise NotImplementedError

    def _apply(
        self,
        batch: Sequence[Change],
        plans: list[Any],
        answers: dict[int, tuple[int, ...]],
        failures: dict[int, str],
        cause: str,
        wanted: bool,
    ) -> list[ChangeResult]:
        """Writes the changes of ``batch`` in order, with the policy's answers; one result per change
        (``wanted`` False: at least one per failed change)."""
        raise NotImplementedError

    @staticmethod
    def _failed(partition: PartitionState, message: str) -> ChangeResult:
        return ChangeResult(partition, error=ErrorCode.UNKNOWN_SERVER_ERROR, message=message)
