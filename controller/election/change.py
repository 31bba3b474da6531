"""Partition changes as values: Kafka's ``PartitionChangeBuilder`` (KRaft's controller, with or without
eligible leader replicas).

A :class:`PartitionChangeBuilder` reads one partition and the targets set on it (the in-sync set, the
replicas, an election, a leader) and builds a :class:`~controller.cluster.PartitionChange`, a frozen record of the fields
that change, or None when nothing would (Kafka writes no record then). It never writes:
:meth:`controller.cluster.Cluster.apply_changes` is the one place partition state is written.

Kafka's rules, as ``PartitionChangeBuilder`` and its ``PartitionChangeBuilderTest`` have them:

- a valid leader is an acceptable broker in the target ISR; an ONLINE election keeps the leader while it
  is valid and otherwise takes a valid replica; PREFERRED asks for the first replica; UNCLEAN, when no
  replica of the ISR can lead, takes any acceptable replica: the ISR becomes that leader alone and the
  leader recovery state RECOVERING;
- with ELR off (Kafka 3.x) the ISR is never written empty (the last member stays listed while the
  partition has no leader);
- with ELR on (KIP-966, Kafka 4.1's default; :meth:`PartitionChangeBuilder.set_eligible_leader_replicas`):
  when the target ISR is smaller than the topic's ``min.insync.replicas``, the members of the current ISR
  (and ELR) that leave it become eligible leader replicas (ELR), those that shut down uncleanly excepted,
  and the members that left the ELR since the last known ELR; an ISR of ``min.insync.replicas`` or more
  clears both. The ISR may then be written empty; with it empty an ELR member may be elected cleanly: the
  ISR becomes it alone, and it leaves the ELR. An unclean election clears the ELR and the last known ELR;
- with ELR on, the last known ELR holds the partition's last known leader, as Kafka's controller keeps it
  (``useLastKnownLeaderInBalancedRecovery``, on in every change it makes; the ELR members that left are
  kept there only with it off, :meth:`PartitionChangeBuilder.use_last_known_leader`): a change that
  leaves the partition without a leader writes the leader it had, when the field is empty; a change that
  sets a leader empties it (``maybeUpdateLastKnownLeader``). When no replica of the ISR (or, with the ISR
  empty, of the ELR) can lead and both are empty, that last known leader is elected once it is active
  again (``canElectLastKnownLeader``, Kafka's balanced recovery): an unclean election (whatever the
  topic allows: the ISR becomes it alone, RECOVERING), tried before any other unclean one;
- the leader epoch goes up whenever the leader changes, and when the replica set loses a member;
  the partition epoch on every change;
- a reassignment in progress (adding and removing replicas, KIP-455) completes in whichever change
  first has every replica being added in its ISR, and every target replica when it removes more than it
  adds (``completeReassignmentIfNeeded``, :func:`completed_reassignment`): the removing replicas
  leave the replicas and the ISR, and the election runs on what remains (a removed leader loses the
  leadership). A change that holds no election (a leader's own ISR change) leaves a reassignment that
  would remove its leader as it is: the controller completes it with an election
  (:mod:`controller.reassignment`).

Which valid replica leads is the election policy's answer (:meth:`PartitionChangeBuilder.set_candidates`);
without one, Kafka's own order (:func:`controller.election.builtin.kafka.kafka_candidates`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from enum import Enum
from functools import partial
from typing import Any, NamedTuple

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

__all__ = [
    "CompletedReassignment",
    "ElectionKind",
    "PartitionChangeBuilder",
    "completed_reassignment",
    "eligible_leader_replicas",
    "isr_change",
    "leader_is_valid",
]


class ElectionKind(Enum):
    """Kafka's ``PartitionChangeBuilder.Election``."""

    #: Elect the first replica if it may lead (else keep a valid leader, else any valid replica).
    PREFERRED = "preferred"
    #: Elect only when the leader can no longer lead: not in the target ISR, or not acceptable.
    ONLINE = "online"
    #: As ONLINE, and when no ISR member can lead, any acceptable replica (data may be lost).
    UNCLEAN = "unclean"


#: Makes a record from its three fields without the named tuple's Python-level ``__new__``: a failover
#: makes 100,000 of them.
_record: Callable[[tuple[Any, ...]], PartitionChange] = partial(tuple.__new__, PartitionChange)


def leader_is_valid(partition: PartitionState, isr: Sequence[int], acceptable: Collection[int]) -> bool:
    """Kafka's ``isValidNewLeader`` for the current leader: an acceptable broker in the target ISR. An
    ONLINE (or UNCLEAN) election keeps such a leader."""
    leader = partition.leader
    return leader != NO_LEADER and leader in isr and leader in acceptable


class CompletedReassignment(NamedTuple):
    """What a partition's replicas and ISR become when its reassignment completes."""

    replicas: list[int]
    isr: list[int]


def completed_reassignment(
    replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int], isr: Sequence[int]
) -> CompletedReassignment | None:
    """Kafka's ``PartitionReassignmentReplicas.maybeCompleteReassignment`` (4.x): None while no reassignment
    is in progress, while some replica being added is not in ``isr``, or, for a reassignment that removes
    more replicas than it adds, while some target replica (``replicas`` without ``removing``) is not in
    ``isr``; else the replicas and ISR without the removing replicas (never empty). A reassignment that adds
    as many replicas as it removes (or more) does not wait for a target replica it keeps that has fallen
    out of the ISR (Kafka 3.x waited for every target replica)."""
    if not adding and not removing:
        return None
    new_isr = list(isr)
    new_replicas = list(replicas)
    if removing:
        new_isr = [r for r in isr if r not in removing]
        if not new_isr:
            return None
        new_replicas = [r for r in replicas if r not in removing]
        if not new_replicas:
            return None
    in_isr = set(new_isr)
    if not in_isr.issuperset(adding):
        return None
    if len(adding) < len(removing) and not in_isr.issuperset(new_replicas):
        return None
    return CompletedReassignment(new_replicas, new_isr)


def isr_change(
    partition: PartitionState,
    isr: Sequence[int],
    cause: str,
    allow_empty: bool = False,
    elr_min_isr: int | None = None,
    last_known_leader: bool = True,
) -> PartitionChange | None:
    """The record of an ISR change alone (no election, the leader stays), None when nothing changes: what
    :class:`PartitionChangeBuilder` builds for it, made without a builder as a failover makes 100,000
    of them. Kafka never writes an empty ISR with ELR off unless ``allow_empty``; with ELR on
    (``elr_min_isr``: the topic's ``min.insync.replicas``) it may, and the ELR follows the ISR. The last
    known ELR holds the last known leader (``last_known_leader``, as Kafka's controller keeps it), which
    a change without a leader change leaves as it is; else the ELR members that left."""
    if elr_min_isr is None or (
        len(isr) >= elr_min_isr and not partition.elr and (last_known_leader or not partition.last_known_elr)
    ):
        if isr == partition.isr or not (isr or allow_empty):
            return None
        fields = ("isr", list(isr), "partition_epoch", partition.partition_epoch + 1)
        return _record((partition, cause, fields))
    elr, last_known = eligible_leader_replicas(partition, isr, elr_min_isr)
    changed: list[Any] = []
    if isr != partition.isr:
        changed += ("isr", list(isr))
    if elr != partition.elr:
        changed += ("elr", elr)
    if not last_known_leader and last_known != partition.last_known_elr:
        changed += ("last_known_elr", last_known)
    if not changed:
        return None
    changed += ("partition_epoch", partition.partition_epoch + 1)
    return _record((partition, cause, tuple(changed)))


def eligible_leader_replicas(
    partition: PartitionState, isr: Sequence[int], min_isr: int, unclean_shutdown: Collection[int] = ()
) -> tuple[list[int], list[int]]:
    """Kafka's ``maybePopulateTargetElr``: the ELR and last known ELR for the target ``isr``. At
    ``min_isr`` or more, none; below, the current ISR and ELR without the target ISR (and without replicas
    that shut down uncleanly), and the last known ELR with them, without the target ISR and the ELR."""
    if len(isr) >= min_isr:
        return [], []
    candidates = set(partition.elr)
    candidates.update(partition.isr)
    elr = sorted(r for r in candidates if r not in isr and r not in unclean_shutdown)
    candidates.update(partition.last_known_elr)
    last_known = sorted(r for r in candidates if r not in isr and r not in elr)
    return elr, last_known


#: The trigger a policy is told for each kind of election, unless the caller names one.
_TRIGGERS = {ElectionKind.PREFERRED: Trigger.PREFERRED, ElectionKind.UNCLEAN: Trigger.UNCLEAN}


class PartitionChangeBuilder:
    """Builds one partition's change (see the module docstring). ``acceptable`` are the brokers that may
    lead (Kafka's ``isAcceptableLeader``: registered, unfenced, not shutting down)."""

    # Defaults as class attributes: a failover makes 100,000 builders, most of which set one target.
    _target_isr: Sequence[int] | None = None
    _target_replicas: Sequence[int] | None = None
    _target_adding: Sequence[int] | None = None
    _target_removing: Sequence[int] | None = None
    #: Whether the reassignment's completion was looked for (it is once, before the election).
    _completion_checked = False
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
    #: ELR on: the topic's ``min.insync.replicas`` (None: ELR off).
    _elr_min_isr: int | None = None
    _unclean_shutdown: Collection[int] = ()
    #: ELR on: the last known ELR holds the last known leader, who may be elected (Kafka's controller).
    _last_known_leader = True
    #: The target ELR and last known ELR, once worked out (:meth:`_elr_targets`).
    _elr: tuple[list[int], list[int]] | None = None
    #: No target beyond the ISR and the election (the common change: a broker leaves the ISR).
    _plain = True
    #: wants_election(), once asked (the targets it reads are set before).
    _wanted: bool | None = None

    def __init__(self, partition: PartitionState, acceptable: Collection[int]) -> None:
        self.partition = partition
        self.acceptable = acceptable

    # ------------------------------------------------------------------------------------- targets

    def set_target_isr(self, isr: Sequence[int]) -> PartitionChangeBuilder:
        self._target_isr = isr
        return self

    def set_target_replicas(self, replicas: Sequence[int]) -> PartitionChangeBuilder:
        self._target_replicas = replicas
        self._plain = False
        return self

    def set_target_adding(self, adding: Sequence[int]) -> PartitionChangeBuilder:
        """The replicas a reassignment adds (Kafka's ``setTargetAdding``; empty: none)."""
        self._target_adding = adding
        self._plain = False
        return self

    def set_target_removing(self, removing: Sequence[int]) -> PartitionChangeBuilder:
        """The replicas a reassignment removes (Kafka's ``setTargetRemoving``; empty: none)."""
        self._target_removing = removing
        self._plain = False
        return self

    def set_election(
        self, kind: ElectionKind | None, trigger: Trigger | None = None
    ) -> PartitionChangeBuilder:
        """The election to hold (None: none, the leader stays unless :meth:`set_target_leader`); ``trigger``
        is why, as the policy is told (by default the kind's own, or the leader lost for ONLINE). An
        ONLINE election may be unclean for a topic that allows it (:meth:`set_unclean_allowed`), as
        Kafka's controller makes it."""
        self._election = kind
        self._trigger = trigger if trigger is not None else _TRIGGERS.get(kind, Trigger.LEADER_OFFLINE)
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
        self._plain = False
        return self

    def set_target_leader_recovery_state(self, state: LeaderRecoveryState) -> PartitionChangeBuilder:
        self._target_recovery = state
        self._plain = False
        return self

    def set_status(self, status: PartitionStatus) -> PartitionChangeBuilder:
        """A status set explicitly (Fluvio's ``Election`` and ``CandidateFound``)."""
        self._status = status
        self._plain = False
        return self

    def set_candidate(self, candidate: int) -> PartitionChangeBuilder:
        self._candidate = candidate
        self._plain = False
        return self

    def set_eligible_leader_replicas(self, min_isr: int) -> PartitionChangeBuilder:
        """ELR on (KIP-966), with the topic's ``min.insync.replicas``: the ISR may be written empty (see the
        module docstring)."""
        self._elr_min_isr = min_isr
        self._allow_empty_isr = True
        return self

    def use_last_known_leader(self, use: bool) -> PartitionChangeBuilder:
        """Kafka's ``setUseLastKnownLeaderInBalancedRecovery``: on (the default, and in every change
        Kafka's controller makes) the last known ELR holds the last known leader, elected when it comes
        back to a partition whose ISR and ELR are empty; off, it holds the ELR members that left, and
        nobody is elected from it (Kafka's own ``PartitionChangeBuilderTest`` ELR cases)."""
        self._last_known_leader = use
        return self

    def set_unclean_shutdown_replicas(self, replicas: Collection[int]) -> PartitionChangeBuilder:
        """Replicas whose broker came back from an unclean shutdown (a crash): they leave the ELR (Kafka's
        ``setUncleanShutdownReplicas``)."""
        self._unclean_shutdown = replicas
        self._plain = False
        return self

    def _elr_targets(self) -> tuple[list[int], list[int]]:
        """The target ELR and last known ELR (none with ELR off), worked out once the reassignment's
        completion was looked for."""
        targets = self._elr
        if targets is None:
            self._complete_reassignment_if_needed()
            min_isr = self._elr_min_isr
            if min_isr is None:
                targets = ([], [])
            else:
                p = self.partition
                isr = p.isr if self._target_isr is None else self._target_isr
                targets = eligible_leader_replicas(p, isr, min_isr, self._unclean_shutdown)
            self._elr = targets
        return targets

    def allow_empty_isr(self) -> PartitionChangeBuilder:
        """The in-sync set may be written empty (Fluvio's live replica set; Kafka's ISR only with ELR)."""
        self._allow_empty_isr = True
        return self

    # ------------------------------------------------------------------------------------- the election

    def wants_election(self) -> bool:
        """Whether the election asks for a leader: always for PREFERRED, otherwise only when the current
        leader is no longer valid (for the other elections Kafka keeps a valid leader). Asked once the
        targets are set."""
        wanted = self._wanted
        if wanted is None:
            self._complete_reassignment_if_needed()
            kind = self._election
            if kind is None:
                wanted = False
            elif kind is ElectionKind.PREFERRED:
                wanted = True
            else:
                isr = self.partition.isr if self._target_isr is None else self._target_isr
                wanted = not leader_is_valid(self.partition, isr, self.acceptable)
            self._wanted = wanted
        return wanted

    def _complete_reassignment_if_needed(self) -> None:
        """Kafka's ``completeReassignmentIfNeeded``: when the reassignment is complete in the target ISR
        (:func:`completed_reassignment`), the targets become the replicas and ISR without the removing
        replicas, and adding and removing empty.
        Not when the change holds no election and the leader would be removed (see the module docstring)."""
        if self._completion_checked:
            return
        self._completion_checked = True
        p = self.partition
        adding = p.adding_replicas if self._target_adding is None else self._target_adding
        removing = p.removing_replicas if self._target_removing is None else self._target_removing
        if not adding and not removing:
            return
        done = completed_reassignment(
            p.replicas if self._target_replicas is None else self._target_replicas,
            adding,
            removing,
            p.isr if self._target_isr is None else self._target_isr,
        )
        if done is None:
            return
        if self._election is None and self._leader is None and p.leader not in done.isr:
            return
        self._target_replicas, self._target_isr = done.replicas, done.isr
        self._target_adding = self._target_removing = ()
        self._plain = False

    def eligibility(self) -> rules.Eligibility:
        """Who may lead in the election (Kafka's rule, :func:`controller.election.rules.kafka_eligible`)."""
        eligibility = self._eligibility
        if eligibility is None:
            p = self.partition
            last_known = p.last_known_elr
            eligibility = self._eligibility = rules.kafka_eligible(
                p.replicas if self._target_replicas is None else self._target_replicas,
                p.isr if self._target_isr is None else self._target_isr,
                self.acceptable,
                self._unclean(),
                self._elr_targets()[0],
                last_known[0]
                if self._elr_min_isr is not None and self._last_known_leader and len(last_known) == 1
                else NO_LEADER,
            )
        return eligibility

    def _unclean(self) -> bool:
        kind = self._election
        return kind is ElectionKind.UNCLEAN or (kind is ElectionKind.ONLINE and self._unclean_allowed)

    def view(self) -> PartitionView:
        """The partition as the election policy sees it for this election: the replicas the eligible
        ones are drawn from (the change's target replicas when it sets them: a reassignment that starts
        or completes with the election), their log end offsets aligned with them (0 for a new one)."""
        p = self.partition
        eligibility = self.eligibility()
        hw = p.high_watermark
        replicas, leos = p.replicas, p.leo
        target = self._target_replicas
        if target is not None and list(target) != replicas:
            by_replica = dict(zip(replicas, leos, strict=True))
            replicas, leos = list(target), [by_replica.get(r, 0) for r in target]
        return PartitionView(
            p.topic,
            p.index,
            tuple(replicas),
            tuple(p.isr if self._target_isr is None else self._target_isr),
            p.leader,
            p.leader if p.leader != NO_LEADER else p.last_leader,
            tuple(leos),
            tuple([leo if leo < hw else hw for leo in leos]),
            frozenset(self.acceptable),
            eligibility.eligible,
            eligibility.unclean,
            self._trigger,
        )

    def _elect(self) -> tuple[int, bool]:
        """The elected leader (NO_LEADER when none) and whether the election was unclean."""
        if self._candidates is not None:
            candidates = self._candidates
        else:
            candidates = kafka_candidates(self.view())
        if not candidates:
            return NO_LEADER, False
        return candidates[0], (self._eligibility or self.eligibility()).unclean

    # ------------------------------------------------------------------------------------- the record

    def build(self, cause: str) -> PartitionChange | None:
        """The change record, or None when nothing changes."""
        # Written for speed: a failover builds one record per partition it touches.
        p = self.partition
        wanted = self._wanted
        if wanted is None:
            wanted = self.wants_election()
        if self._plain and not wanted and not (p.adding_replicas or p.removing_replicas):
            isr = self._target_isr  # only the ISR (and with it the ELR) may change
            if isr is None and self._elr_min_isr is not None:
                isr = p.isr
            return (
                None
                if isr is None
                else isr_change(
                    p, isr, cause, self._allow_empty_isr, self._elr_min_isr, self._last_known_leader
                )
            )
        old_leader = leader = p.leader
        unclean = False
        if self._leader is not None:
            leader = self._leader
        elif wanted:
            leader, unclean = self._elect()
            unclean = unclean and leader != old_leader  # tryElection acts only on a new leader
        old_isr = p.isr
        isr = old_isr if self._target_isr is None else self._target_isr
        elr, last_known = self._elr_targets()
        if leader != old_leader and leader in elr:
            # tryElection: a leader from the ELR (the ISR empty) is the ISR alone, and leaves the ELR.
            isr = [leader]
            elr = [r for r in elr if r != leader]
        recovery = self._target_recovery
        if unclean:
            elr = last_known = []  # maybeUpdateRecordElr: an unclean election clears them
            # PartitionChangeBuilder.tryElection: the ISR is forced to the new leader alone, which must
            # recover its log (LeaderRecoveryState RECOVERING) before it may be trusted.
            isr = [leader]
            recovery = LeaderRecoveryState.RECOVERING
            if self._eligibility is not None and self._eligibility.last_known_leader:
                cause = (
                    f"{cause}; unclean election of the last known leader {leader} "
                    "(balanced recovery: the ISR and the ELR are empty)"
                )
            else:
                cause = f"{cause}; unclean election: {leader} was not in the ISR {list(old_isr)}"
        if recovery is p.leader_recovery_state:
            recovery = None
        # Kafka never writes an empty ISR with ELR off: the last member stays listed.
        new_isr = (
            list(isr) if isr is not old_isr and (isr or self._allow_empty_isr) and isr != old_isr else None
        )
        replicas = self._target_replicas
        new_replicas = list(replicas) if replicas is not None and replicas != p.replicas else None
        replicas_lose_a_member = new_replicas is not None and not set(p.replicas) <= set(new_replicas)
        adding, removing = self._target_adding, self._target_removing
        new_adding = list(adding) if adding is not None and list(adding) != p.adding_replicas else None
        new_removing = (
            list(removing) if removing is not None and list(removing) != p.removing_replicas else None
        )
        new_elr = elr if elr != p.elr else None
        leader_changed = leader != old_leader
        if self._elr_min_isr is not None and self._last_known_leader:
            # maybeUpdateLastKnownLeader: the record's leader, when it sets one (a change of leader, or
            # the same leader for the epoch bump of a replica set that loses a member).
            if leader_changed:
                record_leader: int | None = leader
            elif replicas_lose_a_member:
                record_leader = old_leader
            else:
                record_leader = None
            new_last_known = None
            if record_leader == NO_LEADER and not p.last_known_elr:
                new_last_known = [old_leader]  # leaderless from now: remember who led
            elif record_leader is not None and record_leader >= 0 and p.last_known_elr:
                new_last_known = []
        else:
            new_last_known = last_known if last_known != p.last_known_elr else None
        status = self._status
        if status is p.status:
            status = None
        candidate = self._candidate
        if candidate == p.candidate:
            candidate = None
        if not (
            leader_changed
            or new_isr is not None
            or new_replicas is not None
            or new_adding is not None
            or new_removing is not None
            or recovery is not None
            or status is not None
            or candidate is not None
            or new_elr is not None
            or new_last_known is not None
        ):
            return None
        fields: list[Any] = []  # names and values, in turn
        if new_isr is not None:
            fields += ("isr", new_isr)
        if new_replicas is not None:
            fields += ("replicas", new_replicas)
        if new_removing is not None:
            fields += ("removing_replicas", new_removing)
        if new_adding is not None:
            fields += ("adding_replicas", new_adding)
        if new_elr is not None:
            fields += ("elr", new_elr)
        if new_last_known is not None:
            fields += ("last_known_elr", new_last_known)
        if leader_changed:
            fields += ("leader", leader)
        # The leader epoch goes up when the leader changes, and when the replica set loses a member
        # (triggerLeaderEpochBumpForReplicaReassignmentIfNeeded); ISR changes alone never bump it.
        if leader_changed or replicas_lose_a_member:
            fields += ("leader_epoch", p.leader_epoch + 1)
        if leader_changed:
            last_leader = old_leader if old_leader != NO_LEADER else p.last_leader
            if last_leader != p.last_leader:
                fields += ("last_leader", last_leader)
            if status is None:
                status = PartitionStatus.ONLINE if leader != NO_LEADER else PartitionStatus.OFFLINE
                if status is p.status:
                    status = None
        if status is not None:
            fields += ("status", status)
        if candidate is not None:
            fields += ("candidate", candidate)
        if leader_changed and leader != NO_LEADER:
            offsets = p.leo
            # A replica a reassignment adds in this very change has an empty log (an unclean election
            # may take it, as Kafka's takes the first acceptable target replica).
            leader_leo = offsets[p.replicas.index(leader)] if leader in p.replicas else 0
            if leader_leo != p.epoch_start_offset:
                fields += ("epoch_start_offset", leader_leo)
            # Followers drop what the new leader does not have (Kafka truncates them to the epoch's
            # start). The high watermark is never above the new leader's log end: it goes back to it
            # after an unclean election, or a promotion of a replica behind it (Fluvio's promoted
            # follower keeps its own high watermark, which FollowerReplicaState::update_from_leader
            # never sets above its log end); a clean Kafka election's leader always holds it.
            truncated = [offset if offset < leader_leo else leader_leo for offset in offsets]
            if truncated != offsets:
                if new_replicas is not None:  # aligned with the new replicas (a new one starts empty)
                    by_replica = dict(zip(p.replicas, truncated, strict=True))
                    truncated = [by_replica.get(r, 0) for r in new_replicas]
                fields += ("leo", truncated)
            if p.high_watermark > leader_leo:
                fields += ("high_watermark", leader_leo)
        if recovery is not None:
            fields += ("leader_recovery_state", recovery)
        fields += ("partition_epoch", p.partition_epoch + 1)
        return _record((p, cause, tuple(fields)))
