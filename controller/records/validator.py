"""Kafka's ``LogValidator`` for a client's batch: every record read, once, at append.

:func:`controller.records.checks.check_client_batch` checks what a batch's header and CRC say; this module
reads the records themselves, as Kafka's leader does before it appends (``LogValidator``,
``DefaultRecordBatch``'s record iterators, ``DefaultRecord.readFrom``), so that a batch the log keeps is
one every consumer can decode:

- **Streaming.** A compressed batch is read through a streaming decompressor (:func:`_chunks`): at most
  :data:`CHUNK` bytes of decompressed records at a time, plus the record being read (a record above
  :data:`_HELD_RECORD` has its key, value and headers stepped over, not held), so a batch that
  decompresses to gigabytes costs no memory beyond that. The decompressed bytes of one batch are
  bounded by ``simulator.records.max.decompressed.bytes`` (:attr:`TopicLimits.max_decompressed_bytes`):
  past it the batch is refused with INVALID_RECORD, as Kafka refuses a record above its own
  ``max.decompressed.message.bytes`` (a topic config Kafka 4.4 keeps undocumented, default 2 GiB, per
  record). An uncompressed batch is read in place.
- **Structure, count and offsets**, with Kafka's answers and messages (INVALID_RECORD): a record whose
  length, fields or headers overrun it or do not add up to it, a key, value or header value whose length
  is below -1 (Kafka reads it as null, other clients fail on it: ``docs/fidelity.md``), fewer records than RecordsCount
  ("premature EOF"), bytes left after RecordsCount records ("records still remaining"). A compressed
  batch's inner offset deltas must be 0, 1, 2, ...: Kafka rebuilds (recompresses) a batch whose are not,
  the simulator keeps batches as sent and refuses it (``docs/fidelity.md``). Bytes that do not
  decompress (a codec's stream that is corrupt, cut short, or followed by other bytes) are what Kafka
  answers UNKNOWN_SERVER_ERROR for ("Failed to decompress record stream"): so does this.
- **Each record's timestamp** (``LogValidator.validateTimestamp``: INVALID_TIMESTAMP, naming the first
  record out of range, and every failing record in RecordErrors, Produce v8+) and, on a compacted topic,
  each record's key (INVALID_RECORD).
- **What the log keeps for timestamp lookups** (:class:`BatchTimestamps`): the records' largest
  timestamp (Kafka writes it over the batch's MaxTimestamp: so does the leader's stamp), the offset of the
  first record that has it (ListOffsets -3, ``offsetOfMaxTimestamp``) and, when the timestamps rise more
  than once within the batch, the records that raise the running maximum (the batch's *steps*): the first
  record at or after a timestamp is always one of them, so ListOffsets by timestamp is answered from
  them without reading the batch again (:meth:`controller.records.log.Log.offset_for_timestamp`).

The functions here touch nothing shared: a batch whose reading costs much is validated in a worker
thread (:func:`validate_size`, :mod:`controller.offload`'s rule). A client's control batch is refused
before this module is reached (:mod:`controller.records.checks`); a transactional producer's batches are
read here as any other.
"""

from __future__ import annotations

import importlib
import zlib
from array import array
from collections.abc import Iterator
from typing import Any, Final

from controller.records.batch import (
    HEADER_SIZE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_FLAG,
    Compression,
)
from controller.records.checks import (
    BatchTimestamps,
    ClientBatch,
    TopicLimits,
    check_client_batch,
)
from protocol.codes import ErrorCode
from protocol.errors import Refusal
from protocol.wire import Malformed, read_uvarint, read_varint, read_varlong

__all__ = [
    "CHUNK",
    "MAX_RECORD_ERRORS",
    "BatchTimestamps",
    "RecordsRefusal",
    "decompressed",
    "read_timestamps",
    "validate_client_batch",
    "validate_records",
    "validate_size",
]

#: Decompressed bytes read at a time from a compressed batch.
CHUNK: Final = 256 * 1024
#: A record longer than this (bytes) is read field by field, its key, value and headers stepped over.
_HELD_RECORD: Final = 1024 * 1024
#: At most this many records are named in RecordErrors (the message names the first).
MAX_RECORD_ERRORS: Final = 100

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = 16
_GZIP: Final = int(Compression.GZIP)
_SNAPPY: Final = int(Compression.SNAPPY)
_LZ4: Final = int(Compression.LZ4)
_ZSTD: Final = int(Compression.ZSTD)


class RecordsRefusal(Refusal):
    """A refusal that names the records at fault (Produce v8+ RecordErrors: index in the batch, message)."""

    def __init__(self, code: ErrorCode, message: str, record_errors: list[tuple[int, str | None]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors


class _Invalid(Exception):
    """A batch's records are malformed: INVALID_RECORD with this message."""


class _Undecompressable(Exception):
    """A compressed records section does not decompress (Kafka: UNKNOWN_SERVER_ERROR)."""


class _TooBig(Exception):
    """The decompressed records pass the bound."""


#: Reading one record of an uncompressed batch, in the units of :data:`controller.offload.BIG_BODY`
#: (bytes of a body decoded at about 0.2 ms/KiB): about 2.5 µs, measured 1.3-3.3 µs a record for
#: records of 10 B to 16 KiB; the bytes themselves cost about 0.1 µs/KiB more (a copy).
RECORD_WORK = 13
#: The least bytes a record takes (length, attributes, timestamp and offset deltas, key and value
#: lengths, header count: a varint each): a batch claiming more records than fit stops at its bytes.
MIN_RECORD_BYTES = 7


def validate_size(batch: ClientBatch) -> int:
    """How much work validating ``batch`` is, in the units of :data:`controller.offload.BIG_BODY` (bytes
    of a request body to decode): for an uncompressed batch, its records (the scan's cost is per record,
    and it stops at the count the header declares or at the batch's end, whichever comes first) and a
    little per byte; a compressed batch counts 16 times its size (it decompresses to more)."""
    header = batch.header
    size = header.size
    if header.compression_id:
        return size * 16
    records = max(0, min(header.records_count, size // MIN_RECORD_BYTES))
    return records * RECORD_WORK + size // 2000


def validate_client_batch(
    records: bytes | bytearray | memoryview | None,
    api_version: int,
    limits: TopicLimits,
    now_ms: int,
    topic: str,
    partition: int,
) -> ClientBatch | Refusal:
    """:func:`~controller.records.checks.check_client_batch`, then :func:`validate_records`: a batch as the
    leader appends it (with its :class:`BatchTimestamps`), or Kafka's refusal."""
    checked = check_client_batch(records, api_version, limits, now_ms, topic, partition)
    if isinstance(checked, Refusal):
        return checked
    return validate_records(checked, limits, now_ms, f"{topic}-{partition}")


def validate_records(batch: ClientBatch, limits: TopicLimits, now_ms: int, tp: str) -> ClientBatch | Refusal:
    """Reads every record of a checked batch (see the module docstring): the batch with its timestamps,
    or the refusal. ``tp`` names the partition in messages (``topic-partition``). Touches nothing shared."""
    header = batch.header
    try:
        scan = _scan(batch, limits.max_decompressed_bytes)
    except _Invalid as invalid:
        return Refusal(ErrorCode.INVALID_RECORD, f"{invalid} in topic partition {tp}")
    except _TooBig:
        return Refusal(
            ErrorCode.INVALID_RECORD,
            f"The records of the batch in the append to {tp} decompress to more than "
            f"{limits.max_decompressed_bytes} bytes (simulator.records.max.decompressed.bytes)",
        )
    except _Undecompressable as failed:
        return Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to decompress record stream: {failed}")
    if limits.compacted and scan.keyless:
        errors = [
            (index, f"Compacted topic cannot accept message without key in topic partition {tp}")
            for index in scan.keyless
        ]
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        return RecordsRefusal(
            ErrorCode.INVALID_RECORD,
            f"One or more records have been rejected due to {scan.keyless_count} record errors in total, and "
            f"only showing the first three errors at most: [{shown}]",
            _said_once(errors),
        )
    refusal = _check_timestamps(batch, scan, limits, now_ms)
    if refusal is not None:
        return refusal
    if header.log_append_time:
        # Every record reads the batch's MaxTimestamp (checked above: not -1 on a CreateTime topic).
        timestamps = BatchTimestamps(header.max_timestamp, 0)
    else:
        timestamps = scan.timestamps(header.base_timestamp)
    return batch._replace(timestamps=timestamps)


def read_timestamps(batch: ClientBatch) -> BatchTimestamps:
    """The timestamps of a batch already known to be good (one a log holds, read back from bytes): read
    without a bound."""
    header = batch.header
    if header.log_append_time:
        return BatchTimestamps(header.max_timestamp, 0)
    scan = _scan(batch, -1)
    return scan.timestamps(header.base_timestamp)


def _said_once(errors: list[tuple[int, str]]) -> list[tuple[int, str | None]]:
    """RecordErrors for ``errors`` (capped at :data:`MAX_RECORD_ERRORS`), each message said once: later
    records with the same message carry none (their index says it)."""
    out: list[tuple[int, str | None]] = []
    said: set[str] = set()
    for index, message in errors[:MAX_RECORD_ERRORS]:
        out.append((index, None if message in said else message))
        said.add(message)
    return out


# -- timestamps ---------------------------------------------------------------------------------------


def _check_timestamps(batch: ClientBatch, scan: _Scan, limits: TopicLimits, now_ms: int) -> Refusal | None:
    """``LogValidator.validateTimestamp`` for every record. A LogAppendTime batch's records all read its
    MaxTimestamp: on a LogAppendTime topic, or with no timestamp, the producer set a type it may not
    (every record fails alike); on a CreateTime topic the records' timestamps are checked against the
    leader's clock (``message.timestamp.before.max.ms`` / ``after.max.ms``), a record with none (-1)
    passing. A CreateTime batch on a LogAppendTime topic passes as it is (the leader stamps its time)."""
    header = batch.header
    batch_append_time = header.attributes & TIMESTAMP_TYPE_FLAG
    if limits.log_append_time or (batch_append_time and header.max_timestamp == NO_TIMESTAMP):
        if not batch_append_time:
            return None
        message = "Invalid timestamp type in the batch's messages. Producer should not set timestamp type to LogAppendTime."
        return RecordsRefusal(
            ErrorCode.INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp",
            _said_once([(i, message) for i in range(min(scan.count, MAX_RECORD_ERRORS))]),
        )
    low, high = now_ms - limits.timestamp_before_max_ms, now_ms + limits.timestamp_after_max_ms
    base = header.base_timestamp
    if batch_append_time:  # every record reads MaxTimestamp (not -1 here)
        lowest = highest = header.max_timestamp
    else:
        lowest, highest = base + scan.min_delta, base + scan.max_delta
    if low <= lowest and highest <= high:
        return None  # every record within the range (the common case, without looking at them again)
    errors = []
    for index, (delta, offset) in enumerate(_pairs(batch)):
        timestamp = header.max_timestamp if batch_append_time else base + delta
        if timestamp != NO_TIMESTAMP and not low <= timestamp <= high:
            errors.append(
                (
                    index,
                    f"Timestamp {timestamp} of message with offset {offset} is out of range. The timestamp "
                    f"should be within [{low}, {high}]",
                )
            )
            if len(errors) == MAX_RECORD_ERRORS:
                break
    if not errors:
        return None
    return RecordsRefusal(
        ErrorCode.INVALID_TIMESTAMP,
        "One or more records have been rejected due to invalid timestamp",
        errors[:MAX_RECORD_ERRORS],
    )


# -- reading the records ------------------------------------------------------------------------------


class _Scan:
    """What reading a batch's records found: how many were read, the timestamp deltas' extremes, the
    records raising the running maximum (the steps), the keyless records; and with ``pairs`` each
    record's (timestamp delta, offset delta), for the rare answers that name records."""

    __slots__ = (
        "_batch",
        "check_offsets",
        "count",
        "keyless",
        "keyless_count",
        "max_delta",
        "min_delta",
        "pairs",
        "running",
        "step_deltas",
        "step_offsets",
    )

    def __init__(self, batch: ClientBatch, pairs: list[tuple[int, int]] | None) -> None:
        self._batch = batch
        #: A compressed batch's inner offset deltas must be 0, 1, 2, ...
        self.check_offsets = batch.header.compression_id != 0
        self.count = 0
        #: Timestamp deltas: the smallest and largest read, and the running maximum from -1 (Kafka's
        #: ``maxTimestamp`` starts at NO_TIMESTAMP), as deltas from the batch's BaseTimestamp.
        self.min_delta = 1 << 64
        self.max_delta = -(1 << 64)
        self.running = NO_TIMESTAMP - batch.header.base_timestamp
        #: The records raising the running maximum: their offset deltas and timestamp deltas.
        self.step_offsets: list[int] = []
        self.step_deltas: list[int] = []
        self.keyless: list[int] = []
        self.keyless_count = 0
        self.pairs = pairs

    def note(self, ts_delta: int, offset_delta: int, has_key: bool) -> None:
        """One record read (the careful path; :func:`_scan_records` does the same inline)."""
        index = self.count
        if self.check_offsets and offset_delta != index:
            raise _offsets_refused(index, offset_delta)
        if ts_delta < self.min_delta:
            self.min_delta = ts_delta
        if ts_delta > self.max_delta:
            self.max_delta = ts_delta
        if ts_delta > self.running:
            self.running = ts_delta
            self.step_offsets.append(offset_delta)
            self.step_deltas.append(ts_delta)
        if not has_key:
            self.keyless_count += 1
            if len(self.keyless) < MAX_RECORD_ERRORS:
                self.keyless.append(index)
        if self.pairs is not None:
            self.pairs.append((ts_delta, offset_delta))
        self.count = index + 1

    def timestamps(self, base_timestamp: int) -> BatchTimestamps:
        if not self.step_offsets:  # no record raised the maximum above -1 (every timestamp -1 or less)
            return BatchTimestamps(NO_TIMESTAMP, 0)
        if len(self.step_offsets) == 1:
            return BatchTimestamps(base_timestamp + self.step_deltas[0], self.step_offsets[0])
        stamps = array("q", [base_timestamp + delta for delta in self.step_deltas])
        return BatchTimestamps(stamps[-1], self.step_offsets[-1], (array("i", self.step_offsets), stamps))


def _offsets_refused(index: int, offset_delta: int) -> _Invalid:
    return _Invalid(
        f"Inner record {index} of the compressed batch has offset delta {offset_delta} (Kafka rebuilds such a "
        "batch; the simulator keeps batches as sent)"
    )


def _pairs(batch: ClientBatch) -> list[tuple[int, int]]:
    """(timestamp delta, offset delta) of every record of a batch that passed :func:`_scan` (read again:
    only refusals that name records need them)."""
    out: list[tuple[int, int]] = []
    _scan(batch, -1, out)
    return out


def _scan(batch: ClientBatch, bound: int, pairs: list[tuple[int, int]] | None = None) -> _Scan:
    """Reads every record of ``batch`` (raising :class:`_Invalid`, :class:`_TooBig` or
    :class:`_Undecompressable`); ``bound``: the most decompressed bytes (-1: none). With ``pairs``, each
    record's (timestamp delta, offset delta) is appended to it."""
    header = batch.header
    scan = _Scan(batch, pairs)
    count = header.records_count
    if count < 0:
        raise _Invalid(f"Found invalid record count {count} in magic v2 batch")
    view = batch.data
    if header.compression_id == 0:
        # Read in place: a copy of a big batch (fresh memory, faulted in page by page) cost more than the
        # records' reading (a batch of 60 records of 16 KiB: 126 us with the copy, 89 without).
        data = view[HEADER_SIZE : header.size]
        end = len(data)
        pos = _scan_records(scan, data, 0, end, count)
        while scan.count < count:  # what the fast scan left (headers, or an anomaly): read carefully
            pos = _careful_record(scan, data, pos, end)
            pos = _scan_records(scan, data, pos, end, count)
        if pos != end:
            raise _Invalid("Incorrect declared batch size, records still remaining in file")
        return scan
    stream = _Stream(_chunks(header.compression_id, view[HEADER_SIZE : header.size], bound))
    while scan.count < count:
        buf, pos, end = stream.fill(5)
        pos = stream.pos = _scan_records(scan, buf, pos, end, count)
        if scan.count == count:
            break
        # The next record is not whole in what was decompressed so far, or has headers, or is odd.
        buf, pos, end = stream.fill(5)
        if pos >= end:
            raise _Invalid("Incorrect declared batch size, premature EOF reached")
        try:
            length, body = read_varint(buf, pos)
        except (IndexError, Malformed):
            raise _Invalid("Incorrect declared batch size, premature EOF reached") from None
        if length > _HELD_RECORD:
            stream.pos = body
            scan.note(*_read_long_record(stream, length))
            continue
        buf, pos, end = stream.fill(body - pos + max(length, 0))
        stream.pos = _careful_record(scan, buf, pos, end, eof_message=True)
    if stream.more_data():
        raise _Invalid("Incorrect declared batch size, records still remaining in file")
    return scan


def _careful_record(scan: _Scan, buf: bytes, pos: int, end: int, eof_message: bool = False) -> int:
    """One record at ``pos``, with every check and Kafka's message for what fails; returns its end.
    ``eof_message``: a body cut short is a stream that ended (a compressed batch), not a buffer."""
    if pos >= end:
        raise _Invalid("Incorrect declared batch size, premature EOF reached")
    try:
        length, pos = read_varint(buf, pos)
    except (IndexError, Malformed):
        raise _Invalid("Incorrect declared batch size, premature EOF reached") from None
    if length < 0:
        raise _Invalid("Found invalid record structure")
    if pos + length > end:
        if eof_message:
            raise _Invalid(
                f"Invalid record size: expected {length} bytes in record payload, but the record payload reached EOF."
            )
        raise _Invalid(
            f"Invalid record size: expected {length} bytes in record payload, but instead the buffer has only "
            f"{end - pos} remaining bytes."
        )
    ts_delta, offset_delta, has_key, pos = _read_body(buf, pos, pos + length, length)
    scan.note(ts_delta, offset_delta, has_key)
    return pos


def _scan_records(scan: _Scan, buf: bytes, pos: int, end: int, count: int) -> int:
    """The fast path: reads records from ``buf[pos:end]`` while each is an ordinary one (no headers, every
    field where its length puts it) wholly inside ``end``, into ``scan``; stops at ``count`` records, or
    before a record it leaves to the careful path (:func:`_careful_record`: one with headers, one that may
    be malformed, one ``buf`` does not hold whole). Returns where it stopped."""
    index = scan.count
    check_offsets = scan.check_offsets
    min_delta, max_delta, running = scan.min_delta, scan.max_delta, scan.running
    step_offsets, step_deltas = scan.step_offsets, scan.step_deltas
    pairs = scan.pairs
    start = pos
    try:
        while index < count:
            start = pos
            b = buf[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := buf[pos + 1]) < 0x80:
                raw = (b & 0x7F) | (c << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = read_varint(buf, pos)
            record_end = pos + length
            if length < 6 or record_end > end:
                break
            pos += 1  # attributes
            b = buf[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := buf[pos + 1]) < 0x80:  # two bytes: a delta up to 8 s
                raw = (b & 0x7F) | (c << 7)
                ts_delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                ts_delta, pos = read_varlong(buf, pos)
            b = buf[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := buf[pos + 1]) < 0x80:  # two bytes: the records after the 64th, up to 8,192
                raw = (b & 0x7F) | (c << 7)
                offset_delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                offset_delta, pos = read_varint(buf, pos)
            b = buf[pos]
            if b < 0x80:
                key_size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                key_size, pos = read_varint(buf, pos)
            if key_size > 0:
                pos += key_size
            elif key_size < -1:
                break
            b = buf[pos]
            if b < 0x80:
                value_size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := buf[pos + 1]) < 0x80:
                raw = (b & 0x7F) | (c << 7)
                value_size = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                value_size, pos = read_varint(buf, pos)
            if value_size > 0:
                pos += value_size
            elif value_size < -1:
                break
            if pos + 1 != record_end or buf[pos] != 0:  # headers, or a length that does not add up
                break
            pos = record_end
            if check_offsets and offset_delta != index:
                raise _offsets_refused(index, offset_delta)
            if ts_delta < min_delta:
                min_delta = ts_delta
            if ts_delta > max_delta:
                max_delta = ts_delta
            if ts_delta > running:
                running = ts_delta
                step_offsets.append(offset_delta)
                step_deltas.append(ts_delta)
            if key_size < 0:
                scan.keyless_count += 1
                if len(scan.keyless) < MAX_RECORD_ERRORS:
                    scan.keyless.append(index)
            if pairs is not None:
                pairs.append((ts_delta, offset_delta))
            index += 1
            start = pos
    except (IndexError, Malformed):
        pass
    scan.count = index
    scan.min_delta, scan.max_delta, scan.running = min_delta, max_delta, running
    return start


def _read_body(buf: bytes, pos: int, end: int, length: int) -> tuple[int, int, bool, int]:
    """One record's fields after its length, ``buf[pos:end]`` (``DefaultRecord.readFrom``): its timestamp
    delta, offset delta, whether it has a key, and where it ends."""
    start = pos
    try:
        pos += 1  # attributes
        ts_delta, pos = read_varlong(buf, pos)
        offset_delta, pos = read_varint(buf, pos)
        key_size, pos = read_varint(buf, pos)
        if key_size > 0:
            pos += key_size
        value_size, pos = read_varint(buf, pos)
        if value_size > 0:
            pos += value_size
        if pos >= end or key_size < -1 or value_size < -1:
            raise _Invalid("Found invalid record structure")
        b = buf[pos]
        if b == 0:
            pos += 1
        else:
            headers, pos = read_varint(buf, pos)
            if headers < 0:
                raise _Invalid(f"Found invalid number of record headers {headers}")
            if headers > end - pos:
                raise _Invalid(
                    f"Found invalid number of record headers. {headers} is larger than the remaining size of the buffer"
                )
            for _ in range(headers):
                size, pos = read_varint(buf, pos)
                if size < 0:
                    raise _Invalid(f"Invalid negative header key size {size}")
                pos += size
                size, pos = read_varint(buf, pos)
                if size > 0:
                    pos += size
                if pos > end or size < -1:
                    raise _Invalid("Found invalid record structure")
    except (IndexError, Malformed):
        raise _Invalid("Found invalid record structure") from None
    if pos != end:
        if pos > end:
            raise _Invalid("Found invalid record structure")
        raise _Invalid(
            f"Invalid record size: expected to read {length} bytes in record payload, but instead read {pos - start}"
        )
    return ts_delta, offset_delta, key_size >= 0, pos


def _read_long_record(stream: _Stream, length: int) -> tuple[int, int, bool]:
    """A record longer than :data:`_HELD_RECORD`, read from ``stream`` field by field: its key, value and
    headers stepped over, never held."""
    consumed = 0

    def varint(long: bool = False) -> int:
        nonlocal consumed
        buf, pos, end = stream.fill(10)
        if pos >= end:
            raise _Invalid(
                f"Invalid record size: expected {length} bytes in record payload, but the record payload reached EOF."
            )
        try:
            value, after = (read_varlong if long else read_varint)(buf, pos)
        except (IndexError, Malformed):
            raise _Invalid("Found invalid record structure") from None
        consumed += after - pos
        stream.pos = after
        return value

    def skip(size: int) -> None:
        nonlocal consumed
        if size <= 0:
            return
        if consumed + size > length:
            raise _Invalid("Found invalid record structure")
        if not stream.skip(size):
            raise _Invalid(
                f"Invalid record size: expected {length} bytes in record payload, but the record payload reached EOF."
            )
        consumed += size

    skip(1)  # attributes
    ts_delta = varint(True)
    offset_delta = varint()
    key_size = varint()
    skip(key_size)
    value_size = varint()
    skip(value_size)
    if key_size < -1 or value_size < -1:
        raise _Invalid("Found invalid record structure")
    headers = varint()
    if headers < 0:
        raise _Invalid(f"Found invalid number of record headers {headers}")
    if headers > length - consumed:
        raise _Invalid(
            f"Found invalid number of record headers. {headers} is larger than the remaining size of the buffer"
        )
    for _ in range(headers):
        size = varint()
        if size < 0:
            raise _Invalid(f"Invalid negative header key size {size}")
        skip(size)
        size = varint()
        if size < -1:
            raise _Invalid("Found invalid record structure")
        skip(size)
    if consumed != length:
        raise _Invalid(
            f"Invalid record size: expected to read {length} bytes in record payload, but instead read {consumed}"
        )
    return ts_delta, offset_delta, key_size >= 0


class _Stream:
    """Decompressed bytes read forward: ``buf[pos:]`` is what is read and not yet taken."""

    __slots__ = ("_chunks", "buf", "pos")

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self.buf = b""
        self.pos = 0

    def fill(self, n: int) -> tuple[bytes, int, int]:
        """At least ``n`` bytes unread in ``buf`` if the stream has them: ``(buf, pos, len(buf))``."""
        while len(self.buf) - self.pos < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            rest = self.buf[self.pos :]
            self.buf = rest + chunk if rest else chunk
            self.pos = 0
        return self.buf, self.pos, len(self.buf)

    def skip(self, n: int) -> bool:
        """Steps over ``n`` bytes; False when the stream ends first."""
        held = len(self.buf) - self.pos
        if n <= held:
            self.pos += n
            return True
        n -= held
        self.buf, self.pos = b"", 0
        while True:
            chunk = next(self._chunks, None)
            if chunk is None:
                return False
            if len(chunk) >= n:
                self.buf, self.pos = chunk, n
                return True
            n -= len(chunk)

    def more_data(self) -> bool:
        """Whether bytes remain after what was taken."""
        return len(self.fill(1)[0]) > self.pos


# -- decompression ------------------------------------------------------------------------------------


def _chunks(codec: int, data: memoryview, bound: int) -> Iterator[bytes]:
    """The decompressed bytes of a records section, :data:`CHUNK` at a time; raises :class:`_TooBig` past
    ``bound`` bytes (-1: none) and :class:`_Undecompressable` on bytes the codec does not read, cut short,
    or followed by other bytes."""
    total = 0
    try:
        for chunk in _DECOMPRESSORS[codec](data, bound):
            total += len(chunk)
            if 0 <= bound < total:
                raise _TooBig()
            yield chunk
    except (_TooBig, _Invalid):
        raise
    except _Undecompressable:
        raise
    except KeyError:
        raise _Undecompressable(f"compression id {codec} names no codec") from None
    except Exception as exc:  # each library raises its own errors on bad input
        raise _Undecompressable(f"{type(exc).__name__}: {exc}") from None


def decompressed(codec: int, data: memoryview, bound: int = -1) -> bytes:
    """A records section decompressed whole (for tests and the command line: the validator reads a chunk
    at a time); ValueError when it does not decompress or passes ``bound``."""
    try:
        return b"".join(_chunks(codec, data, bound))
    except _Undecompressable as failed:
        raise ValueError(f"Failed to decompress record stream: {failed}") from None
    except _TooBig:
        raise ValueError(f"the records decompress to more than {bound} bytes") from None


def _gzip(data: memoryview, bound: int) -> Iterator[bytes]:
    """Gzip members (Kafka reads them with ``GZIPInputStream``, which reads concatenated members too)."""
    rest = bytes(data)
    while True:
        inflater = zlib.decompressobj(31)
        pending = rest
        while True:
            chunk = inflater.decompress(pending, CHUNK)
            if chunk:
                yield chunk
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
            if not pending and not chunk:
                chunk = inflater.flush()
                if chunk:
                    yield chunk
                raise _Undecompressable("the gzip stream ends before its end mark")
        rest = inflater.unused_data
        if not rest:
            return


def _zstd(data: memoryview, bound: int) -> Iterator[bytes]:
    """Zstandard frames, one after another (zstd-jni's stream reads them so). The library's streaming
    reader does not tell a frame cut short from a finished one, so the frames' layout is walked first
    (:func:`_zstd_frames_end`)."""
    zstandard = _module("zstandard")
    raw = bytes(data)
    _zstd_frames_end(raw)
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    while True:
        chunk = reader.read(CHUNK)
        if not chunk:
            return
        yield chunk


def _zstd_frames_end(raw: bytes) -> None:
    """Walks the zstandard frames of ``raw`` (RFC 8878: each frame's header, its blocks' headers to the
    last block, its checksum; skippable frames by their size): raises :class:`_Undecompressable` unless
    ``raw`` is whole frames and nothing else."""
    position, end = 0, len(raw)
    while position < end:
        if end - position < 4:
            raise _Undecompressable("a zstd frame is cut short")
        magic = int.from_bytes(raw[position : position + 4], "little")
        position += 4
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame
            if end - position < 4:
                raise _Undecompressable("a zstd frame is cut short")
            position += 4 + int.from_bytes(raw[position : position + 4], "little")
            if position > end:
                raise _Undecompressable("a zstd frame is cut short")
            continue
        if magic != 0xFD2FB528:
            raise _Undecompressable(f"unknown zstd frame magic {magic:#x}")
        if position >= end:
            raise _Undecompressable("a zstd frame is cut short")
        descriptor = raw[position]
        position += 1
        single_segment = descriptor & 0x20
        content_size_flag = descriptor >> 6
        position += (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03]
        position += (1 if single_segment else 0, 2, 4, 8)[content_size_flag]
        while True:
            if end - position < 3:
                raise _Undecompressable("a zstd frame is cut short")
            block = int.from_bytes(raw[position : position + 3], "little")
            position += 3
            kind = (block >> 1) & 0x03
            if kind == 3:
                raise _Undecompressable("a zstd block of the reserved type")
            position += 1 if kind == 1 else block >> 3
            if position > end:
                raise _Undecompressable("a zstd frame is cut short")
            if block & 1:
                break
        if descriptor & 0x04:
            position += 4
        if position > end:
            raise _Undecompressable("a zstd frame is cut short")


def _lz4(data: memoryview, bound: int) -> Iterator[bytes]:
    frame = _module("lz4.frame")
    pending = bytes(data)
    while pending:
        decompressor = frame.LZ4FrameDecompressor()
        chunk = decompressor.decompress(pending, max_length=CHUNK)
        while True:
            if chunk:
                yield chunk
            if decompressor.eof:
                break
            if decompressor.needs_input:
                raise _Undecompressable("the lz4 frame ends before its end mark")
            chunk = decompressor.decompress(b"", max_length=CHUNK)
        pending = decompressor.unused_data
        if pending:
            raise _Undecompressable(f"{len(pending)} bytes follow the lz4 frame")


def _snappy(data: memoryview, bound: int) -> Iterator[bytes]:
    """Kafka's snappy (snappy-java's ``SnappyInputStream``): xerial framing (a header, then blocks each
    an int32 size and a raw snappy block), or a raw block alone. Each block's declared length (its first
    varint) is read before it is decompressed."""
    snappy = _module("snappy")
    raw = bytes(data)
    if not raw.startswith(_XERIAL_MAGIC):
        yield _snappy_block(snappy, raw, bound)
        return
    position = _XERIAL_HEADER
    if len(raw) < position:
        raise _Undecompressable("the snappy stream's header is cut short")
    while position < len(raw):
        if position + 4 > len(raw):
            raise _Undecompressable("a snappy block's size is cut short")
        size = int.from_bytes(raw[position : position + 4], "big", signed=True)
        position += 4
        if size < 0 or position + size > len(raw):
            raise _Undecompressable(f"a snappy block of {size} bytes overruns the stream")
        yield _snappy_block(snappy, raw[position : position + size], bound)
        position += size


def _snappy_block(snappy: Any, block: bytes, bound: int) -> bytes:
    """One raw snappy block, its declared length (its first varint) checked against ``bound`` before it is
    decompressed (the total is bounded by :func:`_chunks`)."""
    try:
        declared, _ = read_uvarint(block, 0)
    except (IndexError, Malformed):
        raise _Undecompressable("a snappy block without its length") from None
    if 0 <= bound < declared:
        raise _TooBig()
    return bytes(snappy.decompress(block))


_DECOMPRESSORS: Final = {_GZIP: _gzip, _SNAPPY: _snappy, _LZ4: _lz4, _ZSTD: _zstd}


def _module(name: str) -> Any:
    return importlib.import_module(name)
