"""DeleteAcls (31) v1-3: every ACL matching one of the filters removed from the cluster's metadata, as
Kafka's ``AclApis`` and ``AclControlManager`` answer: per filter, in the request's order, the ACLs it
matched; every filter CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster, SECURITY_DISABLED
without an authorizer. A filter with an UNKNOWN code closes the connection, as Kafka cannot read such a
request."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation
from controller.acls.handlers._common import NO_AUTHORIZER, read_filter
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DELETE_ACLS
VERSIONS = (1, 3)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    filters = [read_filter(f, "DeleteAcls") for f in request["Filters"]]
    refused = ctx.refused_on_cluster(Operation.ALTER)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    if ctx.authorizer is None:
        return error_response(request, version, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    results = ctx.controller.acls.delete(filters, f"DeleteAcls from {ctx.kafka_principal}")
    return {"ThrottleTimeMs": 0, "FilterResults": results}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    result = {"ErrorCode": error_code, "ErrorMessage": message, "MatchingAcls": []}
    return {"ThrottleTimeMs": 0, "FilterResults": [result] * len(request["Filters"])}
