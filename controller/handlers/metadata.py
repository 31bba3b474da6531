"""Metadata (3): brokers, controller and topics as clients see them, from the broker's metadata image.

Kafka's rules (see :mod:`controller.image`): the unfenced brokers are listed with their own listener and
rack; a partition shows its leader, leader epoch, replicas, ISR and offline replicas (those on fenced or
unregistered brokers); a partition without a leader answers LEADER_NOT_AVAILABLE; v0 alone leaves
unavailable brokers out of the replica and ISR lists and answers REPLICA_NOT_AVAILABLE then. A broker
isolated from the controller answers from the image it had when it was cut off. Unknown topics answer
UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID when asked for by id, v12+), unless
``auto.create.topics.enable=true`` and the client allows it: then the unknown topics are created with
the server's defaults through the configured placer, all in one go.

A topic's entry is encoded once per topic image and response version, and kept with the image; so is
the broker list, per metadata image, version and advertised listeners. An answer is assembled from
those encoded pieces (:meth:`protocol.Message.encode_with_elements`): a request costs the topics it
names and the bytes it copies, not the partitions behind them. An answer given at once (one that
creates no topic) depends on the request, the image and the listeners alone (``ANSWER_DEPENDS_ON``):
the server keeps it with the image, and the same request again costs its header alone.

Authorization is Kafka's (``handleTopicMetadataRequest``), with an authorizer (``authorizer.class.name``):
a topic the client may not DESCRIBE is left out of an answer for every topic, and answered
TOPIC_AUTHORIZATION_FAILED when named (whether or not it exists; by id, with its id and no name); an
unknown topic is auto-created only with CREATE on the cluster or on the topic (else
TOPIC_AUTHORIZATION_FAILED). Authorized operations are computed when asked (IncludeTopicAuthorizedOperations,
IncludeClusterAuthorizedOperations in v8-10): without an authorizer every operation of the resource, as
Kafka answers then; the cluster's are 0 to a client that may not DESCRIBE it; an unknown topic id's entry
has none (Kafka's "not computed" marker). A topic's entry is encoded once per operations bitfield too.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.answers import Sized
from controller.handlers import NO_OPERATIONS, AnswerDependsOn, Cap, RequestContext
from controller.image import MetadataImage, PartitionImage, TopicImage
from controller.offload import BIG, Turns, in_thread
from controller.topic_admin import NewTopic
from controller.topic_names import is_internal, topic_name_problem
from protocol import ZERO_UUID, Message
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.METADATA
VERSIONS = (0, 13)
ANSWER_DEPENDS_ON = AnswerDependsOn.IMAGE

_UNKNOWN_TOPIC = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
_UNKNOWN_TOPIC_ID = ErrorCode.UNKNOWN_TOPIC_ID
_LEADER_NOT_AVAILABLE = ErrorCode.LEADER_NOT_AVAILABLE
_REPLICA_NOT_AVAILABLE = ErrorCode.REPLICA_NOT_AVAILABLE
_INVALID_REQUEST = ErrorCode.INVALID_REQUEST
_INVALID_TOPIC = ErrorCode.INVALID_TOPIC_EXCEPTION
_TOPIC_AUTHORIZATION_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
_DESCRIBE, _CREATE = Operation.DESCRIBE, Operation.CREATE
_TOPIC, _CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """No cluster holds more topics than the cluster's partition limit."""
    limit = config.placement_limits().max_partitions
    return {("Topics",): Cap(limit.value, ErrorCode.INVALID_REQUEST, limit.setting)}


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> bytes | Sized | Awaitable[Sized]:
    controller = ctx.controller
    wanted = request.get("Topics")
    if wanted and any(_refused(item, version) for item in wanted):
        # Kafka's KafkaApis refuses the whole request: its error answer, every topic INVALID_REQUEST.
        return error_response(request, version, _INVALID_REQUEST, "")
    every = wanted is None or (version == 0 and not wanted)
    if not every:
        allow_auto = request.get("AllowAutoTopicCreation", True) if version >= 4 else True
        if allow_auto and controller.config.auto_create_topics and ctx.image is None:
            if len(wanted) > BIG:  # the unknown ones found in turns of the loop too
                return _in_turns(ctx, request, version, None)
            missing = _missing(controller.image(), wanted, version)
            if missing:
                return _in_turns(ctx, request, version, missing)
    image = ctx.image
    if image is None and not every and len(wanted) <= _UNCHANGED_NAMES:
        # Topics that did not change since the last image are answered from it, however much else
        # changed (another client auto-creating 100,000 topics): the answer is the same.
        names = [item.get("Name") for item in wanted]
        if None not in names:
            image = controller.image_unchanged_for(names)
    if image is None and controller.image_is_stale() > _STALE_PARTITIONS:
        return _in_turns(ctx, request, version, [])
    if image is None:
        image = controller.image()
    if len(image.topics if every else wanted) > BIG:  # found in turns of the loop, not in one step
        return _in_turns(ctx, request, version, [])
    entries = _Entries(image, request, version, {}, ctx)
    for _ in entries:
        pass
    return _answer(ctx, image, entries, version)


def _refused(item: dict[str, Any], version: int) -> bool:
    """v10 and v11 carry topic ids but look topics up by name only: Kafka refuses a null name and any topic
    id there (INVALID_REQUEST; the answer's Name cannot be null before v12), and creates nothing for it."""
    return version < 12 and (item.get("Name") is None or (item.get("TopicId") or ZERO_UUID) != ZERO_UUID)


#: More partitions of changed topics than this, and the image is rebuilt in turns of the event loop (a
#: partition's image takes some 4 us to make: 2,000 of them about one 5 ms turn of the loop).
_STALE_PARTITIONS = 2000
#: A request naming at most this many topics is answered from the last image when none of them changed.
_UNCHANGED_NAMES = 1000


def _missing(image: MetadataImage, wanted: list[dict[str, Any]], version: int) -> list[str]:
    """The unknown topics a request names that may be auto-created, each once, in request order."""
    known = image.topics
    return list(
        dict.fromkeys(
            item["Name"]
            for item in wanted
            if item.get("Name") is not None and item["Name"] not in known and not _refused(item, version)
        )
    )


async def _in_turns(
    ctx: RequestContext, request: dict[str, Any], version: int, missing: list[str] | None
) -> Sized:
    """The answer built in turns of the event loop: big changes, many topics, topics to create first
    (``missing``; None: the unknown topics of a big request, found here in turns)."""
    failed: dict[str, int] = {}
    if missing is None:
        known = (await ctx.controller.image_in_turns()).topics
        wanted = request["Topics"]
        turns = Turns()
        found: dict[str, None] = {}
        for item in wanted:
            name = item.get("Name")
            if name is not None and name not in known and not _refused(item, version):
                found[name] = None
            await turns.yield_if_due()
        missing = list(found)
    if missing and ctx.authorizer is not None:
        missing = _creatable(ctx, missing, failed)
    if missing:
        turns = Turns()
        creatable = []
        for name in missing:
            creatable.append(NewTopic(name))
            await turns.yield_if_due()
        for result in await ctx.controller.topic_admin.create_topics(creatable):
            if result.error is not None and result.name is not None:
                failed[result.name] = result.error
            await turns.yield_if_due()
    image = ctx.image if ctx.image is not None else await ctx.controller.image_in_turns()
    entries = _Entries(image, request, version, failed, ctx)
    for _ in entries:
        await asyncio.sleep(0)
    answer = _answer(ctx, image, entries, version)
    return answer if isinstance(answer, Sized) else await answer


def _creatable(ctx: RequestContext, missing: list[str], failed: dict[str, int]) -> list[str]:
    """The unknown topics the client may have auto-created: those it may DESCRIBE, with CREATE on the
    cluster or on the topic; the others it may describe are answered TOPIC_AUTHORIZATION_FAILED."""
    described = ctx.allowed_names(_DESCRIBE, _TOPIC, missing)
    missing = [name for name in missing if name in described]
    if not missing or ctx.allowed(_CREATE, _CLUSTER, CLUSTER_NAME):
        return missing
    allowed = ctx.allowed_names(_CREATE, _TOPIC, missing)
    for name in missing:
        if name not in allowed:
            failed[name] = _TOPIC_AUTHORIZATION_FAILED
    return [name for name in missing if name in allowed]


#: A topic of the answer: its image (answered with its encoded entry) or its error entry.
_Item = TopicImage | dict[str, Any]


class _Entries:
    """The topics a request asks for, found in turns: iterate to find them, then read ``result``."""

    def __init__(
        self,
        image: MetadataImage,
        request: dict[str, Any],
        version: int,
        failed: dict[str, int],
        ctx: RequestContext,
    ) -> None:
        self.image = image
        self.request = request
        self.version = version
        self.failed = failed
        self.result: list[_Item] = []
        #: How many of them are error entries.
        self.errors = 0
        #: The client's authorization (None without an authorizer: every topic may be described).
        self.ctx = ctx if ctx.authorizer is not None else None

    def __iter__(self) -> Iterator[None]:
        image, version, ctx = self.image, self.version, self.ctx
        wanted = self.request.get("Topics")
        out = self.result
        if wanted is None or (version == 0 and not wanted):
            if ctx is None:
                out += image.topics.values()
            else:
                allowed = ctx.allowed_names(_DESCRIBE, _TOPIC, image.topics)
                out += (t for t in image.topics.values() if t.name in allowed)
            return
        turns = Turns()
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
                self.errors += 1
                continue
            if name is None:
                topic = image.topics_by_id.get(topic_id)
                if topic is None:
                    out.append(_error_entry(None, topic_id, _UNKNOWN_TOPIC_ID, version))
                    self.errors += 1
                    continue
                if ctx is not None and not ctx.allowed(_DESCRIBE, _TOPIC, topic.name):
                    # Topic ids are not secret: the id is answered, not the name.
                    out.append(_error_entry(None, topic_id, _TOPIC_AUTHORIZATION_FAILED, version))
                    self.errors += 1
                    continue
            else:
                if ctx is not None and not ctx.allowed(_DESCRIBE, _TOPIC, name):
                    # Whether it exists is not told.
                    out.append(_error_entry(name, ZERO_UUID, _TOPIC_AUTHORIZATION_FAILED, version))
                    self.errors += 1
                    continue
                topic = image.topics.get(name)
                if topic is None:
                    code = self.failed.get(name, _UNKNOWN_TOPIC)
                    if code == _UNKNOWN_TOPIC and topic_name_problem(name) is not None:
                        code = _INVALID_TOPIC  # as Kafka's KafkaApis answers a name it cannot have
                    out.append(_error_entry(name, ZERO_UUID, code, version))
                    self.errors += 1
                    continue
            out.append(topic)
            if turns.due():
                yield


def _answer(
    ctx: RequestContext, image: MetadataImage, entries: _Entries, version: int
) -> Sized | Awaitable[Sized]:
    """The answer from the topics' encoded entries, those not yet encoded for this version (and operations
    bitfield) first: inline when they are few, else in a worker thread (the entries are then kept by the
    loop)."""
    items = entries.result
    keys = _entry_keys(ctx, entries, version)
    pieces = [
        item.derived.get(key) if item.__class__ is TopicImage else item
        for item, key in zip(items, keys, strict=True)
    ]
    if None not in pieces:
        return _assembled(ctx, image, entries.request, pieces, entries.errors, version)
    unencoded = list(
        {(id(t), k): (t, k) for t, k, p in zip(items, keys, pieces, strict=True) if p is None}.values()
    )
    size = sum(len(t.partitions) for t, _ in unencoded) + _PER_TOPIC * len(unencoded)
    response = ctx.controller.schemas.response(API_KEY)
    alive = image.alive if version == 0 else None

    def assembled() -> Sized:
        pieces = [
            item.derived[key] if item.__class__ is TopicImage else item
            for item, key in zip(items, keys, strict=True)
        ]
        return _assembled(ctx, image, entries.request, pieces, entries.errors, version)

    if size <= BIG:
        for topic, key in unencoded:
            topic.derived[key] = _encoded_entry(response, topic, alive, version, key[2])
        return assembled()

    async def off_the_loop() -> Sized:
        encoded = await in_thread(_encoded_entries, response, unencoded, alive, version)
        for (topic, key), entry in zip(unencoded, encoded, strict=True):
            topic.derived[key] = entry
        return assembled()

    return off_the_loop()


def _entry_keys(ctx: RequestContext, entries: _Entries, version: int) -> list[tuple[str, int, int]]:
    """Under which key each topic's encoded entry is kept with its image: the version and the topic's
    authorized operations (Kafka's "not computed" marker when the client does not ask for them)."""
    items = entries.result
    if version < 8 or not entries.request.get("IncludeTopicAuthorizedOperations", False):
        return [("metadata", version, NO_OPERATIONS)] * len(items)
    for item in items:
        if item.__class__ is dict and item["ErrorCode"] not in (
            _TOPIC_AUTHORIZATION_FAILED,
            _UNKNOWN_TOPIC_ID,
        ):
            # As Kafka's KafkaApis: a topic named that the client may describe has its operations, whatever
            # its error; an unknown id has none (Kafka's entries for them are made apart and left unset).
            item["TopicAuthorizedOperations"] = ctx.operations(_TOPIC, item["Name"] or "")
    if ctx.authorizer is None:  # every operation of a topic, whichever topic
        return [("metadata", version, ctx.operations(_TOPIC, ""))] * len(items)
    return [
        (
            "metadata",
            version,
            ctx.operations(_TOPIC, item.name) if item.__class__ is TopicImage else NO_OPERATIONS,
        )
        for item in items
    ]


#: What encoding a topic's entry costs besides its partitions, in partitions.
_PER_TOPIC = 4
#: Copying about this many bytes of encoded entries costs what encoding one partition does (or less).
_BYTES_PER_PARTITION = 4096


def _encoded_entries(
    response: Message,
    topics: list[tuple[TopicImage, tuple[str, int, int]]],
    alive: frozenset[int] | None,
    version: int,
) -> list[bytes]:
    """The topics' encoded entries (touches no shared state: run in a worker thread)."""
    return [_encoded_entry(response, topic, alive, version, key[2]) for topic, key in topics]


def _encoded_entry(
    response: Message, topic: TopicImage, alive: frozenset[int] | None, version: int, operations: int
) -> bytes:
    """The topic's entry as it is in the answer at ``version`` with ``operations`` (the same for every
    request)."""
    entry = {
        "ErrorCode": 0,
        "Name": topic.name,
        "TopicId": topic.topic_id,
        "IsInternal": is_internal(topic.name),
        "Partitions": [_partition_entry(p, alive) for p in topic.partitions],
    }
    if version >= 8:
        entry["TopicAuthorizedOperations"] = operations
    return response.encode_element(version, "Topics", entry)


def _assembled(
    ctx: RequestContext,
    image: MetadataImage,
    request: dict[str, Any],
    pieces: list[Any],
    errors: int,
    version: int,
) -> Sized:
    """The answer's body from the brokers' and topics' encoded entries, with the fields around them and
    the ``errors`` error entries among ``pieces`` encoded for the request; big (made off the loop) when
    it copies many bytes or encodes many error entries."""
    response = ctx.controller.schemas.response(API_KEY)
    data = {
        "ThrottleTimeMs": 0,
        "ClusterId": ctx.controller.config.cluster_id,
        "ControllerId": image.controller_id,
        "ErrorCode": 0,
    }
    if 8 <= version <= 10:
        data["ClusterAuthorizedOperations"] = NO_OPERATIONS
        if request.get("IncludeClusterAuthorizedOperations", False):
            data["ClusterAuthorizedOperations"] = (
                ctx.operations(_CLUSTER, CLUSTER_NAME)
                if ctx.allowed(_DESCRIBE, _CLUSTER, CLUSTER_NAME)
                else 0
            )
    brokers = _encoded_brokers(ctx, image, response, version)

    def body() -> bytes:
        if errors:
            for index, piece in enumerate(pieces):
                if piece.__class__ is dict:
                    pieces[index] = response.encode_element(version, "Topics", piece)
        return response.encode_with_elements(version, data, {"Brokers": brokers, "Topics": pieces})

    copied = sum(map(len, pieces)) if not errors else sum(len(p) for p in pieces if p.__class__ is bytes)
    return Sized(body, copied // _BYTES_PER_PARTITION + _PER_TOPIC * errors)


def _encoded_brokers(
    ctx: RequestContext, image: MetadataImage, response: Message, version: int
) -> list[bytes]:
    """The broker list's encoded entries, kept with the image for the listeners they were made for."""
    key = ("metadata brokers", version)
    kept = image.derived.get(key)
    if kept is not None and kept[0] == ctx.endpoints:
        return kept[1]
    encoded = [response.encode_element(version, "Brokers", entry) for entry in broker_entries(ctx, image)]
    image.derived[key] = (dict(ctx.endpoints), encoded)
    return encoded


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
