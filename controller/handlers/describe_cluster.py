"""DescribeCluster (60): the cluster id, the controller and the brokers with their listeners and racks.

Fenced brokers are listed only when a v2+ client asks for them (``IncludeFencedBrokers``), marked
``IsFenced``. The simulator's listeners are broker endpoints: asking for controllers (EndpointType 2)
answers MISMATCHED_ENDPOINT_TYPE, any other type UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker does.
The cluster's authorized operations are computed when asked (Kafka's ``AuthHelper``): 0 to a client that
may not DESCRIBE the cluster, every cluster operation without an authorizer.
"""

from __future__ import annotations

from typing import Any

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.handlers import NO_OPERATIONS, RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_CLUSTER
VERSIONS = (0, 2)

BROKER_ENDPOINTS = 1
CONTROLLER_ENDPOINTS = 2


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    controller = ctx.controller
    endpoint_type = request.get("EndpointType", BROKER_ENDPOINTS)
    response: dict[str, Any] = {
        "ThrottleTimeMs": 0,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "ClusterId": controller.config.cluster_id,
        "ControllerId": controller.cluster.controller_id,
        "Brokers": [],
        "ClusterAuthorizedOperations": NO_OPERATIONS,
    }
    if version >= 1:  # not ignorable: only in the versions that have it
        response["EndpointType"] = endpoint_type
    if endpoint_type != BROKER_ENDPOINTS:
        # Kafka's error answer: its defaults (no controller, the broker endpoint type) and its messages.
        if endpoint_type == CONTROLLER_ENDPOINTS:
            code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
            message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
        else:
            code, message = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}"
        response = error_response(request, version, code, message)
        if version >= 1:
            response["EndpointType"] = BROKER_ENDPOINTS
        return response
    if request.get("IncludeClusterAuthorizedOperations", False):
        allowed = ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
        response["ClusterAuthorizedOperations"] = (
            ctx.operations(ResourceType.CLUSTER, CLUSTER_NAME) if allowed else 0
        )
    include_fenced = bool(request.get("IncludeFencedBrokers", False))
    endpoints = ctx.endpoints
    for broker in controller.cluster.brokers:
        if (broker.fenced and not include_fenced) or broker.id not in endpoints:
            continue
        host, port = endpoints[broker.id]
        entry = {"BrokerId": broker.id, "Host": host, "Port": port, "Rack": broker.rack}
        if version >= 2:
            entry["IsFenced"] = broker.fenced
        response["Brokers"].append(entry)
    return response


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    response: dict[str, Any] = {
        "ThrottleTimeMs": 0,
        "ErrorCode": code,
        "ErrorMessage": message,
        "ClusterId": "",
        "ControllerId": -1,
        "Brokers": [],
        "ClusterAuthorizedOperations": NO_OPERATIONS,
    }
    if version >= 1:
        response["EndpointType"] = request.get("EndpointType", BROKER_ENDPOINTS)
    return response
