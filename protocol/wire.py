"""Low-level helpers shared by the interpreted codecs and the generated (compiled) code.

Generated code imports these by name, so they are plain functions and constants. Functions that read
from a buffer take ``(buf, pos)`` and return ``(value, new_pos)``; on malformed input they raise
:class:`Malformed` (or let ``IndexError``/``struct.error`` escape): the codec turns any failure of the
fast path into a precise :class:`~protocol.exceptions.DecodeError` by re-reading with the interpreted codec.
"""

from __future__ import annotations

import functools
import struct
import sys
import threading
import uuid
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

UNKNOWN_TAGGED_FIELDS: Final = "_unknown_tagged_fields"
#: The all-zero uuid: Kafka's "no topic id".
ZERO_UUID: Final = uuid.UUID(int=0)
"""Key under which decoded structs keep tagged fields this spec does not know (``{tag: raw bytes}``)."""

MAX_STRING_BYTES: Final = 0x7FFF
"""Kafka limits every string, classic or compact, to 32767 bytes of UTF-8."""

SMALL_ARRAY: Final = 64
"""Arrays of fixed-size values shorter than this use a pre-built ``struct.Struct``."""

_object_new = object.__new__
_int_from_bytes = int.from_bytes
_SAFE_UNKNOWN = uuid.SafeUUID.unknown


def _slot_setter(name: str) -> Callable[[Any, Any], None]:
    """Sets ``uuid.UUID``'s slot ``name`` on an instance (the slot's own descriptor is about twice as
    fast as ``object.__setattr__``, which looks the name up first)."""
    descriptor = vars(uuid.UUID).get(name)
    if descriptor is not None and hasattr(descriptor, "__set__"):
        return descriptor.__set__  # type: ignore[no-any-return]
    return lambda value, item: object.__setattr__(value, name, item)  # pragma: no cover


_set_uuid_int = _slot_setter("int")
_set_uuid_is_safe = _slot_setter("is_safe")


@dataclass(frozen=True, slots=True)
class Capped:
    """What an array decodes to when it holds ``count`` elements, more than its cap ``limit`` (see
    :mod:`protocol.caps`). The elements were checked but not built; a handler answers "too many" for
    the item holding it."""

    count: int
    limit: int


class _UnknownTagsFound(threading.local):
    """Per thread, how many tag sections decoded so far held tags their spec does not know."""

    count = 0


UNKNOWN_TAGS_FOUND: Final = _UnknownTagsFound()
"""Counted by every decoder (generated and interpreted) that keeps a tag section's unknown tags under
:data:`UNKNOWN_TAGGED_FIELDS`: a caller compares ``UNKNOWN_TAGS_FOUND.count`` before and after a decode to
know, without walking the decoded value, whether it holds any. Per thread (a threading.local): decodes
also run in worker threads, and a decode runs in one thread from start to end."""


class Malformed(ValueError):
    """Raised by the fast path on input that cannot be valid; the codec re-reads to explain it."""


class Fallback(Exception):
    """Raised by the generated encoder when the data needs the interpreted encoder's full checks."""


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes whose value fits 32 bits."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    b = buf[pos + 1]
    result |= (b & 0x7F) << 7
    if b < 0x80:
        return result, pos + 2
    b = buf[pos + 2]
    result |= (b & 0x7F) << 14
    if b < 0x80:
        return result, pos + 3
    b = buf[pos + 3]
    result |= (b & 0x7F) << 21
    if b < 0x80:
        return result, pos + 4
    b = buf[pos + 4]
    if b > 0x0F:
        raise Malformed("unsigned varint longer than 5 bytes or above 32 bits")
    return result | (b << 28), pos + 5


def read_uvarlong(buf: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 10 bytes whose value fits 64 bits."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result >> 64:
                raise Malformed("unsigned varlong above 64 bits")
            return result, pos
        shift += 7
        if shift >= 70:
            raise Malformed("unsigned varlong longer than 10 bytes")


def read_varint(buf: Any, pos: int) -> tuple[int, int]:
    """A zig-zag signed varint (32 bits)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Any, pos: int) -> tuple[int, int]:
    """A zig-zag signed varlong (64 bits)."""
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def uvarint_bytes(value: int) -> bytes:
    """Encode an unsigned varint (any non-negative int; callers enforce the 32/64-bit range)."""
    if value < 0:
        raise ValueError(f"unsigned varint cannot be negative: {value}")
    if value < 0x80:
        return _SINGLE_BYTES[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag32(value: int) -> int:
    if not -(2**31) <= value < 2**31:
        raise ValueError(f"{value} does not fit a 32-bit varint")
    return ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF


def zigzag64(value: int) -> int:
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{value} does not fit a 64-bit varlong")
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


_SINGLE_BYTES: Final = tuple(bytes([i]) for i in range(256))


def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    """A ``uuid.UUID`` from 16 big-endian bytes, without ``UUID.__init__``'s argument parsing."""
    value = _object_new(uuid.UUID)
    _set_uuid_int(value, _int_from_bytes(raw, "big"))
    _set_uuid_is_safe(value, _SAFE_UNKNOWN)
    return value


@functools.cache
def array_unpackers(code: str) -> tuple[Callable[..., tuple[Any, ...]], ...]:
    """``unpack_from`` of n values of ``code`` for n in 0..SMALL_ARRAY-1 (one table per code, shared).

    The code is repeated rather than given a count: a count before ``16s`` (uuid) would change the
    string's size instead of the number of values.
    """
    return tuple(struct.Struct(">" + code * n).unpack_from for n in range(SMALL_ARRAY))


@functools.cache
def array_packers(code: str) -> tuple[Callable[..., bytes], ...]:
    """``pack`` of n values of ``code`` for n in 0..SMALL_ARRAY-1 (the code repeated, as above)."""
    return tuple(struct.Struct(">" + code * n).pack for n in range(SMALL_ARRAY))


# Longer arrays never get a ``struct`` format of their own length: the ``struct`` module caches the
# formats its functions are given, so a format per length would keep every hostile count's compiled
# format (one entry per value) alive. Numbers go through ``array.array`` instead, which compiles
# nothing; the other codes use a ``Struct`` with a repeat count, made for the call and dropped.

_SWAP: Final = sys.byteorder == "little"
_ARRAY_TYPECODES: Final = {
    code: typecode
    for code, candidates in {
        "b": "b",
        "h": "h",
        "H": "H",
        "i": "il",
        "I": "IL",
        "q": "ql",
        "d": "d",
    }.items()
    for typecode in [next((t for t in candidates if array(t).itemsize == struct.calcsize(code)), None)]
    if typecode is not None
}


def unpack_fixed(buf: Any, pos: int, end: int, code: str) -> list[Any]:
    """The values of the fixed-size ``code`` (one of the codes in :class:`~protocol.runs.Fixed`)
    stored big-endian in ``buf[pos:end]``, whose length the caller has checked."""
    typecode = _ARRAY_TYPECODES.get(code)
    if typecode is not None:
        values = array(typecode)
        values.frombytes(buf[pos:end])
        if _SWAP and values.itemsize > 1:
            values.byteswap()
        return values.tolist()
    if code == "?":
        return list(map(bool, buf[pos:end]))
    if code == "16s":
        return [buf[start : start + 16] for start in range(pos, end, 16)]
    return list(struct.Struct(f">{(end - pos) // struct.calcsize(code)}{code}").unpack_from(buf, pos))


def pack_fixed(code: str, values: Sequence[Any]) -> bytes:
    """``values`` as big-endian ``code`` values; errors as ``struct.pack`` raises them."""
    if code == "16s":
        if any(len(value) != 16 for value in values):
            raise Fallback
        return b"".join(values)
    return struct.Struct(f">{len(values)}{code}").pack(*values)


def read_unknown_tags(
    buf: Any, pos: int, bound: int, keep: bool = True
) -> tuple[dict[int, bytes] | None, int]:
    """Read a tag section in which no tag is known: every field is kept as raw bytes (unless not
    ``keep``: then the section is only checked and stepped over)."""
    count, pos = read_uvarint(buf, pos)
    if count > bound - pos:
        raise Malformed("tag count exceeds the remaining bytes")
    fields: dict[int, bytes] = {}
    last = -1
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if tag <= last:
            raise Malformed("tags out of order or repeated")
        last = tag
        end = pos + size
        if end > bound:
            raise Malformed("tagged field overruns the input")
        if keep:
            fields[tag] = bytes(buf[pos:end])
        pos = end
    return (fields or None), pos


class Gaps(bytearray):
    """An encoder's output that leaves gaps for encoded elements instead of copying them in:
    :func:`write_elements` notes where they go, and :meth:`join` puts everything together with one copy."""

    __slots__ = ("gaps",)

    def __init__(self) -> None:
        super().__init__()
        self.gaps: list[tuple[int, Sequence[Any]]] = []

    def join(self) -> bytes:  # type: ignore[override]
        """The output with the elements in their gaps (TypeError if one is not bytes-like)."""
        if not self.gaps:
            return bytes(self)
        parts: list[Any] = []
        start = 0
        for end, elements in self.gaps:
            parts.append(self[start:end])
            parts += elements
            start = end
        parts.append(self[start:])
        return b"".join(parts)


def write_elements(out: bytearray, elements: Sequence[Any]) -> None:
    """Append encoded elements (bytes-like) to ``out``, or leave a gap for them in :class:`Gaps`."""
    if out.__class__ is Gaps:  # the elements are checked when they are joined
        out.gaps.append((len(out), elements))  # type: ignore[attr-defined]
    else:
        out += b"".join(elements)


def write_tag_section(out: bytearray, items: list[tuple[int, bytes]]) -> None:
    """Write a tag section from ``(tag, raw bytes)`` pairs (sorted here; tags must be distinct)."""
    items.sort(key=_first)
    out += uvarint_bytes(len(items))
    last = -1
    for tag, data in items:
        if tag == last:
            raise ValueError(f"tag {tag} is given twice")
        last = tag
        out += uvarint_bytes(tag)
        out += uvarint_bytes(len(data))
        out += data


def write_unknown_tags(out: bytearray, fields: Mapping[int, Any]) -> None:
    """Write a tag section holding only kept unknown fields."""
    write_tag_section(out, checked_unknown_tags(fields, frozenset()))


def checked_unknown_tags(fields: Mapping[int, Any], known: frozenset[int]) -> list[tuple[int, bytes]]:
    """Validate kept unknown tagged fields; raises ValueError/TypeError on bad ones."""
    items = []
    for tag, data in fields.items():
        if type(tag) is not int or not 0 <= tag <= 0xFFFFFFFF:
            raise ValueError(f"unknown tagged field has an invalid tag {tag!r}")
        if tag in known:
            raise ValueError(f"tag {tag} is a known field of this version; set the field by name instead")
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"unknown tagged field {tag} must be bytes, not {type(data).__name__}")
        items.append((tag, bytes(data)))
    return items


def _first(item: tuple[int, bytes]) -> int:
    return item[0]


def stream_decode(stream: IO[bytes], decode: Callable[[bytes, int], tuple[Any, int]], slow: Any) -> Any:
    """Run an offset-based decoder on a stream (construct's calling convention) and advance the stream.

    On any failure the stream is rewound and ``slow`` (the interpreted construct) reads it instead, which
    either raises a precise DecodeError or returns the value.
    """
    start = stream.tell()
    data = stream.read()
    try:
        value, end = decode(data, 0)
    except Exception:
        stream.seek(start)
        return slow._parse(stream, None, "")
    stream.seek(start + end)
    return value


def stream_encode(obj: Any, stream: IO[bytes], encode: Callable[[Any, bytearray], None], slow: Any) -> Any:
    """Run a bytearray-based encoder for construct's calling convention; ``slow`` builds on failure."""
    out = bytearray()
    try:
        encode(obj, out)
    except Exception:
        slow._build(obj, stream, None, "")
        return obj
    stream.write(out)
    return obj


def read_count(buf: Any, pos: int, bound: int, compact: bool, nullable: bool) -> tuple[int, int]:
    """An array count (compact: uvarint count + 1; classic: int32); -1 for null (when nullable).

    Checks that the count does not exceed the bytes left (every element takes at least one byte, and
    a bounded count keeps zero-size elements from looping for long).
    """
    if compact:
        raw, pos = read_uvarint(buf, pos)
        count = raw - 1
    else:
        (count,) = _INT32.unpack_from(buf, pos)
        pos += 4
    if count < 0:
        if count != -1 or not nullable:
            raise Malformed("null or negative count")
        return -1, pos
    if count > bound - pos:
        raise Malformed("count exceeds the bytes left")
    return count, pos


def read_length(
    buf: Any, pos: int, bound: int, compact: bool, classic: Any, nullable: bool
) -> tuple[int, int]:
    """A string/bytes length (compact: uvarint length + 1; classic: ``classic`` int16/int32 struct);
    -1 for null (when nullable). Checks the data fits before ``bound``."""
    if compact:
        raw, pos = read_uvarint(buf, pos)
        length = raw - 1
    else:
        (length,) = classic.unpack_from(buf, pos)
        pos += classic.size
    if length < 0:
        if length != -1 or not nullable:
            raise Malformed("null or negative length")
        return -1, pos
    if pos + length > bound:
        raise Malformed("length overruns the input")
    return length, pos


def read_string(buf: Any, pos: int, bound: int, compact: bool, nullable: bool) -> tuple[str | None, int]:
    """A string, any length form (the generated code inlines the common short compact case)."""
    length, pos = read_length(buf, pos, bound, compact, _INT16, nullable)
    if length < 0:
        return None, pos
    if length > MAX_STRING_BYTES:
        raise Malformed("string longer than 32767 bytes")
    end = pos + length
    return bytes(buf[pos:end]).decode(), end


def read_bytes(buf: Any, pos: int, bound: int, compact: bool, nullable: bool) -> tuple[bytes | None, int]:
    """Bytes or records, any length form."""
    length, pos = read_length(buf, pos, bound, compact, _INT32, nullable)
    if length < 0:
        return None, pos
    end = pos + length
    return bytes(buf[pos:end]), end


def skip_bytes(buf: Any, pos: int, bound: int, compact: bool, nullable: bool) -> int:
    """Step over bytes or records, checking them as :func:`read_bytes` does."""
    length, pos = read_length(buf, pos, bound, compact, _INT32, nullable)
    return pos + length if length > 0 else pos


def read_fixed_array(
    buf: Any,
    pos: int,
    bound: int,
    compact: bool,
    nullable: bool,
    unit: str,
    size: int,
    convert: Callable[[Any], Any] | None,
    cap: int | None = None,
) -> tuple[list[Any] | Capped | None, int]:
    """An array of fixed-size values (``unit`` is their struct code), any count form; a
    :class:`Capped` for more than ``cap`` values (checked to be there, not read)."""
    count, pos = read_count(buf, pos, bound, compact, nullable)
    if count < 0:
        return None, pos
    end = pos + size * count
    if end > bound:  # before anything is allocated for the values
        raise Malformed("array overruns the input")
    if cap is not None and count > cap:
        return Capped(count, cap), end
    values = unpack_fixed(buf, pos, end, unit)
    if convert is not None:
        return [convert(v) for v in values], end
    return values, end


_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
