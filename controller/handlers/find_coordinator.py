"""FindCoordinator (10): the broker that coordinates a group (KeyType 0: the leader of its
``__consumer_offsets`` partition, the Controller's ``offsets_topic``: the groups themselves are loaded at a
group's first request, not here) or a transactional id (KeyType 1: the leader of its
``__transaction_state`` partition, :mod:`controller.transactions.state_log`); the topic is made at the
first request for it. Many keys at once from v4.

Share groups find their group coordinator with KeyType 0; KeyType 2 names a share coordinator (a
share-partition key ``groupId:topicId:partition``: the leader of its ``__share_group_state`` partition,
:mod:`controller.share`). An empty key is INVALID_REQUEST, as Kafka answers it. With an authorizer,
a group the client may not DESCRIBE is GROUP_AUTHORIZATION_FAILED, a transactional id
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and a share coordinator key asked by a client that may not
CLUSTER_ACTION the cluster (brokers ask it, not clients) CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.groups.wire import fit
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.FIND_COORDINATOR
VERSIONS = (0, 6)

GROUP_KEY = 0
TRANSACTION_KEY = 1
SHARE_KEY = 2


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    keys = request["CoordinatorKeys"] if version >= 4 else [request["Key"]]
    key_type = request.get("KeyType", GROUP_KEY)
    if key_type == GROUP_KEY and any(keys):
        await ctx.controller.offsets_topic.ensure()  # the topic, not the groups (loaded at a group's request)
    elif key_type == TRANSACTION_KEY and any(keys):
        await ctx.controller.transactions.state_log.ensure_topic()
    elif key_type == SHARE_KEY and any(keys):
        await ctx.controller.share.coordinator.ensure_topic()
    found = [_coordinator(ctx, key, key_type) for key in keys]
    return _answer(ctx, found, version)


def _coordinator(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"Key": key, "NodeId": -1, "Host": "", "Port": -1, "ErrorMessage": None}
    if key_type == SHARE_KEY:
        return _share_coordinator(ctx, key, entry)
    if key_type not in (GROUP_KEY, TRANSACTION_KEY):
        entry["ErrorCode"] = ErrorCode.INVALID_REQUEST
        entry["ErrorMessage"] = (
            f"KeyType {key_type} is not simulated: only group (0), transaction (1) and share (2) coordinators are."
        )
        return entry
    if not key:
        entry["ErrorCode"] = ErrorCode.INVALID_REQUEST
        entry["ErrorMessage"] = (
            "The group id is empty." if key_type == GROUP_KEY else "The transactional id is empty."
        )
        return entry
    if ctx.authorizer is not None:
        if key_type == GROUP_KEY and not ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, key):
            entry["ErrorCode"] = ErrorCode.GROUP_AUTHORIZATION_FAILED
            return entry
        if key_type == TRANSACTION_KEY and not ctx.allowed(
            Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
        ):
            entry["ErrorCode"] = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return entry
    if key_type == TRANSACTION_KEY:
        error, broker = ctx.controller.transactions.state_log.coordinator_of(key)
    else:
        error, broker = ctx.controller.offsets_topic.coordinator_of(key)
    endpoint = ctx.endpoints.get(broker) if not error else None
    if endpoint is None:
        entry["ErrorCode"] = ErrorCode.COORDINATOR_NOT_AVAILABLE
        entry["ErrorMessage"] = "The coordinator is not available."
        return entry
    entry.update(ErrorCode=ErrorCode.NONE, NodeId=broker, Host=endpoint[0], Port=endpoint[1])
    return entry


#: What Kafka writes in ErrorMessage when it found the coordinator: the error's name in v1-3 (its one
#: ErrorMessage), nothing in v4+ (each coordinator's).
_FOUND_MESSAGE = {True: "", False: "NONE"}


def _share_coordinator(ctx: RequestContext, key: str, entry: dict[str, Any]) -> dict[str, Any]:
    if ctx.authorizer is not None and not ctx.allowed(
        Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        entry["ErrorCode"] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        entry["ErrorMessage"] = "Cluster authorization failed."
        return entry
    parts = key.split(":")
    if len(parts) < 3 or not parts[-1].lstrip("-").isdigit() or not parts[-2]:
        entry["ErrorCode"] = ErrorCode.INVALID_REQUEST
        entry["ErrorMessage"] = f"Invalid share coordinator key: {key} (groupId:topicId:partition)."
        return entry
    error, broker = ctx.controller.share.coordinator.coordinator_of(key)
    endpoint = ctx.endpoints.get(broker) if not error else None
    if endpoint is None:
        entry["ErrorCode"] = ErrorCode.COORDINATOR_NOT_AVAILABLE
        entry["ErrorMessage"] = "The coordinator is not available."
        return entry
    entry.update(ErrorCode=ErrorCode.NONE, NodeId=broker, Host=endpoint[0], Port=endpoint[1])
    return entry


def _answer(ctx: RequestContext, found: list[dict[str, Any]], version: int) -> dict[str, Any]:
    for entry in found:
        if entry["ErrorCode"] == ErrorCode.NONE:
            entry["ErrorMessage"] = _FOUND_MESSAGE[version >= 4]
    if version >= 4:
        data: dict[str, Any] = {"ThrottleTimeMs": 0, "Coordinators": found}
    else:
        one = found[0]
        data = {"ThrottleTimeMs": 0, **{k: v for k, v in one.items() if k != "Key"}}
    return fit(ctx.controller.schemas.response(API_KEY).spec, data, version)


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    keys = request.get("CoordinatorKeys") or [request.get("Key", "")]
    if version >= 4:
        return {
            "ThrottleTimeMs": 0,
            "Coordinators": [
                {"Key": k, "NodeId": -1, "Host": "", "Port": -1, "ErrorCode": code, "ErrorMessage": message}
                for k in keys
            ],
        }
    answer: dict[str, Any] = {"ErrorCode": code, "NodeId": -1, "Host": "", "Port": -1}
    if version >= 1:
        answer.update(ThrottleTimeMs=0, ErrorMessage=message)
    return answer
