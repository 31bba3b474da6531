"""Kafka's primitives as construct classes: encodings, limits, and construct's compiler using their
emitters (the compiled code agrees with the interpreted classes)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from construct import Struct
from construct.core import SizeofError
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import DecodeError, EncodeError
from protocol.structs import Array
from protocol.types import (
    BOOLEAN,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT16,
    UINT32,
    UUID,
    UVARINT,
    UVARLONG,
    VARINT,
    VARLONG,
    Bytes,
    KafkaType,
    String,
)


@contextmanager
def generated_code_only() -> Iterator[None]:
    """Compiled constructs fall back to the interpreted classes when their generated code fails; on
    valid input they must not need to, so here the fallback fails the test."""

    def refuse(self, *args):
        raise AssertionError(f"the generated code for {self!r} fell back to the interpreted path")

    with mock.patch.object(KafkaType, "_parse", refuse), mock.patch.object(KafkaType, "_build", refuse):
        yield


UVARINTS = [
    (0, "00"),
    (1, "01"),
    (127, "7f"),
    (128, "8001"),
    (300, "ac02"),
    (16383, "ff7f"),
    (16384, "808001"),
    (2**31 - 1, "ffffffff07"),
    (2**32 - 1, "ffffffff0f"),
]
ZIGZAG32 = [(0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f")]
ZIGZAG64 = [
    (2**63 - 1, "feffffffffffffffff01"),
    (-(2**63), "ffffffffffffffffff01"),
    (-64, "7f"),
    (64, "8001"),
]


@pytest.mark.parametrize(
    ("kind", "value", "encoded"),
    [(UVARINT, v, e) for v, e in UVARINTS]
    + [(VARINT, v, e) for v, e in ZIGZAG32]
    + [(VARLONG, v, e) for v, e in ZIGZAG64],
)
def test_varint_encodings(kind, value, encoded):
    assert kind.build(value).hex() == encoded
    assert kind.parse(bytes.fromhex(encoded)) == value
    compiled = kind.compile()
    with generated_code_only():
        assert compiled.build(value).hex() == encoded
        assert compiled.parse(bytes.fromhex(encoded)) == value


@pytest.mark.parametrize(
    ("kind", "data", "reason"),
    [
        (UVARINT, "8080808080 01", "varint longer than 5 bytes"),
        (UVARINT, "ffffffff1f", "varint value 8589934591 is too large"),
        (UVARINT, "80", "truncated varint"),
        (UVARLONG, "80808080808080808080 01", "varint longer than 10 bytes"),
    ],
)
def test_bad_varints(kind, data, reason):
    for decoder in (kind, kind.compile()):
        with pytest.raises(DecodeError) as caught:
            decoder.parse(bytes.fromhex(data))
        assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("kind", "value", "reason"),
    [
        (UVARINT, -1, "-1 is out of range for uvarint"),
        (UVARINT, 2**32, "4294967296 is out of range for uvarint"),
        (VARINT, 2**31, "2147483648 does not fit a 32-bit varint"),
        (INT8, 128, "128 is out of range for int8 (-128..127)"),
        (UINT16, -1, "-1 is out of range for uint16 (0..65535)"),
        (INT32, "7", "int32 needs an int, not str '7'"),
        (FLOAT64, "1.0", "float64 needs a float, not str '1.0'"),
        (UUID, "0" * 32, "uuid needs a uuid.UUID, not str"),
        (String(True, False), None, "null is not allowed (the field is not nullable in this version)"),
        (String(False, False), "x" * 32768, "string of 32768 bytes is longer than 32767"),
        (String(True, False), b"bytes", "string needs a str, not bytes"),
        (Bytes(True, False), "text", "bytes needs bytes, not str"),
        (Array(INT32, True, False), (1, "2"), "int32 needs an int, not str '2'"),
        (Array(INT32, True, False), {1, 2}, "array needs a list or tuple, not set"),
    ],
)
def test_values_that_cannot_be_built(kind, value, reason):
    for builder in (kind, kind.compile()):
        with pytest.raises(EncodeError) as caught:
            builder.build(value)
        assert reason in caught.value.reason


@pytest.mark.parametrize(
    ("kind", "value", "encoded"),
    [
        (INT8, -1, "ff"),
        (INT16, 256, "0100"),
        (UINT16, 65535, "ffff"),
        (INT32, -2, "fffffffe"),
        (UINT32, 2**32 - 1, "ffffffff"),
        (INT64, 1, "0000000000000001"),
        (BOOLEAN, True, "01"),
        (FLOAT64, 1.5, "3ff8000000000000"),
        (UUID, uuid.UUID(int=1), "00000000000000000000000000000001"),
        (String(False, False), "é", "0002c3a9"),
        (String(True, False), "é", "03c3a9"),
        (String(False, True), None, "ffff"),
        (String(True, True), None, "00"),
        (Bytes(False, True), None, "ffffffff"),
        (Bytes(True, False), b"\x01", "0201"),
        (Array(INT16, False, False), [1, 2], "0000000200010002"),
        (Array(INT16, True, True), None, "00"),
        (Array(String(True, False), True, False), ["a", ""], "03026101"),
    ],
)
def test_encodings(kind, value, encoded):
    assert kind.build(value).hex() == encoded
    assert kind.parse(bytes.fromhex(encoded)) == value
    compiled = kind.compile()
    with generated_code_only():
        assert compiled.build(value).hex() == encoded
        assert compiled.parse(bytes.fromhex(encoded)) == value


ELEMENTS = [INT8, BOOLEAN, INT16, INT32, INT64, FLOAT64, UUID]
SAMPLES = {"bool": True, "float64": -2.5, "uuid": uuid.UUID(int=2**127 + 5)}


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda kind: kind.kafka_name)
@pytest.mark.parametrize("compact", [True, False], ids=["compact", "classic"])
def test_fixed_size_arrays_on_both_sides_of_the_inline_limit(element, compact):
    """Short arrays are read inline with pre-built structs, long ones by a helper: both give the same."""
    kind = Array(element, compact, True)
    compiled = kind.compile()
    sample = SAMPLES.get(element.kafka_name, -7)
    for value in [None, *([sample] * n for n in (0, 1, 61, 62, 63, 64, 200))]:
        encoded = kind.build(value)
        assert kind.parse(encoded) == value
        with generated_code_only():
            assert compiled.build(value) == encoded
            assert compiled.parse(encoded) == value


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 128, 300])
def test_compact_strings_on_both_sides_of_the_one_byte_length(size):
    kind = String(True, True)
    compiled = kind.compile()
    value = "é" * (size // 2) + "x" * (size % 2)
    encoded = kind.build(value)
    assert encoded[0] == size + 1 if size < 127 else encoded[0] >= 0x80
    with generated_code_only():
        assert compiled.build(value) == encoded
        assert compiled.parse(encoded) == value
        assert compiled.parse(b"\x00") is None


def test_booleans_read_any_non_zero_byte_as_true():
    assert BOOLEAN.parse(b"\x02") is True
    assert BOOLEAN.compile().parse(b"\x00") is False


def test_compact_string_longer_than_kafkas_limit():
    data = bytes.fromhex("82 80 02") + b"x" * 32769  # length + 1 = 32770
    with pytest.raises(DecodeError, match="string length 32769 is above 32767"):
        String(True, False).parse(data)


def test_fixed_sizes():
    assert (INT8.sizeof(), INT64.sizeof(), UUID.sizeof(), FLOAT64.sizeof()) == (1, 8, 16, 8)
    with pytest.raises(SizeofError):
        String(True, False).sizeof()


MIXED = Struct(
    "id" / INT32,
    "name" / String(True, True),
    "count" / UVARINT,
    "delta" / VARLONG,
    "ids" / Array(INT64, True, False),
    "blob" / Bytes(False, False),
    "key" / UUID,
)


def test_constructs_compiler_uses_the_emitters():
    source = MIXED.compile().source
    assert "linkedparsers[" not in source and "linkedbuilders[" not in source  # no interpreted fallbacks
    assert "read_uvarint" in source and "uuid_from_bytes" in source


@settings(max_examples=60, deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "id": st.integers(-(2**31), 2**31 - 1),
            "name": st.none() | st.text(max_size=20),
            "count": st.integers(0, 2**32 - 1),
            "delta": st.integers(-(2**63), 2**63 - 1),
            "ids": st.lists(st.integers(-(2**63), 2**63 - 1), max_size=70),
            "blob": st.binary(max_size=40),
            "key": st.integers(0, 2**128 - 1).map(lambda i: uuid.UUID(int=i)),
        }
    )
)
def test_compiled_and_interpreted_constructs_agree(value):
    try:
        encoded = MIXED.build(value)
    except EncodeError:  # text with lone surrogates is not UTF-8
        with pytest.raises(EncodeError):
            MIXED.compile().build(value)
        return
    compiled = MIXED.compile()
    with generated_code_only():
        assert compiled.build(value) == encoded
        parsed = compiled.parse(encoded)
    assert {k: parsed[k] for k in value} == value
    assert {k: MIXED.parse(encoded)[k] for k in value} == value
