"""Kafka's wire types as construct classes.

Every type is a ``construct.Construct`` and works three ways:

- interpreted: ``_parse``/``_build`` (construct's API) read and write streams one field at a time and
  raise :class:`DecodeError`/:class:`EncodeError` naming the field path and the problem;
- compiled by construct: ``_emitparse``/``_emitbuild`` let ``construct.Struct(...).compile()`` embed
  these types (the emitted code runs the fast path below, and falls back to the interpreted path for
  a precise error);
- as statements: :meth:`KafkaType.emit_decode`/:meth:`KafkaType.emit_encode` write offset-based code
  into an :class:`~protocol.emit.Emitter`; :class:`KafkaStruct` inlines its fields' statements, so a
  whole message compiles to one flat function per direction.

Decoded values: ints, bool, float, ``str``, ``bytes``, ``uuid.UUID``, lists, and dicts keyed by field
name; ``None`` for null. Structs keep tagged fields they do not know under
:data:`~protocol.wire.UNKNOWN_TAGGED_FIELDS` so that encoding reproduces them.
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

from construct.core import CodeGen, Construct, SizeofError

from protocol.emit import Emitter, literal
from protocol.exceptions import DecodeError, EncodeError
from protocol.wire import (
    MAX_STRING_BYTES,
    SMALL_ARRAY,
    UNKNOWN_TAGGED_FIELDS,
    checked_unknown_tags,
    uuid_from_bytes,
    uvarint_bytes,
    write_tag_section,
    zigzag32,
    zigzag64,
)

ZERO_UUID: Final = uuid.UUID(int=0)
_NULL_COMPACT: Final = b"\x00"
_NULL_INT16: Final = b"\xff\xff"
_NULL_INT32: Final = b"\xff\xff\xff\xff"


# -- stream helpers for the interpreted path -------------------------------------------------------------


def _where(path: str | None) -> str:
    """Turn construct's path (``(parsing) -> a -> b``) into a field path (``a.b``)."""
    if not path:
        return ""
    parts = [p for p in path.split(" -> ") if p and not p.startswith("(")]
    return ".".join(parts)


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def read_exact(stream: IO[bytes], size: int, where: str) -> bytes:
    start = stream.tell()
    data = stream.read(size)
    if len(data) != size:
        raise DecodeError(
            f"truncated: {size} bytes needed, {len(data)} left", field=where or None, offset=start
        )
    return data


def remaining(stream: IO[bytes]) -> int:
    here = stream.tell()
    end = stream.seek(0, io.SEEK_END)
    stream.seek(here)
    return end - here


def read_stream_uvarint(stream: IO[bytes], where: str, max_bytes: int = 5) -> int:
    start = stream.tell()
    result = 0
    for index in range(max_bytes):
        raw = stream.read(1)
        if not raw:
            raise DecodeError("truncated varint", field=where or None, offset=start)
        byte = raw[0]
        result |= (byte & 0x7F) << (7 * index)
        if byte < 0x80:
            if result >> (32 if max_bytes == 5 else 64):
                raise DecodeError(f"varint value {result} is too large", field=where or None, offset=start)
            return result
    raise DecodeError(f"varint longer than {max_bytes} bytes", field=where or None, offset=start)


def _fail(reason: str, where: str, stream: IO[bytes] | None = None, offset: int | None = None) -> DecodeError:
    if offset is None and stream is not None:
        offset = stream.tell()
    return DecodeError(reason, field=where or None, offset=offset)


def _bad(reason: str, where: str) -> EncodeError:
    return EncodeError(reason, field=where or None)


@dataclass(frozen=True)
class Fixed:
    """How a fixed-size type joins a batched ``struct`` format: its code, size and conversions."""

    code: str
    size: int
    post: str | None = None  # decode conversion, a template around the unpacked value
    pre: str | None = None  # encode conversion, a template around the value to pack


class KafkaType(Construct):
    """Base of Kafka's wire types (see the module docstring)."""

    kafka_name = "?"
    fixed: Fixed | None = None

    # construct's interpreted API --------------------------------------------------------------------

    def _parse(self, stream: IO[bytes], context: Any, path: str) -> Any:
        return self.read(stream, _where(path))

    def _build(self, obj: Any, stream: IO[bytes], context: Any, path: str) -> Any:
        self.write(obj, stream, _where(path))
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        if self.fixed is not None:
            return self.fixed.size
        raise SizeofError(f"{self.kafka_name} has no fixed size", path=path)

    def read(self, stream: IO[bytes], where: str) -> Any:
        raise NotImplementedError

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        raise NotImplementedError

    def is_default(self, value: Any, default: Any) -> bool:
        """Whether a tagged field holding ``value`` is left out (Kafka's non-default test)."""
        return bool(value == default)

    # statement emitters -----------------------------------------------------------------------------

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        """Read one value at ``pos`` of ``buf`` into local ``target``, advancing ``pos``."""
        assert self.fixed is not None
        unpack = em.constant(f"_Struct('>{self.fixed.code}').unpack_from", "unpack")
        raw = em.local("r") if self.fixed.post else target
        em(f"{raw}, = {unpack}(buf, pos)")
        em(f"pos += {self.fixed.size}")
        if self.fixed.post:
            em(f"{target} = {self.fixed.post.format(raw)}")

    def emit_encode(self, em: Emitter, value: str) -> None:
        """Append the encoding of local ``value`` to the bytearray ``em.out``."""
        assert self.fixed is not None
        pack = em.constant(f"_Struct('>{self.fixed.code}').pack", "pack")
        arg = self.fixed.pre.format(value) if self.fixed.pre else value
        em(f"{em.out} += {pack}({arg})")

    def emit_is_default(self, em: Emitter, value: str, default: Any) -> str:
        """A Python expression: True when ``value`` equals ``default`` (tagged fields are then omitted)."""
        return f"{value} == {em.constant(literal(default), 'dflt')}"

    # construct's compiler -----------------------------------------------------------------------------

    def _emitparse(self, code: CodeGen) -> str:
        code.linkedinstances[id(self)] = self
        em = Emitter(code)

        def body(fn: Emitter) -> None:
            fn("bound = len(buf)")
            self.emit_decode(fn, "value", "bound")
            fn("return value, pos")

        name = em.function(f"decode_{self.kafka_name}", "buf, pos", body)
        return f"stream_decode(io, {name}, linkedinstances[{id(self)}])"

    def _emitbuild(self, code: CodeGen) -> str:
        code.linkedinstances[id(self)] = self
        em = Emitter(code)
        name = em.function(f"encode_{self.kafka_name}", "obj, out", lambda fn: self.emit_encode(fn, "obj"))
        return f"stream_encode(obj, io, {name}, linkedinstances[{id(self)}])"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kafka_name}>"


# -- fixed-size primitives ------------------------------------------------------------------------------


class Integer(KafkaType):
    """A big-endian fixed-width integer: int8, int16, uint16, int32, uint32, int64."""

    def __init__(self, kafka_name: str, code: str, low: int, high: int) -> None:
        super().__init__()
        self.kafka_name = kafka_name
        self.low, self.high = low, high
        self.fixed = Fixed(code, struct.calcsize(">" + code))
        self._struct = struct.Struct(">" + code)

    def read(self, stream: IO[bytes], where: str) -> int:
        return int(self._struct.unpack(read_exact(stream, self.fixed.size, where))[0])  # type: ignore[union-attr]

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, int):
            raise _bad(f"{self.kafka_name} needs an int, not {type(value).__name__} {value!r}", where)
        if not self.low <= value <= self.high:
            raise _bad(f"{value} is out of range for {self.kafka_name} ({self.low}..{self.high})", where)
        stream.write(self._struct.pack(value))


class Boolean(KafkaType):
    """One byte: 0 is false, anything else true (written as 1)."""

    kafka_name = "bool"
    fixed = Fixed("?", 1)

    def read(self, stream: IO[bytes], where: str) -> bool:
        return read_exact(stream, 1, where)[0] != 0

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        stream.write(b"\x01" if value else b"\x00")

    def emit_is_default(self, em: Emitter, value: str, default: Any) -> str:
        return f"not {value}" if not default else f"bool({value})"

    def is_default(self, value: Any, default: Any) -> bool:
        return bool(value) == bool(default)


class Float64(KafkaType):
    """An IEEE 754 double, big-endian."""

    kafka_name = "float64"
    fixed = Fixed("d", 8)

    def read(self, stream: IO[bytes], where: str) -> float:
        return float(struct.unpack(">d", read_exact(stream, 8, where))[0])

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, int | float):
            raise _bad(f"float64 needs a float, not {type(value).__name__} {value!r}", where)
        try:
            stream.write(struct.pack(">d", value))
        except OverflowError as exc:
            raise _bad(f"{value} does not fit a float64", where) from exc


class Uuid(KafkaType):
    """16 bytes, as ``uuid.UUID``."""

    kafka_name = "uuid"
    fixed = Fixed("16s", 16, post="uuid_from_bytes({})", pre="{}.bytes")

    def read(self, stream: IO[bytes], where: str) -> uuid.UUID:
        return uuid_from_bytes(read_exact(stream, 16, where))

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, uuid.UUID):
            raise _bad(f"uuid needs a uuid.UUID, not {type(value).__name__} {value!r}", where)
        stream.write(value.bytes)


INT8: Final = Integer("int8", "b", -(2**7), 2**7 - 1)
INT16: Final = Integer("int16", "h", -(2**15), 2**15 - 1)
UINT16: Final = Integer("uint16", "H", 0, 2**16 - 1)
INT32: Final = Integer("int32", "i", -(2**31), 2**31 - 1)
UINT32: Final = Integer("uint32", "I", 0, 2**32 - 1)
INT64: Final = Integer("int64", "q", -(2**63), 2**63 - 1)
BOOLEAN: Final = Boolean()
FLOAT64: Final = Float64()
UUID: Final = Uuid()


# -- varints --------------------------------------------------------------------------------------------


class Varint(KafkaType):
    """Variable-length integers: unsigned varint (32 bits), zig-zag varint (32) and varlong (64)."""

    def __init__(self, kafka_name: str, bits: int, signed: bool) -> None:
        super().__init__()
        self.kafka_name = kafka_name
        self.bits, self.signed = bits, signed
        self.max_bytes = 5 if bits == 32 else 10

    @property
    def _reader(self) -> str:
        return {
            (32, False): "read_uvarint",
            (64, False): "read_uvarlong",
            (32, True): "read_varint",
            (64, True): "read_varlong",
        }[self.bits, self.signed]

    def read(self, stream: IO[bytes], where: str) -> int:
        raw = read_stream_uvarint(stream, where, self.max_bytes)
        return (raw >> 1) ^ -(raw & 1) if self.signed else raw

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, int):
            raise _bad(f"{self.kafka_name} needs an int, not {type(value).__name__} {value!r}", where)
        try:
            if self.signed:
                raw = zigzag32(value) if self.bits == 32 else zigzag64(value)
            elif not 0 <= value < 2**self.bits:
                raise ValueError(f"{value} is out of range for {self.kafka_name}")
            else:
                raw = value
        except ValueError as exc:
            raise _bad(str(exc), where) from exc
        stream.write(uvarint_bytes(raw))

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        em(f"{target}, pos = {self._reader}(buf, pos)")

    def emit_encode(self, em: Emitter, value: str) -> None:
        if self.signed:
            em(f"{em.out} += uvarint_bytes(zigzag{self.bits}({value}))")
        else:
            em(f"if not 0 <= {value} < {2**self.bits}: raise Fallback")
            em(f"{em.out} += uvarint_bytes({value})")


UVARINT: Final = Varint("uvarint", 32, signed=False)
UVARLONG: Final = Varint("uvarlong", 64, signed=False)
VARINT: Final = Varint("varint", 32, signed=True)
VARLONG: Final = Varint("varlong", 64, signed=True)


# -- length-prefixed types ------------------------------------------------------------------------------


def _emit_length(em: Emitter, target: str, compact: bool, classic_code: str) -> None:
    """Read a length prefix into ``target``: compact = uvarint (length + 1), classic = int16/int32."""
    if compact:
        em(f"{target} = buf[pos]")
        with em.block(f"if {target} < 128:"):
            em("pos += 1")
        with em.block("else:"):
            em(f"{target}, pos = read_uvarint(buf, pos)")
    else:
        unpack = em.constant(f"_Struct('>{classic_code}').unpack_from", "unpack")
        em(f"{target}, = {unpack}(buf, pos)")
        em(f"pos += {struct.calcsize(classic_code)}")


def _emit_write_length(em: Emitter, length: str, compact: bool, classic_code: str) -> None:
    if compact:
        with em.block(f"if {length} < 127:"):
            em(f"{em.out}.append({length} + 1)")
        with em.block("else:"):
            em(f"{em.out} += uvarint_bytes({length} + 1)")
    else:
        pack = em.constant(f"_Struct('>{classic_code}').pack", "pack")
        em(f"{em.out} += {pack}({length})")


def _read_length(stream: IO[bytes], where: str, compact: bool, classic_size: int) -> int | None:
    """The length of a string/bytes/array, or None for null; DecodeError for negative lengths but -1."""
    start = stream.tell()
    if compact:
        raw = read_stream_uvarint(stream, where)
        return None if raw == 0 else raw - 1
    value = int.from_bytes(read_exact(stream, classic_size, where), "big", signed=True)
    if value == -1:
        return None
    if value < 0:
        raise _fail(f"negative length {value}", where, offset=start)
    return value


class String(KafkaType):
    """UTF-8 text: classic (int16 length, -1 = null) or compact (uvarint length + 1, 0 = null)."""

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.compact, self.nullable = compact, nullable
        self.kafka_name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + "string"

    def read(self, stream: IO[bytes], where: str) -> str | None:
        start = stream.tell()
        length = _read_length(stream, where, self.compact, 2)
        if length is None:
            if not self.nullable:
                raise _fail("null in a non-nullable string", where, offset=start)
            return None
        if length > MAX_STRING_BYTES:
            raise _fail(f"string length {length} is above {MAX_STRING_BYTES}", where, offset=start)
        data = read_exact(stream, length, where)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(f"invalid UTF-8 ({exc.reason})", where, offset=start) from exc

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if value is None:
            if not self.nullable:
                raise _bad("null is not allowed (the field is not nullable in this version)", where)
            stream.write(_NULL_COMPACT if self.compact else _NULL_INT16)
            return
        if not isinstance(value, str):
            raise _bad(f"string needs a str, not {type(value).__name__} {value!r}", where)
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _bad(f"not encodable as UTF-8 ({exc.reason})", where) from exc
        if len(data) > MAX_STRING_BYTES:
            raise _bad(f"string of {len(data)} bytes is longer than {MAX_STRING_BYTES}", where)
        stream.write(uvarint_bytes(len(data) + 1) if self.compact else struct.pack(">h", len(data)))
        stream.write(data)

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        n = em.local("n")
        _emit_length(em, n, self.compact, "h")
        if self.compact:
            null_test, length = f"not {n}", f"{n} - 1"
        else:
            null_test, length = f"{n} < 0", n
        with em.block(f"if {null_test}:"):
            if self.nullable and not self.compact:
                em(f"if {n} != -1: raise Malformed")
            if self.nullable:
                em(f"{target} = None")
            else:
                em("raise Malformed")
        with em.block("else:"):
            end = em.local("e")
            em(f"{end} = pos + {length}")
            limit = f" or {n} > {MAX_STRING_BYTES + 1}" if self.compact else ""
            em(f"if {end} > {bound}{limit}: raise Malformed")
            em(f"{target} = buf[pos:{end}].decode()")
            em(f"pos = {end}")

    def emit_encode(self, em: Emitter, value: str) -> None:
        if self.nullable:
            with em.block(f"if {value} is None:"):
                null = _NULL_COMPACT if self.compact else _NULL_INT16
                em(f"{em.out} += {null!r}")
            block = em.block("else:")
        else:
            block = _nullcontext()
        with block:
            data, n = em.local("s"), em.local("n")
            em(f"{data} = {value}.encode()")
            em(f"{n} = len({data})")
            em(f"if {n} > {MAX_STRING_BYTES}: raise Fallback")
            _emit_write_length(em, n, self.compact, "h")
            em(f"{em.out} += {data}")


class Bytes(KafkaType):
    """Raw bytes (also ``records``): classic (int32 length, -1 = null) or compact (uvarint length + 1)."""

    def __init__(self, compact: bool, nullable: bool, kafka_name: str = "bytes") -> None:
        super().__init__()
        self.compact, self.nullable = compact, nullable
        self.kafka_name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + kafka_name

    def read(self, stream: IO[bytes], where: str) -> bytes | None:
        start = stream.tell()
        length = _read_length(stream, where, self.compact, 4)
        if length is None:
            if not self.nullable:
                raise _fail("null in non-nullable bytes", where, offset=start)
            return None
        return read_exact(stream, length, where)

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if value is None:
            if not self.nullable:
                raise _bad("null is not allowed (the field is not nullable in this version)", where)
            stream.write(_NULL_COMPACT if self.compact else _NULL_INT32)
            return
        if not isinstance(value, bytes | bytearray | memoryview):
            raise _bad(f"bytes needs bytes, not {type(value).__name__}", where)
        data = bytes(value)
        if len(data) >= 2**31 - 1:
            raise _bad(f"{len(data)} bytes is too long", where)
        stream.write(uvarint_bytes(len(data) + 1) if self.compact else struct.pack(">i", len(data)))
        stream.write(data)

    def is_default(self, value: Any, default: Any) -> bool:
        return value is None if default is None else (value is not None and len(value) == 0)

    def emit_is_default(self, em: Emitter, value: str, default: Any) -> str:
        return f"{value} is None" if default is None else f"({value} is not None and len({value}) == 0)"

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        n = em.local("n")
        _emit_length(em, n, self.compact, "i")
        null_test, length = (f"not {n}", f"{n} - 1") if self.compact else (f"{n} < 0", n)
        with em.block(f"if {null_test}:"):
            if self.nullable and not self.compact:
                em(f"if {n} != -1: raise Malformed")
            if self.nullable:
                em(f"{target} = None")
            else:
                em("raise Malformed")
        with em.block("else:"):
            end = em.local("e")
            em(f"{end} = pos + {length}")
            em(f"if {end} > {bound}: raise Malformed")
            em(f"{target} = buf[pos:{end}]")
            em(f"pos = {end}")

    def emit_encode(self, em: Emitter, value: str) -> None:
        if self.nullable:
            with em.block(f"if {value} is None:"):
                null = _NULL_COMPACT if self.compact else _NULL_INT32
                em(f"{em.out} += {null!r}")
            block = em.block("else:")
        else:
            block = _nullcontext()
        with block:
            n = em.local("n")
            em(f"if type({value}) is not bytes: raise Fallback")
            em(f"{n} = len({value})")
            _emit_write_length(em, n, self.compact, "i")
            em(f"{em.out} += {value}")


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


# -- arrays ---------------------------------------------------------------------------------------------


class Array(KafkaType):
    """A sequence of one element type: classic (int32 count, -1 = null) or compact (uvarint count + 1)."""

    def __init__(self, element: KafkaType, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.element, self.compact, self.nullable = element, compact, nullable
        self.kafka_name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + "array"

    def read(self, stream: IO[bytes], where: str) -> list[Any] | None:
        start = stream.tell()
        count = _read_length(stream, where, self.compact, 4)
        if count is None:
            if not self.nullable:
                raise _fail("null in a non-nullable array", where, offset=start)
            return None
        if count > remaining(stream):
            raise _fail(
                f"array count {count} exceeds the {remaining(stream)} bytes left", where, offset=start
            )
        return [self.element.read(stream, f"{where}[{index}]") for index in range(count)]

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if value is None:
            if not self.nullable:
                raise _bad("null is not allowed (the field is not nullable in this version)", where)
            stream.write(_NULL_COMPACT if self.compact else _NULL_INT32)
            return
        if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Sequence):
            raise _bad(f"array needs a list or tuple, not {type(value).__name__}", where)
        if len(value) > 2**31 - 1:
            raise _bad(f"{len(value)} elements is too many", where)
        stream.write(uvarint_bytes(len(value) + 1) if self.compact else struct.pack(">i", len(value)))
        for index, item in enumerate(value):
            self.element.write(item, stream, f"{where}[{index}]")

    def is_default(self, value: Any, default: Any) -> bool:
        return value is None if default is None else (value is not None and len(value) == 0)

    def emit_is_default(self, em: Emitter, value: str, default: Any) -> str:
        return f"{value} is None" if default is None else f"({value} is not None and len({value}) == 0)"

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        n = em.local("n")
        _emit_length(em, n, self.compact, "i")
        null_test = f"not {n}" if self.compact else f"{n} < 0"
        with em.block(f"if {null_test}:"):
            if self.nullable and not self.compact:
                em(f"if {n} != -1: raise Malformed")
            if self.nullable:
                em(f"{target} = None")
            else:
                em("raise Malformed")
        with em.block("else:"):
            if self.compact:
                em(f"{n} -= 1")
            em(f"if {n} > {bound} - pos: raise Malformed")
            fixed = self.element.fixed
            if fixed is not None:
                self._emit_decode_fixed(em, fixed, target, n)
            else:
                append, item = em.local("ap"), em.local("it")
                em(f"{target} = []")
                em(f"{append} = {target}.append")
                with em.block(f"for _ in range({n}):"):
                    self.element.emit_decode(em, item, bound)
                    em(f"{append}({item})")

    def _emit_decode_fixed(self, em: Emitter, fixed: Fixed, target: str, n: str) -> None:
        unpackers = em.constant(f"array_unpackers({fixed.code!r})", "arrays")
        raw = em.local("t")
        with em.block(f"if {n} < {SMALL_ARRAY}:"):
            em(f"{raw} = {unpackers}[{n}](buf, pos)")
        with em.block("else:"):
            em(f"{raw} = _unpack_from('>' + {fixed.code!r} * {n}, buf, pos)")
        if fixed.post:
            em(f"{target} = [{fixed.post.format('x')} for x in {raw}]")
        else:
            em(f"{target} = list({raw})")
        em(f"pos += {fixed.size} * {n}")

    def emit_encode(self, em: Emitter, value: str) -> None:
        if self.nullable:
            with em.block(f"if {value} is None:"):
                null = _NULL_COMPACT if self.compact else _NULL_INT32
                em(f"{em.out} += {null!r}")
            block = em.block("else:")
        else:
            block = _nullcontext()
        with block:
            em(f"if {value}.__class__ is not list and {value}.__class__ is not tuple: raise Fallback")
            n = em.local("n")
            em(f"{n} = len({value})")
            _emit_write_length(em, n, self.compact, "i")
            fixed = self.element.fixed
            if fixed is not None:
                packers = em.constant(f"array_packers({fixed.code!r})", "arrays")
                args = f"*[{fixed.pre.format('x')} for x in {value}]" if fixed.pre else f"*{value}"
                with em.block(f"if {n} < {SMALL_ARRAY}:"):
                    em(f"{em.out} += {packers}[{n}]({args})")
                with em.block("else:"):
                    em(f"{em.out} += _pack('>' + {fixed.code!r} * {n}, {args})")
            else:
                item = em.local("it")
                with em.block(f"for {item} in {value}:"):
                    self.element.emit_encode(em, item)


# -- structs and tagged fields --------------------------------------------------------------------------


@dataclass(frozen=True)
class StructField:
    """A field of a struct at one version. ``default`` is used when the field is absent from the data."""

    name: str
    type: KafkaType
    default: Any


@dataclass(frozen=True)
class TaggedField(StructField):
    """A tagged field: written only when its value differs from ``default``."""

    tag: int = 0


@dataclass(frozen=True)
class AbsentField:
    """A field of the struct that this version does not have."""

    name: str
    versions: str
    default: Any
    ignorable: bool

    def allows(self, value: Any) -> bool:
        """A value that may be given for the field even though the version lacks it."""
        if self.ignorable:
            return True
        if self.default is None:
            return value is None
        if isinstance(self.default, tuple | bytes):  # array or bytes default: empty
            return value is not None and len(value) == 0
        if isinstance(self.default, dict):
            return isinstance(value, Mapping) and all(
                self.default.get(k, object()) == v for k, v in value.items()
            )
        return bool(value == self.default)


class TaggedFields(KafkaType):
    """A tag section: uvarint count, then ``tag, size, data`` per field in ascending tag order."""

    kafka_name = "tagged_fields"

    def __init__(self, fields: Sequence[TaggedField] = ()) -> None:
        super().__init__()
        self.fields = tuple(sorted(fields, key=lambda f: f.tag))
        self.by_tag = {f.tag: f for f in self.fields}
        self.known_tags = frozenset(self.by_tag)

    # interpreted: a tag section reads into / writes from the enclosing struct's dict

    def read(self, stream: IO[bytes], where: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        self.read_into(stream, where, result)
        return result

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        self.write_from(value if value is not None else {}, stream, where)

    def read_into(self, stream: IO[bytes], where: str, result: dict[str, Any]) -> None:
        for spec in self.fields:
            result[spec.name] = _fresh(spec.default)
        start = stream.tell()
        count = read_stream_uvarint(stream, _join(where, "<tags>"))
        if count > remaining(stream):
            raise _fail(f"tag count {count} exceeds the bytes left", _join(where, "<tags>"), offset=start)
        unknown: dict[int, bytes] = {}
        last = -1
        for _ in range(count):
            tag_start = stream.tell()
            tag = read_stream_uvarint(stream, _join(where, "<tags>"))
            size = read_stream_uvarint(stream, _join(where, f"<tag {tag}>"))
            if tag <= last:
                raise _fail(f"tag {tag} after tag {last}: tags must be ascending", where, offset=tag_start)
            last = tag
            data_start = stream.tell()
            data = read_exact(stream, size, _join(where, f"<tag {tag}>"))
            spec = self.by_tag.get(tag)
            if spec is None:
                unknown[tag] = data
                continue
            field_where = _join(where, spec.name)
            sub = io.BytesIO(data)
            try:
                value = spec.type.read(sub, field_where)
            except DecodeError as exc:
                offset = None if exc.offset is None else exc.offset + data_start
                raise DecodeError(exc.reason, field=exc.field, offset=offset) from None
            if sub.tell() != size:
                raise _fail(
                    f"{size - sub.tell()} unread bytes in tagged field", field_where, offset=data_start
                )
            result[spec.name] = value
        if unknown:
            result[UNKNOWN_TAGGED_FIELDS] = unknown

    def write_from(self, value: Mapping[str, Any], stream: IO[bytes], where: str) -> None:
        items: list[tuple[int, bytes]] = []
        for spec in self.fields:
            field_value = value.get(spec.name, spec.default)
            if self._omitted(spec, field_value):
                continue
            sub = io.BytesIO()
            spec.type.write(field_value, sub, _join(where, spec.name))
            items.append((spec.tag, sub.getvalue()))
        unknown = value.get(UNKNOWN_TAGGED_FIELDS)
        if unknown:
            if not isinstance(unknown, Mapping):
                raise _bad("must map tags to bytes", _join(where, UNKNOWN_TAGGED_FIELDS))
            try:
                items.extend(checked_unknown_tags(unknown, self.known_tags))
            except (TypeError, ValueError) as exc:
                raise _bad(str(exc), _join(where, UNKNOWN_TAGGED_FIELDS)) from exc
        out = bytearray()
        write_tag_section(out, items)
        stream.write(out)

    @staticmethod
    def _omitted(spec: TaggedField, value: Any) -> bool:
        if _compares_encoded(spec):
            if not isinstance(value, Mapping):
                return False
            return _encoded(spec.type, value) == _encoded(spec.type, spec.default)
        return spec.type.is_default(value, spec.default)

    # statements

    def emit_decode_into(self, em: Emitter, target: str, bound: str) -> None:
        """After the dict ``target`` is built (known tagged fields at their defaults), read the section."""
        with em.block("if buf[pos]:"):
            if self.fields:
                reader = em.function("read_tags", "buf, pos, bound, d", self._emit_reader)
                em(f"pos = {reader}(buf, pos, {bound}, {target})")
            else:
                unknown = em.local("u")
                em(f"{unknown}, pos = read_unknown_tags(buf, pos, {bound})")
                em(f"if {unknown}: {target}[UNKNOWN_TAGGED_FIELDS] = {unknown}")
        with em.block("else:"):
            em("pos += 1")

    def _emit_reader(self, fn: Emitter) -> None:
        fn("count, pos = read_uvarint(buf, pos)")
        fn("if count > bound - pos: raise Malformed")
        fn("last = -1")
        fn("unknown = None")
        with fn.block("for _ in range(count):"):
            fn("tag, pos = read_uvarint(buf, pos)")
            fn("size, pos = read_uvarint(buf, pos)")
            fn("if tag <= last: raise Malformed")
            fn("last = tag")
            fn("end = pos + size")
            fn("if end > bound: raise Malformed")
            keyword = "if"
            for spec in self.fields:
                with fn.block(f"{keyword} tag == {spec.tag}:"):
                    value = fn.local("t")
                    spec.type.emit_decode(fn, value, "end")
                    fn("if pos != end: raise Malformed")
                    fn(f"d[{spec.name!r}] = {value}")
                keyword = "elif"
            with fn.block("else:"):
                fn("if unknown is None: unknown = d[UNKNOWN_TAGGED_FIELDS] = {}")
                fn("unknown[tag] = buf[pos:end]")
                fn("pos = end")
        fn("return pos")

    def emit_encode_from(self, em: Emitter, getter: str) -> None:
        """Write the section, reading field values with ``getter`` (the struct's ``dict.get``)."""
        unknown = em.local("u")
        em(f"{unknown} = {getter}(UNKNOWN_TAGGED_FIELDS)")
        if not self.fields:
            with em.block(f"if {unknown}:"):
                em(f"write_unknown_tags({em.out}, {unknown})")
            with em.block("else:"):
                em(f"{em.out}.append(0)")
            return
        values = []
        for spec in self.fields:
            value = em.local("t")
            em(f"{value} = {getter}({spec.name!r}, {em.constant(literal(spec.default), 'dflt')})")
            values.append(value)
        tests = [
            "False" if _compares_encoded(s) else s.type.emit_is_default(em, v, s.default)
            for s, v in zip(self.fields, values, strict=True)
        ]
        writer = em.function(
            "write_tags", "out, " + ", ".join(values) + ", u", lambda fn: self._emit_writer(fn, values)
        )
        with em.block(f"if {' and '.join(tests)} and not {unknown}:"):
            em(f"{em.out}.append(0)")
        with em.block("else:"):
            em(f"{writer}({em.out}, {', '.join(values)}, {unknown})")

    def _emit_writer(self, fn: Emitter, values: list[str]) -> None:
        fn("items = []")
        for spec, value in zip(self.fields, values, strict=True):
            with fn.output("o"):
                if _compares_encoded(spec):
                    default_bytes = fn.constant(repr(_encoded(spec.type, spec.default)), "dflt")
                    fn("o = bytearray()")
                    spec.type.emit_encode(fn, value)
                    fn(f"if o != {default_bytes}: items.append(({spec.tag}, o))")
                else:
                    with fn.block(f"if not ({spec.type.emit_is_default(fn, value, spec.default)}):"):
                        fn("o = bytearray()")
                        spec.type.emit_encode(fn, value)
                        fn(f"items.append(({spec.tag}, o))")
        known = fn.constant(f"frozenset({sorted(self.known_tags)!r})", "tags")
        fn(f"if u: items.extend(checked_unknown_tags(u, {known}))")
        fn("write_tag_section(out, items)")

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        em(f"{target} = {{}}")
        self.emit_decode_into(em, target, bound)

    def emit_encode(self, em: Emitter, value: str) -> None:
        getter = em.local("g")
        em(f"{getter} = {value}.get")
        self.emit_encode_from(em, getter)


def _compares_encoded(spec: TaggedField) -> bool:
    """Structs are tested for their default by comparing encodings (dicts may leave fields out)."""
    return isinstance(spec.type, KafkaStruct | NullableStruct) and spec.default is not None


def _fresh(value: Any) -> Any:
    """A copy of a default that the caller may mutate."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


def _encoded(kind: KafkaType, value: Any) -> bytes:
    stream = io.BytesIO()
    kind.write(value, stream, "")
    return stream.getvalue()


class KafkaStruct(KafkaType):
    """A struct at one version: its fields in order, then (flexible versions) a tag section.

    ``absent`` lists the struct's fields that this version lacks: data may carry them only at their
    default, or when they are ignorable (they are then dropped, as Kafka does).
    """

    def __init__(
        self,
        name: str,
        version: int,
        fields: Sequence[StructField],
        tags: TaggedFields | None = None,
        absent: Sequence[AbsentField] = (),
    ) -> None:
        super().__init__()
        self.kafka_name = name
        self.version = version
        self.fields = tuple(fields)
        self.tags = tags
        self.absent = {f.name: f for f in absent}
        self.names = frozenset(f.name for f in self.fields) | frozenset(
            f.name for f in (tags.fields if tags else ())
        )

    def default_value(self) -> dict[str, Any]:
        """The struct with every field at its default (what decoding an all-default encoding gives)."""
        result = {f.name: _fresh(f.default) for f in self.fields}
        for spec in self.tags.fields if self.tags else ():
            result[spec.name] = _fresh(spec.default)
        return result

    def read(self, stream: IO[bytes], where: str) -> dict[str, Any]:
        result = {f.name: f.type.read(stream, _join(where, f.name)) for f in self.fields}
        if self.tags is not None:
            self.tags.read_into(stream, where, result)
        return result

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, Mapping):
            raise _bad(f"{self.kafka_name} needs a mapping of field names, not {type(value).__name__}", where)
        self._check_keys(value, where)
        for spec in self.fields:
            spec.type.write(value.get(spec.name, spec.default), stream, _join(where, spec.name))
        if self.tags is not None:
            self.tags.write_from(value, stream, where)

    def _check_keys(self, value: Mapping[str, Any], where: str) -> None:
        for key in value:
            if key in self.names:
                continue
            if key == UNKNOWN_TAGGED_FIELDS:
                if self.tags is None and value[key]:
                    raise _bad(
                        f"version {self.version} is not flexible: it has no tagged fields", _join(where, key)
                    )
                continue
            absent = self.absent.get(key)
            if absent is None:
                known = ", ".join(sorted(self.names | set(self.absent))) or "none"
                raise _bad(f"{self.kafka_name} has no field {key!r} (its fields: {known})", where)
            if not absent.allows(value[key]):
                raise _bad(
                    f"version {self.version} lacks this field (versions {absent.versions}) and it is not "
                    f"ignorable; leave it out or at its default {absent.default!r}",
                    _join(where, key),
                )

    def is_default(self, value: Any, default: Any) -> bool:
        return isinstance(value, Mapping) and _encoded(self, value) == _encoded(self, default)

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        entries: list[str] = []
        batch: list[tuple[StructField, str]] = []
        for spec in self.fields:
            var = em.local("f")
            entries.append(f"{spec.name!r}: {var}")
            if spec.type.fixed is not None:
                batch.append((spec, var))
                continue
            _flush_decode(em, batch)
            spec.type.emit_decode(em, var, bound)
        _flush_decode(em, batch)
        if self.tags is not None:
            for spec in self.tags.fields:
                entries.append(f"{spec.name!r}: {literal(spec.default)}")
        em(f"{target} = {{{', '.join(entries)}}}")
        if self.tags is not None:
            self.tags.emit_decode_into(em, target, bound)

    def emit_encode(self, em: Emitter, value: str) -> None:
        allowed = set(self.names) | {name for name, f in self.absent.items() if f.ignorable}
        if self.tags is not None:
            allowed.add(UNKNOWN_TAGGED_FIELDS)
        keys = em.constant(f"frozenset({sorted(allowed)!r})", "keys")
        getter = em.local("g")
        em(f"if not {keys}.issuperset({value}): raise Fallback")
        em(f"{getter} = {value}.get")
        batch: list[tuple[StructField, str]] = []
        for spec in self.fields:
            var = em.local("f")
            em(f"{var} = {getter}({spec.name!r}, {em.constant(literal(spec.default), 'dflt')})")
            if spec.type.fixed is not None:
                batch.append((spec, var))
                continue
            _flush_encode(em, batch)
            spec.type.emit_encode(em, var)
        _flush_encode(em, batch)
        if self.tags is not None:
            self.tags.emit_encode_from(em, getter)


def _flush_decode(em: Emitter, batch: list[tuple[StructField, str]]) -> None:
    """Read a run of fixed-size fields with one ``unpack_from``."""
    if not batch:
        return
    fixed = [spec.type.fixed for spec, _ in batch]
    code = "".join(f.code for f in fixed if f)
    unpack = em.constant(f"_Struct('>{code}').unpack_from", "unpack")
    raws = [em.local("r") if f and f.post else var for f, (_, var) in zip(fixed, batch, strict=True)]
    em(f"{', '.join(raws)}, = {unpack}(buf, pos)")
    em(f"pos += {struct.calcsize('>' + code)}")
    for f, raw, (_, var) in zip(fixed, raws, batch, strict=True):
        if f and f.post:
            em(f"{var} = {f.post.format(raw)}")
    batch.clear()


def _flush_encode(em: Emitter, batch: list[tuple[StructField, str]]) -> None:
    """Write a run of fixed-size fields with one ``pack``."""
    if not batch:
        return
    fixed = [spec.type.fixed for spec, _ in batch]
    code = "".join(f.code for f in fixed if f)
    pack = em.constant(f"_Struct('>{code}').pack", "pack")
    args = [f.pre.format(var) if f and f.pre else var for f, (_, var) in zip(fixed, batch, strict=True)]
    em(f"{em.out} += {pack}({', '.join(args)})")
    batch.clear()


class NullableStruct(KafkaType):
    """A struct that may be null: an int8 marker (-1 null, 1 present) before the struct (KIP-893)."""

    def __init__(self, struct_type: KafkaStruct) -> None:
        super().__init__()
        self.struct = struct_type
        self.kafka_name = f"nullable_{struct_type.kafka_name}"

    def read(self, stream: IO[bytes], where: str) -> dict[str, Any] | None:
        start = stream.tell()
        marker = int.from_bytes(read_exact(stream, 1, where), "big", signed=True)
        if marker == -1:
            return None
        if marker != 1:
            raise _fail(f"invalid nullable struct marker {marker} (expected -1 or 1)", where, offset=start)
        return self.struct.read(stream, where)

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if value is None:
            stream.write(b"\xff")
            return
        stream.write(b"\x01")
        self.struct.write(value, stream, where)

    def is_default(self, value: Any, default: Any) -> bool:
        if default is None or value is None:
            return value is default
        return self.struct.is_default(value, default)

    def emit_is_default(self, em: Emitter, value: str, default: Any) -> str:
        return f"{value} is None" if default is None else "False"

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        marker = em.local("m")
        em(f"{marker} = buf[pos]")
        em("pos += 1")
        with em.block(f"if {marker} == 255:"):
            em(f"{target} = None")
        with em.block(f"elif {marker} == 1:"):
            self.struct.emit_decode(em, target, bound)
        with em.block("else:"):
            em("raise Malformed")

    def emit_encode(self, em: Emitter, value: str) -> None:
        with em.block(f"if {value} is None:"):
            em(f"{em.out}.append(255)")
        with em.block("else:"):
            em(f"{em.out}.append(1)")
            self.struct.emit_encode(em, value)


class KafkaMessage(KafkaType):
    """A whole message body at one version; compiles to ``decode_<name>_v<version>(buf, pos)``
    returning ``(dict, end)`` and ``encode_<name>_v<version>(data, out)`` appending to a bytearray."""

    def __init__(self, name: str, version: int, root: KafkaStruct) -> None:
        super().__init__()
        self.kafka_name = name
        self.version = version
        self.root = root
        self.decode_function = f"decode_{name}_v{version}"
        self.encode_function = f"encode_{name}_v{version}"

    def read(self, stream: IO[bytes], where: str) -> dict[str, Any]:
        return self.root.read(stream, where)

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        self.root.write(value, stream, where)

    def _emitparse(self, code: CodeGen) -> str:
        code.linkedinstances[id(self)] = self
        fn = Emitter(code)
        fn("bound = len(buf)")
        self.root.emit_decode(fn, "value", "bound")
        fn("return value, pos")
        code.append("\n".join([f"def {self.decode_function}(buf, pos):", *fn.lines]))
        return f"stream_decode(io, {self.decode_function}, linkedinstances[{id(self)}])"

    def _emitbuild(self, code: CodeGen) -> str:
        code.linkedinstances[id(self)] = self
        fn = Emitter(code)
        self.root.emit_encode(fn, "data")
        code.append("\n".join([f"def {self.encode_function}(data, out):", *fn.lines]))
        return f"stream_encode(obj, io, {self.encode_function}, linkedinstances[{id(self)}])"
