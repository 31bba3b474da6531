"""JoinGroup (11): a member joins a classic group; answered when the join phase completes (the coordinator
parks it, :class:`controller.groups.coordinator.GroupCoordinator`). From v4 a member without an id is
answered MEMBER_ID_REQUIRED with the id to join with. A client that may not READ the group is answered
GROUP_AUTHORIZATION_FAILED (an authorizer's)."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.answers import Parked, parked
from controller.groups.classic import JoinResult
from controller.groups.coordinator import JoinRequest
from controller.groups.wire import fit
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.JOIN_GROUP
VERSIONS = (0, 9)


def client_host(ctx: RequestContext) -> str:
    """The member's host as Kafka shows it (``/127.0.0.1``)."""
    return "/" + ctx.peer.rsplit(":", 1)[0].strip("[]")


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Parked:
    """The answer now when the coordinator gives it at once (an error, the member id to join with), else
    Parked: the answer waits for the other members (its frame stops counting against
    queued.max.request.bytes meanwhile), made when the join phase completes."""
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request["GroupId"]):
        return _answer(ctx, JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED, request["MemberId"]), version)
    service = ctx.controller.groups
    session = request["SessionTimeoutMs"]
    limits = service.coordinator.settings
    if request["GroupId"] and not limits.min_session_timeout_ms <= session <= limits.max_session_timeout_ms:
        # Kafka's GroupCoordinatorService checks the request before it asks which broker coordinates.
        return _answer(ctx, JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, request["MemberId"]), version)
    error = service.check(request["GroupId"], ctx.listener_broker)
    if error:
        return _answer(ctx, JoinResult(error, request["MemberId"]), version)
    rebalance = request.get("RebalanceTimeoutMs", -1)
    join = JoinRequest(
        group_id=request["GroupId"],
        member_id=request["MemberId"],
        protocol_type=request["ProtocolType"],
        protocols=[(p["Name"], p["Metadata"]) for p in request["Protocols"]],
        session_timeout_ms=session,
        rebalance_timeout_ms=rebalance if version >= 1 and rebalance >= 0 else session,
        instance_id=request.get("GroupInstanceId"),
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
        client_id=ctx.client_id or "",
        client_host=client_host(ctx),
        reason=request.get("Reason"),
    )
    return parked(lambda respond: service.coordinator.join(join, respond), lambda r: _answer(ctx, r, version))


def _answer(ctx: RequestContext, result: JoinResult, version: int) -> dict[str, Any]:
    data = {
        "ThrottleTimeMs": 0,
        "ErrorCode": result.error,
        "GenerationId": result.generation,
        "ProtocolType": result.protocol_type,
        # Not nullable before v7.
        "ProtocolName": result.protocol_name if version >= 7 else (result.protocol_name or ""),
        "Leader": result.leader,
        "SkipAssignment": result.skip_assignment,
        "MemberId": result.member_id,
        "Members": [{"MemberId": m, "GroupInstanceId": i, "Metadata": md} for m, i, md in result.members],
    }
    return fit(ctx.controller.schemas.response(API_KEY).spec, data, version)


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "ErrorCode": code,
        "GenerationId": -1,
        "ProtocolName": None if version >= 7 else "",
        "Leader": "",
        "MemberId": request.get("MemberId", ""),
        "Members": [],
    }
    if version >= 2:
        answer["ThrottleTimeMs"] = 0
    return answer
