"""AlterConfigs (33): each resource's configs become the ones given (keys left out are unset); see
:mod:`controller.config_admin` for the checks, Kafka's."""

from __future__ import annotations

from typing import Any

from controller.config_admin import ConfigChange, ResourceResult
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.ALTER_CONFIGS
VERSIONS = (0, 2)


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    results = await ctx.controller.config_admin.alter(
        [
            (
                r["ResourceType"],
                r["ResourceName"],
                [ConfigChange(c["Name"], c["Value"]) for c in r["Configs"]],
            )
            for r in request["Resources"]
        ],
        validate_only=bool(request["ValidateOnly"]),
        answering_broker=ctx.listener_broker,
    )
    return answer(results)


def answer(results: list[ResourceResult]) -> dict[str, Any]:
    """The response to AlterConfigs and IncrementalAlterConfigs alike."""
    return {
        "ThrottleTimeMs": 0,
        "Responses": [
            {
                "ErrorCode": ErrorCode.NONE if r.error is None else r.error,
                "ErrorMessage": r.message,
                "ResourceType": r.resource_type,
                "ResourceName": r.resource_name,
            }
            for r in results
        ],
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Responses": [
            {
                "ErrorCode": code,
                "ErrorMessage": message,
                "ResourceType": r["ResourceType"],
                "ResourceName": r["ResourceName"],
            }
            for r in request["Resources"]
        ],
    }
