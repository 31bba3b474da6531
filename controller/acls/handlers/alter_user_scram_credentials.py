"""AlterUserScramCredentials (51, KIP-554): SCRAM credentials removed and set in the cluster's metadata, as
Kafka's ``ScramControlManager`` does: one result per user; a user named twice in one request
DUPLICATE_RESOURCE, an unknown mechanism UNSUPPORTED_SASL_MECHANISM, an empty name or an iteration count
outside 4096-16384 UNACCEPTABLE_CREDENTIAL, removing a credential that does not exist RESOURCE_NOT_FOUND;
every user CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster. The next SCRAM login of the user
checks the new credential; connections already authenticated stay so, as in Kafka."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
VERSIONS = (0, 0)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    refused = ctx.refused_on_cluster(Operation.ALTER)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    results = ctx.controller.scram.alter(
        request["Deletions"], request["Upsertions"], f"AlterUserScramCredentials from {ctx.kafka_principal}"
    )
    return {"ThrottleTimeMs": 0, "Results": results}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    users = dict.fromkeys(e["Name"] for e in (*request["Deletions"], *request["Upsertions"]))
    return {
        "ThrottleTimeMs": 0,
        "Results": [{"User": user, "ErrorCode": error_code, "ErrorMessage": message} for user in users],
    }
