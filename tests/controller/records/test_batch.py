"""RecordBatch v2 read in place and stamped as a leader stamps it, checked against kafka-python's own
reader of the same bytes (uncompressed and with every codec kafka-python has here)."""

from __future__ import annotations

import pytest

from controller.records.batch import (
    HEADER_SIZE,
    Compression,
    batch_spans,
    decrement_sequence,
    increment_sequence,
    iter_batches,
    read_header,
    stamp,
)
from protocol.codes import ErrorCode
from protocol.errors import Refusal
from tests.controller.records.batches import NOW, build, kafka_python_batches, kafka_python_records, rewrite

CODECS = list(Compression)


@pytest.mark.parametrize("codec", CODECS)
def test_header_reads_what_kafka_python_wrote(codec):
    data = build(5, compression=codec, producer=(7, 2, 40))
    header = read_header(data)
    theirs = kafka_python_batches(data)[0]
    assert header.size == len(data) == theirs.size_in_bytes
    assert (header.base_offset, header.last_offset, header.records_count) == (0, 4, 5)
    assert header.magic == 2 and header.crc == theirs.crc
    assert header.compression_id == codec == theirs.compression_type
    assert (header.base_timestamp, header.max_timestamp) == (NOW, NOW)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.last_sequence == theirs.last_sequence == 44
    assert header.has_producer_id and not header.is_control and not header.is_transactional
    assert not header.log_append_time


def test_sequences_wrap_at_int32_max_as_kafka():
    top = 2**31 - 1
    assert increment_sequence(top - 1, 3) == 1
    assert decrement_sequence(1, 3) == top - 1
    wrapping = build(4, producer=(1, 0, top - 1))  # sequences top - 1, top, 0, 1
    assert read_header(wrapping).last_sequence == kafka_python_batches(wrapping)[0].last_sequence == 1
    assert read_header(build(2)).last_sequence == -1


def test_the_batches_of_a_blob_and_a_partial_one_left_out():
    one, two = build(1), build(3)
    blob = one + two + two[:30]
    assert list(batch_spans(blob)) == [(0, len(one)), (len(one), len(two))]
    found = list(iter_batches(blob))
    assert [h.records_count for h, _ in found] == [1, 3]
    assert [bytes(view) for _, view in found] == [one, two]
    assert list(batch_spans(b"")) == [] and list(batch_spans(one[:11])) == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (rewrite(build(1), length=13), "Record size 13 is less than the minimum record overhead (14)"),
        (rewrite(build(1), magic=3), "Invalid magic found in record: 3"),
        (rewrite(build(1), magic=-1), "Invalid magic found in record: -1"),
    ],
)
def test_a_corrupt_size_or_magic_stops_the_reading(data, message):
    with pytest.raises(Refusal) as refused:
        list(batch_spans(data))
    assert (refused.value.code, refused.value.message) == (ErrorCode.CORRUPT_MESSAGE, message)


def test_iteration_reads_only_magic_2():
    with pytest.raises(Refusal) as refused:
        list(iter_batches(rewrite(build(1), magic=1)))
    assert refused.value.code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", CODECS)
def test_stamped_batch_reads_back_with_kafka_python(codec):
    sent = build(
        [(NOW + i, b"key%d" % i, b"value" * 20, [("h", b"x"), ("n", None)]) for i in range(6)],
        compression=codec,
        producer=(11, 3, 100),
    )
    stored = stamp(sent, 1_000, 7)
    assert len(stored) == len(sent)
    assert stored[17:] == sent[17:]  # the CRC and everything it covers are the client's bytes
    (theirs,) = kafka_python_batches(stored)
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.leader_epoch, theirs.last_offset) == (1_000, 7, 1_005)
    assert theirs.timestamp_type == 0
    records = kafka_python_records(theirs)
    assert [r[0] for r in records] == list(range(1_000, 1_006))
    assert [r[1] for r in records] == [NOW + i for i in range(6)]
    assert [r[3] for r in records] == [b"key%d" % i for i in range(6)]
    assert all(r[4] == b"value" * 20 and r[5] == [("h", b"x"), ("n", None)] for r in records)


@pytest.mark.parametrize("codec", CODECS)
def test_log_append_time_stamp_sets_the_type_and_max_timestamp_with_a_new_crc(codec):
    sent = build([(NOW - 5 + i, b"k", b"value" * 20, []) for i in range(3)], compression=codec)
    stored = stamp(sent, 42, 2, log_append_time_ms=NOW + 999)
    (theirs,) = kafka_python_batches(stored)
    assert theirs.validate_crc()
    assert theirs.timestamp_type == 1 and theirs.max_timestamp == NOW + 999
    assert theirs.compression_type == codec and theirs.base_offset == 42 and theirs.leader_epoch == 2
    assert [r[:3] for r in kafka_python_records(theirs)] == [(42 + i, NOW + 999, 1) for i in range(3)]
    header = read_header(stored)
    assert header.base_timestamp == NOW - 5  # BaseTimestamp stays as sent
    assert stored[HEADER_SIZE:] == sent[HEADER_SIZE:]


def test_stamping_reads_from_a_view_without_changing_the_request():
    request = bytearray(b"\xff" * 5 + build(2) + b"\xee" * 3)
    view = memoryview(request)[5:-3]
    before = bytes(request)
    stored = stamp(view, 9, 1)
    assert bytes(request) == before
    assert isinstance(stored, bytes) and read_header(stored).base_offset == 9
