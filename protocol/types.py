"""Kafka's primitive wire types as construct classes (composite types are in :mod:`protocol.structs`).

Every type is a ``construct.Construct`` and works three ways:

- interpreted: ``_parse``/``_build`` (construct's API) read and write streams one field at a time and
  raise :class:`DecodeError`/:class:`EncodeError` naming the field path and the problem;
- compiled by construct: ``_emitparse``/``_emitbuild`` let ``construct.Struct(...).compile()`` embed
  these types (the emitted code runs the fast path below, and falls back to the interpreted path for
  a precise error);
- as statements: :meth:`KafkaType.emit_decode`/:meth:`KafkaType.emit_encode` write offset-based code
  into an :class:`~protocol.emit.Emitter`; :class:`~protocol.structs.KafkaStruct` inlines its fields'
  statements, so a whole message compiles to one flat function per direction. Fast paths cover the
  common shapes inline; anything else calls a general helper from :mod:`protocol.wire`.

Decoded values: ints, bool, float, ``str``, ``bytes``, ``uuid.UUID``, lists, and dicts keyed by field
name; ``None`` for null. Structs keep tagged fields they do not know under
:data:`~protocol.wire.UNKNOWN_TAGGED_FIELDS` so that encoding reproduces them.
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Final

from construct.core import CodeGen, Construct, SizeofError

from protocol.emit import Emitter, literal
from protocol.exceptions import DecodeError, EncodeError
from protocol.runs import Fixed
from protocol.wire import MAX_STRING_BYTES, uuid_from_bytes, uvarint_bytes, zigzag32, zigzag64

NULL_COMPACT: Final = b"\x00"
NULL_INT16: Final = b"\xff\xff"
NULL_INT32: Final = b"\xff\xff\xff\xff"


# -- stream helpers for the interpreted path -------------------------------------------------------------


def _where(path: str | None) -> str:
    """Turn construct's path (``(parsing) -> a -> b``) into a field path (``a.b``)."""
    if not path:
        return ""
    parts = [p for p in path.split(" -> ") if p and not p.startswith("(")]
    return ".".join(parts)


def join_path(where: str, name: str) -> str:
    """``where.name`` (field paths in error messages)."""
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


def decode_error(reason: str, where: str, offset: int | None = None) -> DecodeError:
    return DecodeError(reason, field=where or None, offset=offset)


def encode_error(reason: str, where: str) -> EncodeError:
    return EncodeError(reason, field=where or None)


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

    def skip(self, stream: IO[bytes], where: str) -> None:
        """Step over one value, checking it as :meth:`read` does (the same DecodeError) without keeping
        it; composite types build nothing of their elements."""
        self.read(stream, where)

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

    def emit_skip(self, em: Emitter, bound: str) -> None:
        """Advance ``pos`` over one value, rejecting (``Malformed``, or any exception) what
        :meth:`emit_decode` rejects. ``pos`` may pass ``bound`` here: the array that is being stepped
        over checks it once at its end."""
        if self.fixed is not None:
            em(f"pos += {self.fixed.size}")
        else:
            self.emit_decode(em, em.local("_"), bound)

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
        self._struct = struct.Struct(">" + code)
        self.fixed = Fixed(code, self._struct.size)

    def read(self, stream: IO[bytes], where: str) -> int:
        return int(self._struct.unpack(read_exact(stream, self._struct.size, where))[0])

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, int):
            raise encode_error(f"{self.kafka_name} needs an int, not {type(value).__name__} {value!r}", where)
        if not self.low <= value <= self.high:
            raise encode_error(
                f"{value} is out of range for {self.kafka_name} ({self.low}..{self.high})", where
            )
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
            raise encode_error(f"float64 needs a float, not {type(value).__name__} {value!r}", where)
        try:
            stream.write(struct.pack(">d", value))
        except OverflowError as exc:
            raise encode_error(f"{value} does not fit a float64", where) from exc


class Uuid(KafkaType):
    """16 bytes, as ``uuid.UUID``."""

    kafka_name = "uuid"
    fixed = Fixed("16s", 16, post="uuid_from_bytes({})", pre="{}.bytes")

    def read(self, stream: IO[bytes], where: str) -> uuid.UUID:
        return uuid_from_bytes(read_exact(stream, 16, where))

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, uuid.UUID):
            raise encode_error(f"uuid needs a uuid.UUID, not {type(value).__name__} {value!r}", where)
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
            raise encode_error(f"{self.kafka_name} needs an int, not {type(value).__name__} {value!r}", where)
        try:
            if self.signed:
                raw = zigzag32(value) if self.bits == 32 else zigzag64(value)
            elif not 0 <= value < 2**self.bits:
                raise ValueError(f"{value} is out of range for {self.kafka_name}")
            else:
                raw = value
        except ValueError as exc:
            raise encode_error(str(exc), where) from exc
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


def read_length_prefix(stream: IO[bytes], where: str, compact: bool, classic_size: int) -> int | None:
    """The length of a string/bytes/array, or None for null; DecodeError for negative lengths but -1."""
    start = stream.tell()
    if compact:
        raw = read_stream_uvarint(stream, where)
        return None if raw == 0 else raw - 1
    value = int.from_bytes(read_exact(stream, classic_size, where), "big", signed=True)
    if value == -1:
        return None
    if value < 0:
        raise decode_error(f"negative length {value}", where, offset=start)
    return value


def write_length(length: int, compact: bool, classic_size: int) -> bytes:
    if compact:
        return uvarint_bytes(length + 1)
    return length.to_bytes(classic_size, "big", signed=True)


def emit_write_length(em: Emitter, length: str, compact: bool, classic_code: str) -> None:
    """Append a length or count held in local ``length``: compact (uvarint + 1) or classic (int16/int32)."""
    if compact:
        with em.block(f"if {length} < 127:"):
            em(f"{em.out}.append({length} + 1)")
        with em.block("else:"):
            em(f"{em.out} += uvarint_bytes({length} + 1)")
    else:
        pack = em.constant(f"_Struct('>{classic_code}').pack", "pack")
        em(f"{em.out} += {pack}({length})")


@contextmanager
def emit_null_or(em: Emitter, value: str, nullable: bool, null: bytes) -> Iterator[None]:
    """For nullable types, write ``null`` when ``value`` is None; the body encodes the other case."""
    if not nullable:
        yield
        return
    with em.block(f"if {value} is None:"):
        em(f"{em.out} += {null!r}")
    with em.block("else:"):
        yield


class String(KafkaType):
    """UTF-8 text: classic (int16 length, -1 = null) or compact (uvarint length + 1, 0 = null)."""

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.compact, self.nullable = compact, nullable
        self.kafka_name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + "string"

    def read(self, stream: IO[bytes], where: str) -> str | None:
        start = stream.tell()
        length = read_length_prefix(stream, where, self.compact, 2)
        if length is None:
            if not self.nullable:
                raise decode_error("null in a non-nullable string", where, offset=start)
            return None
        if length > MAX_STRING_BYTES:
            raise decode_error(f"string length {length} is above {MAX_STRING_BYTES}", where, offset=start)
        data = read_exact(stream, length, where)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise decode_error(f"invalid UTF-8 ({exc.reason})", where, offset=start) from exc

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if value is None:
            if not self.nullable:
                raise encode_error("null is not allowed (the field is not nullable in this version)", where)
            stream.write(NULL_COMPACT if self.compact else NULL_INT16)
            return
        if not isinstance(value, str):
            raise encode_error(f"string needs a str, not {type(value).__name__} {value!r}", where)
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise encode_error(f"not encodable as UTF-8 ({exc.reason})", where) from exc
        if len(data) > MAX_STRING_BYTES:
            raise encode_error(f"string of {len(data)} bytes is longer than {MAX_STRING_BYTES}", where)
        stream.write(write_length(len(data), self.compact, 2))
        stream.write(data)

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        general = f"read_string(buf, pos, {bound}, {self.compact}, {self.nullable})"
        n, end = em.local("n"), em.local("e")
        if not self.compact:
            # The common case inline: a length of 0..0x7FFF (a null, -1, or a bad length has the sign
            # bit set: the helper tells them apart). Every such length is within MAX_STRING_BYTES.
            em(f"{n} = buf[pos] << 8 | buf[pos + 1]")
            with em.block(f"if {n} < 0x8000:"):
                em(f"{end} = pos + 2 + {n}")
                em(f"if {end} > {bound}: raise Malformed")
                em(f"{target} = buf[pos + 2:{end}].decode()")
                em(f"pos = {end}")
            if self.nullable:  # a null (-1) inline too: a client names no instance id, no rack...
                with em.block(f"elif {n} == 0xFFFF:"):
                    em(f"{target} = None")
                    em("pos += 2")
            with em.block("else:"):
                em(f"{target}, pos = {general}")
            return
        # The common case inline: a one-byte length, not null. That byte holds the length + 1, so the
        # string ends at pos + byte.
        em(f"{n} = buf[pos]")
        with em.block(f"if 0 < {n} < 128:"):
            em(f"{end} = pos + {n}")
            em(f"if {end} > {bound}: raise Malformed")
            em(f"{target} = buf[pos + 1:{end}].decode()")
            em(f"pos = {end}")
        if self.nullable:
            with em.block(f"elif {n} == 0:"):
                em(f"{target} = None")
                em("pos += 1")
        with em.block("else:"):
            em(f"{target}, pos = {general}")

    def emit_encode(self, em: Emitter, value: str) -> None:
        with emit_null_or(em, value, self.nullable, NULL_COMPACT if self.compact else NULL_INT16):
            data, n = em.local("s"), em.local("n")
            em(f"{data} = {value}.encode()")
            em(f"{n} = len({data})")
            em(f"if {n} > {MAX_STRING_BYTES}: raise Fallback")
            emit_write_length(em, n, self.compact, "h")
            em(f"{em.out} += {data}")


class Bytes(KafkaType):
    """Raw bytes (also ``records``): classic (int32 length, -1 = null) or compact (uvarint length + 1)."""

    def __init__(self, compact: bool, nullable: bool, kafka_name: str = "bytes") -> None:
        super().__init__()
        self.compact, self.nullable = compact, nullable
        self.kafka_name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + kafka_name

    def read(self, stream: IO[bytes], where: str) -> bytes | None:
        start = stream.tell()
        length = read_length_prefix(stream, where, self.compact, 4)
        if length is None:
            if not self.nullable:
                raise decode_error("null in non-nullable bytes", where, offset=start)
            return None
        return read_exact(stream, length, where)

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if value is None:
            if not self.nullable:
                raise encode_error("null is not allowed (the field is not nullable in this version)", where)
            stream.write(NULL_COMPACT if self.compact else NULL_INT32)
            return
        if not isinstance(value, bytes | bytearray | memoryview):
            raise encode_error(f"bytes needs bytes, not {type(value).__name__}", where)
        data = bytes(value)
        if len(data) >= 2**31 - 1:
            raise encode_error(f"{len(data)} bytes is too long", where)
        stream.write(write_length(len(data), self.compact, 4))
        stream.write(data)

    def is_default(self, value: Any, default: Any) -> bool:
        return value is None if default is None else (value is not None and len(value) == 0)

    def emit_is_default(self, em: Emitter, value: str, default: Any) -> str:
        return f"{value} is None" if default is None else f"({value} is not None and len({value}) == 0)"

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        em(f"{target}, pos = read_bytes(buf, pos, {bound}, {self.compact}, {self.nullable})")

    def emit_skip(self, em: Emitter, bound: str) -> None:
        em(f"pos = skip_bytes(buf, pos, {bound}, {self.compact}, {self.nullable})")

    def emit_encode(self, em: Emitter, value: str) -> None:
        with emit_null_or(em, value, self.nullable, NULL_COMPACT if self.compact else NULL_INT32):
            n = em.local("n")
            em(f"if {value}.__class__ is not bytes: raise Fallback")
            em(f"{n} = len({value})")
            emit_write_length(em, n, self.compact, "i")
            em(f"{em.out} += {value}")
