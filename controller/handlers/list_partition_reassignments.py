"""ListPartitionReassignments (46, KIP-455): the partitions being reassigned, with their adding and
removing replicas.

As Kafka's ``ReplicationControlManager.listPartitionReassignments``: null Topics lists every partition
being reassigned; otherwise the named partitions that are (unknown topics and partitions, and those
not being reassigned, are left out). ``Replicas`` is every replica meanwhile (the targets, then the
replicas being removed), as Metadata shows them. Answered from the cluster's index of reassigning
partitions (:meth:`controller.cluster.Cluster.reassigning`), read as one controller event in turns of the
event loop (:meth:`controller.reassignment.Reassignments.listing`); a big answer is encoded off it.

With an authorizer, a client that may not DESCRIBE the cluster is answered CLUSTER_AUTHORIZATION_FAILED
(Kafka's ``authorizeClusterOperation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation
from controller.answers import Sized
from controller.handlers import Cap, RequestContext
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS
VERSIONS = (0, 0)


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """No cluster holds more topics, nor a topic more partitions, than the cluster's partition limit."""
    limit = config.placement_limits().max_partitions
    cap = Cap(limit.value, ErrorCode.INVALID_REQUEST, limit.setting)
    return {("Topics",): cap, ("Topics", "PartitionIndexes"): cap}


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Sized:
    refused = ctx.refused_on_cluster(Operation.DESCRIBE)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    wanted = request.get("Topics")
    asked = None if wanted is None else [(t["Name"], t["PartitionIndexes"]) for t in wanted]
    held = await ctx.controller.dynamics.reassignments.listing(asked)
    size = sum(len(partitions) for _, partitions in held) + len(held)

    def response() -> dict[str, Any]:
        topics = [
            {
                "Name": name,
                "Partitions": [
                    {
                        "PartitionIndex": index,
                        "Replicas": list(replicas),
                        "AddingReplicas": list(adding),
                        "RemovingReplicas": list(removing),
                    }
                    for index, replicas, adding, removing in partitions
                ],
            }
            for name, partitions in held
        ]
        return {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Topics": topics}

    return Sized(response, size)


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "Topics": []}
