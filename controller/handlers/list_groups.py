"""ListGroups (16): the groups this broker coordinates (every group on the bootstrap listener), filtered
by state (v4+) and type (v5+): classic groups, the groups of the consumer group protocol (type and
protocol type ``consumer``, :mod:`controller.consumer_groups`) once that protocol is in use, and share
groups (type and protocol type ``share``) once share groups are in use (:mod:`controller.share`). With
an authorizer, as Kafka: every group to a client that may DESCRIBE the cluster, else those groups it
may DESCRIBE."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.groups.wire import fit
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.LIST_GROUPS
VERSIONS = (0, 5)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    service = ctx.controller.groups
    service.follow_all()
    broker = ctx.listener_broker
    groups = [
        {
            "GroupId": g.group_id,
            "ProtocolType": g.protocol_type or "",
            "GroupState": g.state.value,
            "GroupType": "classic",
        }
        for g in service.coordinator.list_groups(
            request.get("StatesFilter", ()), request.get("TypesFilter", ())
        )
        if broker is None or service.coordinator_of(g.group_id) == (ErrorCode.NONE, broker)
    ]
    consumer_groups = ctx.controller.built("consumer_groups")
    if consumer_groups is not None:
        groups += consumer_groups.list_groups(
            broker, request.get("StatesFilter", ()), request.get("TypesFilter", ())
        )
    share = ctx.controller.built("share")
    if share is not None:
        groups += share.list_groups(broker, request.get("StatesFilter", ()), request.get("TypesFilter", ()))
    if ctx.authorizer is not None and not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        allowed = ctx.allowed_names(Operation.DESCRIBE, ResourceType.GROUP, (g["GroupId"] for g in groups))
        groups = [g for g in groups if g["GroupId"] in allowed]
    data = {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "Groups": groups}
    return fit(ctx.controller.schemas.response(API_KEY).spec, data, version)


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    answer: dict[str, Any] = {"ErrorCode": code, "Groups": []}
    if version >= 1:
        answer["ThrottleTimeMs"] = 0
    return answer
