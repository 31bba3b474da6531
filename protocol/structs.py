"""Kafka's composite wire types as construct classes: arrays, structs, tag sections, nullable structs,
and :class:`KafkaMessage`, the top of a message's construct tree. See :mod:`protocol.types` for the
three ways every type works (interpreted, compiled by construct, statements for the fast path).
"""

from __future__ import annotations

import contextlib
import io
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

from construct.core import CodeGen

from protocol.emit import Emitter, literal
from protocol.exceptions import DecodeError
from protocol.runs import Runs, Value, Values
from protocol.types import (
    NULL_COMPACT,
    NULL_INT32,
    Fixed,
    KafkaType,
    decode_error,
    emit_null_or,
    emit_write_length,
    encode_error,
    join_path,
    read_exact,
    read_length_prefix,
    read_stream_uvarint,
    remaining,
    write_length,
)
from protocol.wire import (
    SMALL_ARRAY,
    UNKNOWN_TAGGED_FIELDS,
    UNKNOWN_TAGS_FOUND,
    Capped,
    checked_unknown_tags,
    write_tag_section,
)

_MAX_COUNT: Final = 2**31 - 1


class Array(KafkaType):
    """A sequence of one element type: classic (int32 count, -1 = null) or compact (uvarint count + 1).

    ``cap``: the most elements the array may hold (see :mod:`protocol.caps`); one that holds more is
    stepped over, its elements checked but not built, and decodes to :class:`~protocol.wire.Capped`.
    """

    def __init__(self, element: KafkaType, compact: bool, nullable: bool, cap: int | None = None) -> None:
        super().__init__()
        self.element, self.compact, self.nullable, self.cap = element, compact, nullable, cap
        self.kafka_name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + "array"

    def read(self, stream: IO[bytes], where: str) -> list[Any] | Capped | None:
        count = self._read_count(stream, where)
        if count is None:
            return None
        if self.cap is not None and count > self.cap:
            self._skip_elements(stream, where, count)
            return Capped(count, self.cap)
        return [self.element.read(stream, f"{where}[{index}]") for index in range(count)]

    def skip(self, stream: IO[bytes], where: str) -> None:
        count = self._read_count(stream, where)
        if count:
            self._skip_elements(stream, where, count)

    def _read_count(self, stream: IO[bytes], where: str) -> int | None:
        """The count (None for null), once the elements are known to fit the bytes left."""
        start = stream.tell()
        count = read_length_prefix(stream, where, self.compact, 4)
        if count is None:
            if not self.nullable:
                raise decode_error("null in a non-nullable array", where, offset=start)
            return None
        left = remaining(stream)
        if count > left:
            raise decode_error(f"array count {count} exceeds the {left} bytes left", where, offset=start)
        fixed = self.element.fixed
        if fixed is not None and count * fixed.size > left:
            # The values cannot all be there: read the first missing one for its error, and allocate
            # nothing for the others.
            missing = left // fixed.size
            stream.seek(missing * fixed.size, io.SEEK_CUR)
            self.element.read(stream, f"{where}[{missing}]")
            raise AssertionError("unreachable: the element above is truncated")  # pragma: no cover
        return count

    def _skip_elements(self, stream: IO[bytes], where: str, count: int) -> None:
        fixed = self.element.fixed
        if fixed is not None:  # _read_count saw that they are all there
            stream.seek(count * fixed.size, io.SEEK_CUR)
            return
        skip = self.element.skip
        for index in range(count):
            skip(stream, f"{where}[{index}]")

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if value is None:
            if not self.nullable:
                raise encode_error("null is not allowed (the field is not nullable in this version)", where)
            stream.write(NULL_COMPACT if self.compact else NULL_INT32)
            return
        if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Sequence):
            raise encode_error(f"array needs a list or tuple, not {type(value).__name__}", where)
        if len(value) > _MAX_COUNT:
            raise encode_error(f"{len(value)} elements is too many", where)
        stream.write(write_length(len(value), self.compact, 4))
        for index, item in enumerate(value):
            self.element.write(item, stream, f"{where}[{index}]")

    def is_default(self, value: Any, default: Any) -> bool:
        return value is None if default is None else (value is not None and len(value) == 0)

    def emit_is_default(self, em: Emitter, value: str, default: Any) -> str:
        return f"{value} is None" if default is None else f"({value} is not None and len({value}) == 0)"

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        fixed = self.element.fixed
        if fixed is not None:
            self._emit_decode_fixed(em, fixed, target, bound)
            return
        n = em.local("n")
        if self.compact:  # the common case inline: a one-byte count, not null
            em(f"{n} = buf[pos] - 1")
            with em.block(f"if 0 <= {n} < 127:"):
                em("pos += 1")
            with em.block("else:"):
                em(f"{n}, pos = read_count(buf, pos, {bound}, True, {self.nullable})")
        else:
            em(f"{n}, pos = read_count(buf, pos, {bound}, False, {self.nullable})")
        if self.nullable:
            with em.block(f"if {n} < 0:"):
                em(f"{target} = None")
            body = em.block("else:")
        else:
            body = contextlib.nullcontext()
        with body, self._emit_capped(em, n, target, bound):
            runs = self._runs()
            if runs is not None:
                self._emit_decode_runs(em, runs, n, target, bound)
                return
            append, item = em.local("ap"), em.local("it")
            em(f"{target} = []")
            em(f"{append} = {target}.append")
            with em.block(f"for _ in range({n}):"):
                self.element.emit_decode(em, item, bound)
                em(f"{append}({item})")

    @contextlib.contextmanager
    def _emit_capped(self, em: Emitter, n: str, target: str, bound: str) -> Iterator[None]:
        """For a capped array, the statements that step over ``n`` elements above the cap; the body
        decodes the others."""
        if self.cap is None:
            yield
            return
        with em.block(f"if {n} > {self.cap}:"):
            em(f"{target} = Capped({n}, {self.cap})")
            self._emit_skip_elements(em, n, bound)
        with em.block("else:"):
            yield

    def emit_skip(self, em: Emitter, bound: str) -> None:
        n = em.local("n")
        em(f"{n}, pos = read_count(buf, pos, {bound}, {self.compact}, {self.nullable})")
        with em.block(f"if {n} > 0:"):
            self._emit_skip_elements(em, n, bound)

    def _emit_skip_elements(self, em: Emitter, n: str, bound: str) -> None:
        """Advance ``pos`` over ``n`` (> 0) elements, checked but not built, and to no further than
        ``bound``."""
        size = _static_size(self.element)
        runs = None if size is not None else self._runs()
        if size is not None:
            if size:
                em(f"pos += {size} * {n}")
        elif runs is not None:

            def element(fn: Emitter) -> None:
                self.element.emit_skip(fn, "bound")
                fn("return pos")

            skip_element = em.function("skip_element", "buf, pos, bound", element)
            em(f"pos = {em.constant(runs.source(), 'runs')}.skip(buf, pos, {bound}, {n}, {skip_element})")
        else:
            with em.block(f"for _ in range({n}):"):
                self.element.emit_skip(em, bound)
        em(f"if pos > {bound}: raise Malformed")

    def _runs(self) -> Runs | None:
        """A site for reading runs of elements, when the elements are structs of fixed-size values and
        arrays of them (see :mod:`protocol.runs`)."""
        element = self.element
        if not isinstance(element, KafkaStruct):
            return None
        fields: list[Value | Values] = []
        for spec in element.fields:
            kind = spec.type
            if kind.fixed is not None:
                fields.append(Value(spec.name, kind.fixed))
            elif isinstance(kind, Array) and kind.element.fixed is not None:
                fields.append(Values(spec.name, kind.element.fixed, kind.compact, kind.nullable, kind.cap))
            else:
                return None
        flexible = element.tags is not None
        if not Runs.possible(fields, flexible):
            return None
        tagged = [(spec.name, spec.default) for spec in element.tagged]
        return Runs(element.kafka_name, fields, flexible, tagged)

    def _emit_decode_runs(self, em: Emitter, runs: Runs, n: str, target: str, bound: str) -> None:
        """The array through ``runs``: the shape of the last run first, then run by run, and element by
        element (a generated function) where no run applies."""

        def element(fn: Emitter) -> None:
            self.element.emit_decode(fn, "value", "bound")
            fn("return value, pos")

        decode_element = em.function("element", "buf, pos, bound", element)
        site, found = em.local("rs"), em.local("r")
        with em.block(f"if {n} > 0:"):
            em(f"{site} = {em.constant(runs.source(), 'runs')}")
            em(f"{found} = {site}.last(buf, pos, {bound}, {n})")
            with em.block(f"if {found} is None:"):
                em(f"{found} = {site}.decode(buf, pos, {bound}, {n}, {decode_element})")
            em(f"{target}, pos = {found}")
        with em.block("else:"):
            em(f"{target} = []")

    def _emit_decode_fixed(self, em: Emitter, fixed: Fixed, target: str, bound: str) -> None:
        unpackers = em.constant(f"array_unpackers({fixed.code!r})", "arrays")
        convert = "uuid_from_bytes" if fixed.post else "None"
        cap = "" if self.cap is None else f", {self.cap}"  # then the general helper gives the Capped
        general = (
            f"read_fixed_array(buf, pos, {bound}, {self.compact}, {self.nullable}, "
            f"{fixed.code!r}, {fixed.size}, {convert}{cap})"
        )
        # At most this many values take the fast path.
        most = SMALL_ARRAY - 2 if self.cap is None else min(SMALL_ARRAY - 2, self.cap)
        n = em.local("n")
        if self.compact:
            # The count byte itself (count + 1) indexes a table shifted by one: no subtraction.
            unpackers = em.constant(f"(None,) + {unpackers}", "arrays")
            em(f"{n} = buf[pos]")
            test = f"0 < {n} < {most + 2}"
            values = f"{unpackers}[{n}](buf, pos + 1)"
            advance = f"{fixed.size} * {n} - {fixed.size - 1}" if fixed.size > 1 else n
        else:
            unpack = em.constant("_Struct('>i').unpack_from", "unpack")
            em(f"{n}, = {unpack}(buf, pos)")
            test = f"0 <= {n} < {most + 1}"
            values = f"{unpackers}[{n}](buf, pos + 4)"
            advance = f"4 + {fixed.size} * {n}"
        with em.block(f"if {test}:"):
            if fixed.post:
                em(f"{target} = [{fixed.post.format('x')} for x in {values}]")
            else:
                em(f"{target} = [*{values}]")
            em(f"pos += {advance}")
        with em.block("else:"):
            em(f"{target}, pos = {general}")

    def emit_encode(self, em: Emitter, value: str) -> None:
        with emit_null_or(em, value, self.nullable, NULL_COMPACT if self.compact else NULL_INT32):
            em(f"if {value}.__class__ is not list and {value}.__class__ is not tuple: raise Fallback")
            n = em.local("n")
            em(f"{n} = len({value})")
            emit_write_length(em, n, self.compact, "i")
            fixed = self.element.fixed
            if fixed is not None:
                packers = em.constant(f"array_packers({fixed.code!r})", "arrays")
                items = f"[{fixed.pre.format('x')} for x in {value}]" if fixed.pre else value
                with em.block(f"if {n} < {SMALL_ARRAY}:"):
                    em(f"{em.out} += {packers}[{n}](*{items})")
                with em.block("else:"):  # no format of this length: see pack_fixed
                    em(f"{em.out} += pack_fixed({fixed.code!r}, {items})")
            else:
                item = em.local("it")
                with em.block(f"for {item} in {value}:"):
                    self.element.emit_encode(em, item)


class EncodedElements(KafkaType):
    """An array given as the encodings of its elements: a list of ``bytes``, each one element exactly as
    ``array.element`` writes it (or None for a null array). Writing puts the array's count before the
    pieces, which go out as they are; reading is ``array``'s."""

    def __init__(self, array: Array) -> None:
        super().__init__()
        self.array = array
        self.kafka_name = f"encoded_{array.kafka_name}"

    def read(self, stream: IO[bytes], where: str) -> list[Any] | Capped | None:
        return self.array.read(stream, where)

    def skip(self, stream: IO[bytes], where: str) -> None:
        self.array.skip(stream, where)

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if value is None:
            self.array.write(value, stream, where)  # null, or the error for a non-nullable array
            return
        if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Sequence):
            raise encode_error(f"encoded elements need a list of bytes, not {type(value).__name__}", where)
        if len(value) > _MAX_COUNT:
            raise encode_error(f"{len(value)} elements is too many", where)
        for index, piece in enumerate(value):
            if not isinstance(piece, bytes | bytearray | memoryview):
                raise encode_error(
                    f"an encoded element must be bytes, not {type(piece).__name__}", f"{where}[{index}]"
                )
        stream.write(write_length(len(value), self.array.compact, 4))
        stream.write(b"".join(value))

    def is_default(self, value: Any, default: Any) -> bool:
        return self.array.is_default(value, default)

    def emit_is_default(self, em: Emitter, value: str, default: Any) -> str:
        return self.array.emit_is_default(em, value, default)

    def emit_decode(self, em: Emitter, target: str, bound: str) -> None:
        self.array.emit_decode(em, target, bound)

    def emit_skip(self, em: Emitter, bound: str) -> None:
        self.array.emit_skip(em, bound)

    def emit_encode(self, em: Emitter, value: str) -> None:
        null = NULL_COMPACT if self.array.compact else NULL_INT32
        with emit_null_or(em, value, self.array.nullable, null):
            em(f"if {value}.__class__ is not list and {value}.__class__ is not tuple: raise Fallback")
            n = em.local("n")
            em(f"{n} = len({value})")
            emit_write_length(em, n, self.array.compact, "i")
            em(f"write_elements({em.out}, {value})")


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


def _fresh(value: Any) -> Any:
    """A copy of a default that the caller may mutate (defaults are stored in immutable form)."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


def _encoded(kind: KafkaType, value: Any) -> bytes:
    stream = io.BytesIO()
    kind.write(value, stream, "")
    return stream.getvalue()


def _compares_encoded(spec: TaggedField) -> bool:
    """Structs are tested for their default by comparing encodings (dicts may leave fields out)."""
    return isinstance(spec.type, KafkaStruct | NullableStruct) and spec.default is not None


class TaggedFields(KafkaType):
    """A tag section: uvarint count, then ``tag, size, data`` per field in ascending tag order.

    Known fields are read into the enclosing struct's dict; unknown ones are kept as raw bytes under
    ``UNKNOWN_TAGGED_FIELDS`` so that writing the dict again reproduces them.
    """

    kafka_name = "tagged_fields"

    def __init__(self, fields: Sequence[TaggedField] = ()) -> None:
        super().__init__()
        self.fields = tuple(sorted(fields, key=lambda f: f.tag))
        self.by_tag = {f.tag: f for f in self.fields}
        self.known_tags = frozenset(self.by_tag)

    # interpreted ---------------------------------------------------------------------------------------

    def read(self, stream: IO[bytes], where: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        self.read_into(stream, where, result)
        return result

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, Mapping):
            raise encode_error(f"a tag section needs a mapping, not {type(value).__name__}", where)
        self.write_from(value, stream, where)

    def skip(self, stream: IO[bytes], where: str) -> None:
        self._walk(stream, where, None)

    def read_into(self, stream: IO[bytes], where: str, result: dict[str, Any]) -> None:
        for spec in self.fields:
            result[spec.name] = _fresh(spec.default)
        self._walk(stream, where, result)

    def _walk(self, stream: IO[bytes], where: str, result: dict[str, Any] | None) -> None:
        """Read the section into ``result``, or (None) step over it, checking it the same way."""
        section = join_path(where, "<tags>")
        start = stream.tell()
        count = read_stream_uvarint(stream, section)
        if count > remaining(stream):
            raise decode_error(f"tag count {count} exceeds the bytes left", section, offset=start)
        unknown: dict[int, bytes] = {}
        last = -1
        for _ in range(count):
            tag_start = stream.tell()
            tag = read_stream_uvarint(stream, section)
            size = read_stream_uvarint(stream, join_path(where, f"<tag {tag}>"))
            if tag <= last:
                raise decode_error(
                    f"tag {tag} after tag {last}: tags must be ascending", section, offset=tag_start
                )
            last = tag
            data_start = stream.tell()
            data = read_exact(stream, size, join_path(where, f"<tag {tag}>"))
            spec = self.by_tag.get(tag)
            if spec is None:
                if result is not None:
                    unknown[tag] = data
                continue
            field_where = join_path(where, spec.name)
            sub = io.BytesIO(data)
            try:
                if result is None:
                    spec.type.skip(sub, field_where)
                else:
                    value = spec.type.read(sub, field_where)
            except DecodeError as exc:
                offset = None if exc.offset is None else exc.offset + data_start
                raise DecodeError(exc.reason, field=exc.field, offset=offset) from None
            if sub.tell() != size:
                raise decode_error(
                    f"{size - sub.tell()} unread bytes in tagged field", field_where, offset=data_start
                )
            if result is not None:
                result[spec.name] = value
        if unknown and result is not None:
            result[UNKNOWN_TAGGED_FIELDS] = unknown
            UNKNOWN_TAGS_FOUND.count += 1

    def write_from(self, value: Mapping[str, Any], stream: IO[bytes], where: str) -> None:
        items: list[tuple[int, bytes]] = []
        for spec in self.fields:
            field_value = value.get(spec.name, spec.default)
            if self._omitted(spec, field_value):
                continue
            sub = io.BytesIO()
            spec.type.write(field_value, sub, join_path(where, spec.name))
            items.append((spec.tag, sub.getvalue()))
        unknown = value.get(UNKNOWN_TAGGED_FIELDS)
        if unknown:
            if not isinstance(unknown, Mapping):
                raise encode_error("must map tags to bytes", join_path(where, UNKNOWN_TAGGED_FIELDS))
            try:
                items.extend(checked_unknown_tags(unknown, self.known_tags))
            except (TypeError, ValueError) as exc:
                raise encode_error(str(exc), join_path(where, UNKNOWN_TAGGED_FIELDS)) from exc
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

    # statements ----------------------------------------------------------------------------------------

    def emit_decode_into(self, em: Emitter, target: str, bound: str) -> None:
        """After the dict ``target`` is built (known tagged fields at their defaults), read the section."""
        with em.block("if buf[pos]:"):
            if self.fields:
                reader = em.function("read_tags", "buf, pos, bound, d", self._emit_reader)
                em(f"pos = {reader}(buf, pos, {bound}, {target})")
            else:
                unknown = em.local("u")
                em(f"{unknown}, pos = read_unknown_tags(buf, pos, {bound})")
                with em.block(f"if {unknown}:"):
                    em(f"{target}[UNKNOWN_TAGGED_FIELDS] = {unknown}")
                    em("UNKNOWN_TAGS_FOUND.count += 1")
        with em.block("else:"):
            em("pos += 1")

    def emit_skip(self, em: Emitter, bound: str) -> None:
        """Step over the section, checking it as :meth:`emit_decode_into` does."""
        with em.block("if buf[pos]:"):
            if self.fields:
                skipper = em.function("skip_tags", "buf, pos, bound", lambda fn: self._emit_reader(fn, True))
                em(f"pos = {skipper}(buf, pos, {bound})")
            else:
                em(f"_, pos = read_unknown_tags(buf, pos, {bound}, False)")
        with em.block("else:"):
            em("pos += 1")

    def _emit_reader(self, fn: Emitter, skip: bool = False) -> None:
        """The body of ``read_tags(buf, pos, bound, d)``, or (``skip``) of ``skip_tags(buf, pos, bound)``."""
        fn("count, pos = read_uvarint(buf, pos)")
        fn("if count > bound - pos: raise Malformed")
        fn("last = -1")
        if not skip:
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
                    if skip:
                        spec.type.emit_skip(fn, "end")
                    else:
                        spec.type.emit_decode(fn, value, "end")
                    fn("if pos != end: raise Malformed")
                    if not skip:
                        fn(f"d[{spec.name!r}] = {value}")
                keyword = "elif"
            with fn.block("else:"):
                if not skip:
                    with fn.block("if unknown is None:"):
                        fn("unknown = d[UNKNOWN_TAGGED_FIELDS] = {}")
                        fn("UNKNOWN_TAGS_FOUND.count += 1")
                    fn("unknown[tag] = buf[pos:end]")
                fn("pos = end")
        fn("return pos")

    def emit_encode_from(self, em: Emitter, values: Sequence[str], unknown: str) -> None:
        """Write the section from locals: ``values`` holds the known fields (in tag order), ``unknown``
        the kept unknown fields (or a false value)."""
        if not self.fields:
            with em.block(f"if {unknown}:"):
                em(f"write_unknown_tags({em.out}, {unknown})")
            with em.block("else:"):
                em(f"{em.out}.append(0)")
            return
        tests = [
            "False" if _compares_encoded(s) else s.type.emit_is_default(em, v, s.default)
            for s, v in zip(self.fields, values, strict=True)
        ]
        # The writer's parameters get names of their own: its body makes locals with the usual hints.
        params = [f"arg_{index}" for index in range(len(values))]
        writer = em.function(
            "write_tags", f"out, {', '.join(params)}, u", lambda fn: self._emit_writer(fn, params)
        )
        with em.block(f"if {' and '.join(tests)} and not {unknown}:"):
            em(f"{em.out}.append(0)")
        with em.block("else:"):
            em(f"{writer}({em.out}, {', '.join(values)}, {unknown})")

    def _emit_writer(self, fn: Emitter, values: Sequence[str]) -> None:
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
        values = []
        for spec in self.fields:
            local = em.local("t")
            em(f"{local} = {getter}({spec.name!r}, {em.constant(literal(spec.default), 'dflt')})")
            values.append(local)
        unknown = em.local("u")
        em(f"{unknown} = {getter}(UNKNOWN_TAGGED_FIELDS)")
        self.emit_encode_from(em, values, unknown)


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
        self.tagged = tags.fields if tags else ()
        self.names = frozenset(f.name for f in (*self.fields, *self.tagged))

    def default_value(self) -> dict[str, Any]:
        """The struct with every field at its default (what decoding an all-default encoding gives)."""
        return {f.name: _fresh(f.default) for f in (*self.fields, *self.tagged)}

    def read(self, stream: IO[bytes], where: str) -> dict[str, Any]:
        result = {f.name: f.type.read(stream, join_path(where, f.name)) for f in self.fields}
        if self.tags is not None:
            self.tags.read_into(stream, where, result)
        return result

    def skip(self, stream: IO[bytes], where: str) -> None:
        for spec in self.fields:
            spec.type.skip(stream, join_path(where, spec.name))
        if self.tags is not None:
            self.tags.skip(stream, where)

    def write(self, value: Any, stream: IO[bytes], where: str) -> None:
        if not isinstance(value, Mapping):
            raise encode_error(
                f"{self.kafka_name} needs a mapping of field names, not {type(value).__name__}", where
            )
        self._check_keys(value, where)
        for spec in self.fields:
            spec.type.write(value.get(spec.name, spec.default), stream, join_path(where, spec.name))
        if self.tags is not None:
            self.tags.write_from(value, stream, where)

    def _check_keys(self, value: Mapping[str, Any], where: str) -> None:
        for key in value:
            if key in self.names:
                continue
            if key == UNKNOWN_TAGGED_FIELDS:
                if self.tags is None and value[key]:
                    raise encode_error(
                        f"version {self.version} is not flexible: it has no tagged fields",
                        join_path(where, key),
                    )
                continue
            absent = self.absent.get(key)
            if absent is None:
                known = ", ".join(sorted(self.names | set(self.absent))) or "none"
                raise encode_error(f"{self.kafka_name} has no field {key!r} (its fields: {known})", where)
            if not absent.allows(value[key]):
                raise encode_error(
                    f"version {self.version} lacks this field (versions {absent.versions}) and it is not "
                    f"ignorable; leave it out or at its default {absent.default!r}",
                    join_path(where, key),
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
        entries.extend(f"{spec.name!r}: {literal(spec.default)}" for spec in self.tagged)
        em(f"{target} = {{{', '.join(entries)}}}")
        if self.tags is not None:
            self.tags.emit_decode_into(em, target, bound)

    def emit_skip(self, em: Emitter, bound: str) -> None:
        size = 0  # of the fixed-size fields not yet stepped over
        for spec in self.fields:
            if spec.type.fixed is not None:
                size += spec.type.fixed.size
                continue
            if size:
                em(f"pos += {size}")
                size = 0
            spec.type.emit_skip(em, bound)
        if size:
            em(f"pos += {size}")
        if self.tags is not None:
            self.tags.emit_skip(em, bound)

    def emit_encode(self, em: Emitter, value: str) -> None:
        every = (*self.fields, *self.tagged)
        local = {spec.name: em.local("f") for spec in every}
        unknown = em.local("u") if self.tags is not None else None
        # Data holding exactly this version's fields (a decoded message, a complete handler result) is
        # read with subscripts; anything else goes through a helper that checks names and fills defaults.
        targets = [local[spec.name] for spec in every] + ([unknown] if unknown else [])
        assign = f"{', '.join(targets)}, = " if targets else ""
        general = em.function("fields", "v", self._emit_fields)
        with em.block(f"if len({value}) == {len(every)}:"):
            with em.block("try:"):
                for spec in every:
                    em(f"{local[spec.name]} = {value}[{spec.name!r}]")
                if unknown:
                    em(f"{unknown} = None")
            with em.block("except KeyError:"):
                em(f"{assign}{general}({value})")
        with em.block("else:"):
            em(f"{assign}{general}({value})")
        batch: list[tuple[StructField, str]] = []
        for spec in self.fields:
            if spec.type.fixed is not None:
                batch.append((spec, local[spec.name]))
                continue
            _flush_encode(em, batch)
            spec.type.emit_encode(em, local[spec.name])
        _flush_encode(em, batch)
        if self.tags is not None and unknown:
            self.tags.emit_encode_from(em, [local[spec.name] for spec in self.tagged], unknown)

    def _emit_fields(self, fn: Emitter) -> None:
        """Body of ``fields(v)``: check the names in ``v``, return every field's value (defaults for the
        absent ones) and, in flexible versions, the kept unknown tagged fields."""
        allowed = set(self.names) | {name for name, f in self.absent.items() if f.ignorable}
        # A field this version lacks, not ignorable, with a plain default may come at that default (one
        # answer built for every version carries it so); any other value, or a default of another kind,
        # is for the interpreted codec to judge (:meth:`AbsentField.allows`) and name in its error.
        at_default = {
            name: f.default
            for name, f in self.absent.items()
            if not f.ignorable and (f.default is None or type(f.default) in (bool, int, str))
        }
        allowed |= set(at_default)
        if self.tags is not None:
            allowed.add(UNKNOWN_TAGGED_FIELDS)
        keys = fn.constant(f"frozenset({sorted(allowed)!r})", "keys")
        fn(f"if not {keys}.issuperset(v): raise Fallback")
        for name, default in sorted(at_default.items()):
            if default is None:
                fn(f"if v.get({name!r}) is not None: raise Fallback")
            else:
                fn(f"if {name!r} in v and v[{name!r}] != {default!r}: raise Fallback")
        fn("g = v.get")
        items = [
            f"g({spec.name!r}, {fn.constant(literal(spec.default), 'dflt')})"
            for spec in (*self.fields, *self.tagged)
        ]
        if self.tags is not None:
            items.append("g(UNKNOWN_TAGGED_FIELDS)")
        fn(f"return ({', '.join(items)}{',' if items else ''})")


def _static_size(kind: KafkaType) -> int | None:
    """The size every value of ``kind`` takes, if it has one: fixed-size values, and structs of them
    without a tag section."""
    if kind.fixed is not None:
        return kind.fixed.size
    if isinstance(kind, KafkaStruct) and kind.tags is None:
        sizes = [_static_size(spec.type) for spec in kind.fields]
        if all(size is not None for size in sizes):
            return sum(size for size in sizes if size is not None)
    return None


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
        return self.struct.read(stream, where) if self._marker(stream, where) else None

    @staticmethod
    def _marker(stream: IO[bytes], where: str) -> bool:
        """Whether a struct follows (marker 1) or not (-1, null)."""
        start = stream.tell()
        marker = int.from_bytes(read_exact(stream, 1, where), "big", signed=True)
        if marker == -1:
            return False
        if marker != 1:
            raise decode_error(
                f"invalid nullable struct marker {marker} (expected -1 or 1)", where, offset=start
            )
        return True

    def skip(self, stream: IO[bytes], where: str) -> None:
        if self._marker(stream, where):
            self.struct.skip(stream, where)

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

    def emit_skip(self, em: Emitter, bound: str) -> None:
        marker = em.local("m")
        em(f"{marker} = buf[pos]")
        em("pos += 1")
        with em.block(f"if {marker} == 1:"):
            self.struct.emit_skip(em, bound)
        with em.block(f"elif {marker} != 255:"):
            em("raise Malformed")

    def emit_encode(self, em: Emitter, value: str) -> None:
        with em.block(f"if {value} is None:"):
            em(f"{em.out}.append(255)")
        with em.block("else:"):
            em(f"{em.out}.append(1)")
            self.struct.emit_encode(em, value)


class KafkaMessage(KafkaType):
    """A whole message body at one version. Compiling it generates ``decode_<name>_v<version>(buf, pos)``,
    returning ``(dict, end)``, and ``encode_<name>_v<version>(data, out)``, appending to a bytearray."""

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
