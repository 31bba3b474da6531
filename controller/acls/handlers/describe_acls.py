"""DescribeAcls (29) v1-3: the ACLs matching a filter, grouped by resource pattern, as Kafka's ``AclApis``
answers: CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster, SECURITY_DISABLED without an
authorizer (``authorizer.class.name``). A filter with an UNKNOWN code closes the connection, as Kafka
cannot read such a request."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation
from controller.acls.handlers._common import NO_AUTHORIZER, read_filter
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_ACLS
VERSIONS = (1, 3)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    acl_filter = read_filter(request, "DescribeAcls")
    refused = ctx.refused_on_cluster(Operation.DESCRIBE)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    if ctx.authorizer is None:
        return error_response(request, version, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    resources = ctx.controller.acls.describe(acl_filter)
    return {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Resources": resources}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": error_code, "ErrorMessage": message, "Resources": []}
