"""Record batches for the record tests, built by kafka-python (an independent implementation of Kafka's
record format) and read back with it; plus header surgery for the malformed batches Kafka refuses."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from controller.records.batch import Compression, compute_crc, read_header

NOW = 1_700_000_000_000
HEADER = struct.Struct(">qiibIhiqqqhii")
FIELDS = (
    "base_offset",
    "length",
    "partition_leader_epoch",
    "magic",
    "crc",
    "attributes",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "records_count",
)

Entry = tuple[int, bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]


def build(
    entries: Sequence[Entry] | int = 1,
    *,
    compression: Compression = Compression.NONE,
    producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False,
    value_size: int = 10,
) -> bytes:
    """A v2 batch as a producer sends it: ``entries`` are (timestamp, key, value, headers), or a count of
    records stamped NOW with compressible values of ``value_size`` bytes. kafka-python sends a batch
    uncompressed when compressing does not make it smaller: values here compress well."""
    if isinstance(entries, int):
        entries = [(NOW, b"k%d" % i, b"v" * value_size, []) for i in range(entries)]
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(compression),
        is_transactional=transactional,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        batch_size=1 << 30,
    )
    for offset, (timestamp, key, value, headers) in enumerate(entries):
        assert builder.append(offset, timestamp, key, value, list(headers)) is not None
    data = bytes(builder.build())
    assert read_header(data).compression_id == compression, "the values did not compress"
    return data


def rewrite(data: bytes, *, crc: bool = True, **fields: Any) -> bytes:
    """The batch with header fields replaced, and its CRC recomputed unless ``crc`` is False."""
    values = dict(zip(FIELDS, HEADER.unpack_from(data, 0), strict=True))
    values.update(fields)
    out = bytearray(data)
    HEADER.pack_into(out, 0, *(values[f] for f in FIELDS))
    if crc and "crc" not in fields:
        struct.pack_into(">I", out, 17, compute_crc(out))
    return bytes(out)


def kafka_python_batches(records: bytes) -> list[DefaultRecordBatch]:
    """kafka-python's reading of a ``records`` blob (a Fetch answer's, say)."""
    batches = []
    memory = MemoryRecords(records)
    while memory.has_next():
        batches.append(memory.next_batch())
    return batches


def kafka_python_records(batch: DefaultRecordBatch) -> list[tuple[int, int, int, Any, Any, list[Any]]]:
    """(offset, timestamp, timestamp type, key, value, headers) of each record, as kafka-python reads them."""
    return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers)) for r in batch]
