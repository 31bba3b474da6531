"""The records inside v2 batches, for tests and the command line (a leader reads the records of a batch
it appends with :mod:`controller.records.validator`; no read path opens a batch).

A record (Kafka's ``DefaultRecord``) is a varint length, then: attributes int8, timestamp delta varlong,
offset delta varint, key (varint length, -1 for null, then bytes), value (likewise), and a varint count of
headers, each a key (varint length, UTF-8) and a value (varint length, -1 for null). Varints are
zig-zag encoded (``ByteUtils.readVarint``; read with :mod:`protocol.wire`'s readers). In a compressed
batch the bytes after RecordsCount are one compressed block, decompressed as the validator does
(:func:`controller.records.validator.decompressed`: gzip, snappy in Kafka's xerial framing or a raw
block, the LZ4 frame format, zstd; the ``python-snappy``, ``lz4`` and ``zstandard`` packages are the
project's dependencies); a codec id that names no codec is an :class:`UnavailableCodec`.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from controller.records.batch import (
    HEADER_SIZE,
    BatchHeader,
    Compression,
    control_marker,
    iter_batches,
    read_header,
)
from controller.records.validator import decompressed
from protocol.wire import read_varint, read_varlong

__all__ = [
    "Record",
    "UnavailableCodec",
    "available_codecs",
    "decompress",
    "iter_records",
    "read_batch_records",
]

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = 16  # the magic, then two int32 versions
_INT32: Final = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Record:
    """One record as a consumer sees it: its offset and timestamp resolved against its batch."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    #: The record's own attributes byte (unused by Kafka so far; kept as read).
    attributes: int = 0


class UnavailableCodec(LookupError):
    """A batch's codec has no library installed here (or its id names no codec)."""


_MODULES: Final[dict[int, str]] = {
    Compression.GZIP: "zlib",
    Compression.SNAPPY: "snappy",
    Compression.LZ4: "lz4.frame",
    Compression.ZSTD: "zstandard",
}


def available_codecs() -> frozenset[Compression]:
    """The codecs whose batches can be read here (NONE and GZIP always)."""
    found = {Compression.NONE}
    for codec, name in _MODULES.items():
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        found.add(Compression(codec))
    return frozenset(found)


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """The records section of a batch compressed with ``codec`` (a :class:`Compression` id); ValueError
    when the bytes do not decompress."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec not in _MODULES:
        raise UnavailableCodec(f"compression id {codec} names no codec")
    return decompressed(codec, memoryview(data))


def _nullable_bytes(buffer: bytes, position: int) -> tuple[bytes | None, int]:
    length, position = read_varint(buffer, position)
    if length < 0:
        return None, position
    end = position + length
    if end > len(buffer):
        raise ValueError("a record's field overruns its batch")
    return buffer[position:end], end


def read_batch_records(
    batch: bytes | bytearray | memoryview, header: BatchHeader | None = None
) -> list[Record]:
    """The records of one v2 batch (decompressed when it is compressed), with offsets and timestamps
    resolved: BaseOffset plus the offset delta, and BaseTimestamp plus the timestamp delta (MaxTimestamp
    for every record of a LogAppendTime batch, as Kafka's ``DefaultRecordBatch`` reads them)."""
    header = header if header is not None else read_header(batch, 0)
    body = decompress(header.compression_id, memoryview(batch)[HEADER_SIZE : header.size])
    records: list[Record] = []
    position = 0
    for _ in range(header.records_count):
        length, position = read_varint(body, position)
        end = position + length
        if end > len(body):
            raise ValueError("a record overruns its batch")
        attributes = body[position]
        timestamp_delta, cursor = read_varlong(body, position + 1)
        offset_delta, cursor = read_varint(body, cursor)
        key, cursor = _nullable_bytes(body, cursor)
        value, cursor = _nullable_bytes(body, cursor)
        count, cursor = read_varint(body, cursor)
        headers = []
        for _ in range(count):
            name, cursor = _nullable_bytes(body, cursor)
            header_value, cursor = _nullable_bytes(body, cursor)
            # Kafka's clients replace bytes that are not UTF-8 (``Utils.utf8``).
            headers.append(((name or b"").decode("utf-8", "replace"), header_value))
        if cursor != end:
            raise ValueError("a record's length does not match its fields")
        timestamp = (
            header.max_timestamp if header.log_append_time else header.base_timestamp + timestamp_delta
        )
        records.append(
            Record(header.base_offset + offset_delta, timestamp, key, value, tuple(headers), attributes)
        )
        position = end
    return records


def iter_records(records: bytes | bytearray | memoryview) -> Iterator[Record]:
    """Every record of every whole v2 batch in a ``records`` blob (a Fetch answer's, say), in order."""
    for header, batch in iter_batches(records):
        yield from read_batch_records(batch, header)


def consumer_records(
    records: bytes | bytearray | memoryview, aborted: Iterable[tuple[int, int]] | None = None
) -> Iterator[tuple[BatchHeader, Record]]:
    """The records of a Fetch answer's ``records`` a consumer keeps, with their batch's header, as Kafka's
    consumer keeps them: control batches (transaction markers) skipped; given ``aborted``, the answer's
    aborted transactions as (first offset, producer id), filtered as read_committed: a producer with an
    aborted transaction starting at or before a batch's last offset has its transactional batches
    dropped until its abort marker."""
    pending = sorted(aborted or ())
    dropping: set[int] = set()
    for header, batch in iter_batches(records):
        if header.has_producer_id:
            while pending and pending[0][0] <= header.last_offset:
                dropping.add(pending.pop(0)[1])
            if header.is_control:
                marker = control_marker(batch)
                if marker is not None and not marker[0]:
                    dropping.discard(header.producer_id)
            elif header.is_transactional and header.producer_id in dropping:
                continue
        if header.is_control:
            continue
        yield from ((header, record) for record in read_batch_records(batch, header))


def records_end(records: bytes | bytearray | memoryview) -> int:
    """The offset after the last whole batch of ``records`` (0 when it holds none): where a consumer goes
    on from, past the markers and aborted records it skipped."""
    end = 0
    for header, _ in iter_batches(records):
        end = header.base_offset + header.last_offset_delta + 1
    return end
