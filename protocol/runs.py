"""Arrays of small fixed-layout structs, decoded a run of elements at a time.

Some arrays hold structs whose fields are all fixed-size values or arrays of fixed-size values, such
as Metadata's partitions (error code, index, leader, epoch, three arrays of broker ids). Such an
element's layout depends only on the counts of its arrays: its *shape*. Consecutive elements of one
shape take the same number of bytes and have their count bytes (and, in flexible versions, their
empty tag sections) at the same offsets, so a run of them is checked with one strided slice per such
byte and read with one ``Struct.iter_unpack``, each element's dict built in a comprehension from
local names. That avoids most of the per-element work of the general decoder: one ``struct`` call
and several bounds and count checks per array.

The code for a shape is generated when an element of that shape is first seen, and kept. An array
site keeps at most :data:`MAX_SHAPES` shapes, each with at most :data:`MAX_COUNT` values per array
and :data:`MAX_VALUES` in all, so hostile input cannot make it hold more; elements of any other shape,
with tagged fields or with long arrays are read by the general decoder, element by element.

With caps on array lengths (:mod:`protocol.caps`), an element whose array exceeds its cap has no
shape either: the general decoder reads it and gives that array's :class:`~protocol.wire.Capped`. An
array of such structs that is itself over its cap is stepped over run by run (:meth:`Runs.skip`):
each run checked with the same strided slices, no element built and no code generated.
"""

from __future__ import annotations

import struct
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from protocol.emit import literal
from protocol.wire import uuid_from_bytes

MAX_SHAPES: Final = 32
"""Shapes one array site generates code for; elements of further shapes take the general path."""

MAX_COUNT: Final = 32
"""The longest array, in values, that a shape may have."""

MAX_VALUES: Final = 96
"""The most values, over all its arrays, that a shape may have."""

SKIP_RUN: Final = 1 << 16
"""The most elements :meth:`Runs.skip` checks at once (its column slices are this long at most)."""

_INT32: Final = struct.Struct(">i")

Decoded = tuple[list[dict[str, Any]], int]
#: ``full(buf, pos, bound, count)``: the ``count`` elements at ``pos`` if all have the shape, else None.
Full = Callable[[bytes, int, int, int], Decoded | None]
#: ``element(buf, pos, bound)``: one element by the general decoder, and the offset after it.
Element = Callable[[bytes, int, int], tuple[dict[str, Any], int]]
#: ``skip(buf, pos, bound)``: the offset after one element, checked but not built.
Skip = Callable[[bytes, int, int], int]
#: The walk from one count to the next: bytes to skip, then the array (None after the last one) and the
#: longest count a shape may have for it.
Steps = tuple[tuple[int, "Values | None", int], ...]


@dataclass(frozen=True)
class Fixed:
    """How a fixed-size type joins a batched ``struct`` format: its code, size and conversions."""

    code: str
    size: int
    post: str | None = None  # decode conversion, a template around the unpacked value
    pre: str | None = None  # encode conversion, a template around the value to pack


@dataclass(frozen=True)
class Value:
    """A fixed-size field."""

    name: str
    fixed: Fixed


@dataclass(frozen=True)
class Values:
    """An array of fixed-size values; ``cap``: its cap, if the array is capped."""

    name: str
    fixed: Fixed
    compact: bool
    nullable: bool
    cap: int | None = None


@dataclass(frozen=True)
class Shape:
    """Generated code for elements whose arrays have the counts ``key`` (None: a null array)."""

    key: tuple[int | None, ...]
    size: int
    columns: tuple[tuple[int, bytes], ...]  # (offset in the element, the byte every element has there)
    full: Full


def _never(buf: bytes, pos: int, bound: int, count: int) -> None:
    return None


class Runs:
    """One array site: the element's layout, and the shapes seen so far.

    ``fields`` are the element's fields in wire order, ``tagged`` its tagged fields (name, default)
    in flexible versions, where every element ends with a tag section (``flexible``).
    """

    def __init__(
        self,
        name: str,
        fields: Sequence[Value | Values],
        flexible: bool,
        tagged: Sequence[tuple[str, Any]] = (),
    ) -> None:
        self.name = name
        self.fields = tuple(fields)
        self.flexible = flexible
        self.tagged = tuple(tagged)
        self.shapes: dict[tuple[int | None, ...], Shape] = {}
        #: The shape of the last run: tried first on the next array, as arrays tend to repeat a shape.
        self.last: Full = _never
        self._lock = threading.Lock()
        self._steps = self._walk(capped=True)
        self._skip_steps = self._walk(capped=False)
        self._layouts: dict[tuple[int | None, ...], tuple[int, tuple[tuple[int, bytes], ...]]] = {}

    def _walk(self, capped: bool) -> Steps:
        """The steps through an element, with the arrays' caps (``capped``) or without (for skipping)."""
        steps: list[tuple[int, Values | None, int]] = []
        skip = 0
        for field in self.fields:
            if isinstance(field, Value):
                skip += field.fixed.size
            else:
                limit = MAX_COUNT if field.cap is None or not capped else min(MAX_COUNT, field.cap)
                steps.append((skip, field, limit))
                skip = 0
        steps.append((skip, None, 0))
        return tuple(steps)

    def source(self) -> str:
        """Python source that makes an equal site (fresh, no shapes seen) in a generated module, whose
        prelude (:data:`protocol.emit.PRELUDE`) binds ``_Runs``, ``_Value``, ``_Values`` and ``_Fixed``: a
        codec's module makes its own sites, so its code refers to no object of the process that wrote it."""

        def fixed(f: Fixed) -> str:
            return f"_Fixed({f.code!r}, {f.size!r}, {f.post!r}, {f.pre!r})"

        fields = ", ".join(
            f"_Value({v.name!r}, {fixed(v.fixed)})"
            if isinstance(v, Value)
            else f"_Values({v.name!r}, {fixed(v.fixed)}, {v.compact!r}, {v.nullable!r}, {v.cap!r})"
            for v in self.fields
        )
        tagged = ", ".join(f"({name!r}, {literal(default)})" for name, default in self.tagged)
        return f"_Runs({self.name!r}, ({fields}{',' if self.fields else ''}), {self.flexible!r}, ({tagged}{',' if self.tagged else ''}))"

    @staticmethod
    def possible(fields: Sequence[Value | Values], flexible: bool) -> bool:
        """Whether elements of this layout have a size (``iter_unpack`` needs one)."""
        return flexible or bool(fields)

    def shape_at(
        self, buf: bytes, pos: int, bound: int, skipping: bool = False
    ) -> tuple[int | None, ...] | None:
        """The shape of the element at ``pos``, or None when no generated code may read it (a long,
        capped or multi-byte count, a null where none is allowed, tagged fields, not within ``bound``).
        ``skipping``: for :meth:`skip`, which has no use for the caps of the element's arrays."""
        key: list[int | None] = []
        total = 0
        for skip, array, limit in self._skip_steps if skipping else self._steps:
            pos += skip
            if array is None:
                break
            if array.compact:
                if pos >= bound:
                    return None
                count = buf[pos] - 1
                pos += 1
            else:
                if pos + 4 > bound:
                    return None
                (count,) = _INT32.unpack_from(buf, pos)
                pos += 4
            if count < 0:
                if count != -1 or not array.nullable:
                    return None
                key.append(None)
                continue
            total += count
            if count > limit or total > MAX_VALUES:
                return None
            key.append(count)
            pos += count * array.fixed.size
        if self.flexible:
            if pos >= bound or buf[pos]:
                return None
            pos += 1
        return tuple(key) if pos <= bound else None

    def shape(self, key: tuple[int | None, ...]) -> Shape | None:
        """The code for shape ``key``: generated on first use; None once the site has its fill."""
        shape = self.shapes.get(key)
        if shape is None:
            with self._lock:
                shape = self.shapes.get(key)
                if shape is None and len(self.shapes) < MAX_SHAPES:
                    shape = self.shapes[key] = self._generate(key)
        return shape

    def decode(self, buf: bytes, pos: int, bound: int, count: int, element: Element) -> Decoded:
        """``count`` elements from ``pos``: runs of one shape together, any other element by ``element``."""
        values: list[dict[str, Any]] = []
        while count:
            key = self.shape_at(buf, pos, bound)
            shape = None if key is None else self.shape(key)
            if shape is None:
                value, pos = element(buf, pos, bound)
                values.append(value)
                count -= 1
                continue
            size = shape.size
            run = min(count, (bound - pos) // size)  # at least 1: shape_at read the first whole element
            end = pos + size * run
            for offset, byte in shape.columns:
                column = buf[pos + offset : end : size]
                if column.lstrip(byte):  # an element of another shape: the run stops before it
                    run = len(column) - len(column.lstrip(byte))
                    end = pos + size * run
            decoded = shape.full(buf, pos, end, run)
            assert decoded is not None, "a checked run is one shape"
            values += decoded[0]
            self.last = shape.full
            pos = end
            count -= run
        return values, pos

    def skip(self, buf: bytes, pos: int, bound: int, count: int, element: Skip) -> int:
        """The offset after ``count`` elements from ``pos``, checked as decoding them would be but not
        built: runs of one shape at a time (of any shape, with no code generated), any other element
        by ``element``."""
        while count:
            key = self.shape_at(buf, pos, bound, skipping=True)
            if key is None:
                pos = element(buf, pos, bound)
                count -= 1
                continue
            size, columns = self._layout(key)
            run = min(count, (bound - pos) // size, SKIP_RUN)  # at least 1, as in decode
            end = pos + size * run
            for offset, byte in columns:
                column = buf[pos + offset : end : size]
                rest = column.lstrip(byte)
                if rest:
                    run = len(column) - len(rest)
                    end = pos + size * run
            pos = end
            count -= run
        return pos

    def _layout(self, key: tuple[int | None, ...]) -> tuple[int, tuple[tuple[int, bytes], ...]]:
        """The size of an element of shape ``key``, and the bytes every such element has (offset, byte):
        its count bytes and, in flexible versions, its empty tag section."""
        found = self._layouts.get(key)
        if found is not None:
            return found
        columns: list[tuple[int, bytes]] = []
        counts = iter(key)
        offset = 0
        for field in self.fields:
            if isinstance(field, Value):
                offset += field.fixed.size
                continue
            count = next(counts)
            marker = (
                (b"\x00" if count is None else bytes([count + 1]))
                if field.compact
                else (-1 if count is None else count).to_bytes(4, "big", signed=True)
            )
            columns.extend((offset + index, marker[index : index + 1]) for index in range(len(marker)))
            offset += len(marker) + (count or 0) * field.fixed.size
        if self.flexible:
            columns.append((offset, b"\x00"))
            offset += 1
        found = (offset, tuple(columns))
        if len(self._layouts) < 4 * MAX_SHAPES:  # keys are few (bounded counts); kept, within reason
            self._layouts[key] = found
        return found

    # code generation -------------------------------------------------------------------------------

    def _generate(self, key: tuple[int | None, ...]) -> Shape:
        codes = [">"]
        entries: list[str] = []
        names = (f"v{index}" for index in range(1_000_000))
        unpacked: list[str] = []
        counts = iter(key)

        def value(fixed: Fixed) -> str:
            name = next(names)
            unpacked.append(name)
            codes.append(fixed.code)
            return fixed.post.format(name) if fixed.post else name

        for field in self.fields:
            if isinstance(field, Value):
                entries.append(f"{field.name!r}: {value(field.fixed)}")
                continue
            count = next(counts)
            codes.append("1x" if field.compact else "4x")
            if count is None:
                entries.append(f"{field.name!r}: None")
                continue
            items = [value(field.fixed) for _ in range(count)]
            entries.append(f"{field.name!r}: [{', '.join(items)}]")
        if self.flexible:
            codes.append("x")
        entries.extend(f"{name!r}: {literal(default)}" for name, default in self.tagged)
        layout = struct.Struct("".join(codes))
        offset, columns = self._layout(key)
        assert layout.size == offset
        targets = "".join(f"{name}, " for name in unpacked) or "_"
        comprehension = f"[{{{', '.join(entries)}}} for {targets} in iter_unpack(seg)]"
        checks = " or ".join(f"seg[{o}::{offset}].lstrip({b!r})" for o, b in columns)
        source = "\n".join(
            [
                "def full(buf, pos, bound, count):",
                f"    end = pos + {offset} * count",
                "    if end <= bound:",
                "        seg = buf[pos:end]",
                f"        if not ({checks}):" if checks else "        if True:",
                f"            return {comprehension}, end",
                "    return None",
            ]
        )
        namespace: dict[str, Any] = {
            "iter_unpack": layout.iter_unpack,
            "uuid_from_bytes": uuid_from_bytes,
            "_UUID": uuid.UUID,
        }
        exec(compile(source, f"<{self.name} shape {key}>", "exec"), namespace)
        return Shape(key, offset, columns, namespace["full"])

    def __repr__(self) -> str:
        return f"<Runs {self.name}: {len(self.shapes)} shapes>"
