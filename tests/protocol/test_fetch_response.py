"""protocol.fetch_response: a Fetch answer encoded in pieces is byte for byte what the spec's codec
encodes, with each partition's records the pieces given (not copied), aborted transactions included,
and every answer it does not write (tagged fields, node endpoints) is left to the codec; the frame made
from the pieces is encode_response's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from protocol import load_schemas
from protocol.fetch_response import MAX_VERSION, MIN_VERSION, encode
from protocol.framing import encode_response, encode_response_pieces

SCHEMAS = load_schemas()
FETCH = SCHEMAS.response(1)
VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)


def partition(index: int, records: Any, **extra: Any) -> dict[str, Any]:
    entry = {
        "PartitionIndex": index,
        "ErrorCode": 0,
        "HighWatermark": 1234 + index,
        "LastStableOffset": 1234 + index,
        "LogStartOffset": 7,
        "AbortedTransactions": None,
        "PreferredReadReplica": -1,
        "Records": records,
    }
    entry.update(extra)
    return entry


def answer(topics: list[tuple[str, list[dict[str, Any]]]], **extra: Any) -> dict[str, Any]:
    responses = [
        {"Topic": name, "TopicId": uuid.UUID(int=len(name)), "Partitions": partitions}
        for name, partitions in topics
    ]
    return {"ThrottleTimeMs": 5, "ErrorCode": 0, "SessionId": 0, "Responses": responses, **extra}


def joined(value: dict[str, Any]) -> dict[str, Any]:
    """The answer as the codec takes it: each partition's pieces joined."""
    out = dict(value)
    out["Responses"] = [
        {
            **t,
            "Partitions": [
                {**p, "Records": b"".join(p["Records"]) if isinstance(p["Records"], tuple) else p["Records"]}
                for p in t["Partitions"]
            ],
        }
        for t in value["Responses"]
    ]
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_the_pieces_are_the_codecs_bytes_with_the_records_not_copied(version: int) -> None:
    batch = memoryview(bytes(range(256)) * 40)
    head = b"\x01" * 17
    value = answer(
        [
            (
                "orders",
                [partition(0, (head, batch)), partition(1, None), partition(2, b""), partition(3, ())],
            ),
            ("ünïcode", [partition(5, batch, ErrorCode=1, HighWatermark=-1)]),
            ("empty", []),
        ]
    )
    pieces = encode(value, version)
    assert pieces is not None
    assert b"".join(pieces) == FETCH.encode(joined(value), version)
    assert any(piece is batch for piece in pieces) and any(piece is head for piece in pieces)


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_a_frame_from_pieces_is_the_frame_from_the_joined_body(version: int) -> None:
    pieces = encode(answer([("t", [partition(0, (b"abc", memoryview(b"defg")))])]), version)
    assert pieces is not None
    for header_version in (0, 1):
        framed = encode_response_pieces(77, header_version, pieces)
        assert bytes(framed) == encode_response(77, header_version, b"".join(pieces))
        assert len(framed) == len(bytes(framed))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "aborted", [[], [{"ProducerId": 1, "FirstOffset": 0}, {"ProducerId": 9, "FirstOffset": 70}]]
)
def test_aborted_transactions_are_encoded_as_the_codec_encodes_them(version: int, aborted: list) -> None:
    value = answer([("t", [partition(0, (b"abc",), AbortedTransactions=aborted), partition(1, b"x")])])
    pieces = encode(value, version)
    assert pieces is not None
    assert b"".join(pieces) == FETCH.encode(joined(value), version)


@pytest.mark.parametrize(
    "extra",
    [
        {"DivergingEpoch": {"Epoch": 3, "EndOffset": 10}},
        {"CurrentLeader": {"LeaderId": 1, "LeaderEpoch": 2}},
    ],
)
def test_answers_with_tagged_fields_are_left_to_the_codec(extra: dict) -> None:
    value = answer([("t", [partition(0, b"abc", **extra)])])
    assert encode(value, 12) is None
    assert FETCH.encode(value, 12)  # the codec writes them


def test_node_endpoints_and_unknown_versions_are_left_to_the_codec() -> None:
    endpoints = [{"NodeId": 1, "Host": "localhost", "Port": 9092, "Rack": None}]
    assert encode(answer([("t", [partition(0, b"x")])], NodeEndpoints=endpoints), 16) is None
    assert encode(answer([("t", [partition(0, b"x")])]), MAX_VERSION + 1) is None
    assert encode(answer([("t", [partition(0, b"x")])]), MIN_VERSION - 1) is None
