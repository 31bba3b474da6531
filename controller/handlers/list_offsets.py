"""ListOffsets (2) v1-11: offsets by timestamp at partition leaders.

As Kafka's ``Partition.fetchOffsetForTimestamp`` for a client (an isolation level is always given; v2+
carry it, v1 reads uncommitted): -1 (latest) is the high watermark, or for read_committed (IsolationLevel
1) the last stable offset (:meth:`DataPath.last_stable_offset`), -2 (earliest) and -4 (earliest local,
v8+) the log start offset, -3 (max timestamp, v7+) the first record with the largest timestamp below
that bound, and a timestamp of 0 or more the first record at or after it below the bound (-1, -1 when
there is none). Right after an election, while the
high watermark is still below the start of the leader's epoch, "latest" and a lookup that finds nothing
below the high watermark answer OFFSET_NOT_AVAILABLE, as Kafka does. The tiered storage ones (-5, latest
tiered, v9+; -6, earliest pending upload, v11+: no tiered storage here, as on a Kafka without it) answer
-1, -1.

A special timestamp the request's version does not have (-3 before v7, -4 before v8, -5 before v9, -6
before v11, any other negative one at every version) is UNSUPPORTED_VERSION, before anything else but the
authorizer, as Kafka answers it. Then the topic (UNKNOWN_TOPIC_OR_PARTITION), the answering broker's
leadership (NOT_LEADER_OR_FOLLOWER) and the client's CurrentLeaderEpoch (v4+: FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH) are checked. A partition named more than once is answered once, INVALID_REQUEST, as
Kafka's ``ReplicaManager.fetchOffset`` answers its ``duplicatePartitions`` (in the order first named:
Kafka's order is its map's). No batch is read: timestamps are looked up in what the leader kept of each
batch at append (:meth:`controller.records.log.Log.offset_for_timestamp`), and a request naming more than
:data:`IN_TURNS` partitions is answered in turns of the event loop. Before them all, with an authorizer, a
topic the client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from controller.handlers._partitions import find_topic, served_partition
from controller.handlers._partitions import leader_log as leader_of
from controller.offload import Turns, gc_paused
from controller.records.log import TimestampAndOffset
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.LIST_OFFSETS
VERSIONS = (1, 11)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
_LEADER_EPOCH = 4
#: The first version that has each special timestamp (KIP-734, KIP-405, KIP-1005, KIP-1023).
_SPECIAL_SINCE = {LATEST: 0, EARLIEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, -5: 9, -6: 11}
#: A ListOffsets naming more partitions than this is answered in turns of the event loop.
IN_TURNS = 256


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    named = sum(len(wanted["Partitions"]) for wanted in request["Topics"])
    if named > IN_TURNS:
        return _in_turns(ctx, request, version)
    answer = _Answer(ctx, request, version)
    for wanted in request["Topics"]:
        for asked in wanted["Partitions"]:
            answer.add(wanted["Name"], asked)
    return answer.response()


async def _in_turns(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    """A ListOffsets naming many partitions, answered in turns of the event loop."""
    turns = Turns()
    answer = _Answer(ctx, request, version)
    with gc_paused():
        for wanted in request["Topics"]:
            for asked in wanted["Partitions"]:
                answer.add(wanted["Name"], asked)
                if turns.due():
                    await asyncio.sleep(0)
    return answer.response()


class _Answer:
    """The answer being made: one entry per partition named, in the order first named; a partition named
    twice or more is answered once, INVALID_REQUEST (``ListOffsetsRequest.duplicatePartitions``)."""

    def __init__(self, ctx: RequestContext, request: dict[str, Any], version: int) -> None:
        self.ctx = ctx
        self.version = version
        self.read_committed = request.get("IsolationLevel", 0) == 1
        #: With an authorizer, the topics the client may DESCRIBE (None: no authorizer).
        self.allowed: Any = None
        if ctx.authorizer is not None:
            self.allowed = ctx.allowed_names(
                Operation.DESCRIBE, ResourceType.TOPIC, (t["Name"] for t in request["Topics"])
            )
        self.topics: dict[str, dict[int, dict[str, Any]]] = {}
        self._found: dict[str, Any] = {}

    def add(self, name: str, asked: dict[str, Any]) -> None:
        index = asked["PartitionIndex"]
        partitions = self.topics.get(name)
        if partitions is None:
            partitions = self.topics[name] = {}
            self._found[name] = find_topic(self.ctx, name, None, False)
        entry = partitions.get(index)
        if entry is not None:  # named again
            entry.update(ErrorCode=ErrorCode.INVALID_REQUEST, Timestamp=-1, Offset=-1)
            if "LeaderEpoch" in entry:
                entry["LeaderEpoch"] = -1
            return
        entry = {"PartitionIndex": index, "Timestamp": -1, "Offset": -1, "LeaderEpoch": -1}
        partitions[index] = entry
        version = self.version
        epoch = asked.get("CurrentLeaderEpoch", -1) if version >= _LEADER_EPOCH else -1
        timestamp = asked["Timestamp"]
        p: Any
        if self.allowed is not None and name not in self.allowed:
            entry["ErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif timestamp < 0 and version < _SPECIAL_SINCE.get(timestamp, version + 1):
            entry["ErrorCode"] = ErrorCode.UNSUPPORTED_VERSION
        elif isinstance(p := served_partition(self.ctx, self._found[name], index, epoch), ErrorCode):
            entry["ErrorCode"] = p
        else:
            entry["ErrorCode"] = _lookup(self.ctx, p, timestamp, entry, self.read_committed)
        if version < _LEADER_EPOCH:
            entry.pop("LeaderEpoch", None)

    def response(self) -> dict[str, Any]:
        topics = [
            {"Name": name, "Partitions": list(partitions.values())}
            for name, partitions in self.topics.items()
        ]
        return {"ThrottleTimeMs": 0, "Topics": topics}


def _lookup(
    ctx: RequestContext, p: Any, timestamp: int, entry: dict[str, Any], read_committed: bool
) -> ErrorCode:
    data_path = ctx.controller.data_path
    leader_log = leader_of(ctx, p)
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
