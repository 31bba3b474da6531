"""AlterShareGroupOffsets (91) v0: sets share-partitions' start offsets of an empty share group (one with
no members; NON_EMPTY_GROUP otherwise), as Kafka does: the state starts again at the offset with a new
state epoch, an unknown group id becomes an empty share group, an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION, and a classic group's id is GROUP_ID_NOT_FOUND. With an authorizer, as Kafka:
a client that may not READ the group is GROUP_AUTHORIZATION_FAILED; a topic it may not READ is
TOPIC_AUTHORIZATION_FAILED on each of its partitions, not altered."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.acls.groups import GROUP_REFUSED
from controller.handlers import RequestContext
from protocol import ZERO_UUID
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS
VERSIONS = (0, 0)

UNKNOWN_PARTITION = "This server does not host this topic-partition."
#: Kafka's message of TOPIC_AUTHORIZATION_FAILED.
TOPIC_REFUSED = "Topic authorization failed."


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    share = ctx.controller.share
    cluster = ctx.controller.cluster
    group_id = request["GroupId"]
    denied: set[str] = set()
    if ctx.authorizer is not None:
        if not ctx.allowed(Operation.READ, ResourceType.GROUP, group_id):
            return error_response(request, version, ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_REFUSED)
        names = {t["TopicName"] for t in request["Topics"]}
        denied = names - ctx.allowed_names(Operation.READ, ResourceType.TOPIC, names)
    error = share.check_group(group_id, ctx.listener_broker)
    if error:
        return error_response(request, version, error, None)
    group = share.ensure_group(group_id)
    if group is None:
        return error_response(
            request, version, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
        )
    if group.members:
        return error_response(
            request,
            version,
            ErrorCode.NON_EMPTY_GROUP,
            "The group is not empty: its offsets cannot be altered.",
        )
    # Every partition's state is written at once (Kafka's persister sends them in one request), so the
    # answer waits for the slowest write, at most share.coordinator.write.timeout.ms, not for their sum.
    writes: list[Awaitable[ErrorCode]] = []
    responses = []
    for t in request["Topics"]:
        topic = cluster.topics.get(t["TopicName"])
        partitions = []
        for p in t["Partitions"]:
            index = p["PartitionIndex"]
            entry: dict[str, Any] = {
                "PartitionIndex": index,
                "ErrorCode": ErrorCode.NONE,
                "ErrorMessage": None,
            }
            if t["TopicName"] in denied:
                entry["ErrorCode"], entry["ErrorMessage"] = (
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    TOPIC_REFUSED,
                )
            elif topic is None or not 0 <= index < len(topic.partitions):
                entry["ErrorCode"], entry["ErrorMessage"] = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    UNKNOWN_PARTITION,
                )
            else:
                writes.append(
                    _into(
                        entry,
                        partial(
                            share.alter_start_offset,
                            group_id,
                            topic.topic_id,
                            topic.partitions[index],
                            p["StartOffset"],
                        ),
                    )
                )
            partitions.append(entry)
        responses.append(
            {
                "TopicName": t["TopicName"],
                "TopicId": topic.topic_id if topic is not None else ZERO_UUID,
                "Partitions": partitions,
            }
        )
    await asyncio.gather(*writes)
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "Responses": responses}


async def _into(entry: dict[str, Any], write: Callable[[], Awaitable[ErrorCode]]) -> ErrorCode:
    """The write made only once this runs: a handler cancelled (its client gone) before the gathered
    writes start leaves no coroutine never awaited behind."""
    entry["ErrorCode"] = code = await write()
    return code


def error_response(request: dict[str, Any], version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "Responses": []}
