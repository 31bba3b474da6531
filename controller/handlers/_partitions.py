"""What the data handlers (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords) share: the
partition a request names, whether the answering broker leads it, the leader epoch checks, and KIP-951's
CurrentLeader and NodeEndpoints. Not a handler (no ``API_KEY``).

Which broker answers: a request that reaches a broker's own listener is answered by that broker, as
Kafka's are: the partition's leader serves it, any other broker answers NOT_LEADER_OR_FOLLOWER. A request
that reaches the bootstrap listener (which belongs to no broker) is served as the leader would serve it
while the leader's process serves, so that a client that never leaves the bootstrap address (the
command line) still reads and writes.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from controller.cluster import NO_LEADER, PartitionState, Topic
from controller.records.log import Log
from protocol import ZERO_UUID
from protocol.codes import ErrorCode

if TYPE_CHECKING:
    from controller.handlers import RequestContext

__all__ = [
    "current_leader",
    "epoch_error",
    "find_topic",
    "leads",
    "node_endpoints",
    "served_partition",
    "unknown_topic",
]


def find_topic(
    ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None, by_id: bool
) -> Topic | None:
    """The topic a request names: by id when the version carries ids (``by_id``), else by name."""
    cluster = ctx.controller.cluster
    if by_id:
        if topic_id is None or topic_id == ZERO_UUID:
            return None
        return cluster.topic_by_id(topic_id)
    return cluster.topics.get(name) if name is not None else None


def unknown_topic(by_id: bool) -> ErrorCode:
    return ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def partition_of(topic: Topic, index: int) -> PartitionState | None:
    return topic.partitions[index] if 0 <= index < len(topic.partitions) else None


def leads(ctx: RequestContext, p: PartitionState) -> bool:
    """Whether the broker answering serves ``p`` as its leader (see the module docstring)."""
    leader = p.leader
    if leader == NO_LEADER:
        return False
    if ctx.listener_broker is not None:
        return ctx.listener_broker == leader
    broker = ctx.controller.cluster.broker_state(leader)
    return broker is not None and broker.serving


def epoch_error(p: PartitionState, current_leader_epoch: int) -> ErrorCode | None:
    """Kafka's check of a client's CurrentLeaderEpoch (``Partition.localLogWithEpochOrThrow``): an older
    epoch is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH; -1 is not checked."""
    if current_leader_epoch < 0 or current_leader_epoch == p.leader_epoch:
        return None
    if current_leader_epoch < p.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


def served_partition(
    ctx: RequestContext, topic: Topic | None, index: int, current_leader_epoch: int = -1
) -> PartitionState | ErrorCode:
    """The partition ``index`` of ``topic`` when the answering broker leads it and the client's leader
    epoch (-1: unchecked) is its own; else Kafka's error, checked in Kafka's order: unknown topic or
    partition, NOT_LEADER_OR_FOLLOWER, then the epoch (:func:`epoch_error`)."""
    p = partition_of(topic, index) if topic is not None else None
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not leads(ctx, p):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    code = epoch_error(p, current_leader_epoch)
    return p if code is None else code


def current_leader(p: PartitionState | None) -> dict[str, int]:
    """KIP-951's CurrentLeader of a partition (-1, -1 when unknown)."""
    if p is None or p.leader == NO_LEADER:
        return {"LeaderId": -1, "LeaderEpoch": -1}
    return {"LeaderId": p.leader, "LeaderEpoch": p.leader_epoch}


def node_endpoints(ctx: RequestContext, brokers: set[int]) -> list[dict[str, Any]]:
    """KIP-951's NodeEndpoints for the leaders an answer names (those with an advertised listener)."""
    out = []
    cluster = ctx.controller.cluster
    for broker in sorted(brokers):
        endpoint = ctx.endpoints.get(broker)
        state = cluster.broker_state(broker)
        if endpoint is None or state is None or not state.registered:
            continue
        out.append({"NodeId": broker, "Host": endpoint[0], "Port": endpoint[1], "Rack": state.rack})
    return out


def leader_log(ctx: RequestContext, p: PartitionState) -> Log:
    """The leader's log; for a partition no record reached yet, the empty log a Kafka leader has, whose
    epoch cache holds the leader's epoch from offset 0 (``Partition.makeLeader`` assigns it)."""
    data_path = ctx.controller.data_path
    if data_path.data(p) is not None or p.leader_epoch < 0:
        return data_path.log_of(p, p.leader)
    empty = Log()
    empty.become_leader(p.leader_epoch)
    return empty
