"""Codecs per (message, version), made from the spec model and compiled with construct's compiler.

:func:`protocol.build.build_message` turns a :class:`~protocol.spec.MessageSpec` at one version into a
:class:`~protocol.structs.KafkaMessage` construct. :class:`VersionCodec` compiles it (construct's compiler,
the result kept on disk whole: :mod:`protocol.compiled`) and runs the generated functions; when they fail
(malformed input, unusual data) it re-runs the interpreted construct, which either produces the result or
raises an error naming the field. A codec read from the disk builds its construct only then, so a process
whose codecs are all kept never imports construct. :class:`Message` is the public face: one spec, every
version, codecs compiled on first use.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

# Every generated codec's module imports protocol.runs and protocol.wire (protocol.emit's PRELUDE): they
# come with this module, not with the first codec a process makes.
import protocol.runs  # noqa: F401
from protocol.caps import CapPath, applicable, check_caps
from protocol.compiled import Generated, compile_construct, compile_message
from protocol.exceptions import CapsError, DecodeError, EncodeError, ProtocolError
from protocol.spec import MessageSpec, SpecHeader
from protocol.wire import Gaps

if TYPE_CHECKING:
    from protocol import structs as s
    from protocol import types as t

#: A body decoder of its own for one API (a handler's ``decode``, e.g. :mod:`protocol.produce_request`):
#: ``(frame, offset, version)`` -> the request as the codec gives it and where it ended, or None for a
#: body it leaves to the codec.
DecodeFn = Callable[[bytes, int, int], "tuple[dict[str, Any], int] | None"]

log = logging.getLogger(__name__)

Caps = Mapping[CapPath, int]

_MAX_CAP_SETS = 32
"""Prepared caps a :class:`Message` keeps for reuse (each holds a codec compiled for it)."""


def _build_message(spec: MessageSpec, version: int, caps: Caps | None = None) -> s.KafkaMessage:
    """:func:`protocol.build.build_message`, imported (and construct with it) when a construct is needed."""
    from protocol.build import build_message

    return build_message(spec, version, caps)


def _codec_key(spec_key: bytes, version: int, part: str = "") -> bytes:
    """A codec's key in the cache (:func:`protocol.compiled.compile_message`): its spec's, its version and
    the part of the message it is (empty: the message's own codec)."""
    return spec_key + b"v%d " % version + part.encode()


def _spec_key(spec: MessageSpec) -> bytes:
    """The spec's part of a codec's cache key (:func:`protocol.compiled.compile_message`): the digest of the
    whole spec as pickled (every field, version and default the codec is written from)."""
    import pickle

    return hashlib.sha1(pickle.dumps(spec, protocol=5)).digest()


# -- compiled codec for one version -----------------------------------------------------------------


class VersionCodec:
    """The compiled codec of one message at one version.

    ``generated`` is the codec as :func:`protocol.compiled.compile_message` makes it (the message's own, or
    one with caps or of a part of it), whose construct is built only when the interpreted codec is needed;
    without it the message's own codec is made so. ``construct`` instead compiles that construct as it
    is (a struct other than the message's root, or the root with a field of another type). ``where`` is
    then that struct's path in the message, which errors name.
    """

    def __init__(
        self,
        spec: MessageSpec | SpecHeader,
        version: int,
        construct: s.KafkaMessage | None = None,
        where: str = "",
        generated: Generated | None = None,
    ) -> None:
        self.name = spec.name
        self.version = version
        self.where = where
        self._construct = construct
        if construct is not None:
            self._generated: Generated | None = None
            self._compiled = compile_construct(construct)
            namespace = self._compiled.module.__dict__
            decode_function, encode_function = construct.decode_function, construct.encode_function
        else:
            if generated is None:  # the message's own codec: kept whole across processes
                assert isinstance(spec, MessageSpec)
                key = _codec_key(_spec_key(spec), version)
                generated = compile_message(key, functools.partial(_build_message, spec, version))
            self._generated = generated
            namespace = generated.module.__dict__
            decode_function, encode_function = generated.decode_function, generated.encode_function
        self._decode: Callable[[bytes, int], tuple[dict[str, Any], int]] = namespace[decode_function]
        self._encode: Callable[[Mapping[str, Any], bytearray], None] = namespace[encode_function]

    @property
    def construct(self) -> s.KafkaMessage:
        """The construct the codec was written from (built when first asked for: the interpreted codec)."""
        if self._construct is None:
            assert self._generated is not None
            self._construct = self._generated.construct
        return self._construct

    @property
    def compiled(self) -> Any:
        """The generated module as construct's ``compile()`` gives it (``parse``, ``build``, ``source``)."""
        return self._compiled if self._generated is None else self._generated.compiled

    @property
    def source(self) -> str:
        """The generated Python source (for inspection)."""
        return self._compiled.source if self._generated is None else self._generated.source

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
        #: What names the spec in the codec cache's keys (:meth:`_key`), made at the first codec.
        self._spec_key: bytes | None = None
        #: Its flexibleVersions (an index's header gives them: the spec is not parsed to frame a request).
        self._flexible = spec.flexible_versions if isinstance(spec, MessageSpec) else spec.flexible
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
        flexible = self._flexible
        if flexible is None:
            flexible = self._flexible = self.spec.flexible_versions
        return version in flexible

    def codec(self, version: int) -> VersionCodec:
        """The compiled codec for ``version`` (compiled on first use, then cached)."""
        codec = self._codecs.get(version)
        if codec is None:
            if not self.supports(version):
                raise UnsupportedVersion(self.name, version, self._header.valid_versions)
            with self._lock:
                codec = self._codecs.get(version)
                if codec is None:
                    codec = self._generated(version, "", functools.partial(self._construct, version))
                    self._codecs[version] = codec
                    log.debug("compiled %s v%d", self.name, version)
        return codec

    def _key(self) -> bytes:
        """What names the spec in the codec cache's keys, made once: for a spec known from an index, the
        digest of its file's text and of what the index says of it (the code that parses it is named by
        the generator, :func:`protocol.compiled.generator`), so that a codec read whole needs no parsed
        spec; else :func:`_spec_key`."""
        if self._spec_key is None:
            header = self._header
            if isinstance(header, SpecHeader) and header.read_text is not None:
                # What the index says of the file is in the key: a stale row is a codec not kept, whose
                # making parses the file and tells (SpecHeader.parse).
                text = header.read_text() + "\0" + repr(header.said())
                self._spec_key = b"text " + hashlib.sha1(text.encode()).digest()
            else:
                self._spec_key = _spec_key(self.spec)
        return self._spec_key

    def _construct(self, version: int, caps: Caps | None = None) -> s.KafkaMessage:
        return _build_message(self.spec, version, caps)

    def _generated(self, version: int, part: str, build: Callable[[], s.KafkaMessage]) -> VersionCodec:
        """The codec of a construct made from this message at ``version`` (its own: ``part`` empty; with
        caps, or a part of it, that ``part`` names), kept whole across processes."""
        key = _codec_key(self._key(), version, part)
        return VersionCodec(self._header, version, generated=compile_message(key, build))

    def compile_all(self) -> None:
        """Compile every version now (a server may do this at start-up)."""
        for version in self._header.valid_versions:
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
            build = functools.partial(self._construct, version, apply)
            codec = self._generated(version, f"caps {sorted(apply.items())!r}", build)
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
        from protocol import structs as s

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
        :meth:`encode_with_elements` ("message", for the fields given as elements), made on first use.
        Both are kept whole across processes; an array of values' element is its type (a construct)."""
        part: VersionCodec | t.KafkaType
        if isinstance(field, str):
            if self._struct_array(version, field):
                build = functools.partial(self._element_construct, version, field)
                part = self._generated(version, f"element {field}", build)
                part.where = f"{field}[]"
            else:
                part = self._array_field(version, field).element
        else:
            build = functools.partial(self._with_elements_construct, version, field)
            part = self._generated(version, f"with {','.join(field)}", build)
        with self._lock:
            return self._parts.setdefault((version, field, which), part)

    def _struct_array(self, version: int, field: str) -> bool:
        """Whether ``field`` is a top-level array of structs at ``version``, as the spec says."""
        spec = next((f for f in self.spec.fields if f.name == field), None)
        return (
            spec is not None
            and version in spec.versions
            and spec.type.kind == "array"
            and spec.type.element is not None
            and spec.type.element.kind == "struct"
        )

    def _element_construct(self, version: int, field: str) -> s.KafkaMessage:
        from protocol import structs as s

        element = self._array_field(version, field).element
        assert isinstance(element, s.KafkaStruct)
        return s.KafkaMessage(f"{self.name}_{field}", version, element)

    def _with_elements_construct(self, version: int, fields: tuple[str, ...]) -> s.KafkaMessage:
        from protocol import structs as s

        replace = {name: s.EncodedElements(self._array_field(version, name)) for name in fields}
        root = self._codec_or(version, EncodeError).construct.root
        present = [dataclasses.replace(f, type=replace.get(f.name, f.type)) for f in root.fields]
        tagged = [dataclasses.replace(f, type=replace.get(f.name, f.type)) for f in root.tagged]
        struct = s.KafkaStruct(
            root.kafka_name,
            version,
            present,
            None if root.tags is None else s.TaggedFields(tagged),
            list(root.absent.values()),
        )
        return s.KafkaMessage(f"{self.name}_with_{'_'.join(fields)}", version, struct)

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
