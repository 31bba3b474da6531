"""The authorizer's checks shared by the KIP-848 consumer group and KIP-932 share group APIs, as Kafka's
``KafkaApis`` makes them for ConsumerGroupHeartbeat / ShareGroupHeartbeat and ConsumerGroupDescribe /
ShareGroupDescribe. Called only with an authorizer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation, ResourceType
from protocol.codes import ErrorCode

if TYPE_CHECKING:
    from controller.handlers import RequestContext

#: The message of Kafka's GroupAuthorizationException when a request is refused whole.
GROUP_REFUSED = "Group authorization failed."


def refusal(
    ctx: RequestContext, group_id: str, subscribed: list[str] | None
) -> tuple[ErrorCode, str | None] | None:
    """A heartbeat's refusal by the authorizer (KIP-848's and KIP-932's heartbeats alike): READ on the
    group, DESCRIBE on every subscribed topic; None when it may go on."""
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_REFUSED
    if subscribed:
        wanted = set(subscribed)
        if len(ctx.allowed_names(Operation.DESCRIBE, ResourceType.TOPIC, wanted)) < len(wanted):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    return None


#: Kafka's message for a described group holding a topic the client may not describe.
TOPIC_REFUSED = "The group has described topic(s) that the client is not authorized to describe."


def authorize(
    ctx: RequestContext, described: list[dict[str, Any]], operations: bool, assignments: tuple[str, ...]
) -> None:
    """The authorizer's part of a describe of KIP-848 or share groups, after the groups are described:
    the authorized operations of each group described without an error (when asked), and a group whose
    members' ``assignments`` name a topic the client may not DESCRIBE becomes TOPIC_AUTHORIZATION_FAILED
    without its members, as Kafka answers."""
    for entry in described:
        if operations and entry["ErrorCode"] == ErrorCode.NONE:
            entry["AuthorizedOperations"] = ctx.operations(ResourceType.GROUP, entry["GroupId"])
    named = {
        t["TopicName"]
        for entry in described
        for m in entry["Members"]
        for key in assignments
        for t in m[key]["TopicPartitions"]
    }
    allowed = ctx.allowed_names(Operation.DESCRIBE, ResourceType.TOPIC, named)
    for entry in described:
        if any(
            t["TopicName"] not in allowed
            for m in entry["Members"]
            for key in assignments
            for t in m[key]["TopicPartitions"]
        ):
            entry.update(
                ErrorCode=ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorMessage=TOPIC_REFUSED, Members=[]
            )
