"""The checks on a client's batch: what Kafka 4 answers each malformed or refused batch, code and message,
and in Kafka's order (a batch with two faults gets the answer of the check Kafka makes first)."""

from __future__ import annotations

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from controller.config.topic_configs import topic_config_def
from controller.records.batch import CONTROL_FLAG, Compression
from controller.records.checks import DEFAULT_LIMITS, ClientBatch, TopicLimits, check_client_batch
from protocol.codes import ErrorCode
from protocol.errors import Refusal
from tests.controller.records.batches import NOW, build, rewrite

HOUR = 3_600_000


def check(records, version=9, limits=DEFAULT_LIMITS, now=NOW):
    return check_client_batch(records, version, limits, now, "orders", 3)


def refused(records, version=9, limits=DEFAULT_LIMITS, now=NOW) -> tuple[ErrorCode, str | None]:
    result = check(records, version, limits, now)
    assert isinstance(result, Refusal), result
    return result.code, result.message


def legacy(magic: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=NOW if magic else None, key=b"k", value=b"v")
    return bytes(builder.build())


@pytest.mark.parametrize("codec", list(Compression))
def test_a_good_batch_passes_as_a_view_of_the_request(codec):
    data = build(4, compression=codec, producer=(5, 0, 0))
    result = check(data + data[:20])  # a trailing partial batch is left out, as Kafka trims it
    assert isinstance(result, ClientBatch)
    assert bytes(result.data) == data and result.header.records_count == 4
    assert result.data.obj is not None  # a view, not a copy


@pytest.mark.parametrize("records", [None, b"", b"\x00" * 11, build(2)[:60]])
def test_no_whole_batch(records):
    assert refused(records, version=7) == (
        ErrorCode.INVALID_RECORD,
        "Produce requests with version 7 must have at least one record batch per partition",
    )


@pytest.mark.parametrize("magic", [0, 1])
def test_magic_0_and_1_are_refused_as_kafka_4_refuses_them(magic):
    assert refused(legacy(magic), version=3) == (
        ErrorCode.INVALID_RECORD,
        "Produce requests with version 3 are only allowed to contain record batches with magic version 2",
    )


def test_a_corrupt_size_or_magic():
    assert refused(rewrite(build(1), length=2)) == (
        ErrorCode.CORRUPT_MESSAGE,
        "Record size 2 is less than the minimum record overhead (14)",
    )
    assert refused(rewrite(build(1), magic=5)) == (
        ErrorCode.CORRUPT_MESSAGE,
        "Invalid magic found in record: 5",
    )


def test_a_v2_batch_too_short_for_its_header_is_corrupt():
    short = rewrite(build(1), crc=False, length=30)[:42]
    code, message = refused(short)
    assert code == ErrorCode.CORRUPT_MESSAGE and message.startswith("Record is corrupt (stored crc = ")


def test_zstd_needs_produce_v7():
    data = build(3, compression=Compression.ZSTD)
    assert refused(data, version=6) == (
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        "Produce requests with version 6 are not allowed to use ZStandard compression",
    )
    assert isinstance(check(data, version=7), ClientBatch)


def test_exactly_one_batch_per_partition():
    assert refused(build(1) + build(2)) == (
        ErrorCode.INVALID_RECORD,
        "Produce requests with version 9 are only allowed to contain exactly one record batch per partition",
    )


def test_base_offset_must_be_0():
    assert refused(rewrite(build(2), base_offset=17)) == (
        ErrorCode.INVALID_RECORD,
        "The baseOffset of the record batch in the append to orders-3 should be 0, but it is 17",
    )


def test_max_message_bytes():
    data = build(10, value_size=100)
    limits = TopicLimits(max_message_bytes=len(data) - 1)
    assert refused(data, limits=limits) == (
        ErrorCode.MESSAGE_TOO_LARGE,
        f"The record batch size in the append to orders-3 is {len(data)} bytes which exceeds the maximum "
        f"configured value of {len(data) - 1}.",
    )
    assert isinstance(check(data, limits=TopicLimits(max_message_bytes=len(data))), ClientBatch)


def test_crc_covers_everything_from_the_attributes():
    data = bytearray(build(3))
    data[-1] ^= 1
    crc = int.from_bytes(data[17:21], "big")
    assert refused(bytes(data)) == (
        ErrorCode.CORRUPT_MESSAGE,
        f"Record is corrupt (stored crc = {crc}) in topic partition orders-3.",
    )
    # BaseOffset and PartitionLeaderEpoch are outside it: a client's epoch is accepted as sent
    assert isinstance(check(rewrite(build(3), crc=False, partition_leader_epoch=12)), ClientBatch)


def test_an_unknown_codec_id_is_an_unknown_server_error_as_in_kafka():
    data = rewrite(build(2), attributes=6)
    assert refused(data, version=9) == (ErrorCode.UNKNOWN_SERVER_ERROR, "Unknown compression type id: 6")
    assert refused(data, version=5) == (ErrorCode.UNKNOWN_SERVER_ERROR, "Unknown compression type id: 6")
    # before Produce v7 the ZStandard check meets the codec first, ahead of the one-batch check
    assert refused(data + build(1), version=5)[0] == ErrorCode.UNKNOWN_SERVER_ERROR
    assert refused(data + build(1), version=7)[0] == ErrorCode.INVALID_RECORD


def test_record_count_against_last_offset_delta():
    assert refused(rewrite(build(3), last_offset_delta=3)) == (
        ErrorCode.INVALID_RECORD,
        "Inconsistent batch offset range [0, 3] and count of records 3 in topic partition orders-3",
    )
    assert refused(rewrite(build(3), last_offset_delta=-1)) == (
        ErrorCode.INVALID_RECORD,
        "Batch has an invalid offset range: [0, -1] in topic partition orders-3",
    )
    assert refused(rewrite(build(1), records_count=0)) == (
        ErrorCode.INVALID_RECORD,
        "Invalid reported count for record batch: 0 in topic partition orders-3",
    )


def test_clients_do_not_write_control_batches():
    assert refused(rewrite(build(1), attributes=CONTROL_FLAG)) == (
        ErrorCode.INVALID_RECORD,
        "Clients are not allowed to write control records in topic partition orders-3",
    )


def test_a_producer_id_needs_a_sequence():
    assert refused(rewrite(build(2, producer=(8, 0, 0)), base_sequence=-1)) == (
        ErrorCode.INVALID_RECORD,
        "Invalid sequence number -1 in record batch with producerId 8 in topic partition orders-3",
    )


def test_topic_limits_read_from_the_configs_in_effect():
    # Kafka's topic config table and these limits agree on the defaults
    assert TopicLimits.read(lambda name: topic_config_def(name).default_value) == DEFAULT_LIMITS
    assert DEFAULT_LIMITS == TopicLimits(1048588, False, 2**63 - 1, 3_600_000, False, 64 * 1024 * 1024)
    values = {
        "max.message.bytes": 2048,
        "message.timestamp.type": "LogAppendTime",
        "message.timestamp.before.max.ms": 5,
        "message.timestamp.after.max.ms": 10,
        "cleanup.policy": ["compact", "delete"],
    }
    assert TopicLimits.read(values.__getitem__, 1000) == TopicLimits(2048, True, 5, 10, True, 1000)
