"""Every record of a client's batch read at append (Kafka's ``LogValidator``): the answers Kafka 4.4 gives
malformed records (measured against a Kafka 4.4.0 broker: UNKNOWN_SERVER_ERROR for bytes that do not
decompress, INVALID_RECORD for records that do not add up), the bound on decompressed bytes, each record's
timestamp and key, and what the log keeps for ListOffsets by timestamp. Whatever passes, kafka-python
(an independent reader) decodes."""

from __future__ import annotations

import gzip
import random
import struct
import tracemalloc
import zlib

import lz4.frame
import pytest
import snappy
import zstandard
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatchBuilder

from controller.offload import BIG_BODY
from controller.records.batch import HEADER_SIZE, TIMESTAMP_TYPE_FLAG, Compression
from controller.records.checks import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    ClientBatch,
    TopicLimits,
    check_client_batch,
)
from controller.records.records import read_batch_records
from controller.records.validator import (
    MAX_RECORD_ERRORS,
    MIN_RECORD_BYTES,
    RECORD_WORK,
    RecordsRefusal,
    validate_client_batch,
    validate_size,
)
from protocol.codes import ErrorCode
from protocol.errors import Refusal
from protocol.wire import uvarint_bytes, zigzag32
from tests.controller.records.batches import NOW, build, kafka_python_batches, rewrite

HOUR = 3_600_000
CODECS = list(Compression)
COMPRESSED = [c for c in Compression if c != Compression.NONE]


def validate(records, limits=DEFAULT_LIMITS, now=NOW):
    return validate_client_batch(records, 9, limits, now, "orders", 3)


def refused(records, limits=DEFAULT_LIMITS, now=NOW) -> tuple[ErrorCode, str | None]:
    result = validate(records, limits, now)
    assert isinstance(result, Refusal), result
    return result.code, result.message


def with_records(batch: bytes, section: bytes, **fields) -> bytes:
    """``batch`` with its records section replaced (Length and CRC made to match)."""
    out = bytearray(batch[:HEADER_SIZE] + section)
    struct.pack_into(">i", out, 8, len(out) - 12)
    return rewrite(bytes(out), **fields)


def records(count: int, *, codec: Compression = Compression.NONE, step_ms: int = 0, value: bytes = b"v" * 50):
    return build([(NOW + i * step_ms, b"k%d" % i, value, []) for i in range(count)], compression=codec)


def one_record(value: bytes, codec: Compression) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    builder.append(0, NOW, None, value, [])
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS)
def test_a_good_batch_passes_with_its_timestamps(codec):
    data = build(
        [(NOW + 10, b"a", b"v" * 50, []), (NOW + 5, b"b", b"v" * 50, []), (NOW + 30, b"c", b"v", [])],
        compression=codec,
    )
    result = validate(data)
    assert isinstance(result, ClientBatch)
    stamps = result.timestamps
    assert stamps is not None and (stamps.max_timestamp, stamps.max_delta) == (NOW + 30, 2)
    assert stamps.steps is not None
    assert list(stamps.steps[0]) == [0, 2] and list(stamps.steps[1]) == [NOW + 10, NOW + 30]
    # All at one time: the first record is the only step.
    same = validate(records(5, codec=codec))
    assert same.timestamps == (NOW, 0, None)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_bytes_that_do_not_decompress_are_what_kafka_answers_unknown_server_error_for(codec):
    good = records(3, codec=codec)
    garbage = with_records(good, b"\x01\x02garbage-bytes-not-compressed" * 3)
    code, message = refused(garbage)
    assert code is ErrorCode.UNKNOWN_SERVER_ERROR and message.startswith("Failed to decompress record stream")
    section = good[HEADER_SIZE:]
    assert refused(with_records(good, section[: len(section) // 2]))[0] is ErrorCode.UNKNOWN_SERVER_ERROR


@pytest.mark.parametrize("codec", CODECS)
def test_a_count_above_the_records_is_a_premature_end(codec):
    data = rewrite(records(3, codec=codec), records_count=5, last_offset_delta=4)
    assert refused(data) == (
        ErrorCode.INVALID_RECORD,
        "Incorrect declared batch size, premature EOF reached in topic partition orders-3",
    )


@pytest.mark.parametrize("codec", CODECS)
def test_a_count_below_the_records_leaves_records_over(codec):
    data = rewrite(records(3, codec=codec), records_count=2, last_offset_delta=1)
    assert refused(data) == (
        ErrorCode.INVALID_RECORD,
        "Incorrect declared batch size, records still remaining in file in topic partition orders-3",
    )


def test_a_huge_count_in_a_small_batch_is_refused_at_once():
    data = rewrite(records(1), records_count=2**31 - 1, last_offset_delta=2**31 - 2)
    assert len(data) < 200
    assert refused(data)[0] is ErrorCode.INVALID_RECORD


def test_records_that_overrun_or_fall_short_of_their_length():
    good = records(3)
    section = good[HEADER_SIZE:]
    length = len(section) // 3 - 1  # three records of the same size, each with a one-byte length
    assert refused(with_records(good, section[:-5])) == (
        ErrorCode.INVALID_RECORD,
        f"Invalid record size: expected {length} bytes in record payload, but instead the buffer has only "
        f"{length - 5} remaining bytes. in topic partition orders-3",
    )
    negative = bytearray(section)
    negative[0] = 0x01  # zig-zag -1
    assert refused(with_records(good, bytes(negative)))[0] is ErrorCode.INVALID_RECORD
    assert refused(with_records(good, section + b"\x00\x00\x00"))[0] is ErrorCode.INVALID_RECORD
    # A record whose length is one more than its fields.
    longer = bytearray(section)
    longer[0] += 2
    assert refused(with_records(good, bytes(longer)))[0] is ErrorCode.INVALID_RECORD


def test_the_decompressed_bound_and_its_default():
    assert DEFAULT_MAX_DECOMPRESSED_BYTES == 64 * 1024 * 1024
    small = TopicLimits(max_decompressed_bytes=10_000)
    for codec in COMPRESSED:
        assert isinstance(validate(one_record(bytes(9000), codec), small), ClientBatch)
        assert refused(one_record(bytes(20_000), codec), small) == (
            ErrorCode.INVALID_RECORD,
            "The records of the batch in the append to orders-3 decompress to more than 10000 bytes "
            "(simulator.records.max.decompressed.bytes)",
        )
    # An uncompressed batch is bounded by max.message.bytes alone (as Kafka's bound is on decompression).
    assert isinstance(validate(one_record(bytes(20_000), Compression.NONE), small), ClientBatch)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_a_batch_of_zeros_that_decompresses_to_hundreds_of_megabytes_costs_its_bound(codec):
    """One record of zeros, in a batch under max.message.bytes (snappy compresses zeros least: its record
    is smaller, and so is its bound here): refused once its decompressed bytes pass the bound, read a
    chunk at a time (the record's value is stepped over, never held)."""
    size, limits = {
        Compression.SNAPPY: (20 << 20, TopicLimits(max_decompressed_bytes=4 << 20)),
        Compression.LZ4: (200 << 20, DEFAULT_LIMITS),
    }.get(codec, (300 << 20, DEFAULT_LIMITS))
    section = _compressed_zeros(codec, size)
    assert len(section) < 1 << 20
    batch = with_records(one_record(b"", codec), section, attributes=int(codec))
    tracemalloc.start()
    try:
        code, message = refused(batch, limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code is ErrorCode.INVALID_RECORD and "decompress to more than" in message
    assert peak < (8 << 20) + (size if codec == Compression.SNAPPY else 0)  # a raw snappy block is one piece


def _compressed_zeros(codec: Compression, size: int) -> bytes:
    """A records section of one record whose value is ``size`` zero bytes, compressed with ``codec`` a
    MiB at a time."""
    body_head = b"\x00\x00\x00\x01" + uvarint_bytes(zigzag32(size))  # attributes, deltas, no key, value
    head = uvarint_bytes(zigzag32(len(body_head) + size + 1)) + body_head
    block = bytes(1 << 20)
    pieces = [head, *([block] * (size >> 20)), b"\x00"]  # the value, then no headers
    if codec == Compression.SNAPPY:
        return snappy.compress(b"".join(pieces))  # a raw block declares its whole length first
    if codec == Compression.GZIP:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join([compressor.compress(piece) for piece in pieces] + [compressor.flush()])
    if codec == Compression.LZ4:
        compressor = lz4.frame.LZ4FrameCompressor()
        return b"".join(
            [compressor.begin(), *(compressor.compress(piece) for piece in pieces), compressor.flush()]
        )
    compressor = zstandard.ZstdCompressor().compressobj()
    return b"".join([*(compressor.compress(piece) for piece in pieces), compressor.flush()])


def _compress(codec: Compression, section: bytes) -> bytes:
    if codec == Compression.GZIP:
        return gzip.compress(section)
    if codec == Compression.SNAPPY:
        return snappy.compress(section)
    if codec == Compression.LZ4:
        return lz4.frame.compress(section)
    if codec == Compression.ZSTD:
        return zstandard.ZstdCompressor().compress(section)
    return section


@pytest.mark.parametrize("codec", COMPRESSED)
def test_a_record_longer_than_a_chunk_is_read_without_holding_it(codec):
    value = bytes(range(256)) * (12 << 10)  # 3 MiB that compress
    batch = one_record(value, codec)
    limits = TopicLimits(max_message_bytes=16 << 20)
    result = validate(batch, limits)
    assert isinstance(result, ClientBatch) and result.timestamps.max_timestamp == NOW
    cut = with_records(batch, batch[HEADER_SIZE:-3])
    assert refused(cut, limits)[0] is ErrorCode.UNKNOWN_SERVER_ERROR


def test_inner_offsets_of_a_compressed_batch_must_count_from_zero():
    def custom(offsets, codec):
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=int(codec),
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 30,
        )
        for offset in offsets:
            builder.append(offset, NOW, b"k", b"v" * 50, [])
        return rewrite(bytes(builder.build()), records_count=3, last_offset_delta=2)

    # Kafka keeps an uncompressed batch's deltas as sent, and rebuilds a compressed one.
    assert isinstance(validate(custom([0, 5, 9], Compression.NONE)), ClientBatch)
    code, message = refused(custom([0, 5, 9], Compression.GZIP))
    assert code is ErrorCode.INVALID_RECORD and "offset delta 5" in message


def test_each_records_timestamp_is_checked():
    old_then_new = build([(NOW, None, b"v", []), (NOW - 2 * HOUR, None, b"v", []), (NOW, None, b"v", [])])
    limits = TopicLimits(timestamp_before_max_ms=HOUR)
    result = validate(old_then_new, limits)
    assert isinstance(result, RecordsRefusal)
    assert (result.code, result.message) == (
        ErrorCode.INVALID_TIMESTAMP,
        "One or more records have been rejected due to invalid timestamp",
    )
    assert result.record_errors == [
        (
            1,
            f"Timestamp {NOW - 2 * HOUR} of message with offset 1 is out of range. The timestamp should be "
            f"within [{NOW - HOUR}, {NOW + HOUR}]",
        )
    ]
    ahead = build([(NOW, None, b"v", []), (NOW + HOUR + 1, None, b"v", [])])
    assert refused(ahead)[0] is ErrorCode.INVALID_TIMESTAMP
    assert isinstance(validate(ahead, now=NOW + 1), ClientBatch)  # exactly an hour ahead is allowed
    assert isinstance(validate(old_then_new), ClientBatch)  # no lower bound by default
    no_time = build([(-1, None, b"v", [])])
    assert isinstance(
        validate(no_time, TopicLimits(timestamp_before_max_ms=0, timestamp_after_max_ms=0)), ClientBatch
    )


def test_record_errors_are_capped():
    many = build([(NOW + 2 * HOUR, None, b"v", [])] * 500)
    result = validate(many)
    assert isinstance(result, RecordsRefusal) and len(result.record_errors) == MAX_RECORD_ERRORS


def test_a_producer_must_not_set_log_append_time():
    stamped = rewrite(build(2), attributes=TIMESTAMP_TYPE_FLAG)
    assert refused(stamped, TopicLimits(log_append_time=True))[0] is ErrorCode.INVALID_TIMESTAMP
    # On a CreateTime topic Kafka reads the records' time from MaxTimestamp and checks only that.
    assert isinstance(validate(stamped), ClientBatch)
    assert refused(rewrite(stamped, max_timestamp=-1))[0] is ErrorCode.INVALID_TIMESTAMP
    assert refused(rewrite(stamped, max_timestamp=NOW + 2 * HOUR))[0] is ErrorCode.INVALID_TIMESTAMP
    # A CreateTime batch on a LogAppendTime topic is not checked for time: the leader stamps its own.
    ahead = build([(NOW + 5 * HOUR, None, b"v", [])])
    assert isinstance(validate(ahead, TopicLimits(log_append_time=True)), ClientBatch)


def test_a_compacted_topic_needs_keys():
    keyless = build([(NOW, b"k", b"v", []), (NOW, None, b"v", [])])
    result = validate(keyless, TopicLimits(compacted=True))
    assert isinstance(result, RecordsRefusal) and result.code is ErrorCode.INVALID_RECORD
    assert result.record_errors == [
        (1, "Compacted topic cannot accept message without key in topic partition orders-3")
    ]
    assert "1 record errors in total" in result.message
    assert isinstance(validate(keyless), ClientBatch)


@pytest.mark.parametrize("codec", CODECS)
def test_whatever_passes_a_consumer_decodes(codec):
    """Random batches whose records' bytes are changed here and there (then compressed with the codec),
    the CRC right: each is refused, or read back whole, RecordsCount records, by the project's reader
    and by kafka-python."""
    rng = random.Random(int(codec) + 100)
    passed = refused_count = 0
    for _ in range(400):
        count = rng.randint(1, 6)
        entries = [
            (
                NOW + rng.randint(-5, 5),
                rng.choice([None, b"k"]),
                rng.randbytes(rng.randint(0, 40)),
                [("h", b"x")] * rng.randint(0, 2),
            )
            for _ in range(count)
        ]
        plain = build(entries)
        section = bytearray(plain[HEADER_SIZE:])
        for _ in range(rng.randint(1, 3)):
            section[rng.randrange(len(section))] = rng.randrange(256)
        if rng.random() < 0.3:
            section = section[: rng.randint(0, len(section))]
        data = with_records(plain, _compress(codec, bytes(section)), attributes=int(codec))
        result = validate(data)
        if isinstance(result, Refusal):
            assert result.code in (ErrorCode.INVALID_RECORD, ErrorCode.INVALID_TIMESTAMP)
            refused_count += 1
            continue
        passed += 1
        ours = read_batch_records(data)
        assert len(ours) == count
        if any(record.attributes >= 0x80 for record in ours):
            continue  # kafka-python reads a record's attributes as a varint (Kafka: one byte, unused)
        [batch] = kafka_python_batches(data)
        try:
            assert len(list(batch)) == count
        except CorruptRecordError as error:
            # kafka-python decodes header keys as strict UTF-8; Kafka's clients replace what is not.
            assert "UnicodeDecodeError" in str(error)
    assert passed > 20 and refused_count > 20


def _checked(data: bytes) -> ClientBatch:
    batch = check_client_batch(data, 9, DEFAULT_LIMITS, NOW, "orders", 3)
    assert isinstance(batch, ClientBatch), batch
    return batch


def test_the_work_of_an_uncompressed_batch_is_its_records_and_of_a_compressed_one_its_size():
    """validate_size decides which batches are read in a worker thread (above BIG_BODY): reading costs about
    2.5 µs a record whatever the record's size, so a megabyte of 1 KiB records is read on the loop (about
    2.5 ms) and a few thousand small records are not."""
    kib = _checked(build(1000, value_size=1024))
    assert kib.header.size > 1_000_000 and validate_size(kib) < BIG_BODY
    small = _checked(build(3000, value_size=10))
    assert validate_size(small) > BIG_BODY
    assert validate_size(small) == 3000 * RECORD_WORK + small.header.size // 2000
    zstd = _checked(build(100, compression=Compression.ZSTD))
    assert validate_size(zstd) == zstd.header.size * 16


def test_a_count_the_bytes_cannot_hold_counts_only_the_records_that_fit():
    """The scan stops at the batch's end whatever count its header declares: a lying count is no more work."""
    data = build(20, value_size=10)
    lying = _checked(rewrite(data, records_count=2**31 - 1, last_offset_delta=2**31 - 2))
    assert (
        validate_size(lying)
        == (lying.header.size // MIN_RECORD_BYTES) * RECORD_WORK + lying.header.size // 2000
    )
    assert validate_size(lying) < BIG_BODY


@pytest.mark.parametrize("count", [63, 64, 65, 300, 8_200])
@pytest.mark.parametrize("spread_ms", [50, 8_000, 9_000, 3_000_000])
def test_timestamps_and_offsets_of_any_width_are_read_as_written(count, spread_ms):
    """Offset deltas and timestamp deltas of one, two and more bytes (from the 65th record, from 64 ms, from
    8,192), rising and falling: the largest timestamp, the offset of its first record and the running
    maximum's steps are those of the records written."""
    rng = random.Random(count * 31 + spread_ms)
    stamps = [NOW + rng.randint(-spread_ms // 4, spread_ms) for _ in range(count)]
    stamps[0] = NOW
    result = validate(build([(t, None, b"v", []) for t in stamps]), now=NOW + spread_ms)
    assert isinstance(result, ClientBatch), result
    top = max(stamps)
    steps, running = ([], []), stamps[0] - 1
    for i, t in enumerate(stamps):
        if t > running:
            running = t
            steps[0].append(i)
            steps[1].append(t)
    got = result.timestamps
    assert (got.max_timestamp, got.max_delta) == (top, stamps.index(top))
    if len(steps[0]) > 1:
        assert got.steps is not None and (list(got.steps[0]), list(got.steps[1])) == (steps[0], steps[1])
    else:
        assert got.steps is None
