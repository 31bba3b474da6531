"""CreateTopics (19): topics placed by the configured placer, or assigned by hand; see topic_admin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.handlers import Cap, RequestContext, SaidOnce
from controller.topic_admin import MAX_TOPIC_CONFIGS, NewTopic, TopicResult
from protocol import ZERO_UUID
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.CREATE_TOPICS
VERSIONS = (0, 7)


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """Every topic creates a partition at least, every assignment one, every broker id one replica: past
    the cluster's partition limit or one request's replica limit nothing can be created (Kafka's
    POLICY_VIOLATION for those limits)."""
    limits = config.placement_limits()
    partitions = Cap(limits.max_partitions.value, ErrorCode.POLICY_VIOLATION, limits.max_partitions.setting)
    return {
        ("Topics",): partitions,
        ("Topics", "Assignments"): partitions,
        ("Topics", "Assignments", "BrokerIds"): Cap(
            limits.max_replicas.value, ErrorCode.POLICY_VIOLATION, limits.max_replicas.setting
        ),
        ("Topics", "Configs"): Cap(
            MAX_TOPIC_CONFIGS, ErrorCode.INVALID_CONFIG, "the fixed limit of configs per topic"
        ),
    }


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    topics = [
        NewTopic(
            name=t["Name"],
            num_partitions=t["NumPartitions"],
            replication_factor=t["ReplicationFactor"],
            assignments=[(a["PartitionIndex"], a["BrokerIds"]) for a in t["Assignments"]],
            configs={c["Name"]: c["Value"] for c in t["Configs"]},
        )
        for t in request["Topics"]
    ]
    results = await ctx.controller.topic_admin.create_topics(
        topics, validate_only=bool(request.get("validateOnly", False)), timeout_ms=request["timeoutMs"]
    )
    once = SaidOnce()
    return {"ThrottleTimeMs": 0, "Topics": [_result(r, once) for r in results]}


def _result(result: TopicResult, once: SaidOnce) -> dict[str, Any]:
    if result.error is not None:
        return {
            "Name": result.name,
            "TopicId": ZERO_UUID,
            "ErrorCode": result.error,
            "ErrorMessage": once(result.error, result.message),
            "NumPartitions": -1,
            "ReplicationFactor": -1,
            "Configs": [],
        }
    return {
        "Name": result.name,
        "TopicId": result.topic_id or ZERO_UUID,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "TopicConfigErrorCode": 0,
        "NumPartitions": len(result.replicas),
        "ReplicationFactor": len(result.replicas[0]),
        "Configs": [],
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    once = SaidOnce()
    return {
        "ThrottleTimeMs": 0,
        "Topics": [
            {
                "Name": t["Name"],
                "TopicId": ZERO_UUID,
                "ErrorCode": code,
                "ErrorMessage": once(code, message),
                "NumPartitions": -1,
                "ReplicationFactor": -1,
                "Configs": [],
            }
            for t in request["Topics"]
        ],
    }
