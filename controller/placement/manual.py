"""Checks of manual replica assignments (CreateTopics ``Assignments``, CreatePartitions ``Assignments``),
with Kafka's rules and messages (``ReplicationControlManager``: ``createTopic``, ``createPartitions`` and
``validateManualPartitionAssignment``).

Each assignment in request order: a partition index given twice; then its replicas: not empty, every
broker registered and named once (looked at in ascending order: the smallest unknown or repeated one is
named), as many as the first assignment's; then at least one replica on a broker that is neither fenced
nor in controlled shutdown. Last, the partition indexes run from 0 without gaps. CreatePartitions gives
exactly one assignment per new partition, each with the topic's replication factor. Every failure is a
:class:`~protocol.errors.Refusal` with INVALID_REPLICA_ASSIGNMENT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.placement.api import UsableBroker
from protocol.codes import ErrorCode
from protocol.errors import Refusal

__all__ = ["check_assignment", "check_new_partitions", "check_replica_map"]


def _invalid(message: str) -> Refusal:
    return Refusal(ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


def check_assignment(
    replicas: Sequence[int], brokers: Mapping[int, UsableBroker], replication_factor: int | None
) -> None:
    """Kafka's ``validateManualPartitionAssignment`` for one partition's replicas."""
    if not replicas:
        raise _invalid("The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(replicas):
        if broker not in brokers:
            raise _invalid(
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."
            )
        if broker == previous:
            raise _invalid(f"The manual partition assignment includes the broker {broker} more than once.")
        previous = broker
    if replication_factor is not None and len(replicas) != replication_factor:
        raise _invalid(
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this "
            f"is not consistent with previous partitions, which have {replication_factor} replica(s)."
        )


def _check_live(replicas: Sequence[int], brokers: Mapping[int, UsableBroker], partition: int) -> None:
    if all(brokers[b].fenced for b in replicas):
        raise _invalid(
            f"All brokers specified in the manual partition assignment for partition {partition} are fenced "
            "or in controlled shutdown."
        )


def check_replica_map(
    partitions: Sequence[tuple[int, Sequence[int]]], brokers: Mapping[int, UsableBroker]
) -> list[list[int]]:
    """A CreateTopics manual assignment, given as (partition index, replicas) in request order: the
    replica lists in partition order, or the Refusal of the first rule broken."""
    by_index: dict[int, list[int]] = {}
    replication_factor: int | None = None
    for index, replicas in partitions:
        if index in by_index:
            raise _invalid(f"Found multiple manual partition assignments for partition {index}")
        check_assignment(replicas, brokers, replication_factor)
        replication_factor = len(replicas)
        _check_live(replicas, brokers, index)
        by_index[index] = list(replicas)
    for index in range(len(by_index)):
        if index not in by_index:
            raise _invalid("partitions should be a consecutive 0-based integer sequence")
    return [by_index[i] for i in range(len(by_index))]


def check_new_partitions(
    assignments: Sequence[Sequence[int]],
    current_count: int,
    new_count: int,
    replication_factor: int,
    brokers: Mapping[int, UsableBroker],
) -> list[list[int]]:
    """CreatePartitions' assignments: one per new partition, each with the topic's replication factor."""
    added = new_count - current_count
    if len(assignments) != added:
        raise _invalid(
            f"Attempted to add {added} additional partition(s), but only {len(assignments)} assignment(s) "
            "were specified."
        )
    for offset, replicas in enumerate(assignments):
        check_assignment(replicas, brokers, replication_factor)
        _check_live(replicas, brokers, current_count + offset)
    return [list(replicas) for replicas in assignments]
