"""Writes generated Python into construct's code generator (``construct.core.CodeGen``).

construct's own emitters return expressions that read a stream. Kafka's types emit *statements* that
work on a ``bytes`` buffer with an integer offset, which is several times faster: decoders read
``buf`` at ``pos`` (advancing ``pos``; ``bound`` names the end of readable input) and encoders append
to the ``bytearray`` named by :attr:`Emitter.out`. An :class:`Emitter` collects the body of one generated
function; :meth:`Emitter.constant` and :meth:`Emitter.function` add module-level definitions to the
same CodeGen that construct's ``compile()`` turns into a module.
"""

from __future__ import annotations

import itertools
import math
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from construct.core import CodeGen

PRELUDE = """
from struct import Struct as _Struct
from uuid import UUID as _UUID
from protocol.wire import (
    Capped, Fallback, Malformed, UNKNOWN_TAGGED_FIELDS, UNKNOWN_TAGS_FOUND, array_packers,
    array_unpackers, checked_unknown_tags, pack_fixed, read_bytes, read_count, read_fixed_array, read_string,
    read_unknown_tags, read_uvarint, read_uvarlong, read_varint, read_varlong, skip_bytes,
    stream_decode, stream_encode, uuid_from_bytes, uvarint_bytes, write_elements,
    write_tag_section, write_unknown_tags, zigzag32, zigzag64,
)
from protocol.runs import Fixed as _Fixed, Runs as _Runs, Value as _Value, Values as _Values
"""


# Module-level names already bound in each CodeGen: expression source -> name.
_CONSTANTS: weakref.WeakKeyDictionary[CodeGen, dict[str, str]] = weakref.WeakKeyDictionary()


class Emitter:
    """The body of one generated function, plus access to module-level definitions."""

    def __init__(self, code: CodeGen, out: str = "out") -> None:
        self.code = code
        self.lines: list[str] = []
        self.depth = 1
        self.out = out
        self._names = itertools.count()
        code.append(PRELUDE)

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """A compound statement: ``header`` (ending in ``:``) and an indented body."""
        self(header)
        self.depth += 1
        before = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == before:
                self("pass")
            self.depth -= 1

    @contextmanager
    def output(self, name: str) -> Iterator[None]:
        """Temporarily encode into another bytearray local."""
        saved, self.out = self.out, name
        try:
            yield
        finally:
            self.out = saved

    def local(self, hint: str = "v") -> str:
        """A fresh local variable name."""
        return f"{hint}{next(self._names)}"

    def constant(self, source: str, hint: str = "k") -> str:
        """A module-level name bound to the expression ``source`` (one per distinct source)."""
        constants = _CONSTANTS.setdefault(self.code, {})
        name = constants.get(source)
        if name is None:
            name = f"_{hint}{self.code.allocateId()}"
            constants[source] = name
            self.code.append(f"{name} = {source}")
        return name

    def linked(self, obj: object) -> str:
        """An expression for ``obj`` inside generated functions (construct binds ``linkedinstances`` in
        the module after it runs the module's code, so module-level code cannot use it)."""
        self.code.linkedinstances[id(obj)] = obj
        return f"linkedinstances[{id(obj)}]"

    def function(self, hint: str, params: str, body: Callable[[Emitter], None]) -> str:
        """Generate a module-level function whose body ``body`` writes into a fresh Emitter."""
        name = f"{hint}_{self.code.allocateId()}"
        inner = Emitter(self.code, out=self.out)
        body(inner)
        if not inner.lines:
            inner("pass")
        self.code.append("\n".join([f"def {name}({params}):", *inner.lines]))
        return name


def literal(value: Any) -> str:
    """Python source that evaluates to a fresh copy of ``value`` inside generated code."""
    if value is None or isinstance(value, bool | int | str | bytes):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, uuid.UUID):
        return f"_UUID(int={value.int})"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no literal for {type(value).__name__}")
