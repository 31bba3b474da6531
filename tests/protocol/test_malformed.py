"""Malformed input gives DecodeError, naming the message, version and field, never another exception
and never a hang: truncation at every offset, overrunning and negative lengths, long varints, bad tags."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import kafka.protocol.schemas
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import DecodeError, Message, load_schemas
from protocol.spec import parse_spec

KAFKA_SPEC_DIR = Path(kafka.protocol.schemas.__file__).parent / "resources"
FUZZ = settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def every_version(folder: Path | None) -> list[object]:
    return [
        pytest.param(folder, message.name, version, id=f"{message.name}-v{version}")
        for message in load_schemas(folder)
        for version in range(message.valid_versions[0], message.valid_versions[1] + 1)
    ]


ALL_VERSIONS = every_version(None) + every_version(KAFKA_SPEC_DIR)


@pytest.fixture(scope="module")
def spec_sets(project_schemas, kafka_specs):
    return {None: project_schemas, KAFKA_SPEC_DIR: kafka_specs}


def comparable(value: object) -> object:
    """``value`` with every NaN float made a marker: float64 fields decode NaN bytes to NaN, which equals
    nothing, itself included."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(comparable(v) for v in value)
    return value


def outcome(decode, data: bytes) -> object:
    """The decoded value (NaN made comparable), or "DecodeError" (any other exception fails the test)."""
    try:
        return comparable(decode(data))
    except DecodeError:
        return "DecodeError"


def interpreted(codec, data: bytes) -> object:
    """Decode with the interpreted constructs alone, trailing bytes included."""
    value, end = codec.decode_interpreted(data)
    if end != len(data):
        raise DecodeError("trailing bytes")
    return value


@pytest.mark.parametrize(("folder", "name", "version"), ALL_VERSIONS)
@FUZZ
@given(data=st.data())
def test_every_truncation_is_a_decode_error(spec_sets, message_values, folder, name, version, data):
    message = spec_sets[folder].message(name)
    encoded = message.encode(data.draw(message_values(message.codec(version))), version)
    for end in range(len(encoded)):
        with pytest.raises(DecodeError) as caught:
            message.decode(encoded[:end], version)
        assert (caught.value.message, caught.value.version) == (name, version)
        assert name in str(caught.value)


@pytest.mark.parametrize(("folder", "name", "version"), ALL_VERSIONS)
@FUZZ
@given(data=st.data(), noise=st.binary(max_size=48))
def test_random_and_mutated_bytes_decode_or_raise_decode_error(
    spec_sets, message_values, folder, name, version, data, noise
):
    message = spec_sets[folder].message(name)
    codec = message.codec(version)
    encoded = bytearray(message.encode(data.draw(message_values(codec)), version))
    if encoded:
        index = data.draw(st.integers(0, len(encoded) - 1))
        encoded[index] = data.draw(st.integers(0, 255))
    for candidate in (noise, bytes(encoded), bytes(encoded) + noise[:3]):
        expected = outcome(lambda b: interpreted(codec, b), candidate)
        assert outcome(codec.decode, candidate) == expected
        if expected != "DecodeError":  # valid input: the generated code reads it without the fallback
            assert comparable(codec.decode_compiled(candidate)) == (expected, len(candidate))


@pytest.fixture(scope="module")
def placement_request(project_schemas):
    return project_schemas.request(68)


def test_truncated_field_is_named(placement_request):
    encoded = placement_request.encode({"NumPartitions": 3, "ReplicationFactor": 2, "NodeId": [1, 2]}, 0)
    with pytest.raises(DecodeError) as caught:
        placement_request.decode(encoded[:12], 0)
    error = caught.value
    assert error.field == "NodeId[1]"
    assert str(error) == (
        "cannot decode CreateReplicaPlacementRequest v0: field NodeId[1]: truncated: 4 bytes needed, 0 left (at byte 12)"
    )


def test_trailing_bytes(placement_request):
    encoded = placement_request.encode({"NumPartitions": 1, "ReplicationFactor": 1}, 0)
    with pytest.raises(DecodeError, match="2 trailing bytes after the message"):
        placement_request.decode(encoded + b"\x00\x00", 0)


HEAD = struct.pack(">ihb", 3, 2, 0)  # NumPartitions, ReplicationFactor, ForceSimplePlacement


@pytest.mark.parametrize(
    ("count", "reason"),
    [
        (b"\x80\x80\x80\x80\x80\x01", "varint longer than 5 bytes"),
        (b"\xff\xff\xff\xff\x1f", "varint value 8589934591 is too large"),
        (b"\xff\xff\xff\xff\x0f", "array count 4294967294 exceeds the 5 bytes left"),
        (b"\x00", "null in a non-nullable array"),
    ],
)
def test_bad_compact_array_counts(placement_request, count, reason):
    start = time.perf_counter()
    with pytest.raises(DecodeError) as caught:
        placement_request.decode(HEAD + count + struct.pack(">i", 60000) + b"\x00", 0)
    assert time.perf_counter() - start < 1.0
    assert caught.value.reason == reason
    assert caught.value.field == "NodeId"


def test_huge_classic_array_count_fails_fast(project_schemas):
    message = project_schemas.response(18)
    start = time.perf_counter()
    with pytest.raises(DecodeError, match="array count 2147483647 exceeds the 0 bytes left"):
        message.decode(struct.pack(">hi", 0, 2**31 - 1), 0)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("count", [-2, -100, -(2**31)])
def test_negative_classic_array_count(project_schemas, count):
    with pytest.raises(DecodeError, match=f"field ApiKeys: negative length {count}"):
        project_schemas.response(18).decode(struct.pack(">hi", 0, count), 0)


def test_negative_classic_string_length(project_schemas):
    header = project_schemas.message("RequestHeader")
    with pytest.raises(DecodeError, match="field ClientId: negative length -2"):
        header.decode(struct.pack(">hhih", 18, 0, 1, -2), 1)
    assert header.decode(struct.pack(">hhih", 18, 0, 1, -1), 1)["ClientId"] is None


def test_negative_classic_bytes_length(kafka_specs):
    sasl = kafka_specs.request(36)  # SaslAuthenticate v0: AuthBytes is classic bytes
    with pytest.raises(DecodeError, match="field AuthBytes: negative length -5"):
        sasl.decode(struct.pack(">i", -5), 0)


def test_string_length_overrunning_the_input(project_schemas):
    header = project_schemas.message("RequestHeader")
    with pytest.raises(DecodeError, match="field ClientId: truncated: 100 bytes needed, 3 left"):
        header.decode(struct.pack(">hhih", 18, 0, 1, 100) + b"abc", 1)


def test_invalid_utf8(project_schemas):
    header = project_schemas.message("RequestHeader")
    with pytest.raises(DecodeError, match="field ClientId: invalid UTF-8"):
        header.decode(struct.pack(">hhih", 18, 0, 1, 2) + b"\xc3\x28", 1)


BODY = HEAD + b"\x01" + struct.pack(">i", 60000)  # no NodeId, then the tag section


@pytest.mark.parametrize(
    ("tags", "reason"),
    [
        (b"\x02\x01\x04\x00\x00\x00\x05\x00\x02\x01\x74", "tag 0 after tag 1: tags must be ascending"),
        (
            b"\x02\x01\x04\x00\x00\x00\x05\x01\x04\x00\x00\x00\x06",
            "tag 1 after tag 1: tags must be ascending",
        ),
        (b"\x01\x01\x05\x00\x00\x00\x05\x00", "1 unread bytes in tagged field"),
        (b"\x01\x01\x09\x00\x00\x00\x05", "truncated: 9 bytes needed, 4 left"),
        (b"\x09\x01\x04\x00\x00\x00\x05", "tag count 9 exceeds the bytes left"),
    ],
)
def test_bad_tag_sections(placement_request, tags, reason):
    with pytest.raises(DecodeError) as caught:
        placement_request.decode(BODY + tags, 0)
    assert caught.value.reason == reason


NULLABLE_STRUCT_SPEC = """
{
  "type": "data",
  "name": "LeaderRecord",
  "validVersions": "0",
  "flexibleVersions": "none",
  "fields": [
    { "name": "Leader", "type": "LeaderInfo", "versions": "0+", "nullableVersions": "0+", "default": "null",
      "fields": [ { "name": "Id", "type": "int32", "versions": "0+" } ] }
  ]
}
"""


@pytest.mark.parametrize(("data", "expected"), [(b"\xff", None), (b"\x01\x00\x00\x00\x07", {"Id": 7})])
def test_nullable_struct_markers(data, expected):
    message = Message(parse_spec(NULLABLE_STRUCT_SPEC, "LeaderRecord.json"))
    assert message.decode(data, 0) == {"Leader": expected}
    assert message.encode({"Leader": expected}, 0) == data


@pytest.mark.parametrize("marker", [0, 2, 0x80])
def test_invalid_nullable_struct_marker(marker):
    message = Message(parse_spec(NULLABLE_STRUCT_SPEC, "LeaderRecord.json"))
    with pytest.raises(DecodeError, match="field Leader: invalid nullable struct marker"):
        message.decode(bytes([marker]) + b"\x00\x00\x00\x07", 0)


@pytest.mark.parametrize(("folder", "name", "version"), ALL_VERSIONS)
def test_maximal_lengths_and_counts_fail_fast(spec_sets, folder, name, version):
    """All-ones bytes read as the largest lengths and counts (or -1): decoding must end quickly."""
    message = spec_sets[folder].message(name)
    start = time.perf_counter()
    for size in (1, 5, 64, 4096):
        outcome(lambda data: message.decode(data, version), b"\xff" * size)
    assert time.perf_counter() - start < 2.0


LONG_VARINT = b"\x80\x80\x80\x80\x80\x01"  # six bytes: Kafka's uvarints have at most five


@pytest.mark.parametrize(
    ("api_key", "kind", "data"),
    [
        (68, "request", HEAD + LONG_VARINT),  # compact array count (NodeId)
        (68, "request", BODY + LONG_VARINT),  # tag count
        (68, "request", BODY + b"\x01" + LONG_VARINT),  # tag number
        (68, "request", BODY + b"\x01\x00" + LONG_VARINT),  # tagged field size
        (68, "response", struct.pack(">ih", 0, 0) + LONG_VARINT),  # compact string length (ErrorMessage)
        (18, "request", LONG_VARINT),  # ApiVersions v3: compact string length (ClientSoftwareName)
    ],
    ids=["array-count", "tag-count", "tag-number", "tag-size", "string-length", "api-versions"],
)
def test_varints_longer_than_five_bytes_everywhere(project_schemas, api_key, kind, data):
    message = project_schemas.request(api_key) if kind == "request" else project_schemas.response(api_key)
    version = 3 if api_key == 18 else 0
    with pytest.raises(DecodeError) as caught:
        message.decode(data + b"\x00" * 8, version)
    assert caught.value.reason == "varint longer than 5 bytes"
    assert (caught.value.message, caught.value.version) == (message.name, version)
