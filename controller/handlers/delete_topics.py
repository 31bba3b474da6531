"""DeleteTopics (20): topics named by name (all versions) or by id (v6+); a name or id given twice is
INVALID_REQUEST (``Duplicate topic name.`` / ``Duplicate topic id.``), answered once, as Kafka answers it.

With an authorizer, as Kafka: a topic the client may not DELETE is TOPIC_AUTHORIZATION_FAILED (whether or
not it exists); one named by id that it may not DESCRIBE is answered so without its name."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import Cap, RequestContext, SaidOnce
from controller.topic_admin import TopicResult
from protocol import ZERO_UUID
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.DELETE_TOPICS
VERSIONS = (1, 6)


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """No cluster holds more topics than the cluster's partition limit."""
    limit = config.placement_limits().max_partitions
    cap = Cap(limit.value, ErrorCode.INVALID_REQUEST, limit.setting)
    return {("Topics",): cap, ("TopicNames",): cap}


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    if version >= 6:
        wanted = [(t["Name"], t["TopicId"]) for t in request["Topics"]]
    else:
        wanted = [(name, None) for name in request["TopicNames"]]
    # A topic named (or an id given) twice is INVALID_REQUEST, answered once and not deleted, as Kafka's
    # controller answers it before it authorizes; the others go on.
    names = Counter(name for name, _ in wanted if name is not None)
    ids = Counter(i for name, i in wanted if name is None and i is not None and i != ZERO_UUID)
    duplicates: list[dict[str, Any]] = []
    for name in (n for n, count in names.items() if count > 1):
        duplicates.append(_duplicate(name, ZERO_UUID, "Duplicate topic name."))
    for topic_id in (i for i, count in ids.items() if count > 1):
        duplicates.append(_duplicate(None, topic_id, "Duplicate topic id."))
    unique = [
        (name, topic_id)
        for name, topic_id in wanted
        if (names[name] if name is not None else ids.get(topic_id, 1)) == 1
    ]
    refused: dict[int, TopicResult] = {}
    if ctx.authorizer is not None:
        refused = _refused(ctx, unique)
        unique = [entry for index, entry in enumerate(unique) if index not in refused]
    results = await ctx.controller.topic_admin.delete_topics(unique)
    if refused:
        made = iter(results)
        results = [refused.get(index) or next(made) for index in range(len(results) + len(refused))]
    once = SaidOnce()
    return {
        "ThrottleTimeMs": 0,
        "Responses": duplicates
        + [
            {
                "Name": r.name,
                "TopicId": r.topic_id or ZERO_UUID,
                "ErrorCode": ErrorCode.NONE if r.error is None else r.error,
                "ErrorMessage": once(r.error or 0, r.message),
            }
            for r in results
        ],
    }


def _duplicate(name: str | None, topic_id: Any, message: str) -> dict[str, Any]:
    return {
        "Name": name,
        "TopicId": topic_id,
        "ErrorCode": ErrorCode.INVALID_REQUEST,
        "ErrorMessage": message,
    }


def _refused(ctx: RequestContext, wanted: list[tuple[str | None, Any]]) -> dict[int, TopicResult]:
    """The entries (by index) the client may not delete, with their answers."""
    cluster = ctx.controller.cluster
    names: list[str | None] = []
    for name, topic_id in wanted:
        if name is None and topic_id is not None and topic_id != ZERO_UUID:
            topic = cluster.topic_by_id(topic_id)
            name = topic.name if topic is not None else None
        names.append(name)
    known = [n for n in names if n is not None]
    described = ctx.allowed_names(Operation.DESCRIBE, ResourceType.TOPIC, known)
    deletable = ctx.allowed_names(Operation.DELETE, ResourceType.TOPIC, known)
    refused = {}
    for index, ((asked, topic_id), name) in enumerate(zip(wanted, names, strict=True)):
        if name is None:
            continue
        if asked is None and name not in described:
            refused[index] = TopicResult(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, topic_id)
        elif name not in deletable:
            refused[index] = TopicResult(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, topic_id)
    return refused


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    if version >= 6:
        wanted = [(t["Name"], t["TopicId"]) for t in request["Topics"]]
    else:
        wanted = [(name, ZERO_UUID) for name in request["TopicNames"]]
    once = SaidOnce()
    return {
        "ThrottleTimeMs": 0,
        "Responses": [
            {
                "Name": name,
                "TopicId": topic_id or ZERO_UUID,
                "ErrorCode": code,
                "ErrorMessage": once(code, message),
            }
            for name, topic_id in wanted
        ],
    }
