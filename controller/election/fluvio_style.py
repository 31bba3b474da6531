"""Fluvio's style of election: Fluvio's promotion handshake, as Fluvio's SC runs it.

The SC elects only when an SPU goes offline or comes back (or when asked): the replica set goes to
``Election`` (without a leader while it elects one), then ``CandidateFound`` with the policy's best
candidate, then ``Online`` when the candidate confirms its promotion, or, when it does not (a fault
tests set) and ``simulator.election.fluvio.promotion.timeout.ms`` runs out, the next candidate;
``Offline`` when none is left. Each step is one change record (:mod:`controller.election.change`). A
change without a trigger only sets the live replica set, which may become empty (Fluvio has no rule
keeping a last member).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.cluster import NO_LEADER, PartitionChange, PartitionState, PartitionStatus
from controller.election import rules
from controller.election.api import ElectionStyle, PartitionView, Trigger
from controller.election.change import PartitionChangeBuilder
from controller.election.service import Change, ChangeResult, ElectionService

__all__ = ["FluvioElection"]


class FluvioElection(ElectionService):
    """Fluvio's SC: elections through ``Election`` and ``CandidateFound``, with promotion timers."""

    style = ElectionStyle.FLUVIO

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._promotion_timers: dict[tuple[str, int], Any] = {}

    async def close(self) -> None:
        for timer in self._promotion_timers.values():
            timer.cancel()
        await super().close()

    def elected(self, partition: PartitionState, leader_before: int) -> bool:
        # A candidate that was found counts: it leads once it confirms its promotion.
        return partition.status is PartitionStatus.CANDIDATE_FOUND or super().elected(
            partition, leader_before
        )

    def set_promotion_fault(self, broker: int, fails: bool) -> None:
        super().set_promotion_fault(broker, fails)
        if not fails:  # it confirms the promotions it was asked for
            for p in self.cluster.partitions():
                if p.status is PartitionStatus.CANDIDATE_FOUND and p.candidate == broker:
                    self._promoted(p, broker, "promotion fault cleared")

    # ------------------------------------------------------------------------------------- changes

    def _prepare(
        self, batch: Sequence[Change], alive: frozenset[int], to_elect: list[int], views: list[PartitionView]
    ) -> list[list[int]]:
        live_replica_sets: list[list[int]] = []
        for i, change in enumerate(batch):
            p = change.partition
            lrs = list(change.target_isr) if change.target_isr is not None else list(p.isr)
            live_replica_sets.append(lrs)
            if change.trigger is not None:  # the SC elects only when asked
                to_elect.append(i)
                views.append(self._view(change, lrs, alive))
        return live_replica_sets

    def _view(self, change: Change, lrs: list[int], alive: frozenset[int]) -> PartitionView:
        p = change.partition
        trigger = change.trigger or Trigger.LEADER_OFFLINE
        failed = change.failed_leader if change.failed_leader != NO_LEADER else p.leader
        eligibility = rules.fluvio_eligible(p.replicas, lrs, alive, trigger, failed, change.excluded)
        hw = p.high_watermark
        return PartitionView(
            p.topic,
            p.index,
            tuple(p.replicas),
            tuple(lrs),
            p.leader,
            p.leader if p.leader != NO_LEADER else p.last_leader,
            tuple(p.leo),
            tuple(min(leo, hw) for leo in p.leo),
            alive,
            eligibility.eligible,
            eligibility.unclean,
            trigger,
        )

    def _apply(
        self,
        batch: Sequence[Change],
        plans: list[list[int]],
        answers: dict[int, tuple[int, ...]],
        failures: dict[int, str],
        cause: str,
        wanted: bool,
    ) -> list[ChangeResult]:
        results: list[ChangeResult] = []
        alive = self.alive()
        for i, (change, lrs) in enumerate(zip(batch, plans, strict=True)):
            p = change.partition
            if i in failures:
                results.append(self._failed(p, failures[i]))
            elif change.trigger is None:
                recorded = self._write(self._builder(p).set_target_isr(lrs).build(cause))
                if recorded:
                    self.on_changes((p,))
                results.append(ChangeResult(p, changed=bool(recorded), leader=p.leader, fields=recorded))
            else:
                results.append(self._elect(change, lrs, alive, answers.get(i, ()), cause))
        return results

    def _builder(self, p: PartitionState) -> PartitionChangeBuilder:
        """A change that holds no election of Kafka's (the SC's steps set the leader themselves)."""
        return PartitionChangeBuilder(p, self.alive()).set_election(None).allow_empty_isr()

    def _write(self, record: PartitionChange | None) -> list[tuple[str, Any, Any]]:
        return [] if record is None else self.cluster.apply_changes([record])[0]

    def _elect(
        self, change: Change, lrs: list[int], alive: frozenset[int], candidates: tuple[int, ...], cause: str
    ) -> ChangeResult:
        p = change.partition
        recorded = self._write(self._builder(p).set_target_isr(lrs).build(cause))
        election = self._builder(p).set_status(PartitionStatus.ELECTION).set_candidate(NO_LEADER)
        if p.leader != NO_LEADER and p.leader not in alive:
            # The replica set has no leader while it elects one: clients see LEADER_NOT_AVAILABLE.
            election.set_target_leader(NO_LEADER)
        recorded += self._write(election.build(cause))
        if not candidates:
            offline = self._builder(p).set_status(PartitionStatus.OFFLINE)
            recorded += self._write(offline.build(f"{cause}; no eligible candidate"))
            self.on_changes((p,))
            return ChangeResult(p, changed=True, leader=p.leader, fields=recorded)
        candidate = candidates[0]
        found = self._builder(p).set_status(PartitionStatus.CANDIDATE_FOUND).set_candidate(candidate)
        recorded += self._write(found.build(f"{cause}; candidate {candidate} notified"))
        if candidate in self.promotion_faults:
            self._wait_for_promotion(p, candidate, change, cause)
        else:
            recorded += self._promoted(p, candidate, cause)
        return ChangeResult(p, changed=True, leader=p.leader, fields=recorded)

    def _promoted(self, p: PartitionState, candidate: int, cause: str) -> list[tuple[str, Any, Any]]:
        """The candidate confirmed: it leads, the partition is Online, the LRS follows it."""
        timer = self._promotion_timers.pop((p.topic, p.index), None)
        if timer is not None:
            timer.cancel()
        lrs = [r for r in p.replicas if r in p.isr or r == candidate]
        builder = self._builder(p).set_status(PartitionStatus.ONLINE).set_candidate(NO_LEADER)
        recorded = self._write(
            builder.set_target_leader(candidate)
            .set_target_isr(lrs)
            .build(f"{cause}; candidate {candidate} confirmed its promotion")
        )
        self.on_changes((p,))
        return recorded

    def _wait_for_promotion(self, p: PartitionState, candidate: int, change: Change, cause: str) -> None:
        key = (p.topic, p.index)
        old = self._promotion_timers.pop(key, None)
        if old is not None:
            old.cancel()

        async def expired() -> None:
            self._promotion_timers.pop(key, None)
            if p.status is not PartitionStatus.CANDIDATE_FOUND or p.candidate != candidate:
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
