"""protocol.produce_request: a Produce body read in place gives what the spec's codec gives, with each
partition's records a view of the frame (not a copy), and leaves every body it does not read (tagged
fields, null arrays, overruns, bad strings) to the codec."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from protocol import UNKNOWN_TAGGED_FIELDS, load_schemas
from protocol.produce_request import decode

SCHEMAS = load_schemas()
PRODUCE = SCHEMAS.request(0)
VERSIONS = range(3, 14)


def body(version: int, topics: list[dict[str, Any]], transactional_id: str | None = None) -> bytes:
    data = {"TransactionalId": transactional_id, "Acks": -1, "TimeoutMs": 1500, "TopicData": topics}
    return PRODUCE.encode(data, version)


def topic(version: int, name: str, partitions: list[tuple[int, bytes | None]]) -> dict[str, Any]:
    named: dict[str, Any] = {"TopicId": uuid.UUID(int=len(name) + 7)} if version >= 13 else {"Name": name}
    named["PartitionData"] = [{"Index": i, "Records": r} for i, r in partitions]
    return named


def plain(value: Any) -> Any:
    """The request with every view of records turned into bytes (the codec's form)."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@pytest.mark.parametrize("version", VERSIONS)
def test_the_body_reads_as_the_codec_reads_it_with_the_records_in_place(version: int) -> None:
    prefix = b"\x00" * 11  # a header's worth of bytes before the body
    topics = [
        topic(version, "orders", [(0, b"\x01" * 300), (3, None), (7, b"")]),
        topic(version, "ünïcode-topic", [(1, bytes(range(200)) * 5)]),
    ]
    frame = prefix + body(version, topics, transactional_id="tx-1" if version % 2 else None)
    expected, expected_end = PRODUCE.decode_from(frame, len(prefix), version)
    decoded = decode(frame, len(prefix), version)
    assert decoded is not None
    request, end = decoded
    assert end == expected_end == len(frame)
    assert plain(request) == expected
    records = request["TopicData"][0]["PartitionData"][0]["Records"]
    assert isinstance(records, memoryview) and records.obj is frame and records.readonly
    assert request["TopicData"][0]["PartitionData"][1]["Records"] is None


@pytest.mark.parametrize("version", [3, 9, 13])
def test_bytes_after_the_body_are_left_as_the_codec_leaves_them(version: int) -> None:
    frame = body(version, [topic(version, "t", [(0, b"abc")])]) + b"\xff\xff"
    decoded = decode(frame, 0, version)
    assert decoded is not None
    assert decoded[1] == PRODUCE.decode_from(frame, 0, version)[1] == len(frame) - 2


@pytest.mark.parametrize("version", [9, 12, 13])
def test_tagged_fields_are_left_to_the_codec(version: int) -> None:
    tagged = {
        "TransactionalId": None,
        "Acks": 1,
        "TimeoutMs": 1000,
        "TopicData": [
            {
                **({"TopicId": uuid.UUID(int=1)} if version >= 13 else {"Name": "t"}),
                "PartitionData": [{"Index": 0, "Records": b"abc", UNKNOWN_TAGGED_FIELDS: {99: b"\x01"}}],
            }
        ],
    }
    frame = PRODUCE.encode(tagged, version)
    assert PRODUCE.decode_from(frame, 0, version)[0]["TopicData"][0]["PartitionData"][0][
        UNKNOWN_TAGGED_FIELDS
    ]
    assert decode(frame, 0, version) is None


@pytest.mark.parametrize("version", [3, 9])
def test_a_records_length_past_the_body_is_left_to_the_codec(version: int) -> None:
    frame = body(version, [topic(version, "t", [(0, b"abcdef")])])
    assert decode(frame[:-3], 0, version) is None


def test_a_null_topic_array_and_a_string_that_is_not_utf8_are_left_to_the_codec() -> None:
    null_topics = b"\x00" + b"\x00\x01" + b"\x00\x00\x03\xe8" + b"\x00" + b"\x00"  # v9: TopicData null
    assert decode(null_topics, 0, 9) is None
    frame = bytearray(body(3, [topic(3, "tt", [(0, b"x")])]))
    at = frame.index(b"tt")
    frame[at : at + 2] = b"\xff\xfe"
    assert decode(bytes(frame), 0, 3) is None
