"""Encoding from encoded elements: Message.encode_element gives one element of a top-level array as it
appears in the message, and Message.encode_with_elements assembles the message from the other fields
and such elements, byte for byte what encode gives for the whole data, in every version of every
message with a top-level array (the project's specs, and Kafka's Metadata, CreateTopics and
ApiVersions responses): classic and compact counts, null arrays, tagged array fields, arrays of
values, several array fields at once."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import kafka.protocol.schemas
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import UNKNOWN_TAGGED_FIELDS, EncodeError, load_schemas
from protocol.structs import Array

KAFKA_SPEC_DIR = Path(kafka.protocol.schemas.__file__).parent / "resources"
KAFKA_MESSAGES = ("MetadataResponse", "CreateTopicsResponse", "ApiVersionsResponse")
FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def array_fields(message, version):
    root = message.codec(version).construct.root
    return [
        (spec.name, spec in root.tagged)
        for spec in (*root.fields, *root.tagged)
        if isinstance(spec.type, Array)
    ]


def cases(folder, names=None, prefix=""):
    return [
        pytest.param(folder, message.name, version, field, id=f"{prefix}{message.name}-v{version}-{field}")
        for message in load_schemas(folder)
        if names is None or message.name in names
        for version in range(message.valid_versions[0], message.valid_versions[1] + 1)
        for field, _ in array_fields(message, version)
    ]


CASES = cases(None) + cases(KAFKA_SPEC_DIR, KAFKA_MESSAGES, prefix="kafka-")


@pytest.fixture(scope="module")
def spec_sets(project_schemas, kafka_specs):
    return {None: project_schemas, KAFKA_SPEC_DIR: kafka_specs}


def test_the_cases_cover_what_a_server_caches():
    ids = {case.id for case in CASES}
    for version in range(14):
        assert {
            f"kafka-MetadataResponse-v{version}-Brokers",
            f"kafka-MetadataResponse-v{version}-Topics",
        } <= ids
    assert {f"CreateTopicsResponse-v{version}-Topics" for version in range(8)} <= ids
    assert {f"kafka-CreateTopicsResponse-v{version}-Topics" for version in range(2, 8)} <= ids
    assert {"kafka-ApiVersionsResponse-v3-ApiKeys", "kafka-ApiVersionsResponse-v3-SupportedFeatures"} <= ids
    assert {"ApiVersionsResponse-v3-ApiKeys", "MetadataResponse-v12-Topics"} <= ids  # the project's own
    assert "CreateReplicaPlacementRequest-v0-NodeId" in ids  # an array of values
    assert "MetadataRequest-v12-Topics" in ids  # a nullable array


@pytest.mark.parametrize(("folder", "name", "version", "field"), CASES)
@FAST
@given(data=st.data())
def test_assembled_bytes_equal_the_whole_encoding(
    spec_sets, message_values, folder, name, version, field, data
):
    message = spec_sets[folder].message(name)
    value = data.draw(message_values(message.codec(version), partial=True))
    elements = value.get(field, message.default(version)[field])
    pieces = None if elements is None else [message.encode_element(version, field, e) for e in elements]
    rest = {key: item for key, item in value.items() if key != field}
    expected = message.encode(value, version)
    assert message.encode_with_elements(version, rest, {field: pieces}) == expected
    out = bytearray(b"head")
    message.encode_with_elements_into(version, rest, {field: pieces}, out)
    assert out == b"head" + expected
    if pieces:  # bytearray and memoryview pieces, and a tuple of them, work as bytes do
        mixed = tuple(bytearray(p) if i % 2 else memoryview(p) for i, p in enumerate(pieces))
        assert message.encode_with_elements(version, rest, {field: mixed}) == expected
    every = [name for name, _ in array_fields(message, version)]
    if len(every) > 1:  # every array field at once (Metadata's Brokers and Topics, say)
        given = {
            name: None if items is None else [message.encode_element(version, name, e) for e in items]
            for name in every
            for items in [value.get(name, message.default(version)[name])]
        }
        others = {key: item for key, item in value.items() if key not in given}
        assert message.encode_with_elements(version, others, given) == expected


def test_elements_are_the_bytes_inside_the_message(project_schemas):
    metadata = project_schemas.response(3)
    topic = {"Name": "orders", "TopicId": uuid.UUID(int=7), "Partitions": [{"PartitionIndex": 0}]}
    whole = metadata.encode({"Topics": [topic, topic]}, 12)
    piece = metadata.encode_element(12, "Topics", topic)
    assert whole.count(piece) == 2
    assert whole.endswith(b"\x03" + piece + piece + b"\x00")  # compact count 2, the two, the tags
    classic = metadata.encode_element(1, "Topics", {"Name": "orders"})
    assert metadata.encode({"Topics": [{"Name": "orders"}]}, 1).endswith(b"\x00\x00\x00\x01" + classic)
    names = project_schemas.request(20)  # DeleteTopicsRequest v0: TopicNames, an array of strings
    assert names.encode_element(0, "TopicNames", "t") == b"\x00\x01t"
    assert names.encode_with_elements(0, {"TimeoutMs": 5}, {"TopicNames": [b"\x00\x01t"]}) == names.encode(
        {"TopicNames": ["t"], "TimeoutMs": 5}, 0
    )


def test_elements_keep_their_order(project_schemas):
    response = project_schemas.response(18)  # ApiVersionsResponse
    keys = [{"ApiKey": key} for key in range(5)]
    pieces = [response.encode_element(0, "ApiKeys", key) for key in keys]
    assert response.encode_with_elements(0, {}, {"ApiKeys": pieces}) == response.encode({"ApiKeys": keys}, 0)
    out = bytearray()
    response.encode_with_elements_into(0, {}, {"ApiKeys": pieces}, out)
    assert out == response.encode({"ApiKeys": keys}, 0)


def test_null_and_empty_arrays(project_schemas):
    request = project_schemas.request(3)  # MetadataRequest: Topics is nullable from v1
    for version in (1, 4, 12):
        for topics in (None, []):
            expected = request.encode({"Topics": topics}, version)
            assert request.encode_with_elements(version, {}, {"Topics": topics}) == expected


def test_tagged_array_fields(project_schemas):
    response = project_schemas.response(18)  # ApiVersionsResponse v3: SupportedFeatures is tag 0
    feature = {"Name": "metadata.version", "MinVersion": 1, "MaxVersion": 20}
    data = {"ApiKeys": [{"ApiKey": 3, "MaxVersion": 13}], UNKNOWN_TAGGED_FIELDS: {9: b"x"}}
    piece = response.encode_element(3, "SupportedFeatures", feature)
    assembled = response.encode_with_elements(3, data, {"SupportedFeatures": [piece, piece]})
    assert assembled == response.encode({**data, "SupportedFeatures": [feature, feature]}, 3)
    assert response.encode_with_elements(3, data, {"SupportedFeatures": []}) == response.encode(data, 3)


def test_errors_name_the_field(project_schemas):
    metadata = project_schemas.response(3)
    cases = [
        (lambda: metadata.encode_element(12, "Topics", {"Name": 5}), "Topics[].Name", "string needs a str"),
        (lambda: metadata.encode_element(12, "Topics", {"Nom": "t"}), "Topics[]", "has no field 'Nom'"),
        (lambda: metadata.encode_element(12, "ClusterId", "c"), "ClusterId", "not an array"),
        (lambda: metadata.encode_element(1, "ClusterId", "c"), "ClusterId", "version 1 lacks this field"),
        (
            lambda: metadata.encode_element(12, "Nope", {}),
            "Nope",
            "MetadataResponse has no such top-level field",
        ),
        (
            lambda: metadata.encode_with_elements(12, {}, {"Topics": [b"", "x"]}),
            "Topics[1]",
            "must be bytes, not str",
        ),
        (
            lambda: metadata.encode_with_elements(12, {}, {"Topics": b"\x00"}),
            "Topics",
            "need a list of bytes",
        ),
        (lambda: metadata.encode_with_elements(12, {}, {"Topics": None}), "Topics", "null is not allowed"),
        (
            lambda: metadata.encode_with_elements(12, {"Topics": []}, {"Topics": []}),
            "Topics",
            "given both in the data and as encoded elements",
        ),
        (
            lambda: metadata.encode_with_elements(12, {"ThrottleTimeMs": "0"}, {"Topics": []}),
            "ThrottleTimeMs",
            "int32",
        ),
    ]
    for call, field, reason in cases:
        with pytest.raises(EncodeError) as caught:
            call()
        error = caught.value
        assert (error.message, error.field) == ("MetadataResponse", field)
        assert reason in error.reason
    with pytest.raises(EncodeError, match="MetadataResponse has no version 14"):
        metadata.encode_element(14, "Topics", {})


def test_assembling_a_hundred_cached_topics_is_cheap(kafka_specs):
    """The pieces are joined once; the rest is the other fields' encoding. Generous bound: the join of
    the pieces alone, times ten, plus a millisecond."""
    metadata = kafka_specs.message("MetadataResponse")
    partitions = [{"PartitionIndex": p, "ReplicaNodes": [1, 2, 3], "IsrNodes": [1, 2, 3]} for p in range(12)]
    topics = [
        {"Name": f"topic-{t:03d}", "TopicId": uuid.UUID(int=t), "Partitions": partitions} for t in range(100)
    ]
    pieces = [metadata.encode_element(12, "Topics", topic) for topic in topics]
    rest = {"ClusterId": "c", "ControllerId": 1}
    assert metadata.encode_with_elements(12, rest, {"Topics": pieces}) == metadata.encode(
        {**rest, "Topics": topics}, 12
    )

    def per_call(fn) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(100):
                fn()
            best = min(best, (time.perf_counter() - start) / 100)
        return best

    join = per_call(lambda: b"".join(pieces))
    assemble = per_call(lambda: metadata.encode_with_elements(12, rest, {"Topics": pieces}))
    whole = per_call(lambda: metadata.encode({**rest, "Topics": topics}, 12))
    assert assemble < 10 * join + 0.001
    assert assemble < whole / 5
