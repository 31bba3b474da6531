"""OffsetForLeaderEpoch (23) v2-4: where a leader epoch ends in the leader's log.

As Kafka's ``Partition.lastOffsetForLeaderEpoch``: the topic (UNKNOWN_TOPIC_OR_PARTITION), the answering
broker's leadership (NOT_LEADER_OR_FOLLOWER), the client's CurrentLeaderEpoch (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH), then ``(epoch, end offset)`` from the leader's epoch cache: the largest epoch not
above the one asked for and the offset where the next one starts (the log end offset for the latest
epoch); -1, -1 when the log has no such epoch. Consumers ask this after a leader change to find out
whether their position diverged (KIP-320).

With an authorizer, a client without CLUSTER_ACTION on the cluster gets TOPIC_AUTHORIZATION_FAILED for
the topics it may not DESCRIBE, as Kafka answers.
"""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from controller.handlers._partitions import find_topic, leader_log, served_partition
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
VERSIONS = (2, 4)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    topics = []
    allowed = None
    if ctx.authorizer is not None and ctx.refused_on_cluster(Operation.CLUSTER_ACTION) is not None:
        # A client (not a broker): DESCRIBE on each topic, as Kafka's handleOffsetForLeaderEpochRequest.
        allowed = ctx.allowed_names(
            Operation.DESCRIBE, ResourceType.TOPIC, (t["Topic"] for t in request["Topics"])
        )
    for wanted in request["Topics"]:
        name = wanted["Topic"]
        topic = find_topic(ctx, name, None, False)
        partitions = []
        for asked in wanted["Partitions"]:
            index = asked["Partition"]
            entry: dict[str, Any] = {"Partition": index, "LeaderEpoch": -1, "EndOffset": -1}
            partitions.append(entry)
            if allowed is not None and name not in allowed:
                entry["ErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            p = served_partition(ctx, topic, index, asked.get("CurrentLeaderEpoch", -1))
            if isinstance(p, ErrorCode):
                entry["ErrorCode"] = p
                continue
            entry["ErrorCode"] = ErrorCode.NONE
            found = leader_log(ctx, p).end_offset_for_epoch(asked["LeaderEpoch"])
            if found is not None:
                entry["LeaderEpoch"], entry["EndOffset"] = found
        topics.append({"Topic": name, "Partitions": partitions})
    return {"ThrottleTimeMs": 0, "Topics": topics}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Topics": [
            {
                "Topic": t["Topic"],
                "Partitions": [
                    {"Partition": p["Partition"], "ErrorCode": error_code, "LeaderEpoch": -1, "EndOffset": -1}
                    for p in t["Partitions"]
                ],
            }
            for t in request.get("Topics") or []
        ],
    }
