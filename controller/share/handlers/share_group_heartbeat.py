"""ShareGroupHeartbeat (76) v1: a share group member joins (epoch 0, its own UUID as member id), heartbeats
and leaves (epoch -1); see :mod:`controller.share.groups`. The group's coordinator is the one of classic
groups (the leader of its ``__consumer_offsets`` partition): NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and
COORDINATOR_LOAD_IN_PROGRESS as for them; a classic group of that id is GROUP_ID_NOT_FOUND. A heartbeat
that changed the group is answered once the change is durable on ``__consumer_offsets``.

With an authorizer, as Kafka's ``handleShareGroupHeartbeat``: a client that may not READ the group is
GROUP_AUTHORIZATION_FAILED, one that may not DESCRIBE every topic it subscribes to
TOPIC_AUTHORIZATION_FAILED."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from controller.acls.groups import refusal
from controller.handlers import RequestContext
from controller.handlers.join_group import client_host
from controller.share.groups import Heartbeat
from protocol.codes import ApiKey, ErrorCode
from protocol.errors import Refusal

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT
VERSIONS = (1, 1)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Awaitable[Any]:
    share = ctx.controller.share
    group_id = request["GroupId"]
    if ctx.authorizer is not None:
        refused = refusal(ctx, group_id, request.get("SubscribedTopicNames"))
        if refused is not None:
            return error_response(request, version, *refused)
    if not group_id:
        return error_response(request, version, ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    error = share.check_group(group_id, ctx.listener_broker)
    if error:
        return error_response(request, version, error, None)
    subscribed = request.get("SubscribedTopicNames")
    try:
        answer, durable = share.heartbeat(
            Heartbeat(
                group_id,
                request["MemberId"],
                request["MemberEpoch"],
                request.get("RackId"),
                tuple(subscribed) if subscribed is not None else None,
                ctx.client_id or "",
                client_host(ctx),
            )
        )
    except Refusal as refused:
        return error_response(request, version, refused.code, refused.message)
    data = {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, **answer}
    if durable is None:
        return data

    async def later() -> dict[str, Any]:
        error = await durable
        if error:
            return error_response(request, version, error, None)
        return data

    return later()


def error_response(request: dict[str, Any], version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": code,
        "ErrorMessage": message,
        "MemberId": None,
        "MemberEpoch": 0,
        "HeartbeatIntervalMs": 0,
        "Assignment": None,
    }
