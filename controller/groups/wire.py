"""Group answers fitted to the version asked: fields the version lacks are left out (the codec refuses a
non-default value in a field a version does not have), so a handler builds one answer for every version."""

from __future__ import annotations

from typing import Any

from protocol.spec import FieldSpec, MessageSpec

__all__ = ["fit"]


def fit(spec: MessageSpec, data: dict[str, Any], version: int) -> dict[str, Any]:
    """``data`` without the fields (at any depth) that ``version`` of ``spec`` does not have."""
    return _fit(spec, spec.fields, data, version)


def _fit(
    spec: MessageSpec, fields: tuple[FieldSpec, ...], data: dict[str, Any], version: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in fields:
        if field.name not in data or version not in field.versions:
            continue
        value = data[field.name]
        children = field.fields
        if not children and field.type.is_struct_like:
            name = field.type.struct_name or (field.type.element.struct_name if field.type.element else None)
            struct = spec.common_structs.get(name or "")
            children = struct.fields if struct is not None else ()
        if children and isinstance(value, list):
            value = [_fit(spec, children, item, version) for item in value]
        elif children and isinstance(value, dict):
            value = _fit(spec, children, value, version)
        out[field.name] = value
    return out
