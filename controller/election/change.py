"""Partition changes as values: Kafka's ``PartitionChangeBuilder`` (KRaft's controller, ELR off).

A :class:`PartitionChangeBuilder` reads one partition and the targets set on it (the in-sync set, the
replicas, an election, a leader) and builds a :class:`~controller.cluster.PartitionChange`, a frozen record of the fields
that change, or None when nothing would (Kafka writes no record then). It never writes:
:meth:`controller.cluster.Cluster.apply_changes` is the one place partition state is written.

Kafka's rules, as ``PartitionChangeBuilder`` and its ``PartitionChangeBuilderTest`` have them:

- a valid leader is an acceptable broker in the target ISR; an ONLINE election keeps the leader while it
  is valid and otherwise takes a valid replica; PREFERRED asks for the first replica; UNCLEAN, when no
  replica of the ISR can lead, takes any acceptable replica: the ISR becomes that leader alone and the
  leader recovery state RECOVERING;
- the ISR is never written empty (the last member stays listed while the partition has no leader);
- the leader epoch goes up whenever the leader changes, and when the replica set loses a member;
  the partition epoch on every change.

Which valid replica leads is the election policy's answer (:meth:`PartitionChangeBuilder.set_candidates`);
without one, Kafka's own order (:func:`controller.election.builtin.kafka.kafka_candidates`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import Enum

from controller.cluster import (
    NO_LEADER,
    LeaderRecoveryState,
    PartitionChange,
    PartitionState,
    PartitionStatus,
)
from controller.election import rules
from controller.election.api import PartitionView, Trigger
from controller.election.builtin.kafka import kafka_candidates

__all__ = ["ElectionKind", "PartitionChangeBuilder"]


class ElectionKind(Enum):
    """Kafka's ``PartitionChangeBuilder.Election``."""

    #: Elect the first replica if it may lead (else keep a valid leader, else any valid replica).
    PREFERRED = "preferred"
    #: Elect only when the leader can no longer lead: not in the target ISR, or not acceptable.
    ONLINE = "online"
    #: As ONLINE, and when no ISR member can lead, any acceptable replica (data may be lost).
    UNCLEAN = "unclean"


class PartitionChangeBuilder:
    """Builds one partition's change (see the module docstring). ``acceptable`` are the brokers that may
    lead (Kafka's ``isAcceptableLeader``: registered, unfenced, not shutting down)."""

    # Defaults as class attributes: a failover makes 100,000 builders, most of which set one target.
    _target_isr: Sequence[int] | None = None
    _target_replicas: Sequence[int] | None = None
    _target_recovery: LeaderRecoveryState | None = None
    _election: ElectionKind | None = ElectionKind.ONLINE
    _trigger = Trigger.LEADER_OFFLINE
    _unclean_allowed = False
    _candidates: Sequence[int] | None = None
    _eligibility: rules.Eligibility | None = None
    _leader: int | None = None
    _status: PartitionStatus | None = None
    _candidate: int | None = None
    _allow_empty_isr = False

    def __init__(self, partition: PartitionState, acceptable: Collection[int]) -> None:
        self.partition = partition
        self.acceptable = acceptable

    @property
    def target_isr(self) -> Sequence[int]:
        return self.partition.isr if self._target_isr is None else self._target_isr

    @property
    def target_replicas(self) -> Sequence[int]:
        return self.partition.replicas if self._target_replicas is None else self._target_replicas

    # ------------------------------------------------------------------------------------- targets

    def set_target_isr(self, isr: Sequence[int]) -> PartitionChangeBuilder:
        self._target_isr = isr
        return self

    def set_target_replicas(self, replicas: Sequence[int]) -> PartitionChangeBuilder:
        self._target_replicas = replicas
        return self

    def set_election(
        self, kind: ElectionKind | None, trigger: Trigger = Trigger.LEADER_OFFLINE
    ) -> PartitionChangeBuilder:
        """The election to hold (None: none, the leader stays unless :meth:`set_target_leader`); ``trigger``
        is why, as the policy is told. An ONLINE election is UNCLEAN for a topic that allows it
        (``unclean.leader.election.enable``), as Kafka's controller makes it."""
        self._election = kind
        self._trigger = trigger
        return self

    def set_unclean_allowed(self, allowed: bool) -> PartitionChangeBuilder:
        self._unclean_allowed = allowed
        return self

    def set_candidates(self, candidates: Sequence[int]) -> PartitionChangeBuilder:
        """The election policy's answer: the valid replicas, best first (checked by the service)."""
        self._candidates = candidates
        return self

    def set_target_leader(self, leader: int) -> PartitionChangeBuilder:
        """A leader set without an election (Fluvio's promotion of a confirmed candidate, or no leader)."""
        self._leader = leader
        return self

    def set_target_leader_recovery_state(self, state: LeaderRecoveryState) -> PartitionChangeBuilder:
        self._target_recovery = state
        return self

    def set_status(self, status: PartitionStatus) -> PartitionChangeBuilder:
        """A status set explicitly (Fluvio's ``Election`` and ``CandidateFound``)."""
        self._status = status
        return self

    def set_candidate(self, candidate: int) -> PartitionChangeBuilder:
        self._candidate = candidate
        return self

    def allow_empty_isr(self) -> PartitionChangeBuilder:
        """The in-sync set may be written empty (Fluvio's live replica set; Kafka's ISR only with ELR)."""
        self._allow_empty_isr = True
        return self

    # ------------------------------------------------------------------------------------- the election

    def wants_election(self) -> bool:
        """Whether the election asks for a leader: always for PREFERRED, otherwise only when the current
        leader is no longer valid (for the other elections Kafka keeps a valid leader)."""
        kind = self._election
        if kind is None:
            return False
        if kind is ElectionKind.PREFERRED:
            return True
        leader = self.partition.leader
        return leader == NO_LEADER or leader not in self.target_isr or leader not in self.acceptable

    def eligibility(self) -> rules.Eligibility:
        """Who may lead in the election (Kafka's rule, :func:`controller.election.rules.kafka_eligible`)."""
        eligibility = self._eligibility
        if eligibility is None:
            eligibility = self._eligibility = rules.kafka_eligible(
                self.target_replicas, self.target_isr, self.acceptable, self._unclean()
            )
        return eligibility

    def _unclean(self) -> bool:
        kind = self._election
        return kind is ElectionKind.UNCLEAN or (kind is ElectionKind.ONLINE and self._unclean_allowed)

    def view(self) -> PartitionView:
        """The partition as the election policy sees it for this election."""
        p = self.partition
        eligibility = self.eligibility()
        hw = p.high_watermark
        return PartitionView(
            p.topic,
            p.index,
            tuple(p.replicas),
            tuple(self.target_isr),
            p.leader,
            p.leader if p.leader != NO_LEADER else p.last_leader,
            tuple(p.leo),
            tuple(min(leo, hw) for leo in p.leo),
            frozenset(self.acceptable),
            eligibility.eligible,
            eligibility.unclean,
            self._trigger,
        )

    def _elect(self) -> tuple[int, bool]:
        """The elected leader (NO_LEADER when none) and whether the election was unclean."""
        if self._candidates is not None:
            candidates = self._candidates
            unclean = bool(candidates) and self.eligibility().unclean
        else:
            view = self.view()
            candidates = kafka_candidates(view)
            unclean = view.unclean
        if not candidates:
            return NO_LEADER, False
        return candidates[0], unclean

    # ------------------------------------------------------------------------------------- the record

    def build(self, cause: str) -> PartitionChange | None:
        """The change record, or None when nothing changes."""
        p = self.partition
        leader = p.leader
        unclean = False
        if self._leader is not None:
            leader = self._leader
        elif self.wants_election():
            leader, unclean = self._elect()
        isr = list(self.target_isr)
        recovery = p.leader_recovery_state if self._target_recovery is None else self._target_recovery
        if unclean:
            # PartitionChangeBuilder.tryElection: the ISR is forced to the new leader alone, which must
            # recover its log (LeaderRecoveryState RECOVERING) before it may be trusted.
            isr = [leader]
            recovery = LeaderRecoveryState.RECOVERING
            cause = f"{cause}; unclean election: {leader} was not in the ISR {list(p.isr)}"
        replicas = list(self.target_replicas)
        # Kafka never writes an empty ISR with ELR off: the last member stays listed.
        new_isr = isr if (isr or self._allow_empty_isr) and isr != p.isr else None
        new_replicas = replicas if replicas != p.replicas else None
        leader_changed = leader != p.leader
        status = self._status
        candidate = self._candidate if self._candidate != p.candidate else None
        if not (
            new_isr is not None
            or new_replicas is not None
            or leader_changed
            or recovery is not p.leader_recovery_state
            or (status is not None and status is not p.status)
            or candidate is not None
        ):
            return None
        leader_epoch = None
        last_leader = epoch_start = leo = hw = None
        # The leader epoch goes up when the leader changes, and when the replica set loses a member
        # (triggerLeaderEpochBumpForReplicaReassignmentIfNeeded); ISR changes alone never bump it.
        if leader_changed or (new_replicas is not None and not set(p.replicas) <= set(replicas)):
            leader_epoch = p.leader_epoch + 1
        if leader_changed:
            last_leader = p.leader if p.leader != NO_LEADER else p.last_leader
            if status is None:
                status = PartitionStatus.ONLINE if leader != NO_LEADER else PartitionStatus.OFFLINE
            if leader != NO_LEADER:
                leader_leo = p.leo[p.replicas.index(leader)]
                epoch_start = leader_leo
                # Followers drop what the new leader does not have (Kafka truncates them to the epoch's
                # start); after an unclean election the high watermark can go back to it.
                truncated = [min(offset, leader_leo) for offset in p.leo]
                leo = truncated if truncated != p.leo else None
                if unclean and p.high_watermark > leader_leo:
                    hw = leader_leo
        return PartitionChange(
            p,
            cause,
            leader=leader if leader_changed else None,
            isr=new_isr,
            replicas=new_replicas,
            leader_epoch=leader_epoch,
            partition_epoch=p.partition_epoch + 1,
            leader_recovery_state=recovery if recovery is not p.leader_recovery_state else None,
            status=status if status is not p.status else None,
            last_leader=last_leader,
            candidate=candidate,
            epoch_start_offset=epoch_start,
            leo=leo,
            high_watermark=hw,
        )
