"""ListOffsets (2) v1-11: offsets by timestamp at partition leaders.

As Kafka's ``Partition.fetchOffsetForTimestamp`` for a client (an isolation level is always given; v2+
carry it, v1 reads uncommitted): -1 (latest) is the high watermark, or for read_committed (IsolationLevel
1) the last stable offset (:meth:`DataPath.last_stable_offset`), -2 (earliest) and -4 (earliest local,
v8+) the log start offset, -3 (max timestamp, v7+) the first record with the largest timestamp below
that bound, and a timestamp of 0 or more the first record at or after it below the bound (-1, -1 when
there is none). Right after an election, while the
high watermark is still below the start of the leader's epoch, "latest" and a lookup that finds nothing
below the high watermark answer OFFSET_NOT_AVAILABLE, as Kafka does. Other negative timestamps (-5,
earliest pending upload: no tiered storage here) answer -1, -1.

The topic (UNKNOWN_TOPIC_OR_PARTITION), the answering broker's leadership (NOT_LEADER_OR_FOLLOWER) and
the client's CurrentLeaderEpoch (v4+: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH) are checked first;
before them, with an authorizer, a topic the client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from controller.handlers._partitions import find_topic, served_partition
from controller.records.log import TimestampAndOffset
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.LIST_OFFSETS
VERSIONS = (1, 11)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
_LEADER_EPOCH = 4


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    topics = []
    allowed = None
    if ctx.authorizer is not None:
        allowed = ctx.allowed_names(
            Operation.DESCRIBE, ResourceType.TOPIC, (t["Name"] for t in request["Topics"])
        )
    for wanted in request["Topics"]:
        name = wanted["Name"]
        topic = find_topic(ctx, name, None, False)
        partitions = []
        for asked in wanted["Partitions"]:
            index = asked["PartitionIndex"]
            entry: dict[str, Any] = {
                "PartitionIndex": index,
                "Timestamp": -1,
                "Offset": -1,
                "LeaderEpoch": -1,
            }
            partitions.append(entry)
            if allowed is not None and name not in allowed:
                entry["ErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                if version < _LEADER_EPOCH:
                    entry.pop("LeaderEpoch", None)
                continue
            epoch = asked.get("CurrentLeaderEpoch", -1) if version >= _LEADER_EPOCH else -1
            p = served_partition(ctx, topic, index, epoch)
            if isinstance(p, ErrorCode):
                entry["ErrorCode"] = p
                continue
            read_committed = request.get("IsolationLevel", 0) == 1
            entry["ErrorCode"] = _lookup(ctx, p, asked["Timestamp"], entry, read_committed)
            if version < _LEADER_EPOCH:
                entry.pop("LeaderEpoch", None)
        topics.append({"Name": name, "Partitions": partitions})
    return {"ThrottleTimeMs": 0, "Topics": topics}


def _lookup(
    ctx: RequestContext, p: Any, timestamp: int, entry: dict[str, Any], read_committed: bool
) -> ErrorCode:
    data_path = ctx.controller.data_path
    leader_log = data_path.log_of(p, p.leader)
    hw = p.high_watermark
    bound = data_path.last_stable_offset(p) if read_committed else hw
    lagging = p.epoch_start_offset > hw  # the leader's epoch starts past the high watermark
    found: TimestampAndOffset | None
    if timestamp == LATEST:
        if lagging:
            return ErrorCode.OFFSET_NOT_AVAILABLE
        found = TimestampAndOffset(-1, bound, p.leader_epoch)
    elif timestamp in (EARLIEST, EARLIEST_LOCAL):
        found = leader_log.earliest()
    elif timestamp == MAX_TIMESTAMP or timestamp >= 0:
        found = (
            leader_log.max_timestamp()
            if timestamp == MAX_TIMESTAMP
            else leader_log.offset_for_timestamp(timestamp)
        )
        if found is None or found.offset >= bound:
            return ErrorCode.OFFSET_NOT_AVAILABLE if lagging else ErrorCode.NONE
    else:
        return ErrorCode.NONE
    entry["Timestamp"] = found.timestamp
    entry["Offset"] = found.offset
    entry["LeaderEpoch"] = found.leader_epoch if found.leader_epoch is not None else -1
    return ErrorCode.NONE


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Topics": [
            {
                "Name": t["Name"],
                "Partitions": [
                    {
                        "PartitionIndex": p["PartitionIndex"],
                        "ErrorCode": error_code,
                        "Timestamp": -1,
                        "Offset": -1,
                    }
                    for p in t["Partitions"]
                ],
            }
            for t in request.get("Topics") or []
        ],
    }
