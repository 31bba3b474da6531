"""CreateAcls (30) v1-3: ACLs added to the cluster's metadata, as Kafka's ``AclApis`` and
``AclControlManager`` answer: one result per ACL in the request's order, INVALID_REQUEST with Kafka's
message for an ACL Kafka refuses (a CLUSTER resource not named ``kafka-cluster``, an empty name, ANY or
MATCH where a concrete value is needed, a principal without ``type:``, an empty or malformed host); every
ACL CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster, SECURITY_DISABLED without an authorizer.
An ACL with an UNKNOWN code closes the connection, as Kafka cannot read such a request."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation
from controller.acls.handlers._common import NO_AUTHORIZER
from controller.acls.model import Acl
from controller.answers import Close
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.CREATE_ACLS
VERSIONS = (1, 3)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    creations = request["Creations"]
    for creation in creations:
        unknown = Acl.from_wire(creation).unknown()
        if unknown is not None:
            raise Close("malformed request body", f"CreateAcls: an ACL that {unknown}")
    refused = ctx.refused_on_cluster(Operation.ALTER)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    if ctx.authorizer is None:
        return error_response(request, version, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    results = ctx.controller.acls.create(creations, f"CreateAcls from {ctx.kafka_principal}")
    return {"ThrottleTimeMs": 0, "Results": results}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    result = {"ErrorCode": error_code, "ErrorMessage": message}
    return {"ThrottleTimeMs": 0, "Results": [result] * len(request["Creations"])}
