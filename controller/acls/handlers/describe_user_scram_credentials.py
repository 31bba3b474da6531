"""DescribeUserScramCredentials (50, KIP-554): each user's SCRAM mechanisms and iteration counts, as Kafka
answers from its metadata (``ScramImage.describe``): every user with a credential when none is named;
RESOURCE_NOT_FOUND for a user without one, DUPLICATE_RESOURCE for one named twice;
CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster. Answered with or without an authorizer."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
VERSIONS = (0, 0)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    refused = ctx.refused_on_cluster(Operation.DESCRIBE)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    users = request["Users"]
    results = ctx.controller.scram.describe([u["Name"] for u in users] if users else None)
    return {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Results": results}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": error_code, "ErrorMessage": message, "Results": []}
