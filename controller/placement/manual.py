"""Checks of manual replica assignments (CreateTopics ``Assignments``, CreatePartitions ``Assignments``).

The rules and messages are Fluvio's for assigned replica maps (``PartitionMaps::valid_partition_map`` in
``crates/fluvio-controlplane-metadata/src/topic/spec.rs``, and the SC's check that every SPU exists,
``update_replica_map_for_assigned_topic`` in ``crates/fluvio-sc/src/controllers/topics/policy.rs``):
partition ids start at 0 and run in sequence without gaps, every partition has at least one replica
and the same number as the first, no broker appears twice in a partition, ids are not negative, and
every broker is registered. On top of those, Kafka's: a partition whose replicas are all on fenced
brokers cannot be created, and CreatePartitions must give exactly one assignment per new partition.
Every failure is a :class:`~protocol.errors.Refusal` with INVALID_REPLICA_ASSIGNMENT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.placement.api import UsableBroker
from protocol.codes import ErrorCode
from protocol.errors import Refusal

__all__ = ["check_brokers", "check_new_partitions", "check_replica_map"]


def _invalid(message: str) -> Refusal:
    return Refusal(ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


def check_replica_map(partitions: Sequence[tuple[int, Sequence[int]]]) -> list[list[int]]:
    """Fluvio's checks of a replica map given as (partition id, replicas) in request order.

    Returns the replica lists in partition order, or raises the Refusal of the first rule broken.
    """
    if not partitions:
        raise _invalid("no assigned partitions found")
    replica_count = 0
    result: list[list[int]] = []
    for expected_id, (partition_id, replicas) in enumerate(partitions):
        if expected_id == 0:
            if partition_id != 0:
                raise _invalid("assigned partitions must start with id 0")
            replica_count = len(replicas)
            if replica_count == 0:
                raise _invalid("assigned replicas must have at least one spu id")
        else:
            if partition_id != expected_id:
                raise _invalid("assigned partition ids must be in sequence and without gaps")
            if len(replicas) != replica_count:
                raise _invalid(f"all assigned replicas must have the same number of spu ids: {replica_count}")
        _check_replicas(expected_id, replicas)
        result.append(list(replicas))
    return result


def check_new_partitions(
    assignments: Sequence[Sequence[int]], current_count: int, new_count: int, replication_factor: int
) -> list[list[int]]:
    """Checks the assignments of CreatePartitions: one per new partition, each like the existing ones."""
    added = new_count - current_count
    if len(assignments) != added:
        raise _invalid(
            f"Attempted to add {added} additional partition(s), but only {len(assignments)} assignment(s) "
            "were specified."
        )
    result: list[list[int]] = []
    for offset, replicas in enumerate(assignments):
        partition_id = current_count + offset
        if not replicas:
            raise _invalid("assigned replicas must have at least one spu id")
        if len(replicas) != replication_factor:
            raise _invalid(
                f"all assigned replicas must have the same number of spu ids: {replication_factor}"
            )
        _check_replicas(partition_id, replicas)
        result.append(list(replicas))
    return result


def _check_replicas(partition_id: int, replicas: Sequence[int]) -> None:
    if len(set(replicas)) != len(replicas):
        raise _invalid(f"duplicate spu ids found in assigned partition with id: {partition_id}")
    for broker_id in replicas:
        if broker_id < 0:
            raise _invalid(f"invalid spu id: {broker_id} in assigned partition with id: {partition_id}")


def check_brokers(
    replica_lists: Sequence[Sequence[int]], brokers: Mapping[int, UsableBroker], start_partition: int = 0
) -> None:
    """Every broker must be registered (first unknown one named), and every partition needs a live one."""
    seen: set[int] = set()
    for replicas in replica_lists:
        for broker_id in replicas:
            if broker_id not in seen:
                seen.add(broker_id)
                if broker_id not in brokers:
                    raise _invalid(f"invalid spu id: {broker_id}")
    for offset, replicas in enumerate(replica_lists):
        if all(brokers[b].fenced for b in replicas):
            raise _invalid(
                "All brokers specified in the manual partition assignment for partition "
                f"{start_partition + offset} are fenced or in controlled shutdown."
            )
