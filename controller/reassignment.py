"""Partition reassignments (KIP-455), as KRaft's controller runs them, through the replication model.

AlterPartitionReassignments asks a partition to move to target replicas. As Kafka's
``ReplicationControlManager.changePartitionReassignment`` and ``PartitionReassignmentReplicas`` do:

1. one change record makes the replicas the targets followed by the replicas being removed (the union),
   with the replicas being added (``adding_replicas``: targets not yet replicas) and removed
   (``removing_replicas``: replicas not among the targets);
2. the added replicas copy the leader's log at their brokers' replication rates
   (:mod:`controller.dynamics.replication`) and join the ISR as any follower does;
3. the change that first has every added replica in the ISR (and every target, when it removes more
   replicas than it adds) completes the reassignment (:func:`controller.election.change.completed_reassignment`): the removed replicas leave the replicas
   and the ISR, adding and removing become empty, and when the leader was one of the removed replicas the
   election policy picks a new one (the dynamics' election, one record). When it is the leader's ISR
   expansion (the last target caught up), the controller writes it as its next event, at the same clock
   time, through the election service's slices.

A reassignment whose targets are in the ISR already (a reordering, a replica dropped) completes in its
first record. Cancelling (null replicas) reverts to the original replicas (``PartitionReassignmentRevert``):
the adding replicas go, the removing ones stay; when the ISR holds only adding replicas, the first
original replica becomes the ISR, an unclean change, refused (INVALID_REPLICA_ASSIGNMENT) unless the
topic allows unclean elections.

Metadata shows the replicas as Kafka does meanwhile (the union); ListPartitionReassignments shows the
adding and removing replicas. Every step is a partition event in the event log. Reassignments are
Kafka's: under the ``fluvio`` election style (Fluvio's SC moves no replicas) every partition is answered
INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.clock import Clock, Timer
from controller.cluster import Cluster, PartitionState
from controller.election.api import ElectionStyle
from controller.election.change import completed_reassignment
from controller.election.service import Change, ElectionService
from controller.offload import Turns, gc_paused
from protocol.codes import ErrorCode

__all__ = ["ReassignOutcome", "Reassignments", "Target", "revert"]

#: Requests naming more partitions than this run with the garbage collector paused.
_MANY = 1000
#: One topic of ListPartitionReassignments' content: (topic, [(index, replicas, adding, removing)]).
Listed = tuple[str, list[tuple[int, list[int], list[int], list[int]]]]
#: Partitions whose reassignment starts in one step of the event loop.
_CHUNK = 100


@dataclass(frozen=True, slots=True)
class Target:
    """One partition of an AlterPartitionReassignments request: its new replicas (None: cancel)."""

    topic: str
    partition: int
    replicas: Sequence[int] | None


@dataclass(frozen=True, slots=True)
class ReassignOutcome:
    """One partition's answer: ``error`` None when the reassignment started, completed or was cancelled."""

    topic: str
    partition: int
    error: ErrorCode | None = None
    message: str | None = None


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Revert:
    """Kafka's ``PartitionReassignmentRevert``: the replicas and ISR a cancelled reassignment leaves, and
    whether that ISR is an unclean one (every in-sync replica was being added)."""

    replicas: list[int]
    isr: list[int]
    unclean: bool


def revert(p: PartitionState) -> Revert:
    """What cancelling ``p``'s reassignment leaves: the replicas without the adding ones (the original
    replicas), the ISR without them; an ISR left empty becomes the first original replica (unclean)."""
    adding = set(p.adding_replicas)
    replicas = [r for r in p.replicas if r not in adding]
    isr = [r for r in p.isr if r not in adding]
    if isr:
        return Revert(replicas, isr, False)
    if not replicas:  # not reachable: a partition starts with replicas
        raise _Refused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Invalid replica assignment: addingReplicas contains all replicas.",
        )
    return Revert(replicas, [replicas[0]], True)


class Reassignments:
    """Starts, cancels and completes reassignments (see the module docstring); every change runs as one
    controller event (``run_event``), and its elections through the election service."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        elections: ElectionService,
        run_event: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]],
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.elections = elections
        self.run_event = run_event
        # Partitions whose completion is scheduled: the replicas their leader asked to add to the ISR, and the
        # ISR it asked for (its order is kept).
        self._completing: dict[tuple[str, int], tuple[PartitionState, list[int], list[int]]] = {}
        self._timer: Timer | None = None

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    # ------------------------------------------------------------------------------------- requests

    async def alter_moves(
        self, moves: Mapping[tuple[str, int], Sequence[int] | None], allow_rf_change: bool = True
    ) -> list[ReassignOutcome]:
        """:meth:`alter` of ``(topic, index)`` to replicas (None: cancel), in the mapping's order."""
        targets = [Target(topic, index, replicas) for (topic, index), replicas in moves.items()]
        return await self.alter(targets, allow_rf_change)

    async def alter(self, targets: Sequence[Target], allow_rf_change: bool = True) -> list[ReassignOutcome]:
        """AlterPartitionReassignments: one outcome per target, in order."""
        return await self.run_event(lambda: self._alter(targets, allow_rf_change))

    async def _alter(self, targets: Sequence[Target], allow_rf_change: bool) -> list[ReassignOutcome]:
        outcomes: list[ReassignOutcome | None] = []
        changes: list[Change] = []
        positions: list[int] = []
        turns = Turns()
        kafka = self.elections.style is ElectionStyle.KAFKA
        with gc_paused() if len(targets) > _MANY else contextlib.nullcontext():
            for target in targets:
                if turns.due():
                    await asyncio.sleep(0)
                try:
                    if not kafka:
                        raise _Refused(
                            ErrorCode.INVALID_REQUEST,
                            f"the {self.elections.style} election style has no partition reassignments",
                        )
                    change = self._change(target, allow_rf_change)
                except _Refused as refused:
                    outcomes.append(
                        ReassignOutcome(target.topic, target.partition, refused.code, refused.message)
                    )
                    continue
                positions.append(len(outcomes))
                outcomes.append(None)
                changes.append(change)
            if changes:
                # In chunks smaller than the election service's slices: starting a reassignment writes
                # more per partition (the replica index, the data path, replication) than a failover.
                results = []
                for start in range(0, len(changes), _CHUNK):
                    if start:
                        await asyncio.sleep(0)
                    chunk = changes[start : start + _CHUNK]
                    results += await self.elections.change(chunk, "partition reassignment")
                for i, position in enumerate(positions):
                    if turns.due():
                        await asyncio.sleep(0)
                    p, result = changes[i].partition, results[i]
                    outcomes[position] = ReassignOutcome(p.topic, p.index, result.error, result.message)
                    # Freed as it goes: tens of thousands freed at the return held the loop 10-20 ms.
                    changes[i] = results[i] = None  # type: ignore[call-overload]
        return [o for o in outcomes if o is not None]

    def _change(self, target: Target, allow_rf_change: bool) -> Change:
        """The change a target asks for (Kafka's ``alterPartitionReassignment``), or _Refused."""
        t = self.cluster.topics.get(target.topic)
        if t is None:
            raise _Refused(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {target.topic}."
            )
        if not 0 <= target.partition < len(t.partitions):
            raise _Refused(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"Unable to find partition {target.topic}:{target.partition}.",
            )
        p = t.partitions[target.partition]
        if target.replicas is None:
            return self._cancel(p)
        wanted = list(target.replicas)
        self._check_assignment(wanted)
        if not allow_rf_change:
            # KIP-860 (Kafka's validatePartitionReplicationFactorUnchanged): the count of the replicas the
            # partition is headed for, the targets of a reassignment in progress (without the removing ones).
            current = len([r for r in p.replicas if r not in p.removing_replicas])
            if current != len(wanted):
                raise _Refused(
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    f"The replication factor is changed from {current} to {len(wanted)}",
                )
        # PartitionReassignmentReplicas: removing = current - target, adding = target - current, the
        # replicas the targets then the removing ones (each set in broker id order, as Kafka's TreeSet).
        removing = sorted(set(p.replicas) - set(wanted))
        adding = sorted(set(wanted) - set(p.replicas))
        return Change(
            p,
            target_replicas=wanted + removing,
            target_adding=adding,
            target_removing=removing,
        )

    def _cancel(self, p: PartitionState) -> Change:
        if not (p.adding_replicas or p.removing_replicas):
            # No message: Kafka's ApiError.fromThrowable leaves out one that is the error's own description.
            raise _Refused(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
        back = revert(p)
        if back.unclean and not self.elections.unclean_allowed(p):
            raise _Refused(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {p.topic}:{p.index} because it would require an "
                "unclean leader election.",
            )
        return Change(
            p, target_isr=back.isr, target_replicas=back.replicas, target_adding=[], target_removing=[]
        )

    def _check_assignment(self, replicas: list[int]) -> None:
        """Kafka's ``validateManualPartitionAssignment``: not empty, registered brokers, each once."""
        if not replicas:
            raise _Refused(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        previous = None
        for broker in sorted(replicas):
            state = self.cluster.broker_state(broker)
            if state is None or not state.registered:
                raise _Refused(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker}, but no such broker is registered.",
                )
            if broker == previous:
                raise _Refused(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {broker} more than once.",
                )
            previous = broker

    async def listing(self, wanted: Sequence[tuple[str, Sequence[int]]] | None) -> list[Listed]:
        """ListPartitionReassignments' content for ``wanted`` (as :meth:`ongoing`): per topic, each
        partition's index, replicas, adding and removing replicas. Taken as one controller event (no
        change interleaves), in turns of the event loop; a change replaces a partition's lists, never
        changes one in place, so the answer can be made from them afterwards, off the loop."""
        return await self.run_event(lambda: self._listing(wanted))

    async def _listing(self, wanted: Sequence[tuple[str, Sequence[int]]] | None) -> list[Listed]:
        turns = Turns()
        held: list[Listed] = []
        for name, partitions in self.ongoing(wanted):
            rows: list[tuple[int, list[int], list[int], list[int]]] = []
            for p in partitions:
                rows.append((p.index, p.replicas, p.adding_replicas, p.removing_replicas))
                if turns.due():
                    await asyncio.sleep(0)
            held.append((name, rows))
        return held

    def ongoing(
        self, wanted: Sequence[tuple[str, Sequence[int]]] | None
    ) -> list[tuple[str, list[PartitionState]]]:
        """ListPartitionReassignments: (topic, its partitions being reassigned) for ``wanted`` (topic and
        partition indexes, in the order asked; unknown ones left out) or, None, for every topic."""
        found: list[tuple[str, list[PartitionState]]] = []
        if wanted is None:
            return self.cluster.reassigning_by_topic()
        for topic, indexes in wanted:
            t = self.cluster.topics.get(topic)
            if t is None:
                continue
            partitions = [
                t.partitions[i]
                for i in indexes
                if 0 <= i < len(t.partitions)
                and (t.partitions[i].adding_replicas or t.partitions[i].removing_replicas)
            ]
            if partitions:
                found.append((topic, partitions))
        return found

    # ------------------------------------------------------------------------------------- completion

    def complete_later(self, p: PartitionState, isr: list[int]) -> None:
        """The replication model's hook: ``p``'s leader asks for ``isr``, which completes its reassignment.
        The controller writes it (one record: the ISR, the replicas, and a new leader when the leader was
        removed, the election policy's), as its next event at the same clock time, in slices."""
        joining = [r for r in isr if r not in p.isr]
        key = (p.topic, p.index)
        before = self._completing.get(key)
        if before is not None:
            joining = before[1] + [r for r in joining if r not in before[1]]
        self._completing[key] = (p, joining, list(isr))
        if self._timer is None:
            self._timer = self.clock.call_later(0, self._complete_pending, "reassignment completion")

    async def _complete_pending(self) -> None:
        self._timer = None
        await self.run_event(self._complete)

    async def _complete(self) -> None:
        pending, self._completing = self._completing, {}
        changes = []
        for (topic, index), (p, joining, asked) in pending.items():
            t = self.cluster.topics.get(topic)
            if t is None or index >= len(t.partitions) or t.partitions[index] is not p:
                continue  # deleted meanwhile
            # Only those still in sync now: the tick that asked may have moved the high watermark past a
            # replica after it asked (over the ISR as it was), and an ISR member is never below it. In the
            # order the leader asked for (Kafka's controller keeps the AlterPartition's ISR order).
            hw = p.high_watermark
            in_sync = {r for r in p.replicas if r in p.isr or (r in joining and p.leo_of(r) >= hw)}
            isr = [r for r in asked if r in in_sync] + [
                r for r in p.replicas if r in in_sync and r not in asked
            ]
            if completed_reassignment(p.replicas, p.adding_replicas, p.removing_replicas, isr) is None:
                continue  # cancelled, changed, or fallen behind meanwhile: replication asks again
            changes.append(Change(p, target_isr=isr))
        if changes:
            await self.elections.change(changes, "reassignment completed: every target replica in sync")
