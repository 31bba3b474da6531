"""Frames and headers: Kafka's header-version rules, hand-written byte vectors for apiKey 68, and
reading frames from a stream with the size limit enforced before the body is read."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import UNKNOWN_TAGGED_FIELDS, DecodeError
from protocol.framing import (
    DEFAULT_MAX_FRAME,
    FrameError,
    RequestHeader,
    encode_request,
    encode_response,
    encode_response_frame,
    parse_request_header,
    parse_response_header,
    read_frame,
    request_header_version,
    response_header_version,
)

# CreateReplicaPlacement request v0 (flexible, so request header v2), correlation id 42, client "client".
HEADER_V2 = bytes.fromhex(
    "0044"  # RequestApiKey 68
    "0000"  # RequestApiVersion 0
    "0000002a"  # CorrelationId 42
    "0006 636c69656e74"  # ClientId "client": int16 length even in header v2
    "00"  # header tag section: no tagged fields
)
BODY_FIELDS = bytes.fromhex(
    "0000000c"  # NumPartitions 12
    "0003"  # ReplicationFactor 3
    "00"  # ForceSimplePlacement false
    "04 00000001 00000002 00000003"  # NodeId: compact array (count + 1) [1, 2, 3]
    "0000ea60"  # timeoutMs 60000
)
BODY_WITHOUT_TAGS = BODY_FIELDS + bytes.fromhex("00")  # empty tag section
BODY_WITH_TAGS = BODY_FIELDS + bytes.fromhex(
    "02"  # two tagged fields
    "00 07 07 6f7264657273"  # tag 0 TopicName, 7 bytes: compact string "orders"
    "01 04 0000000c"  # tag 1 StartPartition, 4 bytes: 12
)
REQUEST = {"NumPartitions": 12, "ReplicationFactor": 3, "ForceSimplePlacement": False, "NodeId": [1, 2, 3]}


def frame(content: bytes) -> bytes:
    return len(content).to_bytes(4, "big") + content


@pytest.mark.parametrize(
    ("body", "tagged"),
    [
        (BODY_WITHOUT_TAGS, {"TopicName": None, "StartPartition": 0}),
        (BODY_WITH_TAGS, {"TopicName": "orders", "StartPartition": 12}),
    ],
    ids=["without-tagged-fields", "with-tagged-fields"],
)
def test_create_replica_placement_request_bytes(project_schemas, body, tagged):
    request = project_schemas.request(68)
    data = {**REQUEST, **tagged}
    assert request.encode(data, 0) == body
    expected_frame = frame(HEADER_V2 + body)
    assert encode_request(project_schemas, 68, 0, 42, "client", body) == expected_frame

    header, offset = parse_request_header(expected_frame[4:], project_schemas)
    assert header == RequestHeader(
        api_key=68, api_version=0, correlation_id=42, client_id="client", header_version=2, tagged_fields={}
    )
    assert offset == len(HEADER_V2)
    assert request.decode(expected_frame[4 + offset :], 0) == {**data, "timeoutMs": 60000}


def test_create_replica_placement_response_bytes(project_schemas):
    data = {
        "ThrottleTimeMs": 0,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "ReplicaPlacement": [
            {"PartitionId": 12, "Replicas": [1, 2, 3]},
            {"PartitionId": 13, "Replicas": [2, 3, 1]},
        ],
    }
    body = bytes.fromhex(
        "00000000"  # ThrottleTimeMs
        "0000"  # ErrorCode
        "00"  # ErrorMessage null (compact)
        "03"  # two placements
        "0000000c 04 00000001 00000002 00000003 00"  # partition 12: [1, 2, 3], empty tag section
        "0000000d 04 00000002 00000003 00000001 00"  # partition 13: [2, 3, 1]
        "00"  # tag section
    )
    response = project_schemas.response(68)
    assert response.encode(data, 0) == body
    assert response.decode(body, 0) == data
    expected = frame(bytes.fromhex("0000002a00") + body)  # response header v1: correlation id + tags
    assert encode_response(42, 1, body) == expected
    assert encode_response_frame(project_schemas, 68, 0, 42, data) == expected
    assert parse_response_header(expected[4:], 1) == (42, 5)


def test_create_replica_placement_error_response_bytes(project_schemas):
    data = {"ThrottleTimeMs": 0, "ErrorCode": 1001, "ErrorMessage": "boom", "ReplicaPlacement": []}
    body = bytes.fromhex("0000000003e905" + b"boom".hex() + "0100")
    assert project_schemas.response(68).encode(data, 0) == body


def test_request_header_versions(project_schemas):
    assert request_header_version(project_schemas, 68, 0) == 2  # flexible request
    assert request_header_version(project_schemas, 18, 3) == 2
    assert request_header_version(project_schemas, 18, 2) == 1  # not flexible
    assert request_header_version(project_schemas, 18, 99) == 1  # unknown version
    assert request_header_version(project_schemas, 999, 0) == 1  # unknown API
    assert request_header_version(project_schemas, 7, 0) == 0  # ControlledShutdown v0


def test_response_header_versions(project_schemas):
    assert response_header_version(project_schemas, 68, 0) == 1
    assert [response_header_version(project_schemas, 18, v) for v in range(5)] == [0, 0, 0, 0, 0]
    assert response_header_version(project_schemas, 999, 4) == 0


def test_header_of_an_unknown_api_still_parses(project_schemas):
    # A newer client's flexible request for an API this server does not know: header v2 on the wire.
    content = bytes.fromhex("03e70007000000050003") + b"new" + bytes.fromhex("00") + b"body"
    header, offset = parse_request_header(content, project_schemas)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (999, 7, 5, "new")
    assert header.header_version == 1
    assert content[offset:] == b"\x00body"  # read as v1: the tag section stays in front of the body


def test_api_versions_request_of_an_unsupported_version_parses(project_schemas):
    content = bytes.fromhex("0012000900000001ffff00")  # ApiVersions v9, null client id, tags
    header, offset = parse_request_header(content, project_schemas)
    assert (header.api_key, header.api_version, header.client_id, header.header_version) == (18, 9, None, 1)
    assert offset == 10


def test_request_header_keeps_its_tagged_fields(project_schemas):
    content = bytes.fromhex("00440000000000010000010502abcd")
    header, offset = parse_request_header(content, project_schemas)
    assert header.tagged_fields == {5: b"\xab\xcd"}
    assert header.client_id == ""
    assert offset == len(content)


def test_controlled_shutdown_v0_uses_header_v0(project_schemas):
    content = bytes.fromhex("000700000000000300000001")
    header, offset = parse_request_header(content, project_schemas)
    assert (header.header_version, header.client_id, offset) == (0, None, 8)
    assert encode_request(project_schemas, 7, 0, 3, "ignored", b"\x00\x00\x00\x01") == frame(content)


@pytest.mark.parametrize(
    "content", [b"", b"\x00\x44", b"\x00\x44\x00\x00\x00\x00", b"\x00\x44\x00\x00\x00\x00\x00\x01\x00"]
)
def test_truncated_request_headers(project_schemas, content):
    with pytest.raises(DecodeError):
        parse_request_header(content, project_schemas)


def test_response_header_v0_and_truncation():
    assert parse_response_header(bytes.fromhex("00000007") + b"body", 0) == (7, 4)
    # v1 with one tagged field (tag 0, 1 byte): the body starts after it
    assert parse_response_header(bytes.fromhex("00000007 01 00 01 ff") + b"body", 1) == (7, 8)
    for content, version in [
        (b"\x00\x00", 0),
        (b"\x00\x00\x00\x07", 1),
        (bytes.fromhex("00000007 01 00 05"), 1),  # the tagged field's 5 bytes are missing
    ]:
        with pytest.raises(DecodeError):
            parse_response_header(content, version)


def test_encode_response_rejects_unknown_header_versions():
    with pytest.raises(ValueError, match="0 or 1"):
        encode_response(1, 2, b"")


# -- reading frames from a stream ---------------------------------------------------------------------


def stream(*chunks: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    for chunk in chunks:
        reader.feed_data(chunk)
    if eof:
        reader.feed_eof()
    return reader


async def test_read_frames_until_a_clean_end():
    reader = stream(frame(b"first"), frame(b"second"))
    assert await read_frame(reader, DEFAULT_MAX_FRAME) == b"first"
    assert await read_frame(reader, DEFAULT_MAX_FRAME) == b"second"
    assert await read_frame(reader, DEFAULT_MAX_FRAME) is None


@pytest.mark.parametrize("size", [0, -1, -(2**31), 101])
async def test_bad_sizes_are_refused_before_the_body(size):
    # No body follows and the stream stays open: reading the body would wait forever.
    reader = stream(size.to_bytes(4, "big", signed=True), eof=False)
    with pytest.raises(FrameError) as caught:
        await asyncio.wait_for(read_frame(reader, 100), timeout=1.0)
    assert caught.value.size == size
    assert str(caught.value) == f"invalid frame size {size} (must be between 1 and 100)"


async def test_frame_at_the_limit_is_read():
    assert await read_frame(stream(frame(b"x" * 100)), 100) == b"x" * 100


async def test_end_of_stream_inside_a_frame():
    with pytest.raises(asyncio.IncompleteReadError):
        await read_frame(stream((10).to_bytes(4, "big") + b"abc"), DEFAULT_MAX_FRAME)
    with pytest.raises(asyncio.IncompleteReadError):
        await read_frame(stream(b"\x00\x00"), DEFAULT_MAX_FRAME)


@settings(max_examples=500, deadline=None)
@given(
    api_key=st.sampled_from([3, 7, 18, 19, 43, 68, 999]),
    api_version=st.integers(0, 15),
    correlation=st.integers(-(2**31), 2**31 - 1),
    client_id=st.one_of(st.none(), st.text(max_size=20)),
    tags=st.dictionaries(st.integers(0, 300), st.binary(max_size=5), max_size=3),
    cut=st.integers(0, 40),
)
def test_the_header_reads_as_its_spec_says(
    project_schemas, api_key, api_version, correlation, client_id, tags, cut
):
    """The hand-read header (every request's hot path) agrees with the RequestHeader spec's decoder, on
    whole headers and on cut ones."""
    version = request_header_version(project_schemas, api_key, api_version)
    spec = project_schemas.message("RequestHeader")
    data = {"RequestApiKey": api_key, "RequestApiVersion": api_version, "CorrelationId": correlation}
    if version >= 1:
        data["ClientId"] = client_id
    if version >= 2 and tags:
        data[UNKNOWN_TAGGED_FIELDS] = tags
    content = spec.encode(data, version) + b"body"
    content = content[: len(content) - cut] if cut else content
    try:
        expected, expected_end = spec.decode_from(content, 0, version)
    except DecodeError:
        with pytest.raises(DecodeError):
            parse_request_header(content, project_schemas)
        return
    header, end = parse_request_header(content, project_schemas)
    assert end == expected_end
    assert (header.api_key, header.api_version, header.correlation_id) == (api_key, api_version, correlation)
    assert header.client_id == expected.get("ClientId")
    assert header.tagged_fields == dict(expected.get(UNKNOWN_TAGGED_FIELDS) or {})
