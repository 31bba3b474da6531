"""The public API of the wire layer: schema lookups, defaults, version rules, errors that name fields,
kept unknown tagged fields, and the compiled codecs."""

from __future__ import annotations

import threading
import types
from pathlib import Path

import pytest
from construct.core import Compiled

from protocol import (
    UNKNOWN_TAGGED_FIELDS,
    UNKNOWN_TAGS_FOUND,
    DecodeError,
    EncodeError,
    Schemas,
    UnknownMessage,
    UnsupportedVersion,
    load_schemas,
)
from protocol.resources import project_schemas as project_folder
from protocol.wire import Fallback

OWN_SPECS = {
    "RequestHeader",
    "ResponseHeader",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "CreateReplicaPlacementRequest",
    "CreateReplicaPlacementResponse",
}


def test_load_schemas_finds_the_project_specs():
    schemas = load_schemas()
    assert isinstance(schemas, Schemas)
    assert OWN_SPECS <= {m.name for m in schemas}
    assert load_schemas() is schemas  # loaded once, compiled codecs shared
    assert "errors.json" in {entry.name for entry in project_folder().iterdir()}


def test_load_schemas_from_a_folder(tmp_path):
    for name in ("ApiVersionsRequest.json", "ApiVersionsResponse.json"):
        (tmp_path / name).write_text(project_folder().joinpath(name).read_text())
    schemas = load_schemas(tmp_path)
    assert sorted(m.name for m in schemas) == ["ApiVersionsRequest", "ApiVersionsResponse"]
    assert load_schemas(str(tmp_path)) is not schemas


def test_lookups(project_schemas):
    request = project_schemas.request(68)
    assert (request.name, request.api_key, request.type) == ("CreateReplicaPlacementRequest", 68, "request")
    assert project_schemas.response(68).name == "CreateReplicaPlacementResponse"
    assert project_schemas.message("ApiVersionsResponse") is project_schemas.response(18)
    assert project_schemas.has_request(18) and not project_schemas.has_request(9999)
    keys = [m.api_key for m in project_schemas.requests()]
    assert keys == sorted(keys) and {18, 68} <= set(keys)
    assert all(m.type == "request" for m in project_schemas.requests())
    for lookup, argument in [
        (project_schemas.request, 9999),
        (project_schemas.response, 9999),
        (project_schemas.message, "Nope"),
    ]:
        with pytest.raises(UnknownMessage):
            lookup(argument)
    assert issubclass(UnknownMessage, LookupError)


def test_versions(project_schemas):
    api_versions = project_schemas.request(18)
    assert api_versions.valid_versions == (0, 4)
    assert [api_versions.supports(v) for v in (-1, 0, 4, 5)] == [False, True, True, False]
    assert [api_versions.is_flexible(v) for v in range(5)] == [False, False, False, True, True]
    with pytest.raises(
        UnsupportedVersion, match="ApiVersionsRequest has no version 5 \\(valid versions: 0-4\\)"
    ):
        api_versions.codec(5)
    with pytest.raises(DecodeError, match="ApiVersionsRequest v5"):
        api_versions.decode(b"", 5)
    with pytest.raises(EncodeError, match="ApiVersionsRequest v5"):
        api_versions.encode({}, 5)


def test_absent_fields_take_their_defaults(project_schemas):
    request = project_schemas.request(68)
    decoded = request.decode(request.encode({}, 0), 0)
    assert decoded == {
        "NumPartitions": 0,
        "ReplicationFactor": 0,
        "ForceSimplePlacement": False,
        "NodeId": [],
        "timeoutMs": 60000,
        "TopicName": None,
        "StartPartition": 0,
    }
    assert request.default(0) == decoded


def test_fields_outside_the_version(project_schemas, kafka_specs):
    response = project_schemas.response(18)
    # ThrottleTimeMs (1+) is ignorable: dropped at version 0.
    assert response.encode({"ApiKeys": [], "ThrottleTimeMs": 30}, 0) == response.encode({"ApiKeys": []}, 0)
    assert "ThrottleTimeMs" not in response.decode(response.encode({}, 0), 0)
    metadata = kafka_specs.request(3)
    # AllowAutoTopicCreation (4+) is not ignorable: only its default may be given at version 3.
    assert metadata.encode({"Topics": [], "AllowAutoTopicCreation": True}, 3) == metadata.encode(
        {"Topics": []}, 3
    )
    with pytest.raises(EncodeError) as caught:
        metadata.encode({"Topics": [], "AllowAutoTopicCreation": False}, 3)
    assert str(caught.value) == (
        "cannot encode MetadataRequest v3: field AllowAutoTopicCreation: version 3 lacks this field "
        "(versions 4+) and it is not ignorable; leave it out or at its default True"
    )


def test_a_field_outside_the_version_at_its_default_is_encoded_by_the_compiled_codec(project_schemas):
    """One answer built for every version carries each field; those a version lacks, left at their
    defaults, must not send it to the interpreted codec (every ShareAcknowledge v1 answer went there)."""
    codec = project_schemas.response(79).codec(1)  # AcquisitionLockTimeoutMs: 2+, not ignorable
    answer = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Responses": [], "NodeEndpoints": []}
    assert codec.encode_compiled({**answer, "AcquisitionLockTimeoutMs": 0}) == codec.encode_compiled(answer)
    with pytest.raises(Fallback):  # another value: the interpreted codec judges it (and names the field)
        codec.encode_compiled({**answer, "AcquisitionLockTimeoutMs": 5})
    with pytest.raises(EncodeError, match="AcquisitionLockTimeoutMs: version 1 lacks this field"):
        codec.encode({**answer, "AcquisitionLockTimeoutMs": 5})
    entry = project_schemas.response(32).codec(1)  # DescribeConfigs v1: IsDefault is v0 only
    config = {"Name": "a", "Value": "b", "ReadOnly": False, "IsDefault": False, "IsSensitive": False}
    result = {
        "ErrorCode": 0,
        "ErrorMessage": None,
        "ResourceType": 2,
        "ResourceName": "t",
        "Configs": [config],
    }
    data = {"ThrottleTimeMs": 0, "Results": [result]}
    assert entry.encode_compiled(data) == entry.encode_interpreted(data)
    with pytest.raises(Fallback):
        entry.encode_compiled(
            {"ThrottleTimeMs": 0, "Results": [{**result, "Configs": [{**config, "IsDefault": True}]}]}
        )


def test_unknown_fields_are_refused(project_schemas):
    with pytest.raises(EncodeError) as caught:
        project_schemas.response(68).encode({"ReplicaPlacement": [{"PartitionId": 0, "Replica": [1]}]}, 0)
    assert caught.value.field == "ReplicaPlacement[0]"
    assert "ReplicaPlacement has no field 'Replica' (its fields: PartitionId, Replicas)" in str(caught.value)


@pytest.mark.parametrize(
    ("data", "field", "reason"),
    [
        (
            {"ReplicaPlacement": [{"PartitionId": 0}, {"Replicas": [1, None]}]},
            "ReplicaPlacement[1].Replicas[1]",
            "int32 needs an int",
        ),
        ({"ErrorCode": 40000}, "ErrorCode", "40000 is out of range for int16"),
        ({"ErrorMessage": 5}, "ErrorMessage", "string needs a str, not int 5"),
        ({"ReplicaPlacement": None}, "ReplicaPlacement", "null is not allowed"),
        (
            {"ReplicaPlacement": [7]},
            "ReplicaPlacement[0]",
            "ReplicaPlacement needs a mapping of field names, not int",
        ),
    ],
)
def test_encode_errors_name_the_field(project_schemas, data, field, reason):
    with pytest.raises(EncodeError) as caught:
        project_schemas.response(68).encode(data, 0)
    error = caught.value
    assert (error.message, error.version, error.field) == ("CreateReplicaPlacementResponse", 0, field)
    assert reason in error.reason


def test_unknown_tagged_fields_are_kept_byte_for_byte(project_schemas):
    response = project_schemas.response(68)
    body = bytes.fromhex(
        "00000000 0000 00"
        "02 00000001 02 00000002 01 07 03 414243"  # one placement; its tag section: tag 7 = "ABC" (3 bytes)
        "02 02 01 ff 09 00"  # message tag section: tag 2 = ff, tag 9 = empty
    )
    decoded = response.decode(body, 0)
    assert decoded[UNKNOWN_TAGGED_FIELDS] == {2: b"\xff", 9: b""}
    assert decoded["ReplicaPlacement"] == [
        {"PartitionId": 1, "Replicas": [2], UNKNOWN_TAGGED_FIELDS: {7: b"ABC"}}
    ]
    assert response.encode(decoded, 0) == body


def test_unknown_tagged_fields_next_to_known_ones(project_schemas):
    request = project_schemas.request(68)
    data = {"TopicName": "t", "StartPartition": 4, UNKNOWN_TAGGED_FIELDS: {0x80: b"\x01", 3: b""}}
    decoded = request.decode(request.encode(data, 0), 0)
    assert decoded["TopicName"] == "t" and decoded[UNKNOWN_TAGGED_FIELDS] == {3: b"", 128: b"\x01"}
    with pytest.raises(EncodeError, match="tag 1 is a known field of this version"):
        request.encode({UNKNOWN_TAGGED_FIELDS: {1: b"\x00"}}, 0)
    with pytest.raises(EncodeError, match="must be bytes"):
        request.encode({UNKNOWN_TAGGED_FIELDS: {5: "text"}}, 0)


def test_unknown_tagged_fields_need_a_flexible_version(project_schemas):
    response = project_schemas.response(18)
    assert response.encode({UNKNOWN_TAGGED_FIELDS: {}}, 0) == response.encode({}, 0)
    with pytest.raises(EncodeError, match="version 0 is not flexible: it has no tagged fields"):
        response.encode({UNKNOWN_TAGGED_FIELDS: {4: b"x"}}, 0)


def test_decode_takes_any_bytes_like_and_offsets(project_schemas):
    request = project_schemas.request(68)
    body = request.encode({"NumPartitions": 2, "ReplicationFactor": 1}, 0)
    expected = request.decode(body, 0)
    assert request.decode(memoryview(body), 0) == expected
    assert request.decode(bytearray(body), 0) == expected
    framed = b"head" + body + b"tail"
    assert request.decode_from(memoryview(framed), 4, 0) == (expected, 4 + len(body))


def test_any_mapping_encodes(project_schemas):
    response = project_schemas.response(68)
    data = {
        "ErrorCode": 1001,
        "ErrorMessage": "no",
        "ReplicaPlacement": [{"PartitionId": 1, "Replicas": (3, 4)}],
    }
    frozen = types.MappingProxyType(
        {**data, "ReplicaPlacement": [types.MappingProxyType(data["ReplicaPlacement"][0])]}
    )
    assert response.encode(frozen, 0) == response.encode(data, 0)
    out = bytearray(b"prefix")
    response.encode_into(data, 0, out)
    assert bytes(out) == b"prefix" + response.encode(data, 0)


def test_codecs_are_compiled_by_construct(project_schemas):
    codec = project_schemas.request(68).codec(0)
    assert isinstance(codec.compiled, Compiled)
    assert "def decode_CreateReplicaPlacementRequest_v0(buf, pos):" in codec.source
    assert "def encode_CreateReplicaPlacementRequest_v0(data, out):" in codec.source
    assert project_schemas.request(68).codec(0) is codec
    body = codec.encode({"NumPartitions": 1})
    assert codec.compiled.parse(body) == codec.decode(body)  # construct's own entry points work too
    assert codec.compiled.build({"NumPartitions": 1}) == body


def test_compile_all(project_schemas):
    project_schemas.compile_all()
    for message in project_schemas:
        assert all(message.codec(v) for v in range(message.valid_versions[0], message.valid_versions[1] + 1))


def test_large_values_take_the_general_paths(project_schemas):
    """Multi-byte varint lengths and counts, and arrays past the pre-built struct sizes."""
    response = project_schemas.response(68)
    codec = response.codec(0)
    data = {
        "ThrottleTimeMs": 0,
        "ErrorCode": 1001,
        "ErrorMessage": "é" * 300,  # 600 bytes: a two-byte length
        "ReplicaPlacement": [{"PartitionId": p, "Replicas": list(range(p % 130))} for p in range(200)],
    }
    encoded = codec.encode_compiled(data)
    assert encoded == codec.encode_interpreted(data)
    assert encoded[6:8] == bytes.fromhex("d904")  # 601 as a varint
    assert codec.decode(encoded) == data
    assert codec.decode_interpreted(encoded) == (data, len(encoded))
    header = project_schemas.message("RequestHeader")
    long_id = {"RequestApiKey": 1, "RequestApiVersion": 2, "CorrelationId": 3, "ClientId": "c" * 32767}
    assert header.decode(header.encode(long_id, 2), 2) == long_id
    with pytest.raises(EncodeError, match="string of 32768 bytes is longer than 32767"):
        header.encode({**long_id, "ClientId": "c" * 32768}, 2)


@pytest.mark.parametrize(("api_key", "version"), [(12, 3), (11, 6)])  # a classic and a compact null
def test_null_strings_are_read_inline_as_the_interpreted_codec_reads_them(project_schemas, api_key, version):
    """Heartbeat v3 (classic strings) and JoinGroup v6 (compact): a null GroupInstanceId is read by the
    generated code itself, and a body cut inside a null's length is still refused as the interpreted codec
    refuses it."""
    request = project_schemas.request(api_key)
    codec = request.codec(version)
    data = request.default(version) | {"GroupId": "g", "MemberId": "m", "GroupInstanceId": None}
    encoded = codec.encode(data)
    assert codec.decode_compiled(encoded) == codec.decode_interpreted(encoded)
    assert codec.decode_compiled(encoded)[0]["GroupInstanceId"] is None
    for cut in range(len(encoded)):
        with pytest.raises(DecodeError):
            codec.decode(encoded[:cut])
    source = codec.source
    assert "== 0xFFFF:" in source if version < 6 else "== 0:" in source


def test_project_folder_is_the_one_beside_the_protocol_package(tmp_path, monkeypatch):
    import protocol
    import schemas

    foreign = tmp_path / "schemas"
    foreign.mkdir()
    (foreign / "errors.json").write_text('{"errors": []}')
    monkeypatch.setattr(schemas, "__path__", [str(foreign), *schemas.__path__])
    expected = Path(protocol.__file__).resolve().parent.parent / "schemas"
    assert Path(str(project_folder())).resolve() == expected


def test_decoders_count_the_tag_sections_with_unknown_tags_per_thread(project_schemas):
    response = project_schemas.response(68)
    nested = bytes.fromhex(
        "00000000 0000 00 02 00000001 02 00000002 01 07 03 414243 00"
    )  # one, in a placement
    both = bytes.fromhex("00000000 0000 00 02 00000001 02 00000002 01 07 03 414243 02 02 01 ff 09 00")
    clean = bytes.fromhex("00000000 0000 00 02 00000001 02 00000002 00 00")
    codec = response.codec(0)
    for decode in (codec.decode_compiled, codec.decode_interpreted):
        for body, sections in ((clean, 0), (nested, 1), (both, 2)):
            before = UNKNOWN_TAGS_FOUND.count
            decode(body)
            assert UNKNOWN_TAGS_FOUND.count - before == sections
    counted: list[int] = []
    before = UNKNOWN_TAGS_FOUND.count
    worker = threading.Thread(
        target=lambda: (response.decode(both, 0), counted.append(UNKNOWN_TAGS_FOUND.count))
    )
    worker.start()
    worker.join(10)
    assert counted == [2]  # the worker thread's own count...
    assert UNKNOWN_TAGS_FOUND.count == before  # ...not this thread's
