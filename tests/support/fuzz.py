"""Seeded random request frames for fuzzing the server: valid requests of every API and version it answers
(with awkward values: extremes, long strings, big arrays; and a few ElectLeaders and CreateTopics whose
arrays and strings grow toward the frame limit), and those same frames mutated, cut, resized, and pure
noise. Plain ``random.Random`` (not hypothesis) so that tens of thousands of frames cost
little and a seed gives the same stream.

With a :class:`FuzzContext` (what the server holds: real topics and their partitions, a live group
with its member id and generation), the frames name those half the time, so that they reach the code
behind the lookups; and every ``Records`` field is a real record batch (of every codec, timestamps
near now), mutated a third of the time with its CRC made right again, so that the validator sees
batches that pass the CRC check and are wrong inside."""

from __future__ import annotations

import random
import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from protocol import UNKNOWN_TAGGED_FIELDS, EncodeError, Schemas
from protocol.checksum import crc32c
from protocol.framing import encode_request
from protocol.structs import Array, KafkaStruct, NullableStruct
from protocol.types import Boolean, Bytes, Float64, Integer, KafkaType, String, Uuid

__all__ = ["FrameSource", "FuzzContext"]

_WORDS = ["t", "orders", "a.b_c", "x" * 249, "bad name", "", "..", "tópico", "\n", "\x00"]


@dataclass(frozen=True)
class FuzzContext:
    """What the fuzzed server holds: ``topics`` (name -> partitions) and a live classic group."""

    topics: dict[str, int] = field(default_factory=dict)
    group_id: str | None = None
    member_id: str | None = None
    generation: int = -1

    def as_json(self) -> dict[str, Any]:
        return {
            "topics": self.topics,
            "group_id": self.group_id,
            "member_id": self.member_id,
            "generation": self.generation,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> FuzzContext | None:
        return None if data is None else cls(**data)


#: Field names that name a topic, a partition, a group, a member, a generation.
_TOPIC_FIELDS = frozenset({"Name", "Topic", "TopicName"})
_PARTITION_FIELDS = frozenset({"PartitionIndex", "Partition", "Index"})
_CODECS = (0, 1, 2, 3, 4)


#: One valid frame in this many is grown toward the frame limit (:meth:`FrameSource.grown`), the first
#: of a source at its 100th valid frame: every source of a fuzz run sends at least one.
GROWN_EVERY = 1000


class FrameSource:
    """Frames for ``apis`` ({apiKey: (min, max) versions}); ``next()`` gives one frame. ``max_frame`` is
    the server's ``socket.request.max.bytes``: grown frames come near it (and a few pass it)."""

    def __init__(
        self,
        schemas: Schemas,
        apis: dict[int, tuple[int, int]],
        seed: int,
        max_frame: int = 1 << 20,
        context: FuzzContext | None = None,
    ) -> None:
        self.schemas = schemas
        self.context = context
        self._topics = sorted(context.topics.items()) if context is not None else []
        self.apis = sorted(apis.items())
        self.rng = random.Random(seed)
        self.seed = seed
        self.correlation = 0
        self.max_frame = max_frame
        self.valid_count = 0
        self.grown_count = 0

    # ------------------------------------------------------------------------------------- values

    def value(self, kind: KafkaType, name: str = "") -> Any:
        rng = self.rng
        if isinstance(kind, Integer):
            return rng.choice(
                [
                    0,
                    1,
                    -1,
                    2,
                    3,
                    7,
                    kind.low,
                    kind.high,
                    rng.randint(kind.low, kind.high),
                    rng.randint(-3, 20),
                ]
            )
        if isinstance(kind, Boolean):
            return rng.random() < 0.5
        if isinstance(kind, Float64):
            return rng.choice([0.0, -1.5, 1e300])
        if isinstance(kind, Uuid):
            return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
        if isinstance(kind, String):
            if kind.nullable and rng.random() < 0.15:
                return None
            roll = rng.random()
            if roll < 0.02:
                return "n" * rng.choice([32_700, 40_000])  # longer than a string field carries
            if roll < 0.5:
                return rng.choice(_WORDS)
            return f"{name.lower() or 's'}-{rng.randint(0, 30)}"
        if isinstance(kind, Bytes):
            if name == "Records" and self.context is not None and rng.random() < 0.9:
                return self.record_batch()
            return None if kind.nullable and rng.random() < 0.2 else rng.randbytes(rng.randint(0, 16))
        if isinstance(kind, Array):
            if kind.nullable and rng.random() < 0.2:
                return None
            roll = rng.random()
            count = (
                rng.choice([6000, 20_000])
                if roll < 0.01 and isinstance(kind.element, Integer)
                else rng.randint(0, 4)
            )
            return [self.value(kind.element, name) for _ in range(count)]
        if isinstance(kind, NullableStruct):
            return None if rng.random() < 0.2 else self.value(kind.struct, name)
        if isinstance(kind, KafkaStruct):
            value = {f.name: self.value(f.type, f.name) for f in (*kind.fields, *kind.tagged)}
            if kind.tags is not None and rng.random() < 0.05:
                value[UNKNOWN_TAGGED_FIELDS] = {99: b"\x01"}
            if self.context is not None:
                self._realistic(value)
            return value
        raise TypeError(f"no value for {kind!r}")

    def _realistic(self, value: dict[str, Any]) -> None:
        """Half the time, names and ids the server knows in place of drawn ones (see the module docstring)."""
        rng, context = self.rng, self.context
        assert context is not None
        partitions = None
        for key in value.keys() & _TOPIC_FIELDS:
            if self._topics and isinstance(value[key], str) and rng.random() < 0.5:
                name, partitions = rng.choice(self._topics)
                value[key] = name
        for key in value.keys() & _PARTITION_FIELDS:
            if isinstance(value[key], int) and rng.random() < 0.5:
                value[key] = rng.randrange(partitions or max((n for _, n in self._topics), default=1))
        if context.group_id is not None:
            if "GroupId" in value and rng.random() < 0.5:
                value["GroupId"] = context.group_id
            if "MemberId" in value and rng.random() < 0.5:
                value["MemberId"] = context.member_id
            if "GenerationId" in value and rng.random() < 0.5:
                value["GenerationId"] = context.generation
            if "GenerationIdOrMemberEpoch" in value and rng.random() < 0.5:
                value["GenerationIdOrMemberEpoch"] = context.generation

    def record_batch(self) -> bytes:
        """A real record batch (kafka-python's builder; every codec; timestamps near now), a third of the
        time with bytes of its records or header changed and its CRC made right again."""
        from kafka.record.default_records import DefaultRecordBatchBuilder

        rng = self.rng
        codec = rng.choice(_CODECS)
        producer = (-1, -1, -1) if rng.random() < 0.7 else (rng.randrange(8), 0, rng.randrange(4))
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=codec,
            is_transactional=False,
            producer_id=producer[0],
            producer_epoch=producer[1],
            base_sequence=producer[2],
            batch_size=1 << 20,
        )
        now = int(time.time() * 1000)
        for offset in range(rng.choice([1, 1, 2, 5, 40])):
            value = rng.choice([b"", b"v" * rng.randint(1, 300), rng.randbytes(rng.randint(0, 64))])
            headers = [("h", b"x")] if rng.random() < 0.2 else []
            key = None if rng.random() < 0.3 else b"k%d" % offset
            builder.append(offset, now + rng.randint(-1000, 1000), key, value, headers)
        data = bytearray(builder.build())
        roll = rng.random()
        if roll < 0.33 and len(data) > 61:
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(61 if rng.random() < 0.8 else 21, len(data))] = rng.randrange(256)
            struct.pack_into(">I", data, 17, crc32c(memoryview(data)[21:]))
        elif roll < 0.40:  # the records count or last offset delta a lie, the CRC right
            struct.pack_into(">i", data, 57, rng.choice([0, 2, 5, 2**31 - 1, -1]))
            struct.pack_into(">I", data, 17, crc32c(memoryview(data)[21:]))
        return bytes(data)

    # ------------------------------------------------------------------------------------- frames

    def grown(self) -> bytes | None:
        """ElectLeaders naming one topic (of a name up to 32,700 characters) with up to hundreds of
        thousands of partitions, or CreateTopics with tens of thousands of manual assignments: arrays and
        strings grown toward the frame limit, past the server's caps on array lengths, a few past the
        limit itself. None when the server answers neither API."""
        rng = self.rng
        apis = dict(self.apis)
        choices = [key for key in (43, 19) if key in apis]
        if not choices:
            return None
        # A source's first grown frame goes past the array caps (50,001 entries, well under the frame
        # limit), of the API its seed's parity picks: the sources of a run cover both APIs' caps
        # whatever the seed; the later ones are drawn.
        first = self.grown_count == 0
        self.grown_count += 1
        api_key = choices[self.seed % len(choices)] if first else rng.choice(choices)
        low, high = apis[api_key]
        version = rng.randint(low, high)
        name = "orders" if first else rng.choice(["t", "orders", "x" * 249, "n" * 32_700])
        room = self.max_frame - len(name) - 64  # the frame's bytes besides the array
        if api_key == 43:
            count = 50_001 if first else rng.choice([1000, 20_000, 50_001, room // 4, room // 4 + 2])
            data: dict[str, Any] = {
                "ElectionType": rng.choice([0, 1]),
                "TopicPartitions": [{"Topic": name, "Partitions": [rng.randrange(8) for _ in range(count)]}],
                "TimeoutMs": 1000,
            }
        else:
            replicas = [0] if first else rng.choice([[0], [0, 1, 2], [5, 5]])
            each = 4 + 4 + 4 * len(replicas) + 2  # index, count, ids, tags (at most)
            count = 50_001 if first else rng.choice([1000, 20_000, 50_001, room // each, room // each + 8])
            assignments = [{"PartitionIndex": i, "BrokerIds": replicas} for i in range(count)]
            topic = {"Name": name, "NumPartitions": -1, "ReplicationFactor": -1, "Configs": []}
            data = {
                "Topics": [{**topic, "Assignments": assignments}],
                "timeoutMs": 1000,
                # Validated, not created: creating tens of thousands of partitions is work a client may
                # ask for and wait for, not a bound to probe.
                "validateOnly": True,
            }
        try:
            body = self.schemas.request(api_key).encode(data, version)
        except EncodeError:  # a name too long for this version's strings
            return None
        self.correlation += 1
        return encode_request(self.schemas, api_key, version, self.correlation, "fuzz", body)

    def valid(self) -> bytes:
        self.valid_count += 1
        if self.valid_count % GROWN_EVERY == 100:
            grown = self.grown()
            if grown is not None:
                return grown
        api_key, (low, high) = self.rng.choice(self.apis)
        version = self.rng.randint(low, high)
        message = self.schemas.request(api_key)
        codec = message.codec(version)
        for _ in range(10):  # a drawn value may not fit its version (a long string in an int16 field)
            try:
                body = message.encode(_answered_soon(api_key, self.value(codec.construct.root)), version)
                break
            except EncodeError:
                continue
        else:
            body = message.encode({}, version)
        self.correlation += 1
        return encode_request(self.schemas, api_key, version, self.correlation, "fuzz", body)

    def next(self) -> bytes:
        rng = self.rng
        roll = rng.random()
        if roll < 0.6:
            return self.valid()
        base = bytearray(self.valid())
        if roll < 0.75:  # bytes flipped
            for _ in range(rng.randint(1, 4)):
                base[rng.randrange(4, len(base))] = rng.randrange(256)
            return bytes(base)
        if roll < 0.85:  # cut or padded, with the size prefix made to match
            body = base[4 : rng.randint(4, len(base))] + rng.randbytes(rng.randint(0, 8))
            return struct.pack(">i", len(body)) + body
        if roll < 0.92:  # an apiKey or version nobody answers
            body = bytearray(base[4:])
            struct.pack_into(">hh", body, 0, rng.choice([-1, 99, 32767, 1, 17]), rng.choice([-1, 50, 3]))
            return struct.pack(">i", len(body)) + bytes(body)
        return struct.pack(">i", rng.randint(1, 64)) + rng.randbytes(rng.randint(0, 64))  # noise


#: Waits a valid frame may ask for (ms): a stream waits for every answer within its deadline.
_SHORT_WAIT_MS = 50
#: The most a JoinGroup or SyncGroup may wait for other members (ms; the fuzzed servers allow session
#: timeouts this short: ``group.min.session.timeout.ms``).
_GROUP_WAIT_MS = 500


#: The ACL APIs' code fields and their highest known code (UNKNOWN is 0), as controller.acls.codes has them.
_ACL_CODES = {
    "ResourceType": 7,
    "ResourceTypeFilter": 7,
    "ResourcePatternType": 4,
    "PatternTypeFilter": 4,
    "Operation": 15,
    "PermissionType": 3,
}


def _answered_soon(api_key: int, data: dict) -> dict:
    """A request the server answers, and soon: Kafka never answers a Produce with acks=0 (the stream
    would wait for it), and a Produce with acks=all or a Fetch may wait as long as it asks."""
    if api_key == 0:
        data["Acks"] = 1 if data.get("Acks") == 0 else data.get("Acks")
        data["TimeoutMs"] = min(max(data.get("TimeoutMs", 0), 0), _SHORT_WAIT_MS)
    elif api_key == 1:
        data["MaxWaitMs"] = min(max(data.get("MaxWaitMs", 0), 0), _SHORT_WAIT_MS)
    elif api_key in (29, 30, 31):
        # The ACL APIs: a request with an UNKNOWN (or undefined) code is one Kafka cannot read, and the
        # connection closes; a valid one names known codes (the highest of each kind: its count).
        for entry in [data, *data.get("Creations", ()), *data.get("Filters", ())]:
            for field_name, count in _ACL_CODES.items():
                if field_name in entry:
                    entry[field_name] = 1 + abs(entry[field_name]) % count
    elif api_key in (11, 14):
        # JoinGroup and SyncGroup wait for the other members at most the rebalance timeout (the session
        # timeout before JoinGroup v1): a short one, where the fuzzed server allows it.
        for key in ("SessionTimeoutMs", "RebalanceTimeoutMs"):
            if key in data:
                data[key] = min(data[key], _GROUP_WAIT_MS)
    elif api_key == 1004:
        # SimulatorReplication: a follower that copies late or not at all holds its partitions' high
        # watermark back, and an OffsetCommit waits for the high watermark of __consumer_offsets.
        data["DelayMs"] = min(max(data.get("DelayMs", -1), -1), _SHORT_WAIT_MS)
        data["Unlimited"] = True
    return data


#: Settings a fuzzed server runs with, besides its limits: groups whose members may ask for short
#: timeouts (a JoinGroup naming the live group waits at most :data:`_GROUP_WAIT_MS`).
GROUP_PROPERTIES = {
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "0",
    # A share-state write whose followers a fuzzed control request stopped is answered when this passes
    # (Kafka's default, 5000, is past the 2 s within which every connection must be answered). A
    # connection's requests are answered one after another, so such writes in a row add up: at 1000, an
    # AlterShareGroupOffsets and a DeleteGroups behind it were answered after 1.0 and 2.0 s (replayed with
    # a follower of the state partition stopped; the fuzz run failed so twice in CI). At 250, seven fit.
    "share.coordinator.write.timeout.ms": "250",
}


def live_context(bootstrap: str) -> FuzzContext:
    """Makes what the fuzzed frames name (see :class:`FuzzContext`): three topics (one compacted, one
    with LogAppendTime) holding a few records, and a live group of one member, its leader, in a stable
    generation."""
    from controller.records.batch import client_batch
    from protocol.client import BlockingClient

    topics = {"fuzz": 8, "fuzz-compact": 3, "fuzz-append-time": 2}
    configs = {
        "fuzz": [],
        "fuzz-compact": [{"Name": "cleanup.policy", "Value": "compact"}],
        "fuzz-append-time": [{"Name": "message.timestamp.type", "Value": "LogAppendTime"}],
    }
    with BlockingClient.connect(bootstrap, request_timeout=60) as client:
        created = client.send(
            "CreateTopicsRequest",
            {
                "Topics": [
                    {
                        "Name": n,
                        "NumPartitions": p,
                        "ReplicationFactor": 3,
                        "Assignments": [],
                        "Configs": configs[n],
                    }
                    for n, p in topics.items()
                ],
                "timeoutMs": 30_000,
            },
            version=5,
        )
        assert {t["ErrorCode"] for t in created["Topics"]} == {0}, created
        now = int(time.time() * 1000)
        for name, partitions in topics.items():
            data = [
                {"Index": i, "Records": client_batch([(b"k", b"v%d" % i)], now)} for i in range(partitions)
            ]
            client.send(
                "ProduceRequest",
                {"Acks": 1, "TimeoutMs": 5000, "TopicData": [{"Name": name, "PartitionData": data}]},
                version=9,
            )
        group = "fuzz-group"
        deadline = time.monotonic() + 30
        while client.send("FindCoordinatorRequest", {"Key": group, "KeyType": 0}, version=1)["ErrorCode"]:
            if time.monotonic() > deadline:
                raise AssertionError("the fuzzed server names no group coordinator")
            time.sleep(0.1)
        joined = client.send(
            "JoinGroupRequest",
            {
                "GroupId": group,
                "SessionTimeoutMs": 600_000,
                "RebalanceTimeoutMs": _GROUP_WAIT_MS,
                "MemberId": "",
                "ProtocolType": "consumer",
                "Protocols": [{"Name": "range", "Metadata": b""}],
            },
            version=3,
        )
        assert joined["ErrorCode"] == 0, joined
        member, generation = joined["MemberId"], joined["GenerationId"]
        synced = client.send(
            "SyncGroupRequest",
            {
                "GroupId": group,
                "GenerationId": generation,
                "MemberId": member,
                "Assignments": [{"MemberId": member, "Assignment": b""}],
            },
            version=2,
        )
        assert synced["ErrorCode"] == 0, synced
    return FuzzContext(topics, group, member, generation)


def warm(server: Any) -> None:
    """Imports every handler module of ``server`` (a :class:`controller.embedded.ServerThread`), builds
    every subsystem (:data:`controller.app.SUBSYSTEMS`) and every codec of the versions it answers: their
    first use is not what a fuzz run measures (on a loaded machine a subsystem's first build held the loop
    up to 0.3 s, and the cold builds of them all, of the handlers and of the data APIs' codecs, 2.5 s:
    longer than a stream's deadline)."""
    from controller.app import SUBSYSTEMS

    handlers = server.server.dispatcher.handlers
    controller = server.server.controller
    schemas = controller.schemas
    for subsystem in SUBSYSTEMS:
        server.call(lambda name=subsystem.attribute: getattr(controller, name))
    for key, handler in handlers.items():
        server.call(handler.load)
        for version in range(handler.min_version, handler.max_version + 1):
            schemas.request(key).codec(version)
            schemas.response(key).codec(version)
