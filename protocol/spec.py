"""Load and validate Kafka-format message spec files into a small immutable model.

A spec file is JSON with ``//`` line comments, in the format of Kafka's
``clients/src/main/resources/common/message/*.json``. :func:`load_spec` parses one file, checks it the
way Kafka's generator does (versions, types, names, nullability, tags, map keys, common structs,
defaults) and returns a :class:`MessageSpec`. Any problem raises :class:`SpecError` naming the file,
the field and what is wrong.

A spec read through an index (:class:`SpecHeader` without its document, as a server reads them) is
parsed once per file's text: the parsed spec is kept, pickled, in ``protocol/__pycache__/specs/``
(:class:`_ParsedSpecs`), a file per spec file's path and text, with the stamp of the package's code, so a
new process unpickles it (about 7 times faster than reading the JSON and checking it again) and a changed
file is parsed anew, an edited parser over the old file. A cache that cannot be read or written is not
an error.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import logging
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from protocol.bytecode import CACHE_DIR, package_stamp, write_atomically
from protocol.exceptions import SpecError
from protocol.wire import ZERO_UUID

log = logging.getLogger(__name__)

MAX_VERSION: Final = 32767

MESSAGE_TYPES: Final = frozenset(
    {"request", "response", "header", "data", "metadata", "coordinator-key", "coordinator-value"}
)
PRIMITIVE_TYPES: Final = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "uuid",
        "string",
        "bytes",
        "records",
    }
)
INTEGER_RANGES: Final = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
NULLABLE_KINDS: Final = frozenset({"string", "bytes", "records", "struct", "array"})
# Kafka's EntityType: the base type each entity type must have (arrays: their element type).
ENTITY_TYPES: Final = {
    "unknown": None,
    "transactionalId": "string",
    "producerId": "int64",
    "groupId": "string",
    "topicName": "string",
    "brokerId": "int32",
}
LISTENERS: Final = frozenset({"zkBroker", "broker", "controller"})

_TOP_KEYS: Final = frozenset(
    {
        "apiKey",
        "type",
        "name",
        "validVersions",
        "flexibleVersions",
        "deprecatedVersions",
        "fields",
        "commonStructs",
        "listeners",
        "latestVersionUnstable",
        "headerVersions",
        "keySpace",
    }
)
#: The key spaces a spec may name (``keySpace``): an API key the project took for its own API before Kafka
#: gave it to another is two APIs; the spec of what Kafka's clients mean by it is in key space ``kafka``.
KEY_SPACES: Final = frozenset({"kafka"})
_FIELD_KEYS: Final = frozenset(
    {
        "name",
        "type",
        "versions",
        "fields",
        "nullableVersions",
        "default",
        "ignorable",
        "entityType",
        "about",
        "mapKey",
        "tag",
        "taggedVersions",
        "flexibleVersions",
        "zeroCopy",
    }
)
_STRUCT_KEYS: Final = frozenset({"name", "versions", "deprecatedVersions", "fields"})
_FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_STRUCT_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")


class StructDefault:
    """Marker default of a non-null struct field: the struct with every field at its default."""

    _instance: StructDefault | None = None

    def __new__(cls) -> StructDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "STRUCT_DEFAULT"

    def __reduce__(self) -> str:
        return "STRUCT_DEFAULT"  # pickled as the module's one marker (codecs compare it by identity)


STRUCT_DEFAULT: Final = StructDefault()


@dataclass(frozen=True)
class Versions:
    """An inclusive range of versions; empty when ``highest < lowest``."""

    lowest: int
    highest: int

    @staticmethod
    def parse(text: str) -> Versions:
        """Parse ``none``, ``N``, ``N-M`` or ``N+``; ValueError on anything else."""
        text = text.strip()
        if text == "none":
            return NO_VERSIONS
        if m := re.fullmatch(r"(\d+)\+", text):
            return Versions(_version_number(m[1]), MAX_VERSION)
        if m := re.fullmatch(r"(\d+)-(\d+)", text):
            low, high = _version_number(m[1]), _version_number(m[2])
            if low > high:
                raise ValueError(f"invalid version range {text!r}: {low} is above {high}")
            return Versions(low, high)
        if m := re.fullmatch(r"\d+", text):
            number = _version_number(m[0])
            return Versions(number, number)
        raise ValueError(f"invalid version string {text!r} (expected none, N, N-M or N+)")

    @property
    def empty(self) -> bool:
        return self.highest < self.lowest

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.highest == MAX_VERSION

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    def covers(self, other: Versions) -> bool:
        """True when every version of ``other`` is in this range."""
        return other.empty or (self.lowest <= other.lowest and other.highest <= self.highest)

    def intersect(self, other: Versions) -> Versions:
        result = Versions(max(self.lowest, other.lowest), min(self.highest, other.highest))
        return NO_VERSIONS if result.empty else result

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.lowest, self.highest + 1))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == MAX_VERSION:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NO_VERSIONS: Final = Versions(0, -1)


def _version_number(text: str) -> int:
    number = int(text)
    if number > MAX_VERSION:
        raise ValueError(f"version {number} is above {MAX_VERSION}")
    return number


@dataclass(frozen=True)
class FieldType:
    """A field's type: a primitive name, ``struct`` (``struct_name`` set) or ``array`` (``element`` set)."""

    kind: str
    element: FieldType | None = None
    struct_name: str | None = None

    @staticmethod
    def parse(text: str) -> FieldType:
        if text.startswith("[]"):
            inner = text[2:]
            if inner.startswith("[]"):
                raise ValueError(f"arrays of arrays are not allowed: {text!r}")
            return FieldType("array", element=FieldType.parse(inner))
        if text in PRIMITIVE_TYPES:
            return FieldType(text)
        if _STRUCT_NAME.fullmatch(text):
            return FieldType("struct", struct_name=text)
        raise ValueError(f"unknown type {text!r}")

    @property
    def is_struct_like(self) -> bool:
        """A struct, or an array of structs."""
        return self.kind == "struct" or (self.element is not None and self.element.kind == "struct")

    def __str__(self) -> str:
        if self.kind == "array":
            return f"[]{self.element}"
        if self.kind == "struct":
            return str(self.struct_name)
        return self.kind


@dataclass(frozen=True)
class FieldSpec:
    """One field of a message or struct, validated."""

    name: str
    type: FieldType
    versions: Versions
    about: str = ""
    nullable_versions: Versions = NO_VERSIONS
    default: Any = None
    default_text: str = ""
    ignorable: bool = False
    entity_type: str = "unknown"
    map_key: bool = False
    tag: int | None = None
    tagged_versions: Versions = NO_VERSIONS
    flexible_versions: Versions | None = None
    zero_copy: bool = False
    fields: tuple[FieldSpec, ...] = ()

    def is_tagged(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged_versions

    def is_nullable(self, version: int) -> bool:
        return version in self.nullable_versions


@dataclass(frozen=True)
class StructSpec:
    """A named struct: a ``commonStructs`` entry."""

    name: str
    versions: Versions
    fields: tuple[FieldSpec, ...]


@dataclass(frozen=True)
class MessageSpec:
    """A whole spec file."""

    name: str
    type: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    fields: tuple[FieldSpec, ...]
    source: str
    common_structs: Mapping[str, StructSpec] = field(default_factory=dict)
    listeners: tuple[str, ...] = ()
    #: The key space of its API key (None: the project's own; :data:`KEY_SPACES`).
    key_space: str | None = None

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions


#: A JSON string (escapes included) or a ``//`` comment; strings are kept, comments blanked.
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*', re.S)


def strip_comments(text: str) -> str:
    """Blank out ``//`` comments outside JSON strings, keeping line and column positions."""
    return _STRING_OR_COMMENT.sub(_blank_comment, text)


def _blank_comment(match: re.Match[str]) -> str:
    token = match.group()
    return token if token[0] == '"' else " " * len(token)


def load_spec(path: str | Path) -> MessageSpec:
    """Load and validate one spec file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(str(path), f"cannot read the file: {exc}") from exc
    return parse_spec(text, str(path))


def parse_spec(text: str, source: str) -> MessageSpec:
    """Parse and validate the text of one spec file; ``source`` names it in errors."""
    return _SpecParser(source).message(read_document(text, source))


def read_document(text: str, source: str) -> dict[str, Any]:
    """The JSON document of a spec file's text (comments allowed), not yet checked as a spec."""
    import json  # a process that reads its specs from the cache parses no JSON

    try:
        return json.loads(strip_comments(text), object_pairs_hook=_reject_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise SpecError(source, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except _DuplicateKey as exc:
        raise SpecError(source, f"duplicate key {exc.args[0]!r} in one object") from exc


@dataclass(frozen=True)
class SpecHeader:
    """What a spec's top level says about it (name, type, API key, versions), its fields not yet parsed.

    A set of specs indexes its messages and a server advertises their versions from headers alone;
    :meth:`parse` checks and builds the whole spec when a message is first encoded or decoded.
    """

    name: str
    type: str
    api_key: int | None
    valid_versions: Versions
    source: str
    #: The whole document; None for a header taken from an index, whose file is read by :meth:`parse`.
    document: dict[str, Any] | None = field(repr=False, compare=False)
    #: Reads the file's text (a header from an index).
    read_text: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    #: The key space of a request or response of Kafka's on a key the project took first (None: its own).
    key_space: str | None = None
    #: Its flexibleVersions, when the index gives them (a message's framing is known without the spec).
    flexible: Versions | None = None

    @classmethod
    def read(cls, text: str, source: str) -> SpecHeader:
        document = read_document(text, source)
        parser = _SpecParser(source)
        name, kind, api_key, valid = parser.header(document)
        return cls(name, kind, api_key, valid, source, document, key_space=parser.key_space(document))

    def parse(self) -> MessageSpec:
        document = self.document
        if document is not None:
            return _SpecParser(self.source).message(document)
        # From an index: the file is read now, and must say what the index said.
        assert self.read_text is not None
        text = self.read_text()
        kept = PARSED_SPECS.get(text, self.source)
        if kept is not None and self._says(kept):
            return kept
        spec = _SpecParser(self.source).message(read_document(text, self.source))
        if not self._says(spec):
            raise SpecError(self.source, "the spec index is stale: run python -m protocol.codegen")
        PARSED_SPECS.put(text, self.source, spec)
        return spec

    def said(self) -> tuple[Any, ...]:
        """What this header (from an index) says of its spec: name, type, API key, versions, key space and
        flexible versions (None when the index does not give them)."""
        return (self.name, self.type, self.api_key, self.valid_versions, self.key_space, self.flexible)

    def _says(self, spec: MessageSpec) -> bool:
        """Whether ``spec`` is what this header says it is."""
        flexible = spec.flexible_versions if self.flexible is not None else None
        return self.said() == (
            spec.name,
            spec.type,
            spec.api_key,
            spec.valid_versions,
            spec.key_space,
            flexible,
        )


class _ParsedSpecs:
    """Parsed specs kept on disk (see the module docstring): a file per spec file's path and text, holding
    the spec with the stamp of the code that parsed it (:func:`protocol.bytecode.package_stamp`)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def path(self, text: str, source: str) -> str:
        digest = hashlib.sha1(source.encode() + b"\0" + text.encode()).hexdigest()
        return os.path.join(self.folder, f"{digest}.{sys.implementation.cache_tag}.pickle")

    def get(self, text: str, source: str) -> MessageSpec | None:
        """The spec parsed from ``text`` before by this code, or None (never kept, parsed by other code, or a
        file that does not read back)."""
        import pickle  # imported by a process that reads a spec, not by every one that imports this module

        with contextlib.suppress(Exception):  # a file cut short or of another pickle: parsed again
            with open(self.path(text, source), "rb") as stream:
                stamp, spec = pickle.load(stream)  # noqa: S301 - the package's own cache, as trusted as its bytecode
            if stamp == package_stamp() and isinstance(spec, MessageSpec):
                return spec
        return None

    def put(self, text: str, source: str, spec: MessageSpec) -> None:
        import pickle

        write_atomically(self.path(text, source), pickle.dumps((package_stamp(), spec), protocol=5))


#: The parsed specs of this package's index.
PARSED_SPECS = _ParsedSpecs(os.path.join(CACHE_DIR, "specs"))


class _DuplicateKey(ValueError):
    pass


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


class _SpecParser:
    """Validates one document; holds the file name and the message-level facts fields are checked against."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.flexible = NO_VERSIONS
        self.common_raw: dict[str, dict[str, Any]] = {}
        self.common: dict[str, StructSpec] = {}
        self.common_in_progress: set[str] = set()
        self.inline_structs: set[str] = set()

    def error(self, problem: str, where: str | None = None) -> SpecError:
        return SpecError(self.source, problem, where)

    # -- top level -------------------------------------------------------------------------------------

    def header(self, doc: Any) -> tuple[str, str, int | None, Versions]:
        """The top level's name, type, apiKey and validVersions, checked."""
        if not isinstance(doc, dict):
            raise self.error("the top level must be a JSON object")
        unknown = sorted(set(doc) - _TOP_KEYS)
        if unknown:
            raise self.error(f"unknown top-level key(s) {', '.join(unknown)}")
        name = self.string(doc, "name", None, required=True)
        if not _STRUCT_NAME.fullmatch(name):
            raise self.error(f"invalid message name {name!r}: must be a capitalized identifier")
        kind = self.string(doc, "type", None, required=True)
        if kind not in MESSAGE_TYPES:
            raise self.error(f"invalid type {kind!r}; expected one of {', '.join(sorted(MESSAGE_TYPES))}")
        api_key = doc.get("apiKey")
        if api_key is not None and (type(api_key) is not int or not 0 <= api_key <= 32767):
            raise self.error(f"apiKey must be an integer from 0 to 32767, not {api_key!r}")
        if api_key is None and kind in ("request", "response"):
            raise self.error(f"a {kind} needs an apiKey")
        valid = self.versions(doc, "validVersions", None, required=True)
        self.key_space(doc)
        return name, kind, api_key, valid

    def key_space(self, doc: dict[str, Any]) -> str | None:
        """The spec's ``keySpace`` (None: the project's own), checked: only requests and responses have one."""
        space = doc.get("keySpace")
        if space is None:
            return None
        if space not in KEY_SPACES:
            raise self.error(f"unknown keySpace {space!r}; expected one of {', '.join(sorted(KEY_SPACES))}")
        if doc.get("type") not in ("request", "response"):
            raise self.error("keySpace is only valid for requests and responses")
        return str(space)

    def message(self, doc: Any) -> MessageSpec:
        name, kind, api_key, valid = self.header(doc)
        if "flexibleVersions" not in doc and not valid.empty:
            raise self.error("flexibleVersions is required (use none, or N+ for the first flexible version)")
        self.flexible = self.versions(doc, "flexibleVersions", None, default="none")
        if not self.flexible.empty and not self.flexible.open_ended:
            raise self.error(f"flexibleVersions must be none or open-ended (N+), not {self.flexible}")
        self.versions(doc, "deprecatedVersions", None, default="none")  # checked; nothing uses it
        listeners = doc.get("listeners") or []
        if not isinstance(listeners, list) or not all(isinstance(x, str) for x in listeners):
            raise self.error("listeners must be a list of strings")
        if bad := sorted(set(listeners) - LISTENERS):
            raise self.error(f"unknown listener(s) {', '.join(bad)}")
        if listeners and kind != "request":
            raise self.error("listeners is only valid for requests")
        unstable = self.boolean(doc, "latestVersionUnstable", None)
        if unstable and kind != "request":
            raise self.error("latestVersionUnstable is only valid for requests")
        if "headerVersions" in doc and not isinstance(doc["headerVersions"], dict):
            raise self.error("headerVersions must be an object")

        raw_common = doc.get("commonStructs") or []
        if not isinstance(raw_common, list):
            raise self.error("commonStructs must be a list")
        for raw in raw_common:
            if not isinstance(raw, dict):
                raise self.error("each commonStructs entry must be an object")
            struct_name = self.string(raw, "name", "commonStructs", required=True)
            if not _STRUCT_NAME.fullmatch(struct_name):
                raise self.error(f"invalid common struct name {struct_name!r}: must be capitalized")
            if struct_name in self.common_raw:
                raise self.error(f"common struct {struct_name} is defined twice")
            self.common_raw[struct_name] = raw
        for struct_name in self.common_raw:
            self.common_struct(struct_name)
        fields = self.field_list(doc.get("fields"), None, in_array=False)
        return MessageSpec(
            name=name,
            type=kind,
            api_key=api_key,
            valid_versions=valid,
            flexible_versions=self.flexible,
            fields=fields,
            source=self.source,
            common_structs=dict(self.common),
            listeners=tuple(listeners),
            key_space=self.key_space(doc),
        )

    def common_struct(self, name: str) -> StructSpec:
        """Parse a common struct on first use (they may refer to each other in any order)."""
        if name in self.common:
            return self.common[name]
        where = f"commonStructs.{name}"
        if name in self.common_in_progress:
            raise self.error(f"common struct {name} contains itself", where)
        self.common_in_progress.add(name)
        raw = self.common_raw[name]
        if unknown := sorted(set(raw) - _STRUCT_KEYS):
            raise self.error(f"unknown key(s) {', '.join(unknown)}", where)
        struct = StructSpec(
            name,
            self.versions(raw, "versions", where, required=True),
            # Common structs are array elements in every Kafka spec that has them.
            self.field_list(raw.get("fields"), where, in_array=True),
        )
        self.common[name] = struct
        self.common_in_progress.discard(name)
        return struct

    # -- fields ----------------------------------------------------------------------------------------

    def field_list(self, raw: Any, parent: str | None, *, in_array: bool) -> tuple[FieldSpec, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.error("fields must be a list", parent)
        fields = tuple(self.field(item, parent, in_array=in_array) for item in raw)
        names: set[str] = set()
        tags: dict[int, str] = {}
        for spec in fields:
            if spec.name in names:
                raise self.error("duplicate field name", _join(parent, spec.name))
            names.add(spec.name)
            if spec.tag is not None:
                if spec.tag in tags:
                    raise self.error(
                        f"tag {spec.tag} is already used by {tags[spec.tag]}", _join(parent, spec.name)
                    )
                tags[spec.tag] = spec.name
        for expected in range(len(tags)):
            if expected not in tags:
                raise self.error(
                    f"tags must be contiguous from 0: tag {expected} is unused", parent or "fields"
                )
        return fields

    def field(self, raw: Any, parent: str | None, *, in_array: bool) -> FieldSpec:
        if not isinstance(raw, dict):
            raise self.error("each field must be a JSON object", parent)
        name = self.string(raw, "name", parent, required=True)
        where = _join(parent, name)
        if not _FIELD_NAME.fullmatch(name):
            raise self.error(f"invalid field name {name!r}", where)
        if unknown := sorted(set(raw) - _FIELD_KEYS):
            raise self.error(f"unknown key(s) {', '.join(unknown)}", where)

        tagged_versions = self.versions(raw, "taggedVersions", where, default="none")
        if "versions" in raw:
            versions = self.versions(raw, "versions", where)
        elif not tagged_versions.empty:
            versions = tagged_versions
        else:
            raise self.error("versions is required", where)
        try:
            ftype = FieldType.parse(self.string(raw, "type", where, required=True))
        except ValueError as exc:
            raise self.error(str(exc), where) from exc
        nullable = self.versions(raw, "nullableVersions", where, default="none")
        if not nullable.empty and ftype.kind not in NULLABLE_KINDS:
            raise self.error(f"type {ftype} cannot be nullable", where)
        about = raw.get("about", "")
        if not isinstance(about, str):
            raise self.error("about must be a string", where)
        ignorable = self.boolean(raw, "ignorable", where)
        map_key = self.boolean(raw, "mapKey", where)
        zero_copy = self.boolean(raw, "zeroCopy", where)
        if zero_copy and ftype.kind != "bytes":
            raise self.error("zeroCopy is only valid for bytes fields", where)

        entity = raw.get("entityType", "unknown")
        if entity not in ENTITY_TYPES:
            raise self.error(f"unknown entityType {entity!r}", where)
        base = ENTITY_TYPES[entity]
        element = ftype.element if ftype.kind == "array" else ftype
        if base is not None and (element is None or element.kind != base):
            raise self.error(f"entityType {entity} needs type {base} (or an array of it), not {ftype}", where)

        flexible_override = None
        if raw.get("flexibleVersions") not in (None, ""):
            if ftype.kind not in ("string", "bytes"):
                raise self.error(
                    "a flexibleVersions override is only valid for string and bytes fields", where
                )
            flexible_override = self.versions(raw, "flexibleVersions", where)

        tag = raw.get("tag")
        if tag is not None:
            self.check_tag(tag, where, versions, tagged_versions, nullable, map_key)
        elif not tagged_versions.empty:
            raise self.error(f"taggedVersions {tagged_versions} given without a tag", where)

        if map_key:
            if not in_array:
                raise self.error("mapKey is only valid in the element struct of an array", where)
            if ftype.kind in ("array", "struct"):
                raise self.error(f"a map key cannot be of type {ftype}", where)

        fields = self.nested_fields(raw, ftype, where)
        default_text = _default_text(raw.get("default", ""), where, self)
        default = self.parse_default(default_text, ftype, versions, nullable, where)
        return FieldSpec(
            name=name,
            type=ftype,
            versions=versions,
            about=about,
            nullable_versions=nullable,
            default=default,
            default_text=default_text,
            ignorable=ignorable,
            entity_type=entity,
            map_key=map_key,
            tag=tag,
            tagged_versions=tagged_versions,
            flexible_versions=flexible_override,
            zero_copy=zero_copy,
            fields=fields,
        )

    def check_tag(
        self, tag: Any, where: str, versions: Versions, tagged: Versions, nullable: Versions, map_key: bool
    ) -> None:
        if type(tag) is not int or tag < 0:
            raise self.error(f"tag must be a non-negative integer, not {tag!r}", where)
        if tagged.empty:
            raise self.error(f"tag {tag} given without taggedVersions", where)
        if not tagged.open_ended:
            raise self.error(f"taggedVersions must be open-ended (N+), not {tagged}", where)
        if not versions.covers(tagged):
            raise self.error(f"taggedVersions {tagged} must be within versions {versions}", where)
        if not self.flexible.covers(tagged):
            raise self.error(
                f"taggedVersions {tagged} are not all flexible (flexibleVersions is {self.flexible})", where
            )
        both = nullable.intersect(tagged)
        if not (both.empty or both == tagged):
            raise self.error("either every tagged version must be nullable or none", where)
        if map_key:
            raise self.error("a tagged field cannot be a map key", where)

    def nested_fields(self, raw: dict[str, Any], ftype: FieldType, where: str) -> tuple[FieldSpec, ...]:
        has_fields = raw.get("fields") is not None
        struct = ftype.element if ftype.kind == "array" else ftype
        if struct is None or struct.kind != "struct":
            if has_fields:
                raise self.error(f"a field of type {ftype} cannot have fields", where)
            return ()
        struct_name = struct.struct_name
        assert struct_name is not None
        if struct_name in self.common_raw:
            if has_fields:
                raise self.error(f"{struct_name} is a common struct and cannot be redefined inline", where)
            return self.common_struct(struct_name).fields
        if not has_fields:
            raise self.error(f"struct type {struct_name} has no fields and is not a common struct", where)
        if struct_name in self.inline_structs:
            raise self.error(f"struct {struct_name} is defined twice", where)
        self.inline_structs.add(struct_name)
        return self.field_list(raw["fields"], where, in_array=ftype.kind == "array")

    def parse_default(
        self, text: str, ftype: FieldType, versions: Versions, nullable: Versions, where: str
    ) -> Any:
        kind = ftype.kind

        def invalid(reason: str = "") -> SpecError:
            suffix = f": {reason}" if reason else ""
            return self.error(f"invalid default {text!r} for type {ftype}{suffix}", where)

        if text == "null" and kind in NULLABLE_KINDS:
            if not nullable.covers(versions):
                raise self.error(
                    f"default null needs the field nullable in all its versions ({versions}), "
                    f"but nullableVersions is {nullable}",
                    where,
                )
            return None
        if kind == "bool":
            if text.lower() in ("", "false"):
                return False
            if text.lower() == "true":
                return True
            raise invalid()
        if kind in INTEGER_RANGES:
            if text == "":
                return 0
            value = _parse_int(text)
            if value is None:
                raise invalid("not an integer")
            low, high = INTEGER_RANGES[kind]
            if not low <= value <= high:
                raise invalid("out of range")
            return value
        if kind == "float64":
            try:
                return float(text) if text else 0.0
            except ValueError as exc:
                raise invalid() from exc
        if kind == "uuid":
            if text == "":
                return ZERO_UUID
            try:
                raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            except (binascii.Error, ValueError) as exc:
                raise invalid("not URL-safe base64") from exc
            if len(raw) != 16:
                raise invalid("not 16 bytes")
            return uuid.UUID(bytes=raw)
        if kind == "string":
            return text
        if kind in ("bytes", "records"):
            if text:
                raise invalid("a bytes or records default can only be empty or null")
            return b""
        if kind == "struct":
            if text:
                raise invalid("a struct default can only be empty or null")
            return STRUCT_DEFAULT
        if kind == "array":
            if text:
                raise invalid("an array default can only be empty or null")
            return ()
        raise invalid()  # pragma: no cover - every kind is handled above

    # -- scalar keys -----------------------------------------------------------------------------------

    def string(self, raw: dict[str, Any], key: str, where: str | None, *, required: bool = False) -> str:
        value = raw.get(key)
        if value is None:
            if required:
                raise self.error(f"{key} is required", where)
            return ""
        if not isinstance(value, str):
            raise self.error(f"{key} must be a string, not {value!r}", where)
        return value

    def versions(
        self, raw: dict[str, Any], key: str, where: str | None, *, required: bool = False, default: str = ""
    ) -> Versions:
        value = raw.get(key)
        if value is None or value == "":
            if required or not default:
                raise self.error(f"{key} is required", where)
            value = default
        if type(value) is int:  # Jackson reads a bare number as its string form
            value = str(value)
        if not isinstance(value, str):
            raise self.error(f"{key} must be a version string, not {value!r}", where)
        try:
            return Versions.parse(value)
        except ValueError as exc:
            raise self.error(f"{key}: {exc}", where) from exc

    def boolean(self, raw: dict[str, Any], key: str, where: str | None) -> bool:
        value = raw.get(key, False)
        if not isinstance(value, bool):
            raise self.error(f"{key} must be true or false, not {value!r}", where)
        return value


def _join(parent: str | None, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def _default_text(value: Any, where: str, parser: _SpecParser) -> str:
    """The default as Kafka's generator sees it: a string (JSON numbers and booleans in their text form)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if not isinstance(value, str):
        raise parser.error(f"default must be a string, not {value!r}", where)
    return value


def _parse_int(text: str) -> int | None:
    """Kafka's integer defaults: decimal, or hexadecimal after ``0x``, with an optional sign."""
    body, base = text, 10
    if body.startswith("0x"):
        body, base = body[2:], 16
    if not re.fullmatch(r"[+-]?[0-9a-fA-F]+" if base == 16 else r"[+-]?[0-9]+", body):
        return None
    return int(body, base)
