"""Kafka's leader choice, as its KRaft controller's ``PartitionChangeBuilder`` makes it (ELR off).

- an election that is not a preferred one keeps the current leader while it may still lead, and
  otherwise takes the first eligible replica in assignment order (for an unclean election, the first
  live replica, when no in-sync replica can lead);
- a preferred election takes the first replica if it may lead; otherwise it keeps the current leader
  if that may still lead; otherwise the first eligible replica in assignment order.

Which replicas are eligible (active brokers in the target ISR, or any active replica when unclean) is the
controller's rule (:func:`controller.election.rules.kafka_eligible`); this policy only orders them (and
:class:`controller.election.change.PartitionChangeBuilder` uses this order when no policy answers).
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.election.api import Candidates, ElectionPolicy, ElectionStyle, PartitionView, Trigger

__all__ = ["KafkaElectionPolicy", "kafka_candidates"]


def kafka_candidates(view: PartitionView) -> tuple[int, ...]:
    eligible = view.eligible
    if not eligible:
        return ()
    order: list[int] = []
    if view.trigger is Trigger.PREFERRED and view.replicas[0] in eligible:
        order.append(view.replicas[0])
    # The current leader stays only while it is a valid (in-sync) leader; an unclean election takes the
    # first live replica in assignment order.
    if not view.unclean and view.leader in eligible and view.leader not in order:
        order.append(view.leader)
    for r in eligible:
        if r not in order:
            order.append(r)
    return tuple(order)


class KafkaElectionPolicy(ElectionPolicy):
    """Kafka's KRaft controller: keep a valid leader, else the first valid replica in assignment order."""

    style = ElectionStyle.KAFKA

    def elect(self, partitions: Sequence[PartitionView]) -> list[Candidates]:
        return [kafka_candidates(view) for view in partitions]
