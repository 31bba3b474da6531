"""Group answers fitted to the version asked: fields the version lacks are left out (the codec refuses a
non-default value in a field a version does not have), so a handler builds one answer for every version."""

from __future__ import annotations

from typing import Any

from protocol.spec import FieldSpec, MessageSpec

__all__ = ["fit"]


#: What a version of a message keeps: each field it has, with the plan of its children (None: a leaf).
_Plan = tuple[tuple[str, "_Plan | None"], ...]
#: Plans made, by the identity of the fields they were made from and the version (with those fields, so
#: that the identity is not reused while the plan is kept); at most _PLANS_KEPT (then made anew).
_PLANS: dict[tuple[int, int], tuple[tuple[FieldSpec, ...], _Plan]] = {}
_PLANS_KEPT = 1024


def fit(spec: MessageSpec, data: dict[str, Any], version: int) -> dict[str, Any]:
    """``data`` without the fields (at any depth) that ``version`` of ``spec`` does not have."""
    return _fit(_plan(spec, spec.fields, version), data)


def _plan(spec: MessageSpec, fields: tuple[FieldSpec, ...], version: int) -> _Plan:
    """The fields of ``fields`` that ``version`` has, made once per fields and version (a group answer is
    fitted on every request)."""
    key = (id(fields), version)
    kept = _PLANS.get(key)
    if kept is not None and kept[0] is fields:
        return kept[1]
    plan = []
    for field in fields:
        if version not in field.versions:
            continue
        children = field.fields
        if not children and field.type.is_struct_like:
            name = field.type.struct_name or (field.type.element.struct_name if field.type.element else None)
            struct = spec.common_structs.get(name or "")
            children = struct.fields if struct is not None else ()
        plan.append((field.name, _plan(spec, children, version) if children else None))
    made = tuple(plan)
    if len(_PLANS) >= _PLANS_KEPT:  # spec sets loaded from other folders (tests) do not pile up
        _PLANS.clear()
    _PLANS[key] = (fields, made)
    return made


def _fit(plan: _Plan, data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, children in plan:
        if name not in data:
            continue
        value = data[name]
        if children is not None:
            if isinstance(value, list):
                value = [_fit(children, item) for item in value]
            elif isinstance(value, dict):
                value = _fit(children, value)
        out[name] = value
    return out
