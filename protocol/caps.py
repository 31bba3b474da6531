"""Caps on array lengths, applied while a message is decoded.

A request announces each array's length before its elements, so a server can refuse an array that is
too long before it builds it. A cap maps a field path (field names from the message's top level
through struct and struct-array fields, such as ``("Topics", "Assignments")`` in CreateTopics) to the
most elements any one array at that path may hold. The decoder steps over an array whose count is
above its cap without building its elements (checking them as decoding would: a malformed array
still raises DecodeError) and gives a :class:`~protocol.wire.Capped` in its place; the rest of the
message decodes as usual. :meth:`protocol.codec.Message.prepare_caps` checks the paths against the
spec once and returns the caps ready to be given to every decode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protocol.exceptions import CapsError
from protocol.spec import FieldSpec, MessageSpec

CapPath = tuple[str, ...]


def check_caps(spec: MessageSpec, caps: Mapping[CapPath, int]) -> dict[CapPath, int]:
    """``caps`` as a dict, once every path is known to name an array field of ``spec`` (at some version)
    and every limit is a non-negative int; CapsError otherwise."""
    if not isinstance(caps, Mapping):
        raise CapsError(f"caps must map field paths to limits, not {type(caps).__name__}")
    checked: dict[CapPath, int] = {}
    for path, limit in caps.items():
        if not isinstance(path, tuple) or not path or not all(isinstance(name, str) for name in path):
            raise CapsError(f"{spec.name}: a cap's path is a non-empty tuple of field names, not {path!r}")
        if type(limit) is not int or limit < 0:
            raise CapsError(f"{spec.name}: the cap on {'.'.join(path)} must be an int >= 0, not {limit!r}")
        _walk(spec, path)
        checked[path] = limit
    return checked


def applicable(spec: MessageSpec, version: int, caps: Mapping[CapPath, int]) -> dict[CapPath, int]:
    """The checked ``caps`` whose every field is present at ``version`` (the others are ignored)."""
    return {
        path: limit
        for path, limit in caps.items()
        if all(version in field.versions for field in _walk(spec, path))
    }


def _walk(spec: MessageSpec, path: CapPath) -> list[FieldSpec]:
    """The fields along ``path``: structs or struct arrays, then an array; CapsError if there are none."""
    fields: Sequence[FieldSpec] = spec.fields
    found: list[FieldSpec] = []
    for depth, name in enumerate(path):
        where = ".".join(path[: depth + 1])
        field = next((f for f in fields if f.name == name), None)
        if field is None:
            known = ", ".join(f.name for f in fields) or "none"
            raise CapsError(f"{spec.name} has no field {where} (the fields there: {known})")
        found.append(field)
        last = depth == len(path) - 1
        if last and field.type.kind != "array":
            raise CapsError(
                f"{spec.name}: {where} is not an array (it is {field.type}); only arrays are capped"
            )
        if not last and not field.type.is_struct_like:
            raise CapsError(f"{spec.name}: {where} is not a struct or an array of structs ({field.type})")
        fields = field.fields
    return found
