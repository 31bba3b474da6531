"""CreateTopics (19): topics placed by the configured placer, or assigned by hand; see topic_admin.

Topic configs are checked as Kafka checks them (INVALID_CONFIG with Kafka's message for an unknown name or
a bad value); from v5 the answer carries every config of the new topic with its value and source, made
in turns of the event loop for a request of many topics and encoded off it.

With an authorizer, as Kafka: a topic is created only with CREATE on the cluster or on the topic (else
TOPIC_AUTHORIZATION_FAILED, "Authorization failed."), and its configs are answered only with
DESCRIBE_CONFIGS on it (else TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.answers import Sized
from controller.config.topic_configs import TOPIC_CONFIGS, ConfigEntry
from controller.handlers import Cap, RequestContext, SaidOnce
from controller.offload import Turns
from controller.topic_admin import MAX_TOPIC_CONFIGS, NewTopic, TopicResult
from protocol import ZERO_UUID
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.CREATE_TOPICS
VERSIONS = (2, 7)


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


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Sized:
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
    refused: dict[str, TopicResult] = {}
    hidden: set[str] = set()  # topics whose configs the client may not describe
    if ctx.authorizer is not None:
        names = [t.name for t in topics]
        if not ctx.allowed(Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
            creatable = ctx.allowed_names(Operation.CREATE, ResourceType.TOPIC, names)
            refused = {
                t.name: TopicResult(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
                for t in topics
                if t.name not in creatable
            }
            topics = [t for t in topics if t.name not in refused]
        described = ctx.allowed_names(Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names)
        hidden = {name for name in names if name not in described}
    results = await ctx.controller.topic_admin.create_topics(
        topics, validate_only=bool(request.get("validateOnly", False)), timeout_ms=request["timeoutMs"]
    )
    if refused:
        made = iter(results)
        results = [
            refused.get(name) or next(made) for name in dict.fromkeys(t["Name"] for t in request["Topics"])
        ]
    cluster = ctx.controller.cluster
    answers = []
    # Topics that set no config share their entries (Cluster.topic_config_entries): each is made once.
    made: dict[int, dict[str, Any]] = {}
    turns = Turns()
    once = SaidOnce()
    for r in results:
        shown = version >= 5 and r.ok and r.name not in hidden
        entries = cluster.topic_config_entries(r.name, r.configs) if shown else []
        answer = _result(r, [made.get(id(e)) or made.setdefault(id(e), _config(e)) for e in entries], once)
        if r.ok and r.name in hidden:
            answer["TopicConfigErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        answers.append(answer)
        await turns.yield_if_due()
    size = len(answers) * (1 + len(TOPIC_CONFIGS) * (version >= 5))
    return Sized({"ThrottleTimeMs": 0, "Topics": answers}, size)


def _config(entry: ConfigEntry) -> dict[str, Any]:
    return {
        "Name": entry.name,
        "Value": None if entry.sensitive else entry.value,
        "ReadOnly": entry.read_only,
        "ConfigSource": entry.source,
        "IsSensitive": entry.sensitive,
    }


def _result(result: TopicResult, configs: list[dict[str, Any]], once: SaidOnce) -> dict[str, Any]:
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
        "Configs": configs,
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
