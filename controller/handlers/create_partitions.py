"""CreatePartitions (37): new partitions placed from the current count on, or assigned by hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.handlers import Cap, RequestContext, SaidOnce
from controller.topic_admin import NewPartitions
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
    results = await ctx.controller.topic_admin.create_partitions(
        wanted, validate_only=bool(request["ValidateOnly"]), timeout_ms=request["TimeoutMs"]
    )
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
