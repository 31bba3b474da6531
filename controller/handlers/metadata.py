"""Metadata (3): brokers, controller and topics as clients see them, from the broker's metadata image.

Kafka's rules (see :mod:`controller.image`): the unfenced brokers are listed with their own listener and
rack; a partition shows its leader, leader epoch, replicas, ISR and offline replicas (those on fenced or
unregistered brokers); a partition without a leader answers LEADER_NOT_AVAILABLE; v0 alone leaves
unavailable brokers out of the replica and ISR lists and answers REPLICA_NOT_AVAILABLE then. A broker
isolated from the controller answers from the image it had when it was cut off. Unknown topics answer
UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID when asked for by id, v12+), unless
``auto.create.topics.enable=true`` and the client allows it: then the unknown topics are created with
the server's defaults through the configured placer, all in one go.

A topic's entry is built once per topic image and kept with it: a request costs the topics it names,
not the partitions behind them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Iterator
from typing import Any

from controller.handlers import NO_OPERATIONS, RequestContext
from controller.image import MetadataImage, PartitionImage, TopicImage
from controller.offload import BIG, Sized, Turns, gc_paused
from controller.topic_admin import NewTopic
from protocol import ZERO_UUID
from protocol.errors import error_by_name

API_KEY = 3
VERSIONS = (0, 13)

_UNKNOWN_TOPIC = error_by_name("UNKNOWN_TOPIC_OR_PARTITION").code
_UNKNOWN_TOPIC_ID = error_by_name("UNKNOWN_TOPIC_ID").code
_LEADER_NOT_AVAILABLE = error_by_name("LEADER_NOT_AVAILABLE").code
_REPLICA_NOT_AVAILABLE = error_by_name("REPLICA_NOT_AVAILABLE").code
_INVALID_REQUEST = error_by_name("INVALID_REQUEST").code


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Sized | Awaitable[Sized]:
    controller = ctx.controller
    wanted = request.get("Topics")
    every = wanted is None or (version == 0 and not wanted)
    if not every:
        allow_auto = request.get("AllowAutoTopicCreation", True) if version >= 4 else True
        if allow_auto and controller.config.auto_create_topics and ctx.image is None:
            known = controller.image().topics
            missing = list(
                dict.fromkeys(
                    item["Name"]
                    for item in wanted
                    if item.get("Name") is not None
                    and item["Name"] not in known
                    and not _refused(item, version)
                )
            )
            if missing:
                return _in_turns(ctx, request, version, missing)
    if ctx.image is None and controller.image_is_stale() > _STALE_TOPICS:
        return _in_turns(ctx, request, version, [])
    image = ctx.image if ctx.image is not None else controller.image()
    if every and _uncached(list(image.topics.values()), version) > BIG:
        return _in_turns(ctx, request, version, [])
    entries = _Entries(image, request, version, {})
    for _ in entries:
        pass
    return _response(ctx, image, entries.result, version)


def _refused(item: dict[str, Any], version: int) -> bool:
    """v10 and v11 carry topic ids but look topics up by name only: Kafka refuses a null name and any topic
    id there (INVALID_REQUEST; the answer's Name cannot be null before v12), and creates nothing for it."""
    return version < 12 and (item.get("Name") is None or (item.get("TopicId") or ZERO_UUID) != ZERO_UUID)


#: More changed topics than this, and the image is rebuilt in turns of the event loop.
_STALE_TOPICS = 200


def _uncached(topics: list[TopicImage], version: int) -> int:
    key = ("metadata", _kind(version))
    return sum(len(t.partitions) for t in topics if key not in t.derived)


async def _in_turns(ctx: RequestContext, request: dict[str, Any], version: int, missing: list[str]) -> Sized:
    """The answer built in turns of the event loop: big changes, many topics, topics to create first."""
    failed: dict[str, int] = {}
    if missing:
        turns = Turns()
        creatable = []
        for name in missing:
            creatable.append(NewTopic(name))
            await turns.yield_if_due()
        for result in await ctx.controller.topic_admin.create_topics(creatable):
            if result.error is not None and result.name is not None:
                failed[result.name] = error_by_name(result.error).code
            await turns.yield_if_due()
    image = ctx.image if ctx.image is not None else await ctx.controller.image_in_turns()
    entries = _Entries(image, request, version, failed)
    with gc_paused():
        for _ in entries:
            await asyncio.sleep(0)
    return _response(ctx, image, entries.result, version)


class _Entries:
    """The topic entries a request asks for, made in turns: iterate to build, then read ``result``."""

    def __init__(
        self, image: MetadataImage, request: dict[str, Any], version: int, failed: dict[str, int]
    ) -> None:
        self.image = image
        self.request = request
        self.version = version
        self.failed = failed
        self.result: list[dict[str, Any]] = []

    def __iter__(self) -> Iterator[None]:
        image, version = self.image, self.version
        wanted = self.request.get("Topics")
        out = self.result
        turns = Turns()
        if wanted is None or (version == 0 and not wanted):
            for topic in image.topics.values():
                out.append(_topic_entry(topic, image, version))
                if turns.due():
                    yield
            return
        seen: set[str | uuid.UUID] = set()
        for item in wanted:
            name: str | None = item.get("Name")
            topic_id: uuid.UUID = item.get("TopicId") or ZERO_UUID
            key: str | uuid.UUID = name if name is not None else topic_id
            if key in seen:
                continue
            seen.add(key)
            topic: TopicImage | None
            if _refused(item, version):
                out.append(_error_entry(name or "", topic_id, _INVALID_REQUEST, version))
                continue
            if name is None:
                topic = image.topics_by_id.get(topic_id)
                if topic is None:
                    out.append(_error_entry(None, topic_id, _UNKNOWN_TOPIC_ID, version))
                    continue
            else:
                topic = image.topics.get(name)
                if topic is None:
                    out.append(_error_entry(name, ZERO_UUID, self.failed.get(name, _UNKNOWN_TOPIC), version))
                    continue
            out.append(_topic_entry(topic, image, version))
            if turns.due():
                yield


def _response(ctx: RequestContext, image: MetadataImage, topics: list[dict[str, Any]], version: int) -> Sized:
    response = {
        "ThrottleTimeMs": 0,
        "Brokers": broker_entries(ctx, image),
        "ClusterId": ctx.controller.config.cluster_id,
        "ControllerId": image.controller_id,
        "Topics": topics,
        "ErrorCode": 0,
    }
    if 8 <= version <= 10:
        response["ClusterAuthorizedOperations"] = NO_OPERATIONS
    return Sized(response, len(topics) + sum(len(t["Partitions"]) for t in topics))


def broker_entries(ctx: RequestContext, image: MetadataImage) -> list[dict[str, Any]]:
    """The unfenced brokers with their advertised listeners."""
    endpoints = ctx.endpoints
    entries = []
    for broker in image.brokers:
        if broker.fenced or broker.id not in endpoints:
            continue
        host, port = endpoints[broker.id]
        entries.append({"NodeId": broker.id, "Host": host, "Port": port, "Rack": broker.rack})
    return entries


def _error_entry(name: str | None, topic_id: uuid.UUID, code: int, version: int) -> dict[str, Any]:
    entry = {"ErrorCode": code, "Name": name, "TopicId": topic_id, "IsInternal": False, "Partitions": []}
    if version >= 8:  # not ignorable: only in the versions that have it (the codec insists)
        entry["TopicAuthorizedOperations"] = NO_OPERATIONS
    return entry


def _kind(version: int) -> int:
    """Entries differ for v0 (unavailable replicas left out), v1-7, and v8+ (authorized operations)."""
    return 0 if version == 0 else 8 if version >= 8 else 1


def _topic_entry(topic: TopicImage, image: MetadataImage, version: int) -> dict[str, Any]:
    """The topic's entry for this version, made once per topic image."""
    kind = _kind(version)
    entry = topic.derived.get(("metadata", kind))
    if entry is None:
        alive = image.alive if version == 0 else None
        entry = {
            "ErrorCode": 0,
            "Name": topic.name,
            "TopicId": topic.topic_id,
            "IsInternal": False,
            "Partitions": [_partition_entry(p, alive) for p in topic.partitions],
        }
        if kind == 8:
            entry["TopicAuthorizedOperations"] = NO_OPERATIONS
        topic.derived[("metadata", kind)] = entry
    return entry  # type: ignore[return-value]


def _partition_entry(p: PartitionImage, alive: frozenset[int] | None) -> dict[str, Any]:
    replicas, isr, error = list(p.replicas), list(p.isr), 0
    if p.leader < 0:
        error = _LEADER_NOT_AVAILABLE
    elif alive is not None:  # v0: unavailable brokers are left out, and said so
        replicas = [r for r in replicas if r in alive]
        isr = [r for r in isr if r in alive]
        if len(replicas) < len(p.replicas) or len(isr) < len(p.isr):
            error = _REPLICA_NOT_AVAILABLE
    return {
        "ErrorCode": error,
        "PartitionIndex": p.index,
        "LeaderId": p.leader,
        "LeaderEpoch": p.leader_epoch,
        "ReplicaNodes": replicas,
        "IsrNodes": isr,
        "OfflineReplicas": list(p.offline),
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    """Every requested topic with the error (none when every topic was asked for), no brokers."""
    topics = [
        _error_entry(
            item.get("Name") if item.get("Name") is not None or version >= 12 else "",
            item.get("TopicId") or ZERO_UUID,
            code,
            version,
        )
        for item in request.get("Topics") or []
    ]
    response: dict[str, Any] = {
        "ThrottleTimeMs": 0,
        "Brokers": [],
        "ClusterId": None,
        "ControllerId": -1,
        "Topics": topics,
        "ErrorCode": code,
    }
    if 8 <= version <= 10:
        response["ClusterAuthorizedOperations"] = NO_OPERATIONS
    return response
