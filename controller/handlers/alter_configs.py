"""AlterConfigs (33): each resource's configs become the ones given (keys left out are unset); see
:mod:`controller.config_admin` for the checks, Kafka's.

With an authorizer, a resource the client may not ALTER_CONFIGS is refused, as Kafka refuses it
(:func:`refused`: a broker's configs are the cluster's, a topic's and a group's their own)."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.config_admin import ConfigChange, ResourceResult
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.ALTER_CONFIGS
VERSIONS = (0, 2)


#: A config resource type -> the ACL resource its configs are authorized on, and the error of a refusal
#: (Kafka's ``KafkaApis`` and ``ConfigHelper``): brokers' and loggers' and client metrics' configs are the
#: cluster's.
_AUTHORIZED_ON: dict[int, tuple[ResourceType, ErrorCode]] = {
    2: (ResourceType.TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    4: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    8: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    16: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    32: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
}


def refused(
    ctx: RequestContext, resources: list[dict[str, Any]], operation: Operation
) -> dict[int, ErrorCode]:
    """The resources (by index) the client may not perform ``operation`` (DESCRIBE_CONFIGS,
    ALTER_CONFIGS) on, with the error each is answered."""
    if ctx.authorizer is None:
        return {}
    found = {}
    for index, resource in enumerate(resources):
        on = _AUTHORIZED_ON.get(resource["ResourceType"])
        if on is None:
            continue  # an unknown type: config_admin refuses it
        kind, error = on
        name = CLUSTER_NAME if kind is ResourceType.CLUSTER else resource["ResourceName"]
        if not ctx.allowed(operation, kind, name):
            found[index] = error
    return found


async def altered(
    ctx: RequestContext, request: dict[str, Any], changes: list[list[ConfigChange]], incremental: bool
) -> dict[str, Any]:
    """The answer to AlterConfigs or IncrementalAlterConfigs: ``changes`` per resource, those the client
    may not alter refused."""
    resources = request["Resources"]
    denied = refused(ctx, resources, Operation.ALTER_CONFIGS)
    results = await ctx.controller.config_admin.alter(
        [
            (r["ResourceType"], r["ResourceName"], c)
            for index, (r, c) in enumerate(zip(resources, changes, strict=True))
            if index not in denied
        ],
        validate_only=bool(request["ValidateOnly"]),
        incremental=incremental,
        answering_broker=ctx.listener_broker,
    )
    if denied:
        made = iter(results)
        results = [
            ResourceResult(r["ResourceType"], r["ResourceName"], denied[index], None)
            if index in denied
            else next(made)
            for index, r in enumerate(resources)
        ]
    return answer(results)


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    changes = [[ConfigChange(c["Name"], c["Value"]) for c in r["Configs"]] for r in request["Resources"]]
    return await altered(ctx, request, changes, incremental=False)


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
