"""The checks a leader makes on the batch a client produces, in Kafka's order and with Kafka's answers.

One batch per partition of a Produce request (v3+) goes through :func:`check_client_batch`, which returns
the batch (a :class:`ClientBatch`, ready for :meth:`controller.records.log.Log.append_as_leader`) or the
:class:`~protocol.errors.Refusal` Kafka would answer for that partition. The order is Kafka's:

1. ``ProduceRequest.validateRecords`` (called by ``KafkaApis.handleProduceRequest``;
   :func:`check_records_form`, which the Produce handler calls before the acks and leadership checks): at
   least one whole
   batch (INVALID_RECORD), magic 2 (INVALID_RECORD), no ZStandard before Produce v7
   (UNSUPPORTED_COMPRESSION_TYPE), exactly one batch (INVALID_RECORD); a corrupt batch size or magic met
   while reading the batches is CORRUPT_MESSAGE (``ByteBufferLogInputStream``).
2. ``UnifiedLog.analyzeAndValidateRecords``: BaseOffset 0 (INVALID_RECORD), the batch's size against
   ``max.message.bytes`` (MESSAGE_TOO_LARGE), the CRC (CORRUPT_MESSAGE), and the codec id: an id of 5-7
   makes Kafka's ``CompressionType.forId`` throw an IllegalArgumentException, which the broker answers as
   UNKNOWN_SERVER_ERROR. Before Produce v7 the ZStandard check above meets it first, outside the
   per-partition error handling, and Kafka then answers every partition of the request so (the
   handler's call: this module answers for one partition).
3. ``LogValidator.validateBatch`` for a client's batch: LastOffsetDelta against RecordsCount, no control
   batch, a BaseSequence of 0 or more when the batch has a producer id (all INVALID_RECORD).

What needs the records themselves (each record's structure, count, offsets, timestamp and key; the
decompressed size of a compressed batch) is :mod:`controller.records.validator`'s, the rest of Kafka's
``LogValidator``, read once at append. The messages are Kafka's, naming the partition as Kafka's
``TopicPartition`` prints it (``topic-partition``). (Kafka's Produce answer carries no message for
these refusals, only the code: its broker logs the message; the simulator tells the client.)
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from controller.records.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG,
    HEADER_SIZE,
    MAGIC_OFFSET,
    MAGIC_V2,
    BatchHeader,
    Compression,
    next_batch_size,
    read_header,
)
from protocol.checksum import crc32c
from protocol.codes import ErrorCode
from protocol.errors import Refusal

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "BatchTimestamps",
    "MAX_MESSAGE_BYTES",
    "TIMESTAMP_AFTER_MAX_MS",
    "TIMESTAMP_BEFORE_MAX_MS",
    "ClientBatch",
    "TopicLimits",
    "check_batch",
    "check_client_batch",
    "check_records_form",
    "unknown_codec",
]

#: Topic configs and their Kafka 4 defaults (``TopicConfig`` / ``LogConfig``): 1 MiB plus a 12-byte log
#: overhead; no lower bound on age; at most an hour ahead of the broker's clock (KIP-1030 changed
#: ``message.timestamp.after.max.ms`` from Long.MAX_VALUE to 3600000 in Kafka 4.0).
MAX_MESSAGE_BYTES: Final = "max.message.bytes"
TIMESTAMP_TYPE: Final = "message.timestamp.type"
TIMESTAMP_BEFORE_MAX_MS: Final = "message.timestamp.before.max.ms"
TIMESTAMP_AFTER_MAX_MS: Final = "message.timestamp.after.max.ms"
CLEANUP_POLICY: Final = "cleanup.policy"
#: ``simulator.records.max.decompressed.bytes``'s default: 64 MiB.
DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024
_LONG_MAX: Final = 2**63 - 1

_ZSTD: Final = int(Compression.ZSTD)
_COMPRESSION_MASK: Final = 0x07


@dataclass(frozen=True, slots=True)
class TopicLimits:
    """What a topic's configs say about the batches it accepts (Kafka's defaults unless set)."""

    max_message_bytes: int = 1048588
    #: ``message.timestamp.type``: False for CreateTime (the producer's timestamps are kept), True for
    #: LogAppendTime (the leader stamps its clock on each batch).
    log_append_time: bool = False
    timestamp_before_max_ms: int = _LONG_MAX
    timestamp_after_max_ms: int = 3_600_000
    #: ``cleanup.policy`` includes ``compact``: every record needs a key.
    compacted: bool = False
    #: The most bytes a compressed batch's records may decompress to
    #: (``simulator.records.max.decompressed.bytes``; -1: no bound).
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES

    @classmethod
    def read(
        cls, value: Callable[[str], Any], max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> TopicLimits:
        """The limits of a topic whose config ``name`` is in effect with the value ``value(name)`` (parsed,
        as :meth:`controller.cluster.Cluster.topic_config` gives it: the topic's own, else the brokers'),
        and the server's bound on decompressed records."""
        return cls(
            max_message_bytes=value(MAX_MESSAGE_BYTES),
            log_append_time=value(TIMESTAMP_TYPE) == "LogAppendTime",
            timestamp_before_max_ms=value(TIMESTAMP_BEFORE_MAX_MS),
            timestamp_after_max_ms=value(TIMESTAMP_AFTER_MAX_MS),
            compacted="compact" in value(CLEANUP_POLICY),
            max_decompressed_bytes=max_decompressed_bytes,
        )


DEFAULT_LIMITS: Final = TopicLimits()


class BatchTimestamps(NamedTuple):
    """What a log keeps of a batch's record timestamps (:mod:`controller.records.validator` reads them):
    the largest, the offset delta of the first record with it, and the steps of the running maximum
    (offset deltas and timestamps, both rising) when there is more than one (None: the first record has
    the largest)."""

    max_timestamp: int
    max_delta: int
    steps: tuple[array[int], array[int]] | None = None

    @property
    def held_bytes(self) -> int:
        """What the steps take (12 bytes a step)."""
        return 0 if self.steps is None else 12 * len(self.steps[0])


class ClientBatch(NamedTuple):
    """A client's batch that passed the checks: its bytes (a view into the request, not a copy), its
    header, and once its records are read (:func:`controller.records.validator.validate_records`) their
    timestamps as a log keeps them."""

    data: memoryview
    header: BatchHeader
    timestamps: BatchTimestamps | None = None


def check_records_form(
    records: bytes | bytearray | memoryview | None, api_version: int, topic: str, partition: int
) -> tuple[memoryview, int, BatchHeader] | Refusal:
    """Step 1, ``ProduceRequest.validateRecords``: the partition's one
    batch (its view, size and header), or Kafka's refusal. Kafka's handler makes this check before any
    other of the partition's but the topic's (before the acks, the leadership and the transaction's
    checks); the rest of the batch's checks take what it returns (:func:`check_batch`)."""
    if records is None:
        return _at_least_one(api_version)
    view = memoryview(records)
    try:
        size = next_batch_size(view, 0)
        if size is None:
            return _at_least_one(api_version)
        if view[MAGIC_OFFSET] != MAGIC_V2:
            return Refusal(
                ErrorCode.INVALID_RECORD,
                f"Produce requests with version {api_version} are only allowed to contain record batches "
                "with magic version 2",
            )
        if size < HEADER_SIZE:
            # Too short to hold a v2 header: Kafka's reads of the missing fields fail; its CRC check
            # (``DefaultRecordBatch.isValid``) refuses any batch below the header's size.
            return Refusal(
                ErrorCode.CORRUPT_MESSAGE,
                f"Record is corrupt (stored crc = {_stored_crc(view)}) in topic partition {topic}-{partition}.",
            )
        header = read_header(view, 0)
        if api_version < _ZSTD_MIN_PRODUCE_VERSION:
            if header.compression_id == _ZSTD:
                return Refusal(
                    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                    f"Produce requests with version {api_version} are not allowed to use ZStandard compression",
                )
            if header.compression_id > _ZSTD:
                return unknown_codec(header)
        if next_batch_size(view, size) is not None:
            return Refusal(
                ErrorCode.INVALID_RECORD,
                f"Produce requests with version {api_version} are only allowed to contain exactly one record "
                "batch per partition",
            )
    except Refusal as refusal:
        return refusal
    return view, size, header


#: ZStandard batches need Produce v7 (KIP-110).
_ZSTD_MIN_PRODUCE_VERSION: Final = 7


def _at_least_one(version: int) -> Refusal:
    return Refusal(
        ErrorCode.INVALID_RECORD,
        f"Produce requests with version {version} must have at least one record batch per partition",
    )


def _stored_crc(view: memoryview) -> int:
    return int.from_bytes(view[17:21], "big") if len(view) >= 21 else 0


def check_client_batch(
    records: bytes | bytearray | memoryview | None,
    api_version: int,
    limits: TopicLimits,
    now_ms: int,
    topic: str,
    partition: int,
) -> ClientBatch | Refusal:
    """The batch of one partition of a Produce request (``api_version`` 3 or more), or Kafka's refusal of
    it (see the module docstring for the checks and their order). ``now_ms`` is the leader's clock."""
    formed = check_records_form(records, api_version, topic, partition)
    if isinstance(formed, Refusal):
        return formed
    return check_batch(formed, limits, topic, partition)


def check_batch(
    formed: tuple[memoryview, int, BatchHeader], limits: TopicLimits, topic: str, partition: int
) -> ClientBatch | Refusal:
    """Steps 2 and 3 for a batch that passed step 1 (``formed``: what
    :func:`check_records_form` returned), or Kafka's refusal."""
    view, size, header = formed
    if header.base_offset != 0:
        return Refusal(
            ErrorCode.INVALID_RECORD,
            f"The baseOffset of the record batch in the append to {topic}-{partition} should be 0, but it is "
            f"{header.base_offset}",
        )
    if size > limits.max_message_bytes:
        return Refusal(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"The record batch size in the append to {topic}-{partition} is {size} bytes which exceeds the "
            f"maximum configured value of {limits.max_message_bytes}.",
        )
    batch = view[:size]
    if crc32c(batch[ATTRIBUTES_OFFSET:]) != header.crc:
        return Refusal(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record is corrupt (stored crc = {header.crc}) in topic partition {topic}-{partition}.",
        )
    if header.attributes & _COMPRESSION_MASK > _ZSTD:
        return unknown_codec(header)
    # The common case in one test; the refusals, in Kafka's order and words, only when something is off.
    delta = header.last_offset_delta
    if (
        delta < 0
        or delta + 1 != header.records_count
        or header.attributes & CONTROL_FLAG
        or (header.producer_id >= 0 and header.base_sequence < 0)
    ):
        return _refuse_batch(header, f"{topic}-{partition}")
    return ClientBatch(batch, header)


def unknown_codec(header: BatchHeader) -> Refusal:
    """Kafka's answer to a codec id of 5-7 (``CompressionType.forId`` throws)."""
    return Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {header.compression_id}")


def _refuse_batch(header: BatchHeader, tp: str) -> Refusal:
    """``LogValidator.validateBatch``'s refusal of a client's v2 batch (BaseOffset is 0 by now)."""
    last_offset = header.last_offset
    count_from_offsets = last_offset - header.base_offset + 1
    if count_from_offsets <= 0:
        return Refusal(
            ErrorCode.INVALID_RECORD,
            f"Batch has an invalid offset range: [{header.base_offset}, {last_offset}] in topic partition {tp}",
        )
    count = header.records_count
    if count <= 0:
        return Refusal(
            ErrorCode.INVALID_RECORD,
            f"Invalid reported count for record batch: {count} in topic partition {tp}",
        )
    if count_from_offsets != count:
        return Refusal(
            ErrorCode.INVALID_RECORD,
            f"Inconsistent batch offset range [{header.base_offset}, {last_offset}] and count of records "
            f"{count} in topic partition {tp}",
        )
    if header.is_control:
        return Refusal(
            ErrorCode.INVALID_RECORD,
            f"Clients are not allowed to write control records in topic partition {tp}",
        )
    if header.has_producer_id and header.base_sequence < 0:
        return Refusal(
            ErrorCode.INVALID_RECORD,
            f"Invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id} in topic partition {tp}",
        )
    raise AssertionError(f"nothing to refuse in {header}")  # pragma: no cover - the caller checked
