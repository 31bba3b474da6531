"""Arrays of fixed-layout structs decoded run by run (protocol.runs): the same values as the general
decoder and the interpreted constructs for every mix of element shapes, nulls, tagged fields and long
arrays; malformed input inside a run gives the same DecodeError; a site keeps a bounded number of
shapes; the benchmark's Metadata response is read by one shape's code."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import UNKNOWN_TAGGED_FIELDS, DecodeError, Message
from protocol.runs import MAX_COUNT, MAX_SHAPES, Runs
from protocol.spec import parse_spec

LAYOUT_SPEC = """
{
  "type": "data",
  "name": "LayoutRecord",
  "validVersions": "0-1",
  "flexibleVersions": "1+",
  "fields": [
    { "name": "Items", "type": "[]Item", "versions": "0+", "fields": [
      { "name": "Flag", "type": "bool", "versions": "0+" },
      { "name": "Ratio", "type": "float64", "versions": "0+" },
      { "name": "Id", "type": "uuid", "versions": "0+" },
      { "name": "Offsets", "type": "[]int64", "versions": "0+" },
      { "name": "Replicas", "type": "[]int32", "versions": "0+", "nullableVersions": "0+" },
      { "name": "Ids", "type": "[]uuid", "versions": "0+" },
      { "name": "Small", "type": "int8", "versions": "0+" },
      { "name": "Note", "type": "int16", "versions": "1+", "taggedVersions": "1+", "tag": 0 }
    ]},
    { "name": "Keys", "type": "[]Key", "versions": "0+", "fields": [
      { "name": "A", "type": "int16", "versions": "0+" },
      { "name": "B", "type": "uint16", "versions": "0+" }
    ]}
  ]
}
"""

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def layout() -> Message:
    """A fresh message each time, so that every test starts with sites that have seen no shape."""
    return Message(parse_spec(LAYOUT_SPEC, "LayoutRecord.json"))


def sites(message: Message, version: int) -> dict[str, Runs]:
    """The run sites of a version's generated decoder (module-level names of its module), by element name."""
    names = message.codec(version).compiled.module.__dict__.values()
    return {site.name: site for site in names if isinstance(site, Runs)}


def item(
    offsets: int = 1,
    replicas: int | None = 3,
    ids: int = 0,
    note: int = 0,
    tags: dict[int, bytes] | None = None,
) -> dict[str, object]:
    value: dict[str, object] = {
        "Flag": replicas is None,
        "Ratio": 0.5 * offsets,
        "Id": uuid.UUID(int=offsets * 7919 + ids),
        "Offsets": [2**40 + k for k in range(offsets)],
        "Replicas": None if replicas is None else [k % 7 for k in range(replicas)],
        "Ids": [uuid.UUID(int=k) for k in range(ids)],
        "Small": -offsets,
    }
    if note:
        value["Note"] = note
    if tags:
        value[UNKNOWN_TAGGED_FIELDS] = tags
    return value


def check(message: Message, version: int, value: dict[str, object]) -> bytes:
    """Encoded, ``value`` decodes to itself through the generated code alone and through the
    interpreted constructs, and encodes back to the same bytes."""
    codec = message.codec(version)
    encoded = codec.encode(value)
    expected = {"Items": [], "Keys": [], **value}
    if version == 1:
        expected["Items"] = [{"Note": 0, **element} for element in expected["Items"]]  # type: ignore[attr-defined]
    assert codec.decode_compiled(encoded) == (expected, len(encoded))
    assert codec.decode_interpreted(encoded) == (expected, len(encoded))
    assert codec.encode(codec.decode(encoded)) == encoded
    return encoded


def test_every_layout_is_a_run_site(layout):
    for version in (0, 1):
        found = sites(layout, version)
        assert set(found) == {"Item", "Key"}
        assert found["Item"].flexible is (version == 1)


@pytest.mark.parametrize("version", [0, 1])
def test_one_shape_is_read_by_one_generated_function(layout, version):
    items = [item(offsets=2, replicas=3, ids=1) for _ in range(25)]
    check(layout, version, {"Items": items, "Keys": [{"A": k, "B": 65535 - k} for k in range(40)]})
    site = sites(layout, version)["Item"]
    assert list(site.shapes) == [(2, 3, 1)]
    assert site.last is site.shapes[(2, 3, 1)].full
    assert list(sites(layout, version)["Key"].shapes) == [()]


@pytest.mark.parametrize("version", [0, 1])
def test_mixed_shapes_nulls_tags_and_long_arrays(layout, version):
    tagged = {"note": 5} if version == 1 else {}
    unknown = {"tags": {3: b"\x01\x02"}} if version == 1 else {}
    items = (
        [item(offsets=1)] * 4
        + [item(offsets=0, replicas=None)] * 3  # a null array
        + [item(offsets=1, **tagged)]  # a tagged field: read by the general decoder
        + [item(offsets=1)] * 2
        + [item(offsets=MAX_COUNT + 1)]  # too long for a shape
        + [item(offsets=2, replicas=0, ids=2)]
        + [item(offsets=1, **unknown)]  # an unknown tagged field
        + [item(offsets=1)] * 5
    )
    check(layout, version, {"Items": items})
    shapes = set(sites(layout, version)["Item"].shapes)
    assert shapes == {(1, 3, 0), (0, None, 0), (2, 0, 2)}
    check(layout, version, {"Items": items[::-1]})  # the same shapes from the other end
    assert set(sites(layout, version)["Item"].shapes) == shapes


def test_a_site_keeps_at_most_its_share_of_shapes(layout):
    items = [item(offsets=count % 8, ids=count // 8) for count in range(2 * MAX_SHAPES)]
    for version in (0, 1):
        check(layout, version, {"Items": items})
        check(layout, version, {"Items": items[::-1]})
        assert len(sites(layout, version)["Item"].shapes) == MAX_SHAPES


def shaped_items() -> st.SearchStrategy[list[dict[str, object]]]:
    """Lists with runs of equal shapes, as real arrays have, and odd elements among them."""
    element = st.builds(
        item,
        offsets=st.sampled_from([0, 1, 1, 2, MAX_COUNT, MAX_COUNT + 2]),
        replicas=st.sampled_from([None, 0, 3, 3]),
        ids=st.integers(0, 2),
    )
    runs = st.tuples(element, st.integers(1, 6)).map(lambda pair: [pair[0]] * pair[1])
    return st.lists(runs, max_size=6).map(lambda parts: [x for part in parts for x in part])


@pytest.mark.parametrize("version", [0, 1])
@SETTINGS
@given(items=shaped_items())
def test_any_mix_of_shapes_decodes_as_the_general_decoder_does(version, items):
    layout = Message(parse_spec(LAYOUT_SPEC, "LayoutRecord.json"))
    check(layout, version, {"Items": items})
    check(layout, version, {"Items": items})  # again, with the shapes known


@pytest.mark.parametrize("version", [0, 1])
@SETTINGS
@given(items=shaped_items(), data=st.data())
def test_malformed_runs_fail_as_the_interpreted_decoder_does(version, items, data):
    layout = Message(parse_spec(LAYOUT_SPEC, "LayoutRecord.json"))
    codec = layout.codec(version)
    encoded = bytearray(codec.encode({"Items": items}))
    codec.decode(bytes(encoded))  # the shapes are known: runs are tried first
    index = data.draw(st.integers(0, len(encoded) - 1))
    encoded[index] = data.draw(st.sampled_from([0, 1, 2, 4, 0x7F, 0x80, 0xFF]))
    cut = data.draw(st.integers(0, len(encoded)))
    for candidate in (bytes(encoded), bytes(encoded[:cut])):
        try:
            expected = codec.decode_interpreted(candidate)
        except DecodeError as exc:
            with pytest.raises(DecodeError) as caught:
                codec.decode(candidate)
            assert str(caught.value) == str(exc)
            continue
        if expected[1] == len(candidate):
            assert codec.decode_compiled(candidate) == expected
            assert codec.decode(candidate) == expected[0]


def test_a_count_byte_changed_inside_a_run(layout):
    encoded = bytearray(check(layout, 1, {"Items": [item(offsets=1, replicas=2)] * 6}))
    size = len(encoded[2:-2]) // 6  # Items count, then six elements, then Keys count and the tag section
    replicas_count = 2 + 1 + 8 + 16 + 1 + 8  # Flag, Ratio, Id, Offsets count and one value
    encoded[2 + 3 * size + replicas_count] = 2  # the fourth element's Replicas now holds one value
    with pytest.raises(DecodeError) as caught:
        layout.decode(bytes(encoded), 1)
    assert str(caught.value) == str(
        pytest.raises(DecodeError, layout.codec(1).decode_interpreted, bytes(encoded)).value
    )


def test_the_benchmark_metadata_response_is_one_shape(kafka_specs):
    metadata = Message(kafka_specs.message("MetadataResponse").spec)  # codecs no other test has used
    partitions = [
        {
            "ErrorCode": 0,
            "PartitionIndex": p,
            "LeaderId": p % 6,
            "LeaderEpoch": 3,
            "ReplicaNodes": [p % 6, (p + 1) % 6, (p + 2) % 6],
            "IsrNodes": [p % 6, (p + 1) % 6, (p + 2) % 6],
            "OfflineReplicas": [],
        }
        for p in range(12)
    ]
    topic = {"Name": "t", "TopicId": uuid.UUID(int=1), "Partitions": partitions}
    data = {"Topics": [topic] * 10}
    for version in range(metadata.valid_versions[1] + 1):
        codec = metadata.codec(version)
        encoded = codec.encode(data)
        assert codec.decode_compiled(encoded)[0] == codec.decode_interpreted(encoded)[0]
        site = sites(metadata, version)["MetadataResponsePartition"]
        shape = (3, 3, 0) if version >= 5 else (3, 3)  # OfflineReplicas: version 5 on
        assert list(site.shapes) == [shape]
        assert site.last is site.shapes[shape].full


def test_shape_at_refuses_what_no_shape_can_read(layout):
    site = sites(layout, 1)["Item"]
    # From the first element: ..., Small, the element's tag section, the Keys count, the message's tags.
    body = layout.codec(1).encode({"Items": [item(offsets=1)]})[1:]
    assert struct.unpack_from(">bbbb", body, len(body) - 4) == (-1, 0, 1, 0)
    assert site.shape_at(body, 0, len(body) - 2) == (1, 3, 0)
    assert site.shape_at(body, 0, len(body) - 3) is None  # not within the bound
    flag_ratio_id = 1 + 8 + 16
    for count_byte in (0, 0x80, MAX_COUNT + 2):  # null where not nullable, a multi-byte count, too long
        changed = bytearray(body)
        changed[flag_ratio_id] = count_byte
        assert site.shape_at(bytes(changed), 0, len(changed)) is None
    tagged = layout.codec(1).encode({"Items": [item(offsets=1, tags={4: b""})]})[1:]
    assert site.shape_at(tagged, 0, len(tagged)) is None
