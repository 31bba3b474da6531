"""OffsetDelete (47): committed offsets removed, except for topics a non-empty consumer group subscribes to
(GROUP_SUBSCRIBED_TO_TOPIC); a non-empty group of another protocol type is refused (NON_EMPTY_GROUP)."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.OFFSET_DELETE
VERSIONS = (0, 0)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    service = ctx.controller.groups
    partitions = [(t["Name"], p["PartitionIndex"]) for t in request["Topics"] for p in t["Partitions"]]
    error = service.check(request["GroupId"], ctx.listener_broker)
    codes: list[ErrorCode] = []
    if not error:
        error, codes = service.coordinator.delete_offsets(request["GroupId"], partitions)
    if error:
        return {"ErrorCode": error, "ThrottleTimeMs": 0, "Topics": []}
    results = iter(codes)
    return {
        "ErrorCode": ErrorCode.NONE,
        "ThrottleTimeMs": 0,
        "Topics": [
            {
                "Name": t["Name"],
                "Partitions": [
                    {"PartitionIndex": p["PartitionIndex"], "ErrorCode": next(results)}
                    for p in t["Partitions"]
                ],
            }
            for t in request["Topics"]
        ],
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ErrorCode": code, "ThrottleTimeMs": 0, "Topics": []}
