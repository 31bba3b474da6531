"""AlterPartitionReassignments (45, KIP-455): partitions move to new replicas through the replication model.

Per partition, as Kafka's ``ReplicationControlManager.alterPartitionReassignments`` answers: NONE when the
reassignment started (or completed at once, or was cancelled); UNKNOWN_TOPIC_OR_PARTITION;
INVALID_REPLICA_ASSIGNMENT for an empty replica list, an unregistered broker or a broker named twice, or
a cancel that would need an unclean election the topic does not allow; NO_REASSIGNMENT_IN_PROGRESS for a
cancel (null replicas) of a partition not being reassigned; INVALID_REPLICATION_FACTOR (v1) when
AllowReplicationFactorChange is false and the replica count would change. The rules and the stages are
:mod:`controller.reassignment`'s. A request for many partitions is worked through in turns of the event
loop, its answer encoded off it (:class:`controller.answers.Sized`).

With an authorizer, a client that may not ALTER the cluster is answered CLUSTER_AUTHORIZATION_FAILED
(Kafka's ``authorizeClusterOperation``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation
from controller.answers import Sized
from controller.handlers import Cap, RequestContext, SaidOnce
from controller.offload import Turns
from controller.reassignment import Target
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS
VERSIONS = (0, 1)


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """No cluster holds more topics, nor a topic more partitions, than the cluster's partition limit; no
    partition more replicas than one request may place."""
    limits = config.placement_limits()
    partitions = Cap(limits.max_partitions.value, ErrorCode.INVALID_REQUEST, limits.max_partitions.setting)
    return {
        ("Topics",): partitions,
        ("Topics", "Partitions"): partitions,
        ("Topics", "Partitions", "Replicas"): Cap(
            limits.max_replicas.value, ErrorCode.INVALID_REQUEST, limits.max_replicas.setting
        ),
    }


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Sized:
    refused = ctx.refused_on_cluster(Operation.ALTER)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    allow = bool(request.get("AllowReplicationFactorChange", True)) if version >= 1 else True
    turns = Turns()  # tens of thousands of partitions take tens of milliseconds each way
    targets = []
    for t in request["Topics"]:
        name = t["Name"]
        for p in t["Partitions"]:
            targets.append(Target(name, p["PartitionIndex"], p["Replicas"]))
            if turns.due():
                await asyncio.sleep(0)
    outcomes = await ctx.controller.dynamics.reassignments.alter(targets, allow_rf_change=allow)
    once = SaidOnce()
    outcome = iter(outcomes)
    responses = []
    for t in request["Topics"]:
        partitions = []
        for _ in t["Partitions"]:
            if turns.due():
                await asyncio.sleep(0)
            o = next(outcome)
            code = ErrorCode.NONE if o.error is None else o.error
            partitions.append(
                {"PartitionIndex": o.partition, "ErrorCode": code, "ErrorMessage": once(code, o.message)}
            )
        responses.append({"Name": t["Name"], "Partitions": partitions})
    response = _response(version, allow, ErrorCode.NONE, None, responses)
    return Sized(response, len(targets) + len(responses))


def _response(
    version: int, allow: bool, code: int, message: str | None, responses: list[dict[str, Any]]
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "ThrottleTimeMs": 0,
        "ErrorCode": code,
        "ErrorMessage": message,
        "Responses": responses,
    }
    if version >= 1:
        response["AllowReplicationFactorChange"] = allow
    return response


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    """The whole request failed (a cap, a bug): the error at the top, as Kafka answers a request it
    cannot process."""
    allow = bool(request.get("AllowReplicationFactorChange", True)) if version >= 1 else True
    return _response(version, allow, code, message, [])
