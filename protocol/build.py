"""A spec at one version made into its construct (:mod:`protocol.structs`, :mod:`protocol.types`).

Only a codec that must be written (one the cache does not hold, :func:`protocol.compiled.compile_message`)
or interpreted (the fallback that names the field of a malformed input) needs its construct, and so
construct itself: this module, and construct with it, is imported then, not with :mod:`protocol.codec`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocol import structs as s
from protocol import types as t
from protocol.caps import CapPath
from protocol.spec import STRUCT_DEFAULT, FieldSpec, MessageSpec, Versions

__all__ = ["build_message", "build_struct", "build_type", "field_default"]

Caps = Mapping[CapPath, int]

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
