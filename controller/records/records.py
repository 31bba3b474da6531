"""The records inside v2 batches, for tests, the command line and the rare lookups that need them
(ListOffsets by timestamp): not for the produce or fetch path, which never opens a batch.

A record (Kafka's ``DefaultRecord``) is a varint length, then: attributes int8, timestamp delta varlong,
offset delta varint, key (varint length, -1 for null, then bytes), value (likewise), and a varint count of
headers, each a key (varint length, UTF-8) and a value (varint length, -1 for null). Varints are
zig-zag encoded (``ByteUtils.readVarint``; read with :mod:`protocol.wire`'s readers). In a compressed batch the bytes after RecordsCount are one
compressed block: gzip is read with the standard library; snappy (Kafka's xerial framing or a raw block),
lz4 (the LZ4 frame format) and zstd with the ``python-snappy``, ``lz4`` and ``zstandard`` packages where
they are installed (:func:`available_codecs`); a batch of a codec that is not is an
:class:`UnavailableCodec`.
"""

from __future__ import annotations

import gzip
import importlib
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from controller.records.batch import HEADER_SIZE, BatchHeader, Compression, iter_batches, read_header
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


def _gzip(data: bytes | memoryview) -> bytes:
    return gzip.decompress(data)


def _snappy(data: bytes | memoryview) -> bytes:
    snappy = _module("snappy")
    raw = bytes(data)
    if not raw.startswith(_XERIAL_MAGIC):
        return bytes(snappy.decompress(raw))
    out = []
    position = _XERIAL_HEADER
    while position < len(raw):
        (size,) = _INT32.unpack_from(raw, position)
        position += 4
        out.append(snappy.decompress(raw[position : position + size]))
        position += size
    return b"".join(out)


def _lz4(data: bytes | memoryview) -> bytes:
    return bytes(_module("lz4.frame").decompress(bytes(data)))


def _zstd(data: bytes | memoryview) -> bytes:
    # A stream decompressor: producers need not write the content size into the frame.
    return bytes(_module("zstandard").ZstdDecompressor().decompressobj().decompress(bytes(data)))


_DECOMPRESSORS: Final[dict[int, tuple[str, Callable[[bytes | memoryview], bytes]]]] = {
    Compression.GZIP: ("gzip", _gzip),
    Compression.SNAPPY: ("snappy", _snappy),
    Compression.LZ4: ("lz4.frame", _lz4),
    Compression.ZSTD: ("zstandard", _zstd),
}


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise UnavailableCodec(f"reading this batch needs the {name.split('.')[0]} package") from None


def available_codecs() -> frozenset[Compression]:
    """The codecs whose batches can be read here (NONE and GZIP always)."""
    found = {Compression.NONE, Compression.GZIP}
    for codec, (name, _) in _DECOMPRESSORS.items():
        try:
            _module(name)
        except UnavailableCodec:
            continue
        found.add(Compression(codec))
    return frozenset(found)


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """The records section of a batch compressed with ``codec`` (a :class:`Compression` id)."""
    if codec == Compression.NONE:
        return bytes(data)
    entry = _DECOMPRESSORS.get(codec)
    if entry is None:
        raise UnavailableCodec(f"compression id {codec} names no codec")
    return entry[1](data)


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
