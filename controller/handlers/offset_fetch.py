"""OffsetFetch (9): committed offsets (-1 where none), for listed partitions or (null topics, v2+) every
committed one; many groups at once from v8. Offsets committed in an open transaction are not there until
it commits; with RequireStable (v7+, KIP-447) a partition that has some is answered
UNSTABLE_OFFSET_COMMIT (offset -1), as Kafka's ``OffsetMetadataManager`` answers it, so that a
read_committed consumer waits for the transaction to end.

With an authorizer, as Kafka's ``handleOffsetFetchRequest``: a group the client may not DESCRIBE is
GROUP_AUTHORIZATION_FAILED; of every committed offset, those of topics it may not DESCRIBE are left out;
a partition it names of such a topic is TOPIC_AUTHORIZATION_FAILED."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.groups.wire import fit
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.OFFSET_FETCH
VERSIONS = (1, 9)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    if version >= 8:
        groups = [
            (g["GroupId"], g["Topics"], g.get("MemberId"), g.get("MemberEpoch", -1))
            for g in request["Groups"]
        ]
    else:
        groups = [(request["GroupId"], request["Topics"], None, -1)]
    stable = version >= 7 and bool(request.get("RequireStable"))
    answers = [
        _group(ctx, group_id, topics, version, stable, member_id, epoch)
        for group_id, topics, member_id, epoch in groups
    ]
    if version >= 8:
        data: dict[str, Any] = {"ThrottleTimeMs": 0, "Groups": answers}
    else:
        [one] = answers
        error = one["ErrorCode"]
        if version < 2 and error:  # no group-level error before v2: every partition carries it
            for topic in one["Topics"]:
                for p in topic["Partitions"]:
                    p["ErrorCode"] = error
        data = {"ThrottleTimeMs": 0, "Topics": one["Topics"], "ErrorCode": error}
    return fit(ctx.controller.schemas.response(API_KEY).spec, data, version)


def _group(
    ctx: RequestContext,
    group_id: str,
    topics: list[dict[str, Any]] | None,
    version: int,
    stable: bool = False,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> dict[str, Any]:
    """One group's answer; with a group error, no partitions from v2 (the error is the group's, as Kafka
    answers it), and before v2 every asked partition with the error. From v9 a member of a consumer group
    (KIP-848) gives its id and epoch, checked as Kafka checks them (STALE_MEMBER_EPOCH)."""
    service = ctx.controller.groups
    wanted = None if topics is None else [(t["Name"], p) for t in topics for p in t["PartitionIndexes"]]
    checking = ctx.authorizer is not None
    denied: list[tuple[str, int]] = []
    if checking and not ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        error = service.check(group_id, ctx.listener_broker)
        if checking and wanted is not None:
            allowed = ctx.allowed_names(Operation.DESCRIBE, ResourceType.TOPIC, (t for t, _ in wanted))
            denied = [(t, p) for t, p in wanted if t not in allowed]
            wanted = [(t, p) for t, p in wanted if t in allowed]
    found: list[tuple[str, int, Any]] = []
    if not error:
        error, found = service.coordinator.fetch(group_id, wanted, member_id, member_epoch)
        if checking and topics is None:
            allowed = ctx.allowed_names(Operation.DESCRIBE, ResourceType.TOPIC, {t for t, _, _ in found})
            found = [entry for entry in found if entry[0] in allowed]
    elif wanted is not None and version < 2:
        found = [(t, p, None) for t, p in wanted]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    pending = stable and group_id in service.coordinator.pending_offsets
    for topic, partition, kept in found:
        unstable = pending and service.has_pending_offsets(group_id, (topic, partition))
        if unstable:
            kept = None
        by_topic.setdefault(topic, []).append(
            {
                "PartitionIndex": partition,
                "CommittedOffset": kept.offset if kept is not None else -1,
                "CommittedLeaderEpoch": kept.leader_epoch if kept is not None else -1,
                "Metadata": kept.metadata if kept is not None else "",
                "ErrorCode": ErrorCode.UNSTABLE_OFFSET_COMMIT if unstable else ErrorCode.NONE,
            }
        )
    if not error or version < 2:
        for topic, partition in denied:
            by_topic.setdefault(topic, []).append(
                {
                    "PartitionIndex": partition,
                    "CommittedOffset": -1,
                    "CommittedLeaderEpoch": -1,
                    "Metadata": "",
                    "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                }
            )
    return {
        "GroupId": group_id,
        "Topics": [{"Name": name, "Partitions": parts} for name, parts in by_topic.items()],
        "ErrorCode": error,
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    if version >= 8:
        return {
            "ThrottleTimeMs": 0,
            "Groups": [{"GroupId": g["GroupId"], "Topics": [], "ErrorCode": code} for g in request["Groups"]],
        }
    answer: dict[str, Any] = {"Topics": []}
    if version >= 2:
        answer["ErrorCode"] = code
    if version >= 3:
        answer["ThrottleTimeMs"] = 0
    return answer
