"""CreateReplicaPlacement (68, KIP-879): a placement computed by the configured placer, not applied.

With an authorizer, a client that may not DESCRIBE the cluster is answered CLUSTER_AUTHORIZATION_FAILED
(Kafka's ``authorizeClusterOperation``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation
from controller.answers import Sized
from controller.handlers import Cap, RequestContext
from controller.logsafe import shown
from controller.placement.api import PlacementSpec
from controller.placement.service import PlacementFailure
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

log = logging.getLogger(__name__)

API_KEY = ApiKey.CREATE_REPLICA_PLACEMENT
VERSIONS = (0, 0)


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """A placement on more brokers than one request may place replicas cannot be useful."""
    limit = config.placement_limits().max_replicas
    return {("NodeId",): Cap(limit.value, ErrorCode.POLICY_VIOLATION, limit.setting)}


def handle(
    ctx: RequestContext, request: dict[str, Any], version: int
) -> dict[str, Any] | Sized | Awaitable[dict[str, Any] | Sized]:
    """Answered at once when the placement needs no waiting (a small one by a built-in placer)."""
    refused = ctx.refused_on_cluster(Operation.DESCRIBE)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    node_ids = tuple(request["NodeId"])
    placement = PlacementSpec(
        start_partition=request.get("StartPartition", 0),
        num_partitions=request["NumPartitions"],
        num_replicas=request["ReplicationFactor"],
        topic=request.get("TopicName"),
        broker_ids=node_ids or None,
        force_simple=request["ForceSimplePlacement"],
    )
    timeout_ms = request["timeoutMs"]
    placements = ctx.controller.placements
    try:
        replicas = placements.place_now(placement, timeout_ms)
    except PlacementFailure as failure:
        return _failed(ctx, failure)
    if replicas is None:
        return _placed_later(ctx, placement, timeout_ms)
    return _placed(placement, replicas)


async def _placed_later(
    ctx: RequestContext, placement: PlacementSpec, timeout_ms: int
) -> dict[str, Any] | Sized:
    try:
        replicas = await ctx.controller.placements.place(placement, timeout_ms)
    except PlacementFailure as failure:
        return _failed(ctx, failure)
    return _placed(placement, replicas)


def _failed(ctx: RequestContext, failure: PlacementFailure) -> dict[str, Any]:
    log.info("placement for %s failed: %s %s", ctx.peer, failure.code.name, shown(failure.message))
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": failure.code,
        "ErrorMessage": failure.message,
        "ReplicaPlacement": [],
    }


def _placed(placement: PlacementSpec, replicas: list[list[int]]) -> Sized:
    start = placement.start_partition

    def response() -> dict[str, Any]:
        return {
            "ThrottleTimeMs": 0,
            "ErrorCode": 0,
            "ErrorMessage": None,
            "ReplicaPlacement": [{"PartitionId": start + i, "Replicas": rs} for i, rs in enumerate(replicas)],
        }

    return Sized(response, len(replicas))


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "ReplicaPlacement": []}
