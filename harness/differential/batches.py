"""Record batches as a client sends them, with every knob a differential test turns, and their reading.

Written apart from the simulator's own record code (``controller/records``) so that a mistake in one is
not cancelled by the same mistake in the other. The layout is Kafka's v2 ``RecordBatch`` (magic 2): a
61-byte header, then the records, compressed after the count; the CRC-32C covers the attributes to the end.
Legacy message sets (magic 0 and 1) are built too, for the checks that refuse them.
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from dataclasses import dataclass, field, replace
from typing import Any

from protocol.checksum import crc32c

__all__ = ["BatchSpec", "RecordSpec", "build", "parse_batches"]

_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER_SIZE = 61
_LOG_OVERHEAD = 12
_ATTRIBUTES_AT = 21
_CRC_AT = 17

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class RecordSpec:
    key: bytes | None = None
    value: bytes | None = b"v"
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_delta: int = 0
    offset_delta: int | None = None  # None: its position


@dataclass(frozen=True)
class BatchSpec:
    """One batch. The defaults make a well-formed, uncompressed, non-idempotent batch; each field spoils
    or changes one thing."""

    records: tuple[RecordSpec, ...] = (RecordSpec(),)
    base_timestamp: int = 0
    max_timestamp: int | None = None  # None: the largest record timestamp
    codec: str = "none"
    log_append_time: bool = False
    transactional: bool = False
    control: bool = False
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    base_offset: int = 0
    partition_leader_epoch: int = -1
    magic: int = 2
    count: int | None = None  # None: the number of records
    last_offset_delta: int | None = None  # None: count - 1
    corrupt_crc: bool = False
    length_delta: int = 0  # added to the Length field
    trailing: bytes = b""  # bytes appended after the batch (a partial second batch)
    attributes_extra: int = 0  # other attribute bits (e.g. an unknown codec id in the low three)
    extra: dict[str, Any] = field(default_factory=dict)

    def with_(self, **changes: Any) -> BatchSpec:
        return replace(self, **changes)


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _varbytes(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def _record(spec: RecordSpec, position: int) -> bytes:
    headers = b"".join(_varbytes(k.encode()) + _varbytes(v) for k, v in spec.headers)
    body = b"".join(
        (
            b"\x00",
            _varint(spec.timestamp_delta),
            _varint(position if spec.offset_delta is None else spec.offset_delta),
            _varbytes(spec.key),
            _varbytes(spec.value),
            _varint(len(spec.headers)),
            headers,
        )
    )
    return _varint(len(body)) + body


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "none":
        return data
    if codec == "gzip":
        return gzip.compress(data, mtime=0)
    if codec == "snappy":  # xerial framing, as the Java client's SnappyOutputStream writes it
        import snappy

        block = snappy.compress(data)
        return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
    if codec == "lz4":
        import lz4.frame

        return lz4.frame.compress(data, block_linked=False, content_checksum=False, store_size=False)
    if codec == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown codec {codec!r}")


def _decompress(codec: int, data: bytes) -> bytes:
    if codec == 0:
        return data
    if codec == 1:
        return gzip.decompress(data)
    if codec == 2:
        import snappy

        if data.startswith(b"\x82SNAPPY\x00"):
            out, at = [], 16
            while at < len(data):
                (size,) = struct.unpack_from(">i", data, at)
                out.append(snappy.decompress(data[at + 4 : at + 4 + size]))
                at += 4 + size
            return b"".join(out)
        return snappy.decompress(data)
    if codec == 3:
        import lz4.frame

        return lz4.frame.decompress(data)
    if codec == 4:
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise ValueError(f"codec {codec}")


def build(spec: BatchSpec) -> bytes:
    """The bytes of ``spec`` (a Produce request's ``Records``)."""
    if spec.magic in (0, 1):
        return _legacy(spec) + spec.trailing
    records = b"".join(_record(r, i) for i, r in enumerate(spec.records))
    section = _compress(spec.codec, records)
    count = len(spec.records) if spec.count is None else spec.count
    last_delta = (count - 1) if spec.last_offset_delta is None else spec.last_offset_delta
    deltas = [r.timestamp_delta for r in spec.records] or [0]
    max_ts = spec.base_timestamp + max(deltas) if spec.max_timestamp is None else spec.max_timestamp
    attributes = (
        CODECS.index(spec.codec)
        | (0x08 if spec.log_append_time else 0)
        | (0x10 if spec.transactional else 0)
        | (0x20 if spec.control else 0)
        | spec.attributes_extra
    )
    header = bytearray(
        _HEADER.pack(
            spec.base_offset,
            _HEADER_SIZE - _LOG_OVERHEAD + len(section) + spec.length_delta,
            spec.partition_leader_epoch,
            spec.magic,
            0,
            attributes,
            last_delta,
            spec.base_timestamp,
            max_ts,
            spec.producer_id,
            spec.producer_epoch,
            spec.base_sequence,
            count,
        )
    )
    crc = crc32c(section, crc32c(bytes(header[_ATTRIBUTES_AT:])))
    if spec.corrupt_crc:
        crc ^= 0xFFFF
    struct.pack_into(">I", header, _CRC_AT, crc)
    return bytes(header) + section + spec.trailing


def _legacy(spec: BatchSpec) -> bytes:
    """A message set of one uncompressed message per record, magic 0 or 1."""
    out = io.BytesIO()
    for i, r in enumerate(spec.records):
        body = struct.pack(">bb", spec.magic, 0)
        if spec.magic == 1:
            body += struct.pack(">q", spec.base_timestamp + r.timestamp_delta)
        for part in (r.key, r.value):
            body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
        message = struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body
        out.write(struct.pack(">qi", spec.base_offset + i, len(message)) + message)
    return out.getvalue()


def parse_batches(data: bytes | None) -> list[dict[str, Any]] | str | None:
    """A Fetch answer's ``Records`` as comparable data: per batch its header fields (the CRC as whether
    it is right) and its records; a part that is not a whole batch is reported as such."""
    if data is None:
        return None
    batches: list[dict[str, Any]] = []
    at = 0
    view = bytes(data)
    while at < len(view):
        if len(view) - at < _LOG_OVERHEAD:
            batches.append({"partial": len(view) - at})
            break
        base_offset, length = struct.unpack_from(">qi", view, at)
        end = at + _LOG_OVERHEAD + length
        if end > len(view) or length < _HEADER_SIZE - _LOG_OVERHEAD:
            batches.append({"partial": len(view) - at})
            break
        (_, _, epoch, magic, crc, attributes, last_delta, base_ts, max_ts, pid, pepoch, base_seq, count) = (
            _HEADER.unpack_from(view, at)
        )
        batch: dict[str, Any] = {
            "BaseOffset": base_offset,
            "PartitionLeaderEpoch": epoch,
            "Magic": magic,
            "CrcValid": crc == crc32c(view[at + _ATTRIBUTES_AT : end]),
            "Codec": attributes & 0x07,
            "LogAppendTime": bool(attributes & 0x08),
            "Transactional": bool(attributes & 0x10),
            "Control": bool(attributes & 0x20),
            "LastOffsetDelta": last_delta,
            "BaseTimestamp": base_ts,
            "MaxTimestamp": max_ts,
            "ProducerId": pid,
            "ProducerEpoch": pepoch,
            "BaseSequence": base_seq,
            "RecordsCount": count,
        }
        try:
            batch["Records"] = _parse_records(_decompress(attributes & 0x07, view[at + _HEADER_SIZE : end]))
        except Exception as exc:  # noqa: BLE001 - what could not be read is part of the comparison
            batch["Records"] = f"unreadable: {type(exc).__name__}"
        batches.append(batch)
        at = end
    return batches


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at
        shift += 7


def _read_varbytes(data: bytes, at: int) -> tuple[bytes | None, int]:
    size, at = _read_varint(data, at)
    if size < 0:
        return None, at
    return data[at : at + size], at + size


def _parse_records(data: bytes) -> list[dict[str, Any]]:
    records, at = [], 0
    while at < len(data):
        size, at = _read_varint(data, at)
        end = at + size
        at += 1  # attributes
        ts_delta, at = _read_varint(data, at)
        offset_delta, at = _read_varint(data, at)
        key, at = _read_varbytes(data, at)
        value, at = _read_varbytes(data, at)
        count, at = _read_varint(data, at)
        headers = []
        for _ in range(count):
            name, at = _read_varbytes(data, at)
            header_value, at = _read_varbytes(data, at)
            headers.append([(name or b"").decode(errors="replace"), header_value])
        records.append(
            {
                "TimestampDelta": ts_delta,
                "OffsetDelta": offset_delta,
                "Key": key,
                "Value": value,
                "Headers": headers,
            }
        )
        at = end
    return records
