"""CreatePartitions (37): new partitions placed from the current count on, or assigned by hand. With an
authorizer, a topic the client may not ALTER is TOPIC_AUTHORIZATION_FAILED, as Kafka answers it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import Cap, RequestContext, SaidOnce
from controller.topic_admin import NewPartitions, TopicResult
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.CREATE_PARTITIONS
VERSIONS = (0, 3)


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """Every topic grows by a partition at least, every assignment is one, every broker id one replica:
    past the cluster's partition limit or one request's replica limit nothing can be added."""
    limits = config.placement_limits()
    partitions = Cap(limits.max_partitions.value, ErrorCode.POLICY_VIOLATION, limits.max_partitions.setting)
    return {
        ("Topics",): partitions,
        ("Topics", "Assignments"): partitions,
        ("Topics", "Assignments", "BrokerIds"): Cap(
            limits.max_replicas.value, ErrorCode.POLICY_VIOLATION, limits.max_replicas.setting
        ),
    }


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    wanted = [
        NewPartitions(
            name=t["Name"],
            count=t["Count"],
            assignments=None if t["Assignments"] is None else [a["BrokerIds"] for a in t["Assignments"]],
        )
        for t in request["Topics"]
    ]
    refused: dict[str, TopicResult] = {}
    if ctx.authorizer is not None:
        allowed = ctx.allowed_names(Operation.ALTER, ResourceType.TOPIC, (w.name for w in wanted))
        refused = {
            w.name: TopicResult(
                w.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed."
            )
            for w in wanted
            if w.name not in allowed
        }
        wanted = [w for w in wanted if w.name not in refused]
    results = await ctx.controller.topic_admin.create_partitions(
        wanted, validate_only=bool(request["ValidateOnly"]), timeout_ms=request["TimeoutMs"]
    )
    if refused:
        made = iter(results)
        results = [
            refused.get(name) or next(made) for name in dict.fromkeys(t["Name"] for t in request["Topics"])
        ]
    once = SaidOnce()
    return {
        "ThrottleTimeMs": 0,
        "Results": [
            {
                "Name": r.name,
                "ErrorCode": ErrorCode.NONE if r.error is None else r.error,
                "ErrorMessage": once(r.error or 0, r.message),
            }
            for r in results
        ],
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    once = SaidOnce()
    return {
        "ThrottleTimeMs": 0,
        "Results": [
            {"Name": t["Name"], "ErrorCode": code, "ErrorMessage": once(code, message)}
            for t in request["Topics"]
        ],
    }
