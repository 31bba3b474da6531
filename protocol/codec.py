"""Codecs per (message, version), made from the spec model and compiled with construct's compiler.

:func:`build_message` turns a :class:`~protocol.spec.MessageSpec` at one version into a
:class:`~protocol.types.KafkaMessage` construct. :class:`VersionCodec` compiles it (construct's compiler, its
Python bytecode kept on disk: :mod:`protocol.compiled`) and
runs the generated functions; when they fail (malformed input, unusual data) it re-runs the
interpreted construct, which either produces the result or raises an error naming the field.
:class:`Message` is the public face: one spec, every version, codecs compiled on first use.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import logging
import pickle
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from protocol import structs as s
from protocol import types as t
from protocol.caps import CapPath, applicable, check_caps
from protocol.compiled import compile_construct, compile_message
from protocol.exceptions import CapsError, DecodeError, EncodeError, ProtocolError
from protocol.spec import STRUCT_DEFAULT, FieldSpec, MessageSpec, SpecHeader, Versions
from protocol.wire import Gaps

#: A body decoder of its own for one API (a handler's ``decode``, e.g. :mod:`protocol.produce_request`):
#: ``(frame, offset, version)`` -> the request as the codec gives it and where it ended, or None for a
#: body it leaves to the codec.
DecodeFn = Callable[[bytes, int, int], "tuple[dict[str, Any], int] | None"]

log = logging.getLogger(__name__)

Caps = Mapping[CapPath, int]

_MAX_CAP_SETS = 32
"""Prepared caps a :class:`Message` keeps for reuse (each holds a codec compiled for it)."""

_PRIMITIVES: dict[str, t.KafkaType] = {
    "bool": t.BOOLEAN,
    "int8": t.INT8,
    "int16": t.INT16,
    "uint16": t.UINT16,
    "int32": t.INT32,
    "uint32": t.UINT32,
    "int64": t.INT64,
    "float64": t.FLOAT64,
    "uuid": t.UUID,
}


# -- spec -> construct --------------------------------------------------------------------------------


def build_message(spec: MessageSpec, version: int, caps: Caps | None = None) -> s.KafkaMessage:
    """The construct for ``spec`` at ``version`` (which must be a valid version), with the arrays at the
    paths of ``caps`` capped (checked caps: see :func:`protocol.caps.check_caps`)."""
    root = build_struct(spec.name, spec.fields, version, spec.flexible_versions, caps)
    return s.KafkaMessage(spec.name, version, root)


def build_struct(
    name: str,
    fields: Sequence[FieldSpec],
    version: int,
    flexible: Versions,
    caps: Caps | None = None,
    path: CapPath = (),
) -> s.KafkaStruct:
    """The struct made of ``fields`` at ``version``; ``flexible`` is the message's flexibleVersions,
    ``path`` the struct's own path in the message (for ``caps``)."""
    present: list[s.StructField] = []
    tagged: list[s.TaggedField] = []
    absent: list[s.AbsentField] = []
    for field in fields:
        if version not in field.versions:
            default = _absent_default(field, flexible)
            absent.append(s.AbsentField(field.name, str(field.versions), default, field.ignorable))
            continue
        kind = build_type(field, version, flexible, caps, (*path, field.name))
        default = field_default(field, version, kind)
        if field.is_tagged(version):
            assert field.tag is not None
            tagged.append(s.TaggedField(field.name, kind, default, tag=field.tag))
        else:
            present.append(s.StructField(field.name, kind, default))
    tags = s.TaggedFields(tagged) if version in flexible else None
    return s.KafkaStruct(name, version, present, tags, absent)


def build_type(
    field: FieldSpec, version: int, flexible: Versions, caps: Caps | None = None, path: CapPath = ()
) -> t.KafkaType:
    """The construct for one field at ``version``; ``path`` is the field's path (for ``caps``)."""
    compact = version in flexible
    nullable = field.is_nullable(version)
    ftype = field.type
    if ftype.kind == "array":
        assert ftype.element is not None
        element = ftype.element
        if element.kind == "struct":
            assert element.struct_name is not None
            item: t.KafkaType = build_struct(element.struct_name, field.fields, version, flexible, caps, path)
        else:
            item = _scalar(element.kind, _compact(field, version, compact), nullable=False)
        return s.Array(item, compact=compact, nullable=nullable, cap=caps.get(path) if caps else None)
    if ftype.kind == "struct":
        assert ftype.struct_name is not None
        struct = build_struct(ftype.struct_name, field.fields, version, flexible, caps, path)
        return s.NullableStruct(struct) if nullable else struct
    return _scalar(ftype.kind, _compact(field, version, compact), nullable)


def _compact(field: FieldSpec, version: int, flexible: bool) -> bool:
    """Strings and bytes are compact in flexible versions unless the field overrides it."""
    if field.flexible_versions is not None:
        return version in field.flexible_versions
    return flexible


def _scalar(kind: str, compact: bool, nullable: bool) -> t.KafkaType:
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    if kind == "string":
        return t.String(compact, nullable)
    if kind in ("bytes", "records"):
        return t.Bytes(compact, nullable, kind)
    raise ValueError(f"not a scalar type: {kind}")  # pragma: no cover - the spec loader rejects these


def field_default(field: FieldSpec, version: int, kind: t.KafkaType) -> Any:
    """The value a field takes at ``version`` when the data leaves it out (immutable form)."""
    default = field.default
    if default is STRUCT_DEFAULT:
        struct = kind.struct if isinstance(kind, s.NullableStruct) else kind
        assert isinstance(struct, s.KafkaStruct)
        return struct.default_value()
    if field.type.kind == "records" and field.default_text == "" and field.is_nullable(version):
        return None  # Kafka's records default to null
    return default


def _absent_default(field: FieldSpec, flexible: Versions) -> Any:
    if field.default is STRUCT_DEFAULT:
        lowest = field.versions.lowest
        return field_default(field, lowest, build_type(field, lowest, flexible))
    return field.default


def _spec_key(spec: MessageSpec) -> bytes:
    """The spec's part of a codec's cache key (:func:`protocol.compiled.compile_message`): the digest of the
    whole spec as pickled (every field, version and default the codec is written from)."""
    return hashlib.sha1(pickle.dumps(spec, protocol=5)).digest()


# -- compiled codec for one version -----------------------------------------------------------------


class VersionCodec:
    """The compiled codec of one message at one version.

    ``construct`` replaces the message's own construct: a struct other than the message's root (one
    element of an array field), or the root with a field of another type. ``where`` is then that
    struct's path in the message, which errors name.
    """

    def __init__(
        self,
        spec: MessageSpec,
        version: int,
        construct: s.KafkaMessage | None = None,
        where: str = "",
        spec_key: bytes | None = None,
    ) -> None:
        self.name = spec.name
        self.version = version
        self.where = where
        if construct is None:  # the message's own codec: kept whole across processes (compile_message)
            self.construct = build_message(spec, version)
            key = (spec_key if spec_key is not None else _spec_key(spec)) + b"v%d" % version
            self.compiled = compile_message(self.construct, key)
        else:
            self.construct = construct
            self.compiled = compile_construct(construct)
        namespace = self.compiled.module.__dict__
        self._decode: Callable[[bytes, int], tuple[dict[str, Any], int]] = namespace[
            self.construct.decode_function
        ]
        self._encode: Callable[[Mapping[str, Any], bytearray], None] = namespace[
            self.construct.encode_function
        ]

    @property
    def source(self) -> str:
        """The generated Python source (for inspection)."""
        return str(self.compiled.source)

    def decode(self, buf: bytes | bytearray | memoryview) -> dict[str, Any]:
        """Decode a whole message body; trailing bytes are an error."""
        if buf.__class__ is not bytes:
            buf = bytes(buf)
        try:
            value, end = self._decode(buf, 0)
        except Exception as exc:  # any failure of the fast path: let the interpreted codec explain it
            value, end = self._decode_slowly(buf, 0, exc)
        if end != len(buf):
            raise DecodeError(f"{len(buf) - end} trailing bytes after the message", offset=end).within(
                self.name, self.version
            )
        return value

    def decode_from(self, buf: bytes | bytearray | memoryview, offset: int) -> tuple[dict[str, Any], int]:
        """Decode a message body starting at ``offset``; returns the value and the offset after it."""
        if buf.__class__ is not bytes:
            buf = bytes(buf)
        try:
            return self._decode(buf, offset)
        except Exception as exc:
            return self._decode_slowly(buf, offset, exc)

    def _decode_slowly(self, buf: bytes, offset: int, cause: Exception) -> tuple[dict[str, Any], int]:
        stream = io.BytesIO(buf)
        stream.seek(offset)
        try:
            value = self.construct.read(stream, self.where)
        except DecodeError as exc:
            raise exc.within(self.name, self.version) from None
        except Exception as exc:  # pragma: no cover - a bug in the interpreted codec
            raise DecodeError(f"malformed input ({exc!r})").within(self.name, self.version) from exc
        log.warning(
            "%s v%d: compiled decoder failed (%r) where the interpreted one did not",
            self.name,
            self.version,
            cause,
        )
        return value, stream.tell()

    def decode_interpreted(self, buf: bytes, offset: int = 0) -> tuple[dict[str, Any], int]:
        """Decode with the interpreted construct only (reference behaviour, used in tests)."""
        stream = io.BytesIO(buf)
        stream.seek(offset)
        try:
            return self.construct.read(stream, self.where), stream.tell()
        except DecodeError as exc:
            raise exc.within(self.name, self.version) from None

    def decode_compiled(self, buf: bytes, offset: int = 0) -> tuple[dict[str, Any], int]:
        """Decode with the generated code only, without the fallback (used in tests: on valid input the
        fast path itself must give the value)."""
        return self._decode(buf, offset)

    def encode(self, data: Mapping[str, Any]) -> bytes:
        out = bytearray()
        try:
            self._encode(data, out)
        except Exception:  # unusual data or an error: the interpreted codec decides, and names the field
            return self.encode_interpreted(data)
        return bytes(out)

    def encode_into(self, data: Mapping[str, Any], out: bytearray) -> None:
        """Append the encoding of ``data`` to ``out``."""
        start = len(out)
        try:
            self._encode(data, out)
        except Exception:  # unusual data or an error: the interpreted codec decides, and names the field
            del out[start:]
            out += self.encode_interpreted(data)

    def encode_gaps(self, data: Mapping[str, Any]) -> bytes:
        """:meth:`encode`, with the encoded elements of any ``EncodedElements`` field copied once, into
        the result, rather than into the output and then out of it."""
        out = Gaps()
        try:
            self._encode(data, out)
            return out.join()
        except Exception:  # unusual data or an error: the interpreted codec decides, and names the field
            return self.encode_interpreted(data)

    def encode_interpreted(self, data: Mapping[str, Any]) -> bytes:
        """Encode with the interpreted construct only (reference behaviour, used in tests)."""
        stream = io.BytesIO()
        try:
            self.construct.write(data, stream, self.where)
        except EncodeError as exc:
            raise exc.within(self.name, self.version) from None
        return stream.getvalue()

    def encode_compiled(self, data: Mapping[str, Any]) -> bytes:
        """Encode with the generated code only, without the fallback (used in tests)."""
        out = bytearray()
        self._encode(data, out)
        return bytes(out)


# -- a message, all versions ----------------------------------------------------------------------------


class Message:
    """One spec: request, response, header or data message, at all its versions."""

    def __init__(self, spec: MessageSpec | SpecHeader) -> None:
        # A header is parsed into the whole spec on first use (see SpecHeader); until then the name,
        # type, API key and versions are the header's.
        self._header: MessageSpec | SpecHeader = spec
        self._spec = spec if isinstance(spec, MessageSpec) else None
        #: What names the spec in the codec cache's keys (:func:`_spec_key`), made at the first codec.
        self._spec_key: bytes | None = None
        self._codecs: dict[int, VersionCodec] = {}
        self._lock = threading.Lock()
        # Its own lock: the spec is first parsed while a codec is built under ``_lock``.
        self._spec_lock = threading.Lock()
        # Codecs for one element of an array field, (version, field name, "element") -> codec or the
        # scalar type of the elements, and for the message with fields given as encoded elements,
        # (version, field names, "message") -> codec.
        self._parts: dict[tuple[int, str | tuple[str, ...], str], VersionCodec | t.KafkaType] = {}
        # Prepared caps by (version, the caps as given), the most recently prepared last.
        self._caps: dict[tuple[int, frozenset[tuple[CapPath, int]]], DecodeCaps] = {}

    @property
    def spec(self) -> MessageSpec:
        spec = self._spec
        if spec is None:
            with self._spec_lock:
                spec = self._spec
                if spec is None:
                    assert isinstance(self._header, SpecHeader)
                    spec = self._spec = self._header.parse()
        return spec

    @property
    def name(self) -> str:
        return self._header.name

    @property
    def api_key(self) -> int | None:
        return self._header.api_key

    @property
    def type(self) -> str:
        return self._header.type

    @property
    def key_space(self) -> str | None:
        """The key space of its API key (None: the project's own; :data:`protocol.spec.KEY_SPACES`)."""
        return self._header.key_space

    @property
    def source(self) -> str:
        return self._header.source

    @property
    def valid_versions(self) -> tuple[int, int]:
        """``(lowest, highest)``; ``(0, -1)`` for a message with no valid versions."""
        return self._header.valid_versions.lowest, self._header.valid_versions.highest

    def supports(self, version: int) -> bool:
        return version in self._header.valid_versions

    def is_flexible(self, version: int) -> bool:
        return self.spec.is_flexible(version)

    def codec(self, version: int) -> VersionCodec:
        """The compiled codec for ``version`` (compiled on first use, then cached)."""
        codec = self._codecs.get(version)
        if codec is None:
            if not self.supports(version):
                raise UnsupportedVersion(self.name, version, self._header.valid_versions)
            with self._lock:
                codec = self._codecs.get(version)
                if codec is None:
                    if self._spec_key is None:
                        self._spec_key = _spec_key(self.spec)
                    codec = VersionCodec(self.spec, version, spec_key=self._spec_key)
                    self._codecs[version] = codec
                    log.debug("compiled %s v%d", self.name, version)
        return codec

    def compile_all(self) -> None:
        """Compile every version now (a server may do this at start-up)."""
        for version in self.spec.valid_versions:
            self.codec(version)

    def decode(
        self, buf: bytes | bytearray | memoryview, version: int, caps: DecodeCaps | Caps | None = None
    ) -> dict[str, Any]:
        """Decode a whole body at ``version``. Raises DecodeError only (and CapsError for bad caps).

        ``caps`` (see :meth:`prepare_caps`) caps array lengths: an array above its cap decodes to a
        :class:`~protocol.wire.Capped`, its elements checked but not built.
        """
        if caps is None:
            codec = self._codecs.get(version) or self._codec_or(version, DecodeError)
        else:
            codec = self._capped_codec(version, caps)
        return codec.decode(buf)

    def decode_from(
        self,
        buf: bytes | bytearray | memoryview,
        offset: int,
        version: int,
        caps: DecodeCaps | Caps | None = None,
    ) -> tuple[dict[str, Any], int]:
        """Decode a body that starts at ``offset``; returns ``(value, end offset)``. ``caps``: as in
        :meth:`decode`."""
        if caps is None:
            codec = self._codecs.get(version) or self._codec_or(version, DecodeError)
        else:
            codec = self._capped_codec(version, caps)
        return codec.decode_from(buf, offset)

    # -- caps on array lengths ----------------------------------------------------------------------------

    def prepare_caps(self, version: int, caps: Caps) -> DecodeCaps:
        """``caps`` (field path -> the most elements an array there may hold; see :mod:`protocol.caps`)
        checked against the spec and made ready to decode ``version`` with, for any number of decodes.

        A path names fields from the top level through structs and struct arrays to an array, e.g.
        ``("Topics", "Assignments")`` in CreateTopicsRequest; each array at that path is capped on its
        own. A path that the message does not have, one that does not end in an array, or a limit that
        is not an int >= 0 raises CapsError; a path whose fields this version lacks is ignored. Caps
        that apply compile a codec of their own (once: prepared caps are kept, the most recent
        :data:`_MAX_CAP_SETS`), so caps belong to configuration, not to each request. Raises
        UnsupportedVersion for a version the message does not have.
        """
        try:
            key = (version, frozenset(caps.items()))
        except (AttributeError, TypeError):  # not a mapping, or a path that is not a tuple: say which
            check_caps(self.spec, caps)
            raise
        prepared = self._caps.get(key)
        if prepared is not None:
            return prepared
        plain = self.codec(version)
        apply = applicable(self.spec, version, check_caps(self.spec, caps))
        if apply:
            construct = build_message(self.spec, version, apply)
            codec = VersionCodec(self.spec, version, construct)
            log.debug("compiled %s v%d with caps %s", self.name, version, apply)
        else:
            codec = plain
        prepared = DecodeCaps(self, version, apply, codec)
        with self._lock:
            self._caps[key] = prepared
            while len(self._caps) > _MAX_CAP_SETS:
                del self._caps[next(iter(self._caps))]
        return prepared

    def _capped_codec(self, version: int, caps: DecodeCaps | Caps) -> VersionCodec:
        if isinstance(caps, DecodeCaps):
            if caps.message is not self or caps.version != version:
                raise CapsError(
                    f"caps prepared for {caps.message.name} v{caps.version}, not {self.name} v{version}"
                )
            return caps.codec
        self._codec_or(version, DecodeError)  # an unsupported version is a DecodeError here too
        return self.prepare_caps(version, caps).codec

    def encode(self, data: Mapping[str, Any], version: int) -> bytes:
        """Encode ``data`` (field name -> value; absent fields take their defaults). Raises EncodeError."""
        codec = self._codecs.get(version) or self._codec_or(version, EncodeError)
        return codec.encode(data)

    def encode_into(self, data: Mapping[str, Any], version: int, out: bytearray) -> None:
        """Append the encoding of ``data`` to ``out`` (for building frames without copies)."""
        codec = self._codecs.get(version) or self._codec_or(version, EncodeError)
        codec.encode_into(data, out)

    def _codec_or(self, version: int, error: type[DecodeError] | type[EncodeError]) -> VersionCodec:
        """The codec, compiling it if needed; an unsupported version raises ``error``."""
        try:
            return self.codec(version)
        except UnsupportedVersion as exc:
            raise error(str(exc), message=self.name, version=version) from None

    # -- encoding from encoded elements -------------------------------------------------------------------

    def encode_element(self, version: int, field: str, element: Any) -> bytes:
        """Encode one element of the top-level array field ``field`` at ``version``.

        The bytes are exactly those the element takes inside the message's encoding (a struct with its
        tag section in flexible versions; a plain value for arrays of values), so they can be kept and
        handed to :meth:`encode_with_elements` later, at the same version. An element of a struct array
        is a dict like those in ``encode``'s data (absent fields take their defaults). Raises EncodeError
        naming the field path as ``Field[]...``.
        """
        part = self._parts.get((version, field, "element")) or self._part(version, field, "element")
        if isinstance(part, VersionCodec):
            return part.encode(element)
        stream = io.BytesIO()
        try:
            part.write(element, stream, f"{field}[]")
        except EncodeError as exc:
            raise exc.within(self.name, version) from None
        return stream.getvalue()

    def encode_with_elements(
        self,
        version: int,
        data: Mapping[str, Any],
        elements: Mapping[str, Sequence[bytes | bytearray | memoryview] | None],
    ) -> bytes:
        """Encode the message from ``data`` for every field but those in ``elements``: top-level array
        fields given as the encodings of their elements (:meth:`encode_element` at the same version),
        or None for a null array.

        The result is exactly ``encode({**data, field: decoded elements, ...}, version)``: each array's
        count (compact or classic, as the version has it), its elements as given, and the rest of the
        message around them, tagged fields included (a field may be a tagged field). ``data`` must not
        hold those fields. The elements are not checked: each must be one element's encoding at this
        version. Raises EncodeError.
        """
        return self._with_elements(version, data, elements).encode_gaps({**data, **elements})

    def encode_with_elements_into(
        self,
        version: int,
        data: Mapping[str, Any],
        elements: Mapping[str, Sequence[bytes | bytearray | memoryview] | None],
        out: bytearray,
    ) -> None:
        """:meth:`encode_with_elements`, appended to ``out`` (for building frames without copies)."""
        self._with_elements(version, data, elements).encode_into({**data, **elements}, out)

    def _with_elements(
        self, version: int, data: Mapping[str, Any], elements: Mapping[str, Any]
    ) -> VersionCodec:
        fields = tuple(elements)
        part = self._parts.get((version, fields, "message")) or self._part(version, fields, "message")
        for field in fields:
            if field in data:
                raise EncodeError(
                    "given both in the data and as encoded elements",
                    message=self.name,
                    version=version,
                    field=field,
                )
        assert isinstance(part, VersionCodec)
        return part

    def _array_field(self, version: int, field: str) -> s.Array:
        """The top-level array field ``field`` at ``version`` (EncodeError naming it if there is none)."""
        root = self._codec_or(version, EncodeError).construct.root
        spec = next((f for f in (*root.fields, *root.tagged) if f.name == field), None)
        if spec is not None and isinstance(spec.type, s.Array):
            return spec.type
        if spec is not None:
            problem = f"not an array (it is {spec.type.kafka_name})"
        elif field in root.absent:
            problem = f"version {version} lacks this field (versions {root.absent[field].versions})"
        else:
            problem = f"{self.name} has no such top-level field"
        raise EncodeError(problem, message=self.name, version=version, field=field)

    def _part(self, version: int, field: str | tuple[str, ...], which: str) -> VersionCodec | t.KafkaType:
        """The codec behind :meth:`encode_element` (``which`` = "element", for one field) or
        :meth:`encode_with_elements` ("message", for the fields given as elements), made on first use."""
        part: VersionCodec | t.KafkaType
        if isinstance(field, str):
            element = self._array_field(version, field).element
            if isinstance(element, s.KafkaStruct):
                construct = s.KafkaMessage(f"{self.name}_{field}", version, element)
                part = VersionCodec(self.spec, version, construct, where=f"{field}[]")
            else:
                part = element
        else:
            replace = {name: s.EncodedElements(self._array_field(version, name)) for name in field}
            root = self._codec_or(version, EncodeError).construct.root
            fields = [dataclasses.replace(f, type=replace.get(f.name, f.type)) for f in root.fields]
            tagged = [dataclasses.replace(f, type=replace.get(f.name, f.type)) for f in root.tagged]
            struct = s.KafkaStruct(
                root.kafka_name,
                version,
                fields,
                None if root.tags is None else s.TaggedFields(tagged),
                list(root.absent.values()),
            )
            construct = s.KafkaMessage(f"{self.name}_with_{'_'.join(field)}", version, struct)
            part = VersionCodec(self.spec, version, construct)
        with self._lock:
            return self._parts.setdefault((version, field, which), part)

    def default(self, version: int) -> dict[str, Any]:
        """The message at ``version`` with every field at its default."""
        return self.codec(version).construct.root.default_value()

    def __repr__(self) -> str:
        key = "" if self.api_key is None else f" apiKey={self.api_key}"
        return f"<Message {self.name}{key} versions={self._header.valid_versions}>"


@dataclasses.dataclass(frozen=True, eq=False)
class DecodeCaps:
    """Caps prepared by :meth:`Message.prepare_caps` for one message at one version: ``caps`` are those
    that apply to the version, ``codec`` decodes with them (the message's own codec when none apply)."""

    message: Message
    version: int
    caps: Mapping[CapPath, int]
    codec: VersionCodec = dataclasses.field(repr=False)

    def decode(self, buf: bytes | bytearray | memoryview) -> dict[str, Any]:
        """``message.decode(buf, version, self)``."""
        return self.codec.decode(buf)

    def decode_from(self, buf: bytes | bytearray | memoryview, offset: int) -> tuple[dict[str, Any], int]:
        """``message.decode_from(buf, offset, version, self)``."""
        return self.codec.decode_from(buf, offset)


class UnsupportedVersion(ProtocolError, LookupError):
    """A version outside the message's validVersions."""

    def __init__(self, message: str, version: int, valid: object) -> None:
        self.message, self.version = message, version
        super().__init__(f"{message} has no version {version} (valid versions: {valid})")
