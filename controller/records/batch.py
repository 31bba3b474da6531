"""RecordBatch v2 (magic 2): its layout read in place from a buffer, the batches of a ``records`` blob,
and the stamp a leader puts on a batch as it appends it.

The layout is Kafka's ``DefaultRecordBatch`` (61 bytes of header, then the records, compressed after the
count when the batch is compressed)::

    BaseOffset int64 @0 · Length int32 @8 (bytes after this field) · PartitionLeaderEpoch int32 @12 ·
    Magic int8 @16 · CRC uint32 @17 · Attributes int16 @21 · LastOffsetDelta int32 @23 ·
    BaseTimestamp int64 @27 · MaxTimestamp int64 @35 · ProducerId int64 @43 · ProducerEpoch int16 @51 ·
    BaseSequence int32 @53 · RecordsCount int32 @57 · Records @61

The CRC-32C covers bytes 21 to the end, so BaseOffset and PartitionLeaderEpoch can be rewritten without
recomputing it (``DefaultRecordBatch``'s class comment); only a new MaxTimestamp (a LogAppendTime stamp,
or the records' largest timestamp where the producer wrote another) needs a new CRC. The stamp is a new
head for the batch (:func:`stamp_head`): a log keeps it beside the client's bytes, untouched, so that
appending copies nothing. Nothing here decompresses (see :mod:`controller.records.validator` for the
records).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator
from typing import Final, NamedTuple

from protocol.checksum import crc32c
from protocol.codes import ErrorCode
from protocol.errors import Refusal
from protocol.wire import read_uvarint, uvarint_bytes, zigzag32

__all__ = [
    "ATTRIBUTES_OFFSET",
    "CONTROL_FLAG",
    "CRC_OFFSET",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "MAGIC_V2",
    "MIN_LEGACY_SIZE",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "TIMESTAMP_TYPE_FLAG",
    "TRANSACTIONAL_FLAG",
    "BatchHeader",
    "Compression",
    "batch_spans",
    "client_batch",
    "compute_crc",
    "control_batch",
    "control_marker",
    "decrement_sequence",
    "increment_sequence",
    "iter_batches",
    "next_batch_size",
    "read_header",
    "stamp",
    "stamp_head",
    "synthetic_batch",
    "synthetic_size",
]

#: Kafka's ``Records.LOG_OVERHEAD``: BaseOffset and Length, the part of a batch its Length does not count.
LOG_OVERHEAD: Final = 12
MAGIC_OFFSET: Final = 16
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21
_MAX_TIMESTAMP_OFFSET: Final = 35
_PRODUCER_ID_OFFSET: Final = 43
#: ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``: a v2 batch's header, the smallest a v2 batch can be.
HEADER_SIZE: Final = 61
#: ``LegacyRecord.RECORD_OVERHEAD_V0``: the smallest Length any batch of any magic can declare.
MIN_LEGACY_SIZE: Final = 14
MAGIC_V2: Final = 2

_COMPRESSION_MASK: Final = 0x07
TIMESTAMP_TYPE_FLAG: Final = 0x08
TRANSACTIONAL_FLAG: Final = 0x10
CONTROL_FLAG: Final = 0x20

#: ``RecordBatch``'s "not set" values.
NO_TIMESTAMP: Final = -1
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_PARTITION_LEADER_EPOCH: Final = -1

_INT32_MAX: Final = 2**31 - 1

_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
_PREFIX: Final = struct.Struct(">qiib")  # BaseOffset, Length, PartitionLeaderEpoch, Magic: outside the CRC
_CRC: Final = struct.Struct(">I")
_APPEND_TIME: Final = struct.Struct(">hiqq")  # Attributes, LastOffsetDelta, BaseTimestamp, MaxTimestamp
_INT32: Final = struct.Struct(">i")
assert _HEADER.size == HEADER_SIZE


class Compression(enum.IntEnum):
    """The codec ids of the attributes' low three bits (Kafka's ``CompressionType``); 5-7 are no codec."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class BatchHeader(NamedTuple):
    """The 61-byte header of a v2 batch, as read (:func:`read_header`); the flags and derived values are
    properties."""

    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """The whole batch's size in bytes (Length counts what follows it)."""
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression_id(self) -> int:
        """The codec id, 0-7 (only 0-4 name a codec: see :class:`Compression`)."""
        return self.attributes & _COMPRESSION_MASK

    @property
    def log_append_time(self) -> bool:
        """Whether the timestamp-type bit says LogAppendTime (records then all carry MaxTimestamp)."""
        return bool(self.attributes & TIMESTAMP_TYPE_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_producer_id(self) -> bool:
        """``RecordBatch.hasProducerId``: a producer id other than -1 (idempotent or transactional)."""
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """``DefaultRecordBatch.lastSequence``: BaseSequence plus LastOffsetDelta, wrapping past int32's
        largest value to 0; -1 when the batch carries no sequence."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap from int32's largest value to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``DefaultRecordBatch.decrementSequence``, the inverse of :func:`increment_sequence`."""
    if sequence < decrement:
        return _INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def read_header(buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """The header of the v2 batch at ``position`` (the buffer must hold its 61 bytes)."""
    return BatchHeader._make(_HEADER.unpack_from(buffer, position))


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    """The CRC-32C a batch's header should carry: over its bytes from the attributes to the end."""
    return crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])


def next_batch_size(buffer: bytes | bytearray | memoryview, position: int) -> int | None:
    """The size of the batch at ``position``, or None when no whole batch header is there (the end of the
    blob, or a partial batch, which Kafka leaves out). Kafka's ``ByteBufferLogInputStream.nextBatchSize``
    and ``nextBatch``: a Length below 14 or a magic outside 0-2 is corrupt (CORRUPT_MESSAGE)."""
    remaining = len(buffer) - position
    if remaining < LOG_OVERHEAD:
        return None
    length = _INT32.unpack_from(buffer, position + 8)[0]
    if length < MIN_LEGACY_SIZE:
        raise Refusal(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record size {length} is less than the minimum record overhead ({MIN_LEGACY_SIZE})",
        )
    if remaining < MAGIC_OFFSET + 1:
        return None
    magic = buffer[position + MAGIC_OFFSET]
    if magic > 127:
        magic -= 256
    if magic < 0 or magic > MAGIC_V2:
        raise Refusal(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}")
    size = length + LOG_OVERHEAD
    return size if remaining >= size else None


def batch_spans(buffer: bytes | bytearray | memoryview) -> Iterator[tuple[int, int]]:
    """``(position, size)`` of each whole batch of a ``records`` blob, of any magic, in order; a partial
    batch at the end is left out (as Kafka reads a fetch answer cut at its byte budget). Raises
    :class:`Refusal` (CORRUPT_MESSAGE) at a corrupt batch size or magic."""
    position = 0
    while True:
        size = next_batch_size(buffer, position)
        if size is None:
            return
        yield position, size
        position += size


def iter_batches(
    buffer: bytes | bytearray | memoryview,
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """The v2 batches of a ``records`` blob: each header and a view of the batch's bytes (no copy). Raises
    :class:`Refusal` at a corrupt size or magic (CORRUPT_MESSAGE), a batch of magic 0 or 1 or one too
    short for a v2 header (INVALID_RECORD: nothing here reads the old formats, as Kafka 4 writes none)."""
    view = memoryview(buffer)
    for position, size in batch_spans(view):
        if view[position + MAGIC_OFFSET] != MAGIC_V2 or size < HEADER_SIZE:
            raise Refusal(
                ErrorCode.INVALID_RECORD,
                f"the batch at byte {position} is not a record batch of magic version 2",
            )
        yield read_header(view, position), view[position : position + size]


def stamp_head(
    batch: bytes | bytearray | memoryview,
    base_offset: int,
    leader_epoch: int,
    log_append_time_ms: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """The first bytes of the batch as a leader stores it; the rest is the client's bytes as sent.
    BaseOffset and PartitionLeaderEpoch are rewritten (17 bytes, outside the CRC), as ``LogValidator``
    does with ``setLastOffset`` and ``setPartitionLeaderEpoch``.

    ``log_append_time_ms`` (for a LogAppendTime topic) also sets the timestamp-type bit and MaxTimestamp
    to that time; ``max_timestamp`` (the records' largest timestamp, as the leader read them) replaces a
    MaxTimestamp the producer got wrong, as ``LogValidator`` writes the largest it read
    (``setMaxTimestamp``). Either rewrites 43 bytes, with the CRC recomputed; BaseTimestamp and the
    records stay as sent (a reader gives every record of a LogAppendTime batch MaxTimestamp). The batch
    must be a whole v2 batch (see :mod:`controller.records.checks`).
    """
    view = memoryview(batch)
    prefix = _PREFIX.pack(base_offset, len(view) - LOG_OVERHEAD, leader_epoch, MAGIC_V2)
    attributes, last_offset_delta, base_timestamp, sent_max = _APPEND_TIME.unpack_from(
        view, ATTRIBUTES_OFFSET
    )
    if log_append_time_ms is not None:
        attributes |= TIMESTAMP_TYPE_FLAG
        new_max = log_append_time_ms
    elif max_timestamp is not None and max_timestamp != sent_max:
        new_max = max_timestamp
    else:
        return prefix
    stamped = _APPEND_TIME.pack(attributes, last_offset_delta, base_timestamp, new_max)
    crc = crc32c(view[_PRODUCER_ID_OFFSET:], crc32c(stamped))
    return b"".join((prefix, _CRC.pack(crc), stamped))


def stamp(
    batch: bytes | bytearray | memoryview,
    base_offset: int,
    leader_epoch: int,
    log_append_time_ms: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """The whole batch as a leader stores it (:func:`stamp_head` and the rest of the client's bytes), in
    one copy."""
    head = stamp_head(batch, base_offset, leader_epoch, log_append_time_ms, max_timestamp)
    return b"".join((head, memoryview(batch)[len(head) :]))


# -- batches of null records, for the synthetic workload ------------------------------------------------


def _null_record(offset_delta: int) -> bytes:
    """A record with no key, no value and no headers, at the batch's timestamp: its length, then
    attributes 0, timestamp delta 0, the offset delta, key -1, value -1 and 0 headers (zig-zag varints)."""
    body = b"\x00\x00" + uvarint_bytes(zigzag32(offset_delta)) + b"\x01\x01\x00"
    return uvarint_bytes(zigzag32(len(body))) + body


class _NullRecords:
    """The records of null-record batches: records with offset deltas 0, 1, 2, ... are the same bytes in
    every such batch, so one growing buffer serves them all (a batch of ``n`` records holds its first
    ``ends[n - 1]`` bytes)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.ends: list[int] = []

    def section(self, count: int) -> memoryview:
        while len(self.ends) < count:
            self.buffer += _null_record(len(self.ends))
            self.ends.append(len(self.buffer))
        return memoryview(self.buffer)[: self.ends[count - 1]]


_NULL_RECORDS: Final = _NullRecords()


def synthetic_size(count: int) -> int:
    """The size of :func:`synthetic_batch` for ``count`` records, without making it: the header, then 6
    bytes per record plus the varint size of its doubled (zig-zag) offset delta."""
    total = HEADER_SIZE + 6 * count
    low, width = 0, 1
    while low < count:
        high = min(count, 1 << (7 * width - 1))  # deltas below 64 take one byte, below 8192 two, ...
        total += width * (high - low)
        low, width = high, width + 1
    return total


def synthetic_batch(base_offset: int, count: int, leader_epoch: int, timestamp_ms: int) -> bytes:
    """A v2 batch of ``count`` records with null keys and values, all at ``timestamp_ms``, as a leader
    would store it (no producer, CreateTime, uncompressed): the same arguments give the same bytes."""
    return _plain_batch(base_offset, leader_epoch, count, timestamp_ms, _NULL_RECORDS.section(count))


def _plain_batch(
    base_offset: int,
    leader_epoch: int,
    count: int,
    timestamp_ms: int,
    section: bytes,
    producer: tuple[int, int, int] = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE),
    attributes: int = 0,
) -> bytes:
    """A v2 batch of ``count`` records (their bytes: ``section``), uncompressed, CreateTime, every record at
    ``timestamp_ms``, its CRC computed; ``producer`` is (producer id, epoch, base sequence), none by default;
    ``attributes`` its flags (:data:`TRANSACTIONAL_FLAG`)."""
    producer_id, producer_epoch, base_sequence = producer
    header = bytearray(
        _HEADER.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(section),
            leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            count - 1,
            timestamp_ms,
            timestamp_ms,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    )
    _CRC.pack_into(header, CRC_OFFSET, crc32c(section, crc32c(memoryview(header)[ATTRIBUTES_OFFSET:])))
    return b"".join((header, section))


# -- transaction markers (control batches) ---------------------------------------------------------------

#: ``ControlRecordType``: the key's type of a transaction marker.
ABORT_MARKER: Final = 0
COMMIT_MARKER: Final = 1
_CONTROL_KEY: Final = struct.Struct(">hh")  # version 0, type
_MARKER_VALUE: Final = struct.Struct(">hi")  # version 0, coordinator epoch


def control_batch(
    producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, timestamp_ms: int
) -> bytes:
    """The marker a transaction's coordinator has written to each of its partitions (Kafka's
    ``MemoryRecords.withEndTransactionMarker``): a transactional control batch of the producer, no
    sequence, one record whose key is the control type (version 0, 0 abort / 1 commit) and whose value is
    the ``EndTransactionMarker`` (version 0, the coordinator's epoch)."""
    key = _CONTROL_KEY.pack(0, COMMIT_MARKER if commit else ABORT_MARKER)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    body = b"".join(
        (
            b"\x00\x00\x00",  # attributes, timestamp delta 0, offset delta 0
            uvarint_bytes(zigzag32(len(key))),
            key,
            uvarint_bytes(zigzag32(len(value))),
            value,
            b"\x00",  # no headers
        )
    )
    record = uvarint_bytes(zigzag32(len(body))) + body
    header = bytearray(
        _HEADER.pack(
            0,
            HEADER_SIZE - LOG_OVERHEAD + len(record),
            NO_PARTITION_LEADER_EPOCH,
            MAGIC_V2,
            0,
            TRANSACTIONAL_FLAG | CONTROL_FLAG,
            0,
            timestamp_ms,
            timestamp_ms,
            producer_id,
            producer_epoch,
            NO_SEQUENCE,
            1,
        )
    )
    _CRC.pack_into(header, CRC_OFFSET, crc32c(record, crc32c(memoryview(header)[ATTRIBUTES_OFFSET:])))
    return b"".join((header, record))


def control_marker(batch: bytes | bytearray | memoryview) -> tuple[bool, int] | None:
    """``(commit, coordinator epoch)`` of a marker batch made by :func:`control_batch` (uncompressed, one
    record, as every broker writes them), read in place; None when the batch holds no marker record."""
    view = memoryview(batch)
    if len(view) < HEADER_SIZE + 1:
        return None
    position = HEADER_SIZE
    # The record's length, then attributes, timestamp delta and offset delta: one byte each for a marker.
    _, position = read_uvarint(view, position)
    position += 3
    key_length, position = read_uvarint(view, position)
    if key_length != zigzag32(_CONTROL_KEY.size) or len(view) < position + _CONTROL_KEY.size + 1:
        return None
    _, control_type = _CONTROL_KEY.unpack_from(view, position)
    position += _CONTROL_KEY.size
    value_length, position = read_uvarint(view, position)
    if value_length != zigzag32(_MARKER_VALUE.size) or len(view) < position + _MARKER_VALUE.size:
        return None
    _, coordinator_epoch = _MARKER_VALUE.unpack_from(view, position)
    return control_type == COMMIT_MARKER, coordinator_epoch


# -- a producer's batch, for the command line ---------------------------------------------------------


def _nullable_varint_bytes(data: bytes | None) -> bytes:
    if data is None:
        return uvarint_bytes(zigzag32(-1))
    return uvarint_bytes(zigzag32(len(data))) + data


def client_batch(
    records: list[tuple[bytes | None, bytes | None]],
    timestamp_ms: int,
    producer: tuple[int, int, int] | None = None,
    transactional: bool = False,
) -> bytes:
    """An uncompressed v2 batch of ``records`` (key, value), all at ``timestamp_ms``, as a producer sends it
    (BaseOffset 0, CreateTime; ``MemoryRecordsBuilder``'s layout): without idempotence by default (None), or
    with ``producer`` = (producer id, epoch, base sequence) as an idempotent producer, ``transactional`` as
    a transactional one."""
    if not records:
        raise ValueError("a batch holds at least one record")
    parts = []
    for delta, (key, value) in enumerate(records):
        body = b"".join(
            (
                b"\x00\x00",  # attributes, timestamp delta 0
                uvarint_bytes(zigzag32(delta)),
                _nullable_varint_bytes(key),
                _nullable_varint_bytes(value),
                b"\x00",  # no headers
            )
        )
        parts.append(uvarint_bytes(zigzag32(len(body))) + body)
    return _plain_batch(
        0,
        NO_PARTITION_LEADER_EPOCH,
        len(records),
        timestamp_ms,
        b"".join(parts),
        (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE) if producer is None else producer,
        TRANSACTIONAL_FLAG if transactional else 0,
    )
