"""The spec loader: Kafka's format with // comments, and every check naming the file, field and problem."""

from __future__ import annotations

import copy
import json
import sys
import uuid
from typing import Any

import pytest

from protocol import SpecError, load_schemas
from protocol.spec import (
    NO_VERSIONS,
    STRUCT_DEFAULT,
    FieldType,
    Versions,
    load_spec,
    parse_spec,
    strip_comments,
)

BASE: dict[str, Any] = {
    "apiKey": 1000,
    "type": "request",
    "name": "SampleRequest",
    "validVersions": "0-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "Count", "type": "int32", "versions": "0+", "about": "A count."},
        {
            "name": "Items",
            "type": "[]Item",
            "versions": "0+",
            "fields": [{"name": "Key", "type": "string", "versions": "0+", "mapKey": True}],
        },
    ],
}


def spec(change: Any = None, **top: Any) -> dict[str, Any]:
    """BASE with top-level keys replaced and ``change(fields)`` applied to a copy of its fields."""
    doc = copy.deepcopy(BASE)
    doc.update(top)
    if change is not None:
        change(doc["fields"])
    return doc


def problem(doc: Any) -> SpecError:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    with pytest.raises(SpecError) as caught:
        parse_spec(text, "Sample.json")
    assert caught.value.source == "Sample.json"
    assert str(caught.value).startswith("Sample.json: ")
    return caught.value


def add(field: dict[str, Any]) -> Any:
    return lambda fields: fields.append(field)


def test_a_valid_spec_parses():
    message = parse_spec(json.dumps(BASE), "Sample.json")
    assert (message.name, message.type, message.api_key) == ("SampleRequest", "request", 1000)
    assert message.valid_versions == Versions(0, 3)
    assert [f.name for f in message.fields] == ["Count", "Items"]
    items = message.fields[1]
    assert items.type == FieldType("array", element=FieldType("struct", struct_name="Item"))
    assert items.fields[0].map_key


def test_comments_are_ignored_but_not_inside_strings():
    text = """// a licence line
    {
      "apiKey": 1000, // the key
      "type": "request",
      "name": "SampleRequest",
      // versions
      "validVersions": "0",
      "flexibleVersions": "none",
      "fields": [
        { "name": "Url", "type": "string", "versions": "0+", "default": "http://example.com//x",
          "about": "a // b" }
      ]
    }"""
    message = parse_spec(text, "Sample.json")
    assert message.fields[0].default == "http://example.com//x"
    assert message.fields[0].about == "a // b"
    assert strip_comments('"a\\"//b" // c') == '"a\\"//b"     '


@pytest.mark.parametrize(
    ("text", "parsed", "shown"),
    [
        ("none", NO_VERSIONS, "none"),
        ("3", Versions(3, 3), "3"),
        ("1-4", Versions(1, 4), "1-4"),
        ("2+", Versions(2, 32767), "2+"),
    ],
)
def test_version_strings(text, parsed, shown):
    assert Versions.parse(text) == parsed
    assert str(parsed) == shown


#: The json module's wording and position for a trailing comma changed in Python 3.13.
TRAILING_COMMA = (
    "invalid JSON at line 1 column 11: Illegal trailing comma before end of object"
    if sys.version_info >= (3, 13)
    else "invalid JSON at line 1 column 12: Expecting property name"
)


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        ('{"name": 1,}', None, TRAILING_COMMA),
        ('{"name": "A", "name": "B"}', None, "duplicate key 'name' in one object"),
        ([], None, "the top level must be a JSON object"),
        (spec(extra=1), None, "unknown top-level key(s) extra"),
        (spec(name="sampleRequest"), None, "invalid message name 'sampleRequest'"),
        (spec(type="query"), None, "invalid type 'query'"),
        (spec(apiKey=None), None, "a request needs an apiKey"),
        (spec(apiKey=40000), None, "apiKey must be an integer from 0 to 32767"),
        (spec(validVersions="3-1"), None, "validVersions: invalid version range '3-1'"),
        (spec(validVersions="0-x"), None, "validVersions: invalid version string '0-x'"),
        (spec(validVersions="0-40000"), None, "validVersions: version 40000 is above 32767"),
        (spec(flexibleVersions="1-2"), None, "flexibleVersions must be none or open-ended (N+), not 1-2"),
        (spec(listeners=["broker"], type="response"), None, "listeners is only valid for requests"),
        (spec(listeners=["zookeeper"]), None, "unknown listener(s) zookeeper"),
    ],
)
def test_top_level_problems(doc, field, message):
    error = problem(doc)
    assert error.field == field
    assert message in error.problem


def test_missing_flexible_versions():
    doc = spec()
    del doc["flexibleVersions"]
    assert "flexibleVersions is required" in problem(doc).problem


FIELD_PROBLEMS = [
    ({"name": "1Bad", "type": "int32", "versions": "0+"}, "1Bad", "invalid field name '1Bad'"),
    ({"name": "Count", "type": "int32", "versions": "0+"}, "Count", "duplicate field name"),
    ({"name": "X", "type": "int32", "versions": "0+", "size": 4}, "X", "unknown key(s) size"),
    ({"name": "X", "type": "int32"}, "X", "versions is required"),
    ({"name": "X", "type": "int33", "versions": "0+"}, "X", "unknown type 'int33'"),
    ({"name": "X", "type": "[][]int32", "versions": "0+"}, "X", "arrays of arrays are not allowed"),
    (
        {"name": "X", "type": "int32", "versions": "0+", "nullableVersions": "0+"},
        "X",
        "type int32 cannot be nullable",
    ),
    (
        {"name": "X", "type": "Thing", "versions": "0+"},
        "X",
        "struct type Thing has no fields and is not a common struct",
    ),
    (
        {
            "name": "X",
            "type": "int32",
            "versions": "0+",
            "fields": [{"name": "Y", "type": "int8", "versions": "0+"}],
        },
        "X",
        "a field of type int32 cannot have fields",
    ),
    (
        {
            "name": "X",
            "type": "[]Item",
            "versions": "0+",
            "fields": [{"name": "Y", "type": "int8", "versions": "0+"}],
        },
        "X",
        "struct Item is defined twice",
    ),
    (
        {"name": "X", "type": "int32", "versions": "0+", "mapKey": True},
        "X",
        "mapKey is only valid in the element struct",
    ),
    ({"name": "X", "type": "int32", "versions": "2+", "tag": 0}, "X", "tag 0 given without taggedVersions"),
    (
        {"name": "X", "type": "int32", "versions": "2+", "taggedVersions": "2+"},
        "X",
        "taggedVersions 2+ given without a tag",
    ),
    (
        {"name": "X", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2-3"},
        "X",
        "taggedVersions must be open-ended",
    ),
    (
        {"name": "X", "type": "int32", "versions": "0+", "tag": 0, "taggedVersions": "0+"},
        "X",
        "are not all flexible",
    ),
    (
        {"name": "X", "type": "int32", "versions": "3+", "tag": 0, "taggedVersions": "2+"},
        "X",
        "must be within versions 3+",
    ),
    (
        {"name": "X", "type": "int32", "versions": "2+", "tag": -1, "taggedVersions": "2+"},
        "X",
        "tag must be a non-negative",
    ),
    (
        {"name": "X", "type": "int32", "versions": "2+", "tag": 1, "taggedVersions": "2+"},
        None,
        "tags must be contiguous from 0",
    ),
    (
        {
            "name": "X",
            "type": "string",
            "versions": "2+",
            "tag": 0,
            "taggedVersions": "2+",
            "nullableVersions": "3+",
        },
        "X",
        "either every tagged version must be nullable or none",
    ),
    (
        {"name": "X", "type": "int32", "versions": "0+", "flexibleVersions": "none"},
        "X",
        "only valid for string and bytes",
    ),
    (
        {"name": "X", "type": "string", "versions": "0+", "zeroCopy": True},
        "X",
        "zeroCopy is only valid for bytes",
    ),
    (
        {"name": "X", "type": "string", "versions": "0+", "entityType": "brokerId"},
        "X",
        "entityType brokerId needs type int32",
    ),
    (
        {"name": "X", "type": "int32", "versions": "0+", "entityType": "cluster"},
        "X",
        "unknown entityType 'cluster'",
    ),
    (
        {"name": "X", "type": "int32", "versions": "0+", "ignorable": "yes"},
        "X",
        "ignorable must be true or false",
    ),
    (
        {"name": "X", "type": "int32", "versions": "0+", "default": "abc"},
        "X",
        "invalid default 'abc' for type int32",
    ),
    ({"name": "X", "type": "int8", "versions": "0+", "default": "200"}, "X", "out of range"),
    ({"name": "X", "type": "uint16", "versions": "0+", "default": "-1"}, "X", "out of range"),
    (
        {"name": "X", "type": "bool", "versions": "0+", "default": "yes"},
        "X",
        "invalid default 'yes' for type bool",
    ),
    (
        {"name": "X", "type": "float64", "versions": "0+", "default": "one"},
        "X",
        "invalid default 'one' for type float64",
    ),
    (
        {"name": "X", "type": "uuid", "versions": "0+", "default": "!!"},
        "X",
        "invalid default '!!' for type uuid",
    ),
    ({"name": "X", "type": "bytes", "versions": "0+", "default": "ab"}, "X", "can only be empty or null"),
    ({"name": "X", "type": "[]int32", "versions": "0+", "default": "[]"}, "X", "can only be empty or null"),
    (
        {"name": "X", "type": "string", "versions": "0+", "default": "null"},
        "X",
        "default null needs the field nullable",
    ),
    (
        {"name": "X", "type": "string", "versions": "0+", "nullableVersions": "1+", "default": "null"},
        "X",
        "nullableVersions is 1+",
    ),
]


@pytest.mark.parametrize(("field", "where", "message"), FIELD_PROBLEMS, ids=[m for _, _, m in FIELD_PROBLEMS])
def test_field_problems(field, where, message):
    error = problem(spec(add(field)))
    assert error.field == where or (where is None and error.field == "fields")
    assert message in error.problem


def test_nested_field_problems_name_the_path():
    doc = spec(lambda fields: fields[1]["fields"].append({"name": "Size", "type": "int32"}))
    error = problem(doc)
    assert error.field == "Items.Size"
    assert str(error) == "Sample.json: field Items.Size: versions is required"


def test_duplicate_tags():
    both = [
        {"name": "A", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2+"},
        {"name": "B", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2+"},
    ]
    error = problem(spec(lambda fields: fields.extend(both)))
    assert (error.field, error.problem) == ("B", "tag 0 is already used by A")


def test_common_structs():
    doc = spec(
        add({"name": "Owner", "type": "Person", "versions": "0+"}),
        commonStructs=[
            {
                "name": "Person",
                "versions": "0+",
                "fields": [{"name": "Home", "type": "Address", "versions": "0+"}],
            },
            {
                "name": "Address",
                "versions": "0+",
                "fields": [{"name": "City", "type": "string", "versions": "0+"}],
            },
        ],
    )
    message = parse_spec(json.dumps(doc), "Sample.json")
    owner = message.fields[2]
    assert owner.fields[0].fields[0].name == "City"  # common structs may refer to later ones
    assert set(message.common_structs) == {"Person", "Address"}

    redefined = spec(
        add(
            {
                "name": "Owner",
                "type": "Person",
                "versions": "0+",
                "fields": [{"name": "Id", "type": "int32", "versions": "0+"}],
            }
        ),
        commonStructs=[{"name": "Person", "versions": "0+", "fields": []}],
    )
    assert "Person is a common struct and cannot be redefined inline" in problem(redefined).problem
    twice = spec(commonStructs=[{"name": "P", "versions": "0+"}, {"name": "P", "versions": "0+"}])
    assert problem(twice).problem == "common struct P is defined twice"
    looped = spec(
        commonStructs=[
            {"name": "P", "versions": "0+", "fields": [{"name": "Q", "type": "P", "versions": "0+"}]}
        ]
    )
    assert problem(looped).problem == "common struct P contains itself"


@pytest.mark.parametrize(
    ("field", "default"),
    [
        ({"type": "int32"}, 0),
        ({"type": "int32", "default": "-1"}, -1),
        ({"type": "int32", "default": "0x7fffffff"}, 2**31 - 1),
        ({"type": "int64", "default": -1}, -1),  # a JSON number, as some of Kafka's files have
        ({"type": "bool", "default": False}, False),
        ({"type": "bool", "default": "TRUE"}, True),
        ({"type": "float64", "default": "1.5"}, 1.5),
        ({"type": "uuid"}, uuid.UUID(int=0)),
        ({"type": "uuid", "default": "AAAAAAAAAAAAAAAAAAAAAQ"}, uuid.UUID(int=1)),
        ({"type": "string", "default": "x"}, "x"),
        ({"type": "string", "nullableVersions": "0+", "default": "null"}, None),
        ({"type": "bytes"}, b""),
        ({"type": "[]int32"}, ()),
        ({"type": "[]int32", "nullableVersions": "0+", "default": "null"}, None),
        ({"type": "Thing", "fields": [{"name": "Y", "type": "int8", "versions": "0+"}]}, STRUCT_DEFAULT),
    ],
)
def test_defaults(field, default):
    message = parse_spec(json.dumps(spec(add({"name": "X", "versions": "0+", **field}))), "Sample.json")
    assert message.fields[2].default == default


def test_load_spec_names_unreadable_files(tmp_path):
    with pytest.raises(SpecError, match="cannot read the file"):
        load_spec(tmp_path / "Missing.json")


def test_load_schemas_rejects_a_file_that_is_not_a_folder(tmp_path):
    with pytest.raises(SpecError, match="not a folder of spec files"):
        load_schemas(tmp_path / "nothing")


def test_a_bad_file_in_a_folder_is_named(tmp_path):
    (tmp_path / "Good.json").write_text(json.dumps(BASE))
    (tmp_path / "Bad.json").write_text(json.dumps(spec(name="Other", apiKey=1001, validVersions="x")))
    with pytest.raises(SpecError) as caught:
        load_schemas(tmp_path)
    assert caught.value.source.endswith("Bad.json")


def test_two_requests_with_one_api_key(tmp_path):
    (tmp_path / "A.json").write_text(json.dumps(BASE))
    (tmp_path / "B.json").write_text(json.dumps(spec(name="OtherRequest")))
    with pytest.raises(SpecError, match="apiKey 1000 is already the request SampleRequest"):
        load_schemas(tmp_path)
