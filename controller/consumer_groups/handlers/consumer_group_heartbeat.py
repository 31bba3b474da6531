"""ConsumerGroupHeartbeat (apiKey 68 in Kafka's key space, KIP-848): a member of a consumer group joins,
heartbeats, reconciles and leaves (:mod:`controller.consumer_groups.coordinator`).

apiKey 68 is the project's CreateReplicaPlacement for every connection that does not speak Kafka's key
space (:mod:`controller.handlers.api_versions` says which do). The request is checked as Kafka's
``GroupCoordinatorService`` checks it (INVALID_REQUEST with Kafka's messages, UNSUPPORTED_ASSIGNOR), then
the group's coordinator answers; an answer that changed the group waits until its records are durable.
While a new coordinator loads the group, heartbeats get COORDINATOR_LOAD_IN_PROGRESS.

With an authorizer, as Kafka's ``handleConsumerGroupHeartbeat``, before anything else: a client that may
not READ the group is GROUP_AUTHORIZATION_FAILED; one that may not DESCRIBE every topic it names in
SubscribedTopicNames is TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
from typing import Any

from controller.acls.groups import refusal
from controller.consumer_groups.coordinator import HeartbeatRequest, error_answer
from controller.handlers import RequestContext
from controller.handlers.join_group import client_host
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT
KEY_SPACE = "kafka"
VERSIONS = (0, 1)


def _invalid(
    request: dict[str, Any], version: int, assignors: tuple[str, ...]
) -> tuple[ErrorCode, str] | None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``: the first problem of the request."""
    epoch = request["MemberEpoch"]
    blank = _blank
    if (version >= 1 or epoch > 0 or epoch == -1) and blank(request["MemberId"]):
        return ErrorCode.INVALID_REQUEST, "MemberId can't be empty."
    if blank(request["GroupId"]):
        return ErrorCode.INVALID_REQUEST, "GroupId can't be empty."
    if blank(request.get("InstanceId")):
        return ErrorCode.INVALID_REQUEST, "InstanceId can't be empty."
    if blank(request.get("RackId")):
        return ErrorCode.INVALID_REQUEST, "RackId can't be empty."
    if epoch == 0:
        if request.get("RebalanceTimeoutMs", -1) == -1:
            return ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
        if request.get("TopicPartitions") is None or request["TopicPartitions"]:
            return ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
        if request.get("SubscribedTopicNames") is None and request.get("SubscribedTopicRegex") is None:
            return (
                ErrorCode.INVALID_REQUEST,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            )
    elif epoch == -2:
        if request.get("InstanceId") is None:
            return ErrorCode.INVALID_REQUEST, "InstanceId can't be null."
    elif epoch < -2:
        return ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."
    assignor = request.get("ServerAssignor")
    if assignor is not None and assignor not in assignors:
        return (
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {assignor} is not supported. Supported assignors: {', '.join(assignors)}.",
        )
    return None


def _blank(value: str | None) -> bool:
    """A string given but empty or only white space (Kafka's ``isEmpty`` after ``trim``)."""
    return value is not None and not value.strip()


def handle(
    ctx: RequestContext, request: dict[str, Any], version: int
) -> dict[str, Any] | asyncio.Future[Any]:
    service = ctx.controller.consumer_groups
    if ctx.authorizer is not None:
        refused = refusal(ctx, request["GroupId"], request.get("SubscribedTopicNames"))
        if refused is not None:
            return _wire(error_answer(*refused))
    invalid = _invalid(request, version, service.coordinator.settings.assignors)
    if invalid is not None:
        return _wire(error_answer(*invalid))
    group_id = request["GroupId"]
    error = service.check(group_id, ctx.listener_broker)
    if error:
        return _wire(error_answer(error, None))
    owned = request.get("TopicPartitions")
    heartbeat = HeartbeatRequest(
        group_id,
        request["MemberId"],
        request["MemberEpoch"],
        request.get("InstanceId"),
        request.get("RackId"),
        request.get("RebalanceTimeoutMs", -1),
        request.get("SubscribedTopicNames"),
        request.get("SubscribedTopicRegex"),
        request.get("ServerAssignor"),
        None if owned is None else [(t["TopicId"], list(t["Partitions"])) for t in owned],
        ctx.client_id or "",
        client_host(ctx),
        version,
    )
    given: list[dict[str, Any]] = []
    answered: asyncio.Future[dict[str, Any]] | None = None

    def respond(answer: dict[str, Any]) -> None:
        if answered is None:
            given.append(answer)
        elif not answered.done():
            answered.set_result(_wire(answer))

    service.coordinator.heartbeat(heartbeat, respond)
    if given:
        return _wire(given[0])
    answered = asyncio.get_running_loop().create_future()
    return answered


def _wire(answer: dict[str, Any]) -> dict[str, Any]:
    assignment = answer.get("Assignment")
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": answer["ErrorCode"],
        "ErrorMessage": answer.get("ErrorMessage"),
        "MemberId": answer.get("MemberId"),
        "MemberEpoch": answer.get("MemberEpoch", 0),
        "HeartbeatIntervalMs": answer.get("HeartbeatIntervalMs", 0),
        "Assignment": None
        if assignment is None
        else {
            "TopicPartitions": [
                {"TopicId": topic_id, "Partitions": sorted(partitions)}
                for topic_id, partitions in sorted(assignment.items(), key=lambda item: item[0].bytes)
            ]
        },
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return _wire(error_answer(ErrorCode(code), message))
