"""DeleteRecords (21) v0-2: move partitions' log start offsets up.

As Kafka's ``ReplicaManager.deleteRecordsOnLocalLog``: the topic (UNKNOWN_TOPIC_OR_PARTITION), the
answering broker's leadership (NOT_LEADER_OR_FOLLOWER), a compacted topic whose ``cleanup.policy`` does not
include ``delete`` (POLICY_VIOLATION, ``Partition.deleteRecordsOnLeader``; an empty policy deletes, as Kafka
4.4's); an offset of -1 means the high watermark, and
an offset above the high watermark (or below -1) is OFFSET_OUT_OF_RANGE. The log start moves on every
replica at once (Kafka's ``DelayedDeleteRecords`` waits until the followers have moved theirs; here they
move together), and LowWatermark answers the leader's new log start offset. Whole batches below it
leave the logs; a batch that holds it stays, its records below it no longer read. A request naming more
than :data:`IN_TURNS` partitions is answered in turns of the event loop. With an
authorizer, a topic the client may not DELETE is TOPIC_AUTHORIZATION_FAILED for its partitions, as Kafka
answers it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.answers import Sized
from controller.handlers import RequestContext
from controller.handlers._partitions import find_topic, served_partition
from controller.offload import Turns, gc_paused
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DELETE_RECORDS
VERSIONS = (0, 2)

_HIGH_WATERMARK = -1
#: A DeleteRecords naming more partitions than this is answered in turns of the event loop.
IN_TURNS = 256
#: What a partition of the answer costs to encode, in :data:`controller.offload.BIG`'s units.
_ENCODE_WEIGHT = 16


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    if sum(len(wanted["Partitions"]) for wanted in request["Topics"]) > IN_TURNS:
        return _in_turns(ctx, request)
    return _run(_answer(ctx, request))


def _run(steps: Generator[None, None, dict[str, Any]]) -> dict[str, Any]:
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


async def _in_turns(ctx: RequestContext, request: dict[str, Any]) -> Sized:
    """A DeleteRecords naming many partitions, in turns of the event loop with the cyclic garbage
    collector paused (:func:`controller.offload.gc_paused`), its answer encoded off the loop."""
    turns = Turns()
    steps = _answer(ctx, request)
    count = sum(len(wanted["Partitions"]) for wanted in request["Topics"])
    with gc_paused():
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return Sized(done.value, count * _ENCODE_WEIGHT)
            if turns.due():
                await asyncio.sleep(0)


def _answer(ctx: RequestContext, request: dict[str, Any]) -> Generator[None, None, dict[str, Any]]:
    """The answer, a step per partition."""
    data_path = ctx.controller.data_path
    allowed = None
    if ctx.authorizer is not None:
        allowed = ctx.allowed_names(
            Operation.DELETE, ResourceType.TOPIC, (t["Name"] for t in request["Topics"])
        )
    topics = []
    for wanted in request["Topics"]:
        name = wanted["Name"]
        topic = find_topic(ctx, name, None, False)
        partitions = []
        for asked in wanted["Partitions"]:
            yield
            index = asked["PartitionIndex"]
            entry: dict[str, Any] = {"PartitionIndex": index, "LowWatermark": -1}
            partitions.append(entry)
            if allowed is not None and name not in allowed:
                entry["ErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            p = served_partition(ctx, topic, index)
            if isinstance(p, ErrorCode):
                entry["ErrorCode"] = p
                continue
            if not data_path.topic_settings(p.topic).delete_policy:
                entry["ErrorCode"] = ErrorCode.POLICY_VIOLATION  # Partition.deleteRecordsOnLeader, first
                continue
            offset = asked["Offset"]
            if offset == _HIGH_WATERMARK:
                offset = p.high_watermark
            if offset < 0 or offset > p.high_watermark:
                entry["ErrorCode"] = ErrorCode.OFFSET_OUT_OF_RANGE
                continue
            entry["ErrorCode"] = ErrorCode.NONE
            entry["LowWatermark"] = data_path.delete_records(p, offset)
        topics.append({"Name": name, "Partitions": partitions})
    return {"ThrottleTimeMs": 0, "Topics": topics}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Topics": [
            {
                "Name": t["Name"],
                "Partitions": [
                    {"PartitionIndex": p["PartitionIndex"], "ErrorCode": error_code, "LowWatermark": -1}
                    for p in t["Partitions"]
                ],
            }
            for t in request.get("Topics") or []
        ],
    }
