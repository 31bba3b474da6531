"""ShareFetch (78) v1-2: a share group member acknowledges what it acquired before and acquires records of
its share session's partitions (KIP-932), as Kafka's ``KafkaApis.handleShareFetchRequest`` and
``SharePartitionManager`` do.

In order: the share session step (epoch 0 opens one, where acknowledgements are INVALID_REQUEST; -1 is the
last request, which only acknowledges; else the session's next epoch: SHARE_SESSION_NOT_FOUND,
INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED), then the acknowledgements of each partition
(AcknowledgeErrorCode: INVALID_RECORD_STATE, or the share coordinator's error when it cannot persist
them), then the records acquired from every partition of the session that the answering broker leads
(NOT_LEADER_OR_FOLLOWER with CurrentLeader and NodeEndpoints otherwise): at most MaxRecords (whole batches
unless ShareAcquireMode is 1, record-limit), within MaxBytes (at least one batch, KIP-74). With nothing
acquired the answer waits up to MaxWaitMs, on the cluster's clock (and real time on a virtual clock, as
Fetch), until records arrive or come back. A renew-only request (v2 IsRenewAck) fetches nothing.

With an authorizer, as Kafka: a client that may not READ the group is GROUP_AUTHORIZATION_FAILED before
anything else; a partition of a topic it may not READ is TOPIC_AUTHORIZATION_FAILED (its acknowledgements
in AcknowledgeErrorCode), neither acknowledged nor fetched.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.acls.groups import GROUP_REFUSED
from controller.clock import VirtualClock
from controller.cluster import PartitionState
from controller.handlers import RequestContext
from controller.handlers._partitions import current_leader, leads, node_endpoints, partition_of
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SHARE_FETCH
VERSIONS = (1, 2)

_RECORD_LIMIT_MODE = 1
TOPIC_REFUSED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    share = ctx.controller.share
    group, member, epoch = (
        request.get("GroupId") or "",
        request.get("MemberId") or "",
        request["ShareSessionEpoch"],
    )
    if ctx.authorizer is not None and not ctx.allowed(Operation.READ, ResourceType.GROUP, group):
        return _top(ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_REFUSED)
    if not group or not member:
        return _top(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.")
    renew = version >= 2 and bool(request.get("IsRenewAck"))
    acks = [
        (t["TopicId"], p["PartitionIndex"], p["AcknowledgementBatches"])
        for t in request["Topics"]
        for p in t["Partitions"]
        if p["AcknowledgementBatches"]
    ]
    if epoch == 0 and acks:
        return _top(ErrorCode.INVALID_REQUEST, "Acknowledge data present in Initial Fetch Request.")
    add = [(t["TopicId"], p["PartitionIndex"]) for t in request["Topics"] for p in t["Partitions"]]
    forget = [(t["TopicId"], i) for t in request["ForgottenTopicsData"] for i in t["Partitions"]]
    error, message, session = share.session(
        ctx.listener_broker, group, member, epoch, add if epoch != -1 and not renew else [], forget
    )
    if error or session is None:
        return _top(error or ErrorCode.UNKNOWN_SERVER_ERROR, message)
    lock_ms = ctx.controller.cluster.group_config(group, "share.record.lock.duration.ms")
    entries: dict[tuple[uuid.UUID, int], dict[str, Any]] = {}
    leaders: set[int] = set()
    fetched = list(session.partitions)
    denied: set[uuid.UUID] = set()
    if ctx.authorizer is not None:
        denied = denied_topics(ctx, [a[0] for a in acks] + [tid for tid, _ in fetched])
        for topic_id, index in fetched:
            if topic_id in denied:
                entries.setdefault((topic_id, index), _entry(index))["ErrorCode"] = TOPIC_REFUSED
        fetched = [(tid, index) for tid, index in fetched if tid not in denied]
    for topic_id, index, batches in acks:
        if topic_id in denied:
            entries.setdefault((topic_id, index), _entry(index))["AcknowledgeErrorCode"] = TOPIC_REFUSED
            continue
        code, text = await acknowledge(ctx, group, member, topic_id, index, batches, version, leaders)
        entry = entries.setdefault((topic_id, index), _entry(index))
        entry.update(AcknowledgeErrorCode=code, AcknowledgeErrorMessage=text)
    if epoch == -1:
        share.close_session(ctx.listener_broker, group, member)
    elif not renew:
        await _fetch(ctx, request, version, group, member, fetched, entries, leaders, session.epoch)
    return _answer(ctx, entries, leaders, lock_ms)


def denied_topics(ctx: RequestContext, topic_ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """The ids of the known topics among ``topic_ids`` the client may not READ (Kafka's share consumers
    need READ on each topic they fetch from or acknowledge)."""
    cluster = ctx.controller.cluster
    names = {tid: t.name for tid in set(topic_ids) if (t := cluster.topic_by_id(tid)) is not None}
    allowed = ctx.allowed_names(Operation.READ, ResourceType.TOPIC, names.values())
    return {tid for tid, name in names.items() if name not in allowed}


async def acknowledge(
    ctx: RequestContext,
    group: str,
    member: str,
    topic_id: uuid.UUID,
    index: int,
    batches: list[dict[str, Any]],
    version: int,
    leaders: set[int],
) -> tuple[ErrorCode, str | None]:
    """One partition's acknowledgements (ShareFetch's and ShareAcknowledge's): its error and message."""
    share = ctx.controller.share
    topic = ctx.controller.cluster.topic_by_id(topic_id)
    p = partition_of(topic, index) if topic is not None else None
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if not leads(ctx, p):
        if p.leader >= 0:
            leaders.add(p.leader)
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
    ranges = [(b["FirstOffset"], b["LastOffset"], list(b["AcknowledgeTypes"])) for b in batches]
    if version < 2 and any(4 in types for _, _, types in ranges):
        return ErrorCode.INVALID_REQUEST, "The renew acknowledge type needs version 2 or later."
    if any(4 in types for _, _, types in ranges) and not ctx.controller.cluster.group_config(
        group, "share.renew.acknowledge.enable"
    ):
        return ErrorCode.INVALID_REQUEST, "The renew acknowledge type is not enabled for the group."
    error, sp = await share.share_partition(group, p, topic_id)
    if error or sp is None:
        return error, None
    return await share.acknowledge(sp, topic_id, member, ranges)


async def _fetch(
    ctx: RequestContext,
    request: dict[str, Any],
    version: int,
    group: str,
    member: str,
    partitions: list[tuple[uuid.UUID, int]],
    entries: dict[tuple[uuid.UUID, int], dict[str, Any]],
    leaders: set[int],
    rotate: int,
) -> None:
    share = ctx.controller.share
    clock = ctx.controller.clock
    max_wait = request["MaxWaitMs"]
    loop = asyncio.get_running_loop()
    expired: asyncio.Future[None] = loop.create_future()

    def expire() -> None:
        if not expired.done():
            expired.set_result(None)

    timer = clock.call_later(max(0, max_wait), expire, "share fetch wait") if max_wait > 0 else None
    real = (
        loop.call_later(max_wait / 1000, expire) if max_wait > 0 and isinstance(clock, VirtualClock) else None
    )
    try:
        while True:
            got, watched = await _acquire_all(
                ctx, request, version, group, member, partitions, entries, leaders, rotate
            )
            if got or max_wait <= 0 or expired.done() or not watched:
                return
            changed = [ctx.controller.data_path.watch(p) for p in watched] + [share.changed()]
            try:
                await asyncio.wait({expired, *changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for p, future in zip(watched, changed, strict=False):
                    future.cancel()
                    ctx.controller.data_path.unwatch(p, future)
                changed[-1].cancel()
    finally:
        if timer is not None:
            timer.cancel()
        if real is not None:
            real.cancel()


async def _acquire_all(
    ctx: RequestContext,
    request: dict[str, Any],
    version: int,
    group: str,
    member: str,
    partitions: list[tuple[uuid.UUID, int]],
    entries: dict[tuple[uuid.UUID, int], dict[str, Any]],
    leaders: set[int],
    rotate: int,
) -> tuple[bool, list[PartitionState]]:
    """One pass over the session's partitions: whether anything was acquired, and what to watch."""
    share = ctx.controller.share
    cluster = ctx.controller.cluster
    remaining_records = request.get("MaxRecords", 500) or 500
    remaining_bytes = request.get("MaxBytes", 0x7FFFFFFF)
    strict = version >= 2 and request.get("ShareAcquireMode", 0) == _RECORD_LIMIT_MODE
    watched: list[PartitionState] = []
    got = False
    if partitions:  # start from a different partition each time, so that none starves
        shift = rotate % len(partitions)
        partitions = partitions[shift:] + partitions[:shift]
    for topic_id, index in partitions:
        topic = cluster.topic_by_id(topic_id)
        p = partition_of(topic, index) if topic is not None else None
        if p is None:
            entry = entries.setdefault((topic_id, index), _entry(index))
            entry["ErrorCode"] = (
                ErrorCode.UNKNOWN_TOPIC_ID if topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            continue
        if not leads(ctx, p):
            entry = entries.setdefault((topic_id, index), _entry(index))
            entry.update(ErrorCode=ErrorCode.NOT_LEADER_OR_FOLLOWER, CurrentLeader=current_leader(p))
            if p.leader >= 0:
                leaders.add(p.leader)
            continue
        error, sp = await share.share_partition(group, p, topic_id)
        if error or sp is None:
            entry = entries.setdefault((topic_id, index), _entry(index))
            entry["ErrorCode"] = error
            continue
        watched.append(p)
        if remaining_records <= 0 or remaining_bytes <= 0:
            continue
        taken = share.acquire(sp, p, member, remaining_records, remaining_bytes, strict, min_one=not got)
        if not taken.acquired:
            continue
        got = True
        entry = entries.setdefault((topic_id, index), _entry(index))
        entry["CurrentLeader"] = current_leader(p)
        entry["Records"] = b"".join(piece for batch in taken.batches for piece in batch.pieces())
        entry["AcquiredRecords"] = [
            {"FirstOffset": a.first_offset, "LastOffset": a.last_offset, "DeliveryCount": a.delivery_count}
            for a in taken.acquired
        ]
        remaining_records -= sum(a.last_offset - a.first_offset + 1 for a in taken.acquired)
        remaining_bytes -= sum(batch.size for batch in taken.batches)
    return got, watched


def _entry(index: int) -> dict[str, Any]:
    return {
        "PartitionIndex": index,
        "ErrorCode": ErrorCode.NONE,
        "ErrorMessage": None,
        "AcknowledgeErrorCode": ErrorCode.NONE,
        "AcknowledgeErrorMessage": None,
        "CurrentLeader": {"LeaderId": -1, "LeaderEpoch": -1},
        "Records": b"",
        "AcquiredRecords": [],
    }


def _answer(
    ctx: RequestContext, entries: dict[tuple[uuid.UUID, int], dict[str, Any]], leaders: set[int], lock_ms: int
) -> dict[str, Any]:
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (topic_id, _), entry in entries.items():
        topics.setdefault(topic_id, []).append(entry)
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": ErrorCode.NONE,
        "ErrorMessage": None,
        "AcquisitionLockTimeoutMs": lock_ms,
        "Responses": [{"TopicId": tid, "Partitions": parts} for tid, parts in topics.items()],
        "NodeEndpoints": node_endpoints(ctx, leaders) if leaders else [],
    }


def _top(code: int, message: str | None) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": code,
        "ErrorMessage": message,
        "AcquisitionLockTimeoutMs": 0,
        "Responses": [],
        "NodeEndpoints": [],
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return _top(code, message)
