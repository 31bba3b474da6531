"""Caps on array lengths while decoding (protocol.caps): an array above its cap decodes to Capped and
the rest of the message as without caps; a malformed array beyond its cap raises the same DecodeError
as without caps; the generated decoder, the interpreted one and the run-at-a-time path agree; caps are
checked against the spec when they are prepared."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import Capped, CapsError, DecodeCaps, DecodeError, EncodeError, Message
from protocol.codec import VersionCodec
from protocol.spec import parse_spec
from protocol.structs import Array, EncodedElements, KafkaStruct, NullableStruct
from protocol.types import KafkaType
from protocol.wire import uvarint_bytes
from tests.protocol.test_malformed import ALL_VERSIONS, KAFKA_SPEC_DIR, comparable

FUZZ = settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
Path = tuple[str, ...]


@pytest.fixture(scope="module")
def spec_sets(project_schemas, kafka_specs):
    return {None: project_schemas, KAFKA_SPEC_DIR: kafka_specs}


# -- the model: what capping does to an uncapped decode --------------------------------------------------


def _fields(kind: KafkaType) -> list[tuple[str, KafkaType]]:
    if isinstance(kind, NullableStruct):
        kind = kind.struct
    if isinstance(kind, Array | EncodedElements):
        array = kind.array if isinstance(kind, EncodedElements) else kind
        return _fields(array.element)
    if isinstance(kind, KafkaStruct):
        return [(spec.name, spec.type) for spec in (*kind.fields, *kind.tagged)]
    return []


def array_paths(kind: KafkaType, path: Path = ()) -> list[Path]:
    """Every array field's path in the construct tree of one version, tagged fields included."""
    found = []
    for name, child in _fields(kind):
        if isinstance(child, Array):
            found.append((*path, name))
        found += array_paths(child, (*path, name))
    return found


def model(kind: KafkaType, value: Any, caps: Mapping[Path, int], path: Path = ()) -> Any:
    """``value`` (an uncapped decode of ``kind`` at ``path``) as the caps make it."""
    if value is None:
        return None
    if isinstance(kind, NullableStruct):
        kind = kind.struct
    if isinstance(kind, Array):
        limit = caps.get(path)
        if limit is not None and len(value) > limit:
            return Capped(len(value), limit)
        return [model(kind.element, item, caps, path) for item in value]
    if isinstance(kind, KafkaStruct):
        types = dict(_fields(kind))
        return {
            key: model(types[key], item, caps, (*path, key)) if key in types else item
            for key, item in value.items()
        }
    return value


def every_array_capped_at(codec: VersionCodec, limit: int) -> dict[Path, int]:
    return dict.fromkeys(array_paths(codec.construct.root), limit)


def outcome(decode, data: bytes) -> object:
    """The decoded value, or the DecodeError's reason, field and offset."""
    try:
        return comparable(decode(data))
    except DecodeError as exc:
        return ("DecodeError", exc.reason, exc.field, exc.offset)


def interpreted(codec: VersionCodec, data: bytes) -> object:
    value, end = codec.decode_interpreted(data)
    if end != len(data):
        raise DecodeError(f"{len(data) - end} trailing bytes after the message", offset=end)
    return value


# -- every message, every version ------------------------------------------------------------------------


@pytest.mark.parametrize(("folder", "name", "version"), ALL_VERSIONS)
@FUZZ
@given(data=st.data())
def test_capped_decode_is_the_uncapped_one_with_long_arrays_capped(
    spec_sets, message_values, folder, name, version, data
):
    message = spec_sets[folder].message(name)
    codec = message.codec(version)
    limit = data.draw(st.integers(0, 2), label="limit")
    caps = message.prepare_caps(version, every_array_capped_at(codec, limit))
    encoded = message.encode(data.draw(message_values(codec)), version)
    expected = comparable(model(codec.construct.root, message.decode(encoded, version), caps.caps))
    assert comparable(message.decode(encoded, version, caps)) == expected
    assert comparable(caps.codec.decode_compiled(encoded)) == (expected, len(encoded))  # no fallback
    assert comparable(caps.codec.decode_interpreted(encoded)) == (expected, len(encoded))


@pytest.mark.parametrize(("folder", "name", "version"), ALL_VERSIONS)
@FUZZ
@given(data=st.data(), noise=st.binary(max_size=48))
def test_malformed_input_fails_the_same_with_caps(
    spec_sets, message_values, folder, name, version, data, noise
):
    """Mutated and random bytes: with caps, the generated decoder (with its fallback) and the interpreted
    one give the same outcome, and it is the uncapped outcome (the same DecodeError, or the value with
    long arrays capped)."""
    message = spec_sets[folder].message(name)
    codec = message.codec(version)
    caps = message.prepare_caps(version, every_array_capped_at(codec, data.draw(st.integers(0, 2))))
    encoded = bytearray(message.encode(data.draw(message_values(codec)), version))
    if encoded:
        index = data.draw(st.integers(0, len(encoded) - 1))
        encoded[index] = data.draw(st.integers(0, 255))
    for candidate in (noise, bytes(encoded), bytes(encoded) + noise[:3], bytes(encoded[:-1])):
        plain = outcome(lambda b: message.decode(b, version), candidate)
        expected = plain if isinstance(plain, tuple) else model(codec.construct.root, plain, caps.caps)
        assert outcome(lambda b: message.decode(b, version, caps), candidate) == expected
        assert outcome(lambda b: interpreted(caps.codec, b), candidate) == expected
        if not isinstance(expected, tuple):
            assert comparable(caps.codec.decode_compiled(candidate)) == (expected, len(candidate))


# -- runs of fixed-layout structs --------------------------------------------------------------------------

LAYOUT_SPEC = """
{
  "type": "data",
  "name": "LayoutRecord",
  "validVersions": "0-1",
  "flexibleVersions": "1+",
  "fields": [
    { "name": "Items", "type": "[]Item", "versions": "0+", "fields": [
      { "name": "Id", "type": "int32", "versions": "0+" },
      { "name": "Replicas", "type": "[]int32", "versions": "0+", "nullableVersions": "0+" },
      { "name": "Offsets", "type": "[]int64", "versions": "0+" },
      { "name": "Note", "type": "int16", "versions": "1+", "taggedVersions": "1+", "tag": 0 }
    ]},
    { "name": "Keys", "type": "[]Key", "versions": "0+", "fields": [
      { "name": "Name", "type": "string", "versions": "0+" },
      { "name": "Leader", "type": "LeaderInfo", "versions": "0+", "nullableVersions": "0+", "default": "null",
        "fields": [ { "name": "Id", "type": "int32", "versions": "0+" } ] }
    ]},
    { "name": "Tail", "type": "int32", "versions": "0+" }
  ]
}
"""
LAYOUT = Message(parse_spec(LAYOUT_SPEC, "LayoutRecord.json"))


def layout_items(version: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Items of few kinds, repeated so that runs form; some with arrays longer than a run's shape may
    have, some with a tagged field (version 1)."""
    item = st.fixed_dictionaries(
        {
            "Id": st.integers(-(2**31), 2**31 - 1),
            "Replicas": st.none() | st.integers(0, 4).map(lambda n: list(range(n))),
            "Offsets": st.sampled_from([[], [7], list(range(40))]),
        },
        optional={"Note": st.integers(1, 5)} if version else {},
    )
    return st.lists(item, max_size=12).flatmap(
        lambda kinds: st.lists(st.sampled_from(kinds), min_size=0, max_size=60) if kinds else st.just([])
    )


@pytest.mark.parametrize("version", [0, 1])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    items_cap=st.none() | st.integers(0, 30),
    replicas_cap=st.none() | st.integers(0, 4),
    offsets_cap=st.none() | st.integers(0, 41),
    cut=st.integers(0, 3),
)
def test_runs_honour_caps(version, data, items_cap, replicas_cap, offsets_cap, cut):
    items = data.draw(layout_items(version))
    given_caps = {
        path: limit
        for path, limit in {
            ("Items",): items_cap,
            ("Items", "Replicas"): replicas_cap,
            ("Items", "Offsets"): offsets_cap,
        }.items()
        if limit is not None
    }
    caps = LAYOUT.prepare_caps(version, given_caps)
    encoded = LAYOUT.encode({"Items": items, "Tail": 5}, version)
    plain = LAYOUT.decode(encoded, version)
    expected = model(caps.codec.construct.root, plain, caps.caps)
    assert LAYOUT.decode(encoded, version, caps) == expected
    assert caps.codec.decode_compiled(encoded) == (expected, len(encoded))
    assert caps.codec.decode_interpreted(encoded) == (expected, len(encoded))
    truncated = encoded[: len(encoded) - 1 - cut]  # the error is in the items when the tail is gone
    failure = outcome(lambda b: LAYOUT.decode(b, version), truncated)
    assert outcome(lambda b: LAYOUT.decode(b, version, caps), truncated) == failure
    assert outcome(lambda b: interpreted(caps.codec, b), truncated) == failure


@pytest.mark.parametrize(
    "tags",
    [
        b"\x02\x05\x01\x00\x03\x01\x00",  # tag 3 after tag 5
        b"\x02\x05\x00\x05\x00",  # tag 5 twice
        b"\x01\x00\x03\x00\x01\x02",  # Note (int16) in 3 bytes (Items only: Keys know no tag)
        b"\x01\x00\x01\x07",  # Note in 1 byte
        b"\x09\x01\x00",  # more tags than bytes
        b"\x01\x05\x09\x00",  # a field longer than the bytes left
        b"\x01\x80\x80\x80\x80\x80\x01",  # a six-byte varint
        b"\x01\x05\x00",  # valid
    ],
)
@pytest.mark.parametrize("array", ["Items", "Keys"])
def test_tag_sections_of_elements_beyond_the_cap_are_checked(array, tags):
    element = struct.pack(">i", 7) + b"\x01\x01" if array == "Items" else b"\x02k\xff"
    elements = element + b"\x00" + element + tags + element + b"\x00"
    items, keys = (b"\x04" + elements, b"\x01") if array == "Items" else (b"\x01", b"\x04" + elements)
    body = items + keys + struct.pack(">i", 5) + b"\x00"
    plain = outcome(lambda b: LAYOUT.decode(b, 1), body)
    valid = tags == b"\x01\x05\x00" or (array == "Keys" and tags[1] == 0)  # tag 0 is Items' Note
    assert isinstance(plain, tuple) != valid
    for limit in (0, 2, 3):
        caps = LAYOUT.prepare_caps(1, {(array,): limit})
        expected = plain if isinstance(plain, tuple) else model(caps.codec.construct.root, plain, caps.caps)
        assert outcome(lambda b, c=caps: LAYOUT.decode(b, 1, c), body) == expected
        assert outcome(lambda b, c=caps: interpreted(c.codec, b), body) == expected


@pytest.mark.parametrize(
    "key",
    [
        b"\x03\xc3\x28\xff",  # invalid UTF-8
        b"\x00\xff",  # a null name
        uvarint_bytes(40_000) + b"k" * 39_999 + b"\xff",  # a name longer than 32767 bytes
        b"\x05k\xff",  # a name longer than the bytes left
        b"\x02k\x00\x00\x00\x00\x01",  # an invalid nullable struct marker
        b"\x02k\x80\x00\x00\x00\x01",
        b"\x02k\x01\x00\x00\x00\x01\x00",  # valid: a leader with Id 1 (and its tag section)
        b"\x01\xff",  # valid: an empty name, no leader
    ],
    ids=["utf-8", "null", "long", "overrun", "marker-0", "marker-128", "leader", "empty"],
)
def test_strings_and_structs_of_elements_beyond_the_cap_are_checked(key):
    element = b"\x02k\xff\x00"  # Name "k", no Leader, no tagged fields
    body = b"\x01" + b"\x04" + element + key + b"\x00" + element + struct.pack(">i", 5) + b"\x00"
    plain = outcome(lambda b: LAYOUT.decode(b, 1), body)
    assert isinstance(plain, tuple) != (key in (b"\x02k\x01\x00\x00\x00\x01\x00", b"\x01\xff"))
    for limit in (0, 2, 3):
        caps = LAYOUT.prepare_caps(1, {("Keys",): limit})
        expected = plain if isinstance(plain, tuple) else model(caps.codec.construct.root, plain, caps.caps)
        assert outcome(lambda b, c=caps: LAYOUT.decode(b, 1, c), body) == expected
        assert outcome(lambda b, c=caps: interpreted(c.codec, b), body) == expected


# -- long arrays: CreateTopics with many assignments -------------------------------------------------------


def create_topics(version: int, assignments: int, brokers: int = 1, other: int = 2) -> tuple[bytes, int]:
    """A CreateTopicsRequest with topic "a" holding ``assignments`` manual assignments of ``brokers``
    brokers each, then topic "b" with ``other`` assignments, built directly in bytes; and the offset of
    topic a's first assignment."""
    compact = version >= 5

    def count(n: int) -> bytes:
        return uvarint_bytes(n + 1) if compact else struct.pack(">i", n)

    def string(text: str) -> bytes:
        return (uvarint_bytes(len(text) + 1) if compact else struct.pack(">h", len(text))) + text.encode()

    tags = b"\x00" if compact else b""
    element = count(brokers) + struct.pack(f">{brokers}i", *range(brokers)) + tags

    def topic(name: str, n: int) -> tuple[bytes, bytes]:
        head = string(name) + struct.pack(">ih", -1, -1) + count(n)
        body = b"".join(struct.pack(">i", index) + element for index in range(n))
        return head, body + count(0) + tags

    head, rest = topic("a", assignments)
    start = len(count(2) + head)
    return count(2) + head + rest + b"".join(topic("b", other)) + struct.pack(">i?", 5000, True) + tags, start


@pytest.mark.parametrize("version", [4, 7])
def test_a_long_assignment_list_is_capped_and_the_rest_decoded(project_schemas, version):
    request = project_schemas.request(19)
    caps = request.prepare_caps(version, {("Topics", "Assignments"): 100_000})
    body, _ = create_topics(version, 150_000, brokers=3)  # more than one run of Runs.skip
    value = request.decode(body, version, caps)
    first, second = value["Topics"]
    assert first["Assignments"] == Capped(150_000, 100_000)
    assert second["Assignments"] == [
        {"PartitionIndex": 0, "BrokerIds": [0, 1, 2]},
        {"PartitionIndex": 1, "BrokerIds": [0, 1, 2]},
    ]
    assert (second["Name"], value["timeoutMs"], value["validateOnly"]) == ("b", 5000, True)
    assert caps.codec.decode_interpreted(body)[0] == value


@pytest.mark.parametrize(
    ("version", "element", "byte"),
    [
        (4, 1000, 4),  # a BrokerIds count (classic): above the bytes left
        (4, 149_999, 4),
        (7, 70_000, 4),  # a BrokerIds count (compact): the elements after it are misread
        (7, 149_999, 4),
        (7, 1000, 17),  # a tag section (flexible versions)
        (7, 149_999, 17),
    ],
)
def test_a_malformed_element_beyond_the_cap_fails_as_without_caps(project_schemas, version, element, byte):
    request = project_schemas.request(19)
    caps = request.prepare_caps(version, {("Topics", "Assignments"): 10})
    body, start = create_topics(version, 150_000, brokers=3)
    size = 18 if version >= 5 else 20
    mutated = bytearray(body)
    mutated[start + element * size + byte] = 0x7F
    with pytest.raises(DecodeError) as plain:
        request.decode(bytes(mutated), version)
    with pytest.raises(DecodeError) as capped:
        request.decode(bytes(mutated), version, caps)
    assert str(capped.value) == str(plain.value)
    assert capped.value.field.startswith("Topics[0].Assignments[")


@pytest.mark.parametrize("version", [4, 7])
def test_a_count_beyond_the_input_fails_with_or_without_caps(project_schemas, version):
    request = project_schemas.request(19)
    body = create_topics(version, 50)[0][:-200]
    caps = request.prepare_caps(version, {("Topics", "Assignments"): 10})
    with pytest.raises(DecodeError) as plain:
        request.decode(body, version)
    with pytest.raises(DecodeError) as capped:
        request.decode(body, version, caps)
    assert str(capped.value) == str(plain.value)


def test_capped_fixed_arrays(project_schemas):
    """Arrays of int32: within the cap they decode as before, above it to Capped, on either path."""
    request = project_schemas.request(43)  # ElectLeaders: TopicPartitions[].Partitions []int32
    for version in (0, 2):
        for count in (0, 3, 4, 63, 64, 65, 1000):
            data = {"TopicPartitions": [{"Topic": "t", "Partitions": list(range(count))}], "TimeoutMs": 9}
            body = request.encode(data, version)
            for limit in (0, 3, 62, 63, 64, 999):
                caps = request.prepare_caps(version, {("TopicPartitions", "Partitions"): limit})
                expected = list(range(count)) if count <= limit else Capped(count, limit)
                value = request.decode(body, version, caps)
                assert value["TopicPartitions"][0]["Partitions"] == expected
                assert value["TimeoutMs"] == 9
                assert caps.codec.decode_compiled(body)[0] == value
                assert caps.codec.decode_interpreted(body)[0] == value


def test_a_capped_value_does_not_encode(project_schemas):
    request = project_schemas.request(43)
    data = {"TopicPartitions": [{"Topic": "t", "Partitions": Capped(5, 2)}]}
    with pytest.raises(EncodeError, match="array needs a list or tuple, not Capped"):
        request.encode(data, 2)


# -- preparing caps -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("caps", "problem"),
    [
        ({("Topic",): 1}, "CreateTopicsRequest has no field Topic (the fields there: Topics, timeoutMs"),
        (
            {("Topics", "Assignment"): 1},
            "has no field Topics.Assignment (the fields there: Name, NumPartitions",
        ),
        ({("Topics", "Name"): 1}, "Topics.Name is not an array (it is string); only arrays are capped"),
        ({("timeoutMs", "X"): 1}, "timeoutMs is not a struct or an array of structs (int32)"),
        (
            {("Topics", "Assignments", "BrokerIds", "X"): 1},
            "BrokerIds is not a struct or an array of structs",
        ),
        ({"Topics": 1}, "a cap's path is a non-empty tuple of field names, not 'Topics'"),
        ({(): 1}, "a cap's path is a non-empty tuple of field names, not ()"),
        ({("Topics",): -1}, "the cap on Topics must be an int >= 0, not -1"),
        ({("Topics",): True}, "the cap on Topics must be an int >= 0, not True"),
        ({("Topics",): 2.0}, "the cap on Topics must be an int >= 0, not 2.0"),
    ],
)
def test_caps_that_do_not_fit_the_spec_are_refused_when_prepared(project_schemas, caps, problem):
    request = project_schemas.request(19)
    for version in (0, 7):
        with pytest.raises(CapsError) as caught:
            request.prepare_caps(version, caps)
        assert problem in str(caught.value)
        with pytest.raises(CapsError):
            request.decode(create_topics(version, 1)[0], version, caps)


def test_caps_on_fields_a_version_lacks_are_ignored(project_schemas):
    response = project_schemas.response(3)  # Metadata: Partitions[].OfflineReplicas from v5
    caps = {("Topics", "Partitions", "OfflineReplicas"): 0, ("Brokers",): 5}
    old, new = response.prepare_caps(4, caps), response.prepare_caps(5, caps)
    assert old.caps == {("Brokers",): 5}
    assert new.caps == caps
    nothing = response.prepare_caps(4, {("Topics", "Partitions", "OfflineReplicas"): 0})
    assert nothing.caps == {}
    assert nothing.codec is response.codec(4)  # no cap applies: the plain codec, at no cost


def test_prepared_caps_are_kept_and_belong_to_one_version(project_schemas, kafka_specs):
    request = project_schemas.request(19)
    caps = {("Topics", "Assignments"): 2}
    prepared = request.prepare_caps(7, caps)
    assert isinstance(prepared, DecodeCaps)
    assert request.prepare_caps(7, dict(caps)) is prepared
    body, _ = create_topics(7, 3)
    assert request.decode(body, 7, caps) == request.decode(body, 7, prepared)
    assert request.decode_from(b"\x00" + body, 1, 7, prepared) == (
        request.decode(body, 7, prepared),
        len(body) + 1,
    )
    with pytest.raises(
        CapsError, match="caps prepared for CreateTopicsRequest v7, not CreateTopicsRequest v6"
    ):
        request.decode(create_topics(6, 3)[0], 6, prepared)
    kafkas = kafka_specs.request(19)
    with pytest.raises(CapsError, match="caps prepared for CreateTopicsRequest v7"):
        kafkas.decode(body, 7, prepared)
    with pytest.raises(DecodeError, match="has no version 99"):
        request.decode(body, 99, caps)
