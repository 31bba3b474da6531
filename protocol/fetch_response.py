"""A Fetch response's body as pieces: the data path's hot path.

The spec's codec (:mod:`protocol.codec`) copies each partition's ``Records`` into the body it encodes,
and the body is copied again into its frame; for an answer carrying a 1 MB batch those copies are most
of what answering costs. :func:`encode` writes the same bytes as the codec for the common answer, as a
list of pieces in which each partition's records are the pieces given (the logs' own bytes: a batch's
stamped head and the rest of the client's bytes), so that the frame is written as those pieces
(:class:`protocol.framing.FramePieces`), the records never copied after the socket read. It answers
None for anything else, which the codec then encodes: a partition with a tagged field
(``DivergingEpoch``, ``CurrentLeader``, ``SnapshotId``), ``NodeEndpoints``, a version it does not know.

Layout (Kafka's ``FetchResponse.json``, versions 4-18, flexible from 12): ThrottleTimeMs int32,
ErrorCode int16 and SessionId int32 (v7+), then an array of topics (Topic string, or TopicId uuid from
v13), each an array of partitions: PartitionIndex int32, ErrorCode int16, HighWatermark int64,
LastStableOffset int64, LogStartOffset int64 (v5+), AbortedTransactions (nullable array),
PreferredReadReplica int32 (v11+), Records (nullable bytes); in flexible versions strings, bytes and
arrays carry unsigned-varint lengths plus one and every struct ends with its tagged fields.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

from protocol.wire import uvarint_bytes

__all__ = ["MAX_VERSION", "MIN_VERSION", "RecordsPieces", "encode"]

MIN_VERSION: Final = 4
MAX_VERSION: Final = 18
_SESSIONS: Final = 7
_LOG_START: Final = 5
_READ_REPLICA: Final = 11
_FLEXIBLE: Final = 12
_TOPIC_IDS: Final = 13
_NODE_ENDPOINTS: Final = 16
#: A partition's fields that are tagged (v12+): an answer with one of them set goes to the codec.
_TAGGED: Final = ("DivergingEpoch", "CurrentLeader", "SnapshotId")

_TOP = struct.Struct(">i")
_TOP_SESSIONS = struct.Struct(">ihi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ihqq")  # PartitionIndex, ErrorCode, HighWatermark, LastStableOffset
_INT64 = struct.Struct(">q")
_ABORTED = struct.Struct(">qq")  # ProducerId, FirstOffset

#: A partition's records as pieces (joined, they are the ``records`` field's bytes).
RecordsPieces = Sequence[bytes | memoryview]


def encode(response: Mapping[str, Any], version: int) -> list[bytes | memoryview] | None:
    """The body of ``response`` (Fetch response data as the handler makes it; each ``Records`` bytes, a
    view, a tuple of pieces or None) at ``version``, in pieces, or None when the codec must encode it
    (see the module docstring)."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        return None
    if version >= _NODE_ENDPOINTS and response.get("NodeEndpoints"):
        return None
    flexible = version >= _FLEXIBLE
    by_id = version >= _TOPIC_IDS
    out: list[bytes | memoryview] = []
    head = bytearray()  # the bytes since the last records, flushed into ``out`` before each records
    if version >= _SESSIONS:
        head += _TOP_SESSIONS.pack(response["ThrottleTimeMs"], response["ErrorCode"], response["SessionId"])
    else:
        head += _TOP.pack(response["ThrottleTimeMs"])
    topics = response["Responses"]
    head += uvarint_bytes(len(topics) + 1) if flexible else _INT32.pack(len(topics))
    for topic in topics:
        if by_id:
            head += topic["TopicId"].bytes
        else:
            name = topic["Topic"].encode()
            if len(name) > 0x7FFF:
                return None
            head += uvarint_bytes(len(name) + 1) if flexible else _INT16.pack(len(name))
            head += name
        partitions = topic["Partitions"]
        head += uvarint_bytes(len(partitions) + 1) if flexible else _INT32.pack(len(partitions))
        for p in partitions:
            if flexible and any(p.get(name) is not None for name in _TAGGED):
                return None
            head += _PARTITION.pack(
                p["PartitionIndex"], p["ErrorCode"], p["HighWatermark"], p.get("LastStableOffset", -1)
            )
            if version >= _LOG_START:
                head += _INT64.pack(p.get("LogStartOffset", -1))
            aborted = p.get("AbortedTransactions")
            if aborted is None:
                head += b"\x00" if flexible else b"\xff\xff\xff\xff"
            else:
                head += uvarint_bytes(len(aborted) + 1) if flexible else _INT32.pack(len(aborted))
                for txn in aborted:
                    head += _ABORTED.pack(txn["ProducerId"], txn["FirstOffset"])
                    if flexible:
                        head += b"\x00"  # the aborted transaction's tagged fields
            if version >= _READ_REPLICA:
                head += _INT32.pack(p.get("PreferredReadReplica", -1))
            records = p.get("Records")
            if records is None:
                head += b"\x00" if flexible else b"\xff\xff\xff\xff"
            else:
                pieces = (records,) if isinstance(records, (bytes, bytearray, memoryview)) else records
                size = sum(len(piece) for piece in pieces)
                head += uvarint_bytes(size + 1) if flexible else _INT32.pack(size)
                if size:
                    out.append(bytes(head))
                    head.clear()
                    out.extend(pieces)
            if flexible:
                head += b"\x00"  # the partition's tagged fields
        if flexible:
            head += b"\x00"  # the topic's tagged fields
    if flexible:
        head += b"\x00"  # the body's tagged fields
    out.append(bytes(head))
    return out
