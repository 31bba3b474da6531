"""SimulatorPartitionState (1007): partitions as the simulator holds them (``ServerThread.partition_state``
for each): leader, epochs, in-sync set, offline replicas, high watermark (and the last stable offset when
an open transaction holds it below), each replica's log end offset, status and leader recovery state, and
the eligible leader replicas and last known ELR (KIP-966; empty with them off). Null Topics: every topic,
by name; an empty Partitions list: every partition of the topic. An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION in its entry.

Every partition of a big cluster is read in turns of the event loop, and the answer encoded off it.
"""

from __future__ import annotations

from typing import Any

from controller.answers import Sized
from controller.cluster import PartitionState
from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, served
from controller.offload import Turns
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_PARTITION_STATE

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "partition_entry", "served"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Sized:
    _control.check(ctx)
    cluster = ctx.controller.cluster
    wanted = request["Topics"]
    if wanted is None:
        wanted = [{"Name": name, "Partitions": []} for name in sorted(cluster.topics)]
    data_path = ctx.controller.built("data_path")
    turns = Turns()
    topics = []
    count = 0
    for entry in wanted:
        name = entry["Name"]
        topic = cluster.topics.get(name)
        if topic is None:
            topics.append({"Name": name, "ErrorCode": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Partitions": []})
            continue
        indexes = entry["Partitions"] or range(len(topic.partitions))
        partitions = []
        for index in indexes:
            await turns.yield_if_due()
            if not 0 <= index < len(topic.partitions):
                partitions.append(
                    {"PartitionIndex": index, "ErrorCode": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
                )
                continue
            p = topic.partitions[index]
            entry = partition_entry(p, cluster.offline_replicas(p))
            if data_path is not None:
                lso = data_path.last_stable_offset(p)
                if lso != p.high_watermark:
                    entry["LastStableOffset"] = lso
            partitions.append(entry)
        count += len(partitions)
        topics.append({"Name": name, "ErrorCode": ErrorCode.NONE, "Partitions": partitions})
    response = {
        "ThrottleTimeMs": 0,
        "ErrorCode": ErrorCode.NONE,
        "NowMs": ctx.controller.clock.now(),
        "Topics": topics,
    }
    return Sized(response, count)


def partition_entry(p: PartitionState, offline_replicas: list[int]) -> dict[str, Any]:
    """One partition as the answer gives it (what ``ServerThread.partition_state`` holds; also a
    scenario's snapshot), read from the partition itself: 100,000 of them are read in one answer. The
    ELR fields (tagged) only when one is not empty."""
    entry = {
        "PartitionIndex": p.index,
        "ErrorCode": ErrorCode.NONE,
        "LeaderId": p.leader,
        "LeaderEpoch": p.leader_epoch,
        "PartitionEpoch": p.partition_epoch,
        "Replicas": list(p.replicas),
        "Isr": list(p.isr),
        "OfflineReplicas": offline_replicas,
        "HighWatermark": p.high_watermark,
        "Status": p.status,
        "LeaderRecoveryState": p.leader_recovery_state,
        "ReplicaStates": [
            {"BrokerId": broker, "LogEndOffset": offset}
            for broker, offset in zip(p.replicas, p.leo, strict=True)
        ],
    }
    if p.elr or p.last_known_elr:
        entry["EligibleLeaderReplicas"] = list(p.elr)
        entry["LastKnownElr"] = list(p.last_known_elr)
    return entry


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "NowMs": -1, "Topics": []}
