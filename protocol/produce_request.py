"""A Produce request's body read in place: the data path's hot path.

The spec's codec (:mod:`protocol.codec`) copies each partition's ``Records`` out of the frame into new
bytes; for a Produce carrying a 1 MB batch that copy is most of what decoding costs. :func:`decode`
reads the same body into the same data (the request as the codec gives it: ``TransactionalId``,
``Acks``, ``TimeoutMs``, ``TopicData`` with ``Name`` or, in v13, ``TopicId``, and ``PartitionData``
with ``Index`` and ``Records``), except that each ``Records`` is a read-only view of the frame's
bytes, not a copy (Kafka's ``ProduceRequest`` holds ``MemoryRecords`` over the request's buffer the
same way). It reads the common case only, and answers None for anything else (a tagged field, a null
array, a length that overruns the body, a string that is not UTF-8 or too long, more than
:data:`MAX_PARTITIONS` partitions): the codec then decodes the body and gives its own error for what is
malformed.

Layout (Kafka's ``ProduceRequest.json``, versions 3-13, flexible from 9): TransactionalId (nullable
string), Acks int16, TimeoutMs int32, then an array of topics (Name string, or TopicId uuid from v13),
each an array of partitions (Index int32, Records nullable bytes); in flexible versions strings, bytes
and arrays carry unsigned-varint lengths plus one and every struct ends with its tagged fields.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Final

from protocol.wire import Malformed, read_uvarint

__all__ = ["MAX_PARTITIONS", "decode"]

_FLEXIBLE: Final = 9
#: A body naming more partitions than this is left to the codec (decoded in a worker thread when big:
#: reading a hundred thousand entries in place took the event loop for a tenth of a second).
MAX_PARTITIONS: Final = 1024
_TOPIC_IDS: Final = 13
_MAX_STRING: Final = 0x7FFF
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")


def decode(frame: bytes | memoryview, offset: int, version: int) -> tuple[dict[str, Any], int] | None:
    """The Produce request body of ``version`` at ``offset`` of ``frame`` and where it ends, as the spec's
        codec decodes it but with each ``Records`` a read-only view of ``frame`` (bytes, or a read-only view
    of a big frame); None when the body is not the common
        case (see the module docstring)."""
    try:
        if version >= _FLEXIBLE:
            return _flexible(frame, offset, version)
        return _classic(frame, offset)
    except (IndexError, struct.error, UnicodeDecodeError, Malformed, _NotCommon):
        return None


class _NotCommon(Exception):
    """The body holds something :func:`decode` leaves to the codec."""


def _classic(frame: bytes | memoryview, pos: int) -> tuple[dict[str, Any], int]:
    end = len(frame)
    view = memoryview(frame)
    length = _INT16.unpack_from(frame, pos)[0]
    pos += 2
    transactional_id = None
    if length >= 0:
        transactional_id, pos = _string(frame, pos, length, end)
    elif length != -1:
        raise _NotCommon
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, pos)
    pos += 6
    topics = []
    count = _INT32.unpack_from(frame, pos)[0]
    pos += 4
    if count < 0 or count * 6 > end - pos:
        raise _NotCommon
    total = 0
    for _ in range(count):
        length = _INT16.unpack_from(frame, pos)[0]
        if length < 0:
            raise _NotCommon
        name, pos = _string(frame, pos + 2, length, end)
        partitions = []
        n = _INT32.unpack_from(frame, pos)[0]
        pos += 4
        total += n
        if n < 0 or n * 8 > end - pos or total > MAX_PARTITIONS:
            raise _NotCommon
        for _ in range(n):
            index, size = struct.unpack_from(">ii", frame, pos)
            pos += 8
            records = None
            if size >= 0:
                if pos + size > end:
                    raise _NotCommon
                records = view[pos : pos + size]
                pos += size
            elif size != -1:
                raise _NotCommon
            partitions.append({"Index": index, "Records": records})
        topics.append({"Name": name, "PartitionData": partitions})
    request = {
        "TransactionalId": transactional_id,
        "Acks": acks,
        "TimeoutMs": timeout_ms,
        "TopicData": topics,
    }
    return request, pos


def _flexible(frame: bytes | memoryview, pos: int, version: int) -> tuple[dict[str, Any], int]:
    end = len(frame)
    view = memoryview(frame)
    by_id = version >= _TOPIC_IDS
    length, pos = read_uvarint(frame, pos)
    transactional_id = None
    if length:
        transactional_id, pos = _string(frame, pos, length - 1, end)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, pos)
    pos += 6
    topics = []
    count, pos = read_uvarint(frame, pos)
    if count == 0 or count - 1 > end - pos:
        raise _NotCommon  # a null array: the codec answers it
    total = 0
    for _ in range(count - 1):
        topic: dict[str, Any]
        if by_id:
            if pos + 16 > end:
                raise _NotCommon
            topic = {"TopicId": uuid.UUID(bytes=bytes(view[pos : pos + 16]))}
            pos += 16
        else:
            length, pos = read_uvarint(frame, pos)
            if length == 0:
                raise _NotCommon
            name, pos = _string(frame, pos, length - 1, end)
            topic = {"Name": name}
        partitions = []
        n, pos = read_uvarint(frame, pos)
        total += n - 1
        if n == 0 or n - 1 > end - pos or total > MAX_PARTITIONS:
            raise _NotCommon
        for _ in range(n - 1):
            index = _INT32.unpack_from(frame, pos)[0]
            size, pos = read_uvarint(frame, pos + 4)
            records = None
            if size:
                size -= 1
                if pos + size > end:
                    raise _NotCommon
                records = view[pos : pos + size]
                pos += size
            if frame[pos] != 0:  # the partition's tagged fields
                raise _NotCommon
            pos += 1
            partitions.append({"Index": index, "Records": records})
        if frame[pos] != 0:  # the topic's tagged fields
            raise _NotCommon
        pos += 1
        topic["PartitionData"] = partitions
        topics.append(topic)
    if frame[pos] != 0:  # the body's tagged fields
        raise _NotCommon
    pos += 1
    request = {
        "TransactionalId": transactional_id,
        "Acks": acks,
        "TimeoutMs": timeout_ms,
        "TopicData": topics,
    }
    return request, pos


def _string(frame: bytes | memoryview, pos: int, length: int, end: int) -> tuple[str, int]:
    if length > _MAX_STRING or pos + length > end:
        raise _NotCommon
    return str(frame[pos : pos + length], "utf-8"), pos + length
