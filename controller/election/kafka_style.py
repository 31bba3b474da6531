"""Kafka's style of election: every change is one record of KRaft's ``PartitionChangeBuilder``, applied
at once (:mod:`controller.election.change`).

A change without a trigger elects only when the leader can no longer lead (Kafka's ONLINE election
inside every partition change); a topic that allows unclean elections (``unclean.leader.election.enable``)
gets UNCLEAN ones from the controller, as Kafka's ``ReplicationControlManager`` gives it. With eligible
leader replicas on (:meth:`ElectionService.elr_min_isr`) every record keeps the ELR with the topic's
``min.insync.replicas``; a broker back from an unclean shutdown leaves the ISR and the ELR
(``handleBrokerUncleanShutdown``). Changes are
written together, one record each in order; a partition named twice first writes what came before, so
that each change builds on the last.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.cluster import NO_LEADER, PartitionChange, PartitionState
from controller.election.api import ElectionStyle, PartitionView, Trigger
from controller.election.change import ElectionKind, PartitionChangeBuilder, isr_change, leader_is_valid
from controller.election.service import Change, ChangeResult, ElectionService

__all__ = ["KafkaElection"]

#: The election each trigger asks for (the others elect only when the leader cannot lead).
_KINDS = {Trigger.PREFERRED: ElectionKind.PREFERRED, Trigger.UNCLEAN: ElectionKind.UNCLEAN}


class KafkaElection(ElectionService):
    """Kafka's KRaft controller: partition changes as ``PartitionChangeBuilder`` records."""

    style = ElectionStyle.KAFKA
    preferred_rebalance = True
    unclean_check = True

    def _prepare(
        self, batch: Sequence[Change], alive: frozenset[int], to_elect: list[int], views: list[PartitionView]
    ) -> list[PartitionChangeBuilder | int | None]:
        """A builder per change, or for a change of the ISR alone that keeps a valid leader (the bulk of a
        failover: :func:`~controller.election.change.isr_change` writes it) the topic's min ISR with ELR
        on, None with it off."""
        builders: list[PartitionChangeBuilder | int | None] = []
        unclean_by_topic: dict[str, bool] = {}
        min_isr_by_topic: dict[str, int | None] = {}
        # Whether a partition's own reassignment is looked at: not while none is in progress.
        in_progress = self.cluster.reassignment_in_progress
        for i, change in enumerate(batch):
            p = change.partition
            trigger = change.trigger
            target_isr = change.target_isr
            reassigning = (
                change.target_replicas is not None
                or change.target_adding is not None
                or change.target_removing is not None
                or (in_progress and (p.adding_replicas or p.removing_replicas))
            )
            topic = p.topic
            if topic in min_isr_by_topic:
                min_isr = min_isr_by_topic[topic]
            else:
                min_isr = min_isr_by_topic[topic] = self.elr_min_isr(p)
            if (
                trigger is None
                and not reassigning
                and change.unclean_shutdown == NO_LEADER
                and leader_is_valid(p, p.isr if target_isr is None else target_isr, alive)
            ):
                builders.append(min_isr)  # an ISR change alone, with ELR at that min ISR (None: off)
                continue
            acceptable = alive
            if change.unclean_shutdown != NO_LEADER:
                acceptable = alive - {change.unclean_shutdown}
            builder = PartitionChangeBuilder(p, acceptable)
            builders.append(builder)
            if min_isr is not None:
                builder.set_eligible_leader_replicas(min_isr)
                if change.unclean_shutdown != NO_LEADER:
                    builder.set_unclean_shutdown_replicas((change.unclean_shutdown,))
            if target_isr is not None:
                builder.set_target_isr(target_isr)
            if reassigning:
                if change.target_replicas is not None:
                    builder.set_target_replicas(change.target_replicas)
                if change.target_adding is not None:
                    builder.set_target_adding(change.target_adding)
                if change.target_removing is not None:
                    builder.set_target_removing(change.target_removing)
            if trigger is not None:
                builder.set_election(_KINDS.get(trigger, ElectionKind.ONLINE), trigger)
            if builder.wants_election():
                unclean = unclean_by_topic.get(p.topic)
                if unclean is None:
                    unclean = unclean_by_topic[p.topic] = self.unclean_allowed(p)
                to_elect.append(i)
                views.append(builder.set_unclean_allowed(unclean).view())
        return builders

    def _apply(
        self,
        batch: Sequence[Change],
        plans: list[PartitionChangeBuilder | int | None],
        answers: dict[int, tuple[int, ...]],
        failures: dict[int, str],
        cause: str,
        wanted: bool,
    ) -> list[ChangeResult]:
        results: list[ChangeResult | None] = []  # None until written; only failures when not wanted
        pending: list[PartitionChange] = []
        positions: list[int] = []  # where the pending records' results go (when wanted)
        pending_partitions: set[PartitionState] = set()  # by identity (eq=False)

        def write() -> None:
            written = self.cluster.apply_changes(pending)
            self.on_changes([record.partition for record in pending])
            if wanted:
                for position, record, recorded in zip(positions, pending, written, strict=True):
                    p = record.partition
                    results[position] = ChangeResult(p, True, None, None, p.leader, recorded)
            pending.clear()
            positions.clear()
            pending_partitions.clear()

        for i, (change, builder) in enumerate(zip(batch, plans, strict=True)):
            p = change.partition
            if pending and p in pending_partitions:
                write()
            if failures and i in failures:
                results.append(self._failed(p, failures[i]))
                continue
            if builder is None or type(builder) is int:
                target_isr = change.target_isr
                min_isr = builder
                if target_isr is None and min_isr is not None:
                    target_isr = p.isr  # the ELR follows the ISR as it is (a min ISR changed since)
                record = (
                    None
                    if target_isr is None
                    else isr_change(p, target_isr, cause, min_isr is not None, min_isr)
                )
            else:
                if answers and i in answers:
                    builder.set_candidates(answers[i])
                record = builder.build(cause)
            if record is None:
                if wanted:
                    results.append(ChangeResult(p, leader=p.leader))
            else:
                if wanted:
                    positions.append(len(results))
                    results.append(None)
                pending.append(record)
                pending_partitions.add(p)
        if pending:
            write()
        return [r for r in results if r is not None]
