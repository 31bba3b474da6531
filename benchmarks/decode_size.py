"""How much memory a decoded message takes per byte of its encoding, at worst, for the project's specs.

A frame's decoded form is bounded by its size times a factor that depends on the shapes the specs
allow; this script measures that factor without caps. For every message (schemas/), every version and
every array field (at any depth) it builds bodies whose bytes go almost all to that array, with
elements chosen to decode as large as their bytes allow (each field of an element tried at its
smallest encoding and at values that decode to objects of their own: ints outside CPython's cached
range, two-character strings, an unknown tagged field), and measures the marginal cost of one more
element: the growth of the decoded value (``sys.getsizeof`` over every object reachable from it,
each object once, so interned field names, cached small ints and the empty string count nothing)
and of the memory ``tracemalloc`` sees at the decode's peak, per byte of the body's growth.

Findings, measured with Python 3.11 on 64-bit Linux (the script prints the full table):

- The worst shapes are arrays of small structs in flexible versions. Each element is a new dict (184
  bytes for up to five fields) plus a pointer in its list, for as little as two bytes: an empty array
  field costs one byte and decodes to a new empty list (56 bytes), a tag section costs one byte; an
  empty or null string costs one byte and decodes to a shared object; an unknown tagged field of no
  data costs three bytes and decodes to a dict of its own.
- Worst of all requests: CreatePartitionsRequest v2+ ``Topics[].Assignments[]``, elements of no broker
  ids (2 bytes each): 124 deep bytes per byte, 125 at the decode's peak. Then MetadataRequest v9+
  ``Topics[]`` (an empty name and an empty unknown tagged field, 4 bytes): 104; ElectLeadersRequest
  v2+ ``TopicPartitions[]``: 95; CreateTopicsRequest v5+ ``Topics[].Configs[]``: 83,
  ``Topics[].Assignments[]``: 63, ``Topics[]``: 56.
- Arrays of int32 values outside the small-int cache: 9 per byte (8 for the list's slot and 28 for the
  int, per 4 bytes), 11 at the peak. The specs have no arrays of int8, int16 or bool (an array of int8
  would reach 36 per byte). Strings of two characters in an array of strings: 20 per byte.
- Classic (non-flexible) versions are cheaper per byte: their counts and lengths take 2 to 4 bytes.

So without caps a request body of B bytes may take about 125 x B bytes of memory while it is decoded
and as long as the decoded value is kept (a 100 MB frame, ``socket.request.max.bytes``' default:
over 12 GB). Dict and list sizes differ a little between Python versions; rerun the script for the
interpreter in use. ``--all`` adds the responses, which only a client decodes.

Run: .venv/bin/python benchmarks/decode_size.py [--all]   (prints a Markdown table; about a minute)
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from protocol import UNKNOWN_TAGGED_FIELDS, DecodeError, EncodeError, Message, load_schemas
from protocol.structs import Array, KafkaStruct, NullableStruct
from protocol.types import Boolean, Bytes, Float64, Integer, KafkaType, String, Uuid

SMALL, LARGE = 400, 1200
"""Elements in the two bodies whose difference gives the marginal cost of one element."""


def deep_size(value: Any, seen: set[int]) -> int:
    """``sys.getsizeof`` of ``value`` and of everything it holds, each object once."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in value.items())
    elif isinstance(value, list | tuple):
        size += sum(deep_size(item, seen) for item in value)
    elif isinstance(value, uuid.UUID):
        size += deep_size(value.int, seen)
    return size


def options(kind: KafkaType) -> list[Any]:
    """Values to try for a field of ``kind`` inside an element: its smallest encodings first."""
    if isinstance(kind, NullableStruct):
        return [None]
    if isinstance(kind, KafkaStruct):
        return [kind.default_value()]
    if isinstance(kind, Array):
        return [None, []] if kind.nullable else [[]]
    if isinstance(kind, Integer):
        return [0, max(kind.low, -100) if kind.low < 0 else min(kind.high, 1000), min(kind.high, 1000)]
    if isinstance(kind, Boolean):
        return [False]
    if isinstance(kind, Float64):
        return [1.5]
    if isinstance(kind, Uuid):
        return [uuid.UUID(int=12345)]
    if isinstance(kind, String):
        return ([None] if kind.nullable else []) + ["", "ab"]
    if isinstance(kind, Bytes):
        return ([None] if kind.nullable else []) + [b"", b"ab"]
    raise TypeError(f"no options for {kind!r}")


@dataclass
class Site:
    """An array field of one message version: its path and the construct of its elements."""

    path: tuple[str, ...]
    array: Array


def sites(kind: KafkaType, path: tuple[str, ...] = ()) -> Iterator[Site]:
    if isinstance(kind, NullableStruct):
        kind = kind.struct
    if isinstance(kind, Array):
        yield Site(path, kind)
        kind = kind.element
    if isinstance(kind, KafkaStruct):
        for spec in (*kind.fields, *kind.tagged):
            yield from sites(spec.type, (*path, spec.name))


def with_array(kind: KafkaType, path: tuple[str, ...], items: list[Any]) -> Any:
    """A value of ``kind`` at its defaults, but for one element in each array on ``path`` (the last
    array holding ``items``)."""
    if isinstance(kind, NullableStruct):
        return with_array(kind.struct, path, items)
    if isinstance(kind, Array):
        return items if not path else [with_array(kind.element, path, items)]
    assert isinstance(kind, KafkaStruct)
    value = kind.default_value()
    spec = next(s for s in (*kind.fields, *kind.tagged) if s.name == path[0])
    value[path[0]] = with_array(spec.type, path[1:], items)
    return value


@dataclass
class Cost:
    deep: float  # deep bytes per body byte
    peak: float  # tracemalloc peak bytes per body byte
    element_bytes: float
    element: Any


def measure(message: Message, version: int, site: Site, element: Any, traced: bool) -> Cost | None:
    root = message.codec(version).construct.root
    bodies = []
    for count in (SMALL, LARGE):
        try:
            bodies.append(message.encode(with_array(root, site.path, [element] * count), version))
        except EncodeError:
            return None
    grown = len(bodies[1]) - len(bodies[0])
    if grown <= 0:
        return None
    deep, peak = [], []
    for body in bodies:
        gc.collect()
        if traced:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        try:
            value = message.decode(body, version)
        except DecodeError:
            return None
        finally:
            if traced:
                peak.append(tracemalloc.get_traced_memory()[1] - before)
                tracemalloc.stop()
        deep.append(deep_size(value, set()))
        del value
    per = 1 / grown
    return Cost(
        (deep[1] - deep[0]) * per,
        (peak[1] - peak[0]) * per if traced else 0.0,
        grown / (LARGE - SMALL),
        element,
    )


def worst_element(message: Message, version: int, site: Site) -> Cost | None:
    """The element (greedy over each field's options) that decodes largest per byte."""
    element_type = site.array.element
    if not isinstance(element_type, KafkaStruct):
        costs = [measure(message, version, site, value, False) for value in options(element_type)]
        return max((c for c in costs if c), key=lambda c: c.deep, default=None)
    element = element_type.default_value()
    best = measure(message, version, site, element, False)
    choices = {spec.name: options(spec.type) for spec in element_type.fields}
    if element_type.tags is not None:
        choices[UNKNOWN_TAGGED_FIELDS] = [None, {30: b""}]
    for _ in range(2):
        for name, values in choices.items():
            for value in values:
                candidate = {**element, name: value} if value is not None else dict(element)
                if value is None and name == UNKNOWN_TAGGED_FIELDS:
                    candidate.pop(name, None)
                elif value is None:
                    candidate[name] = None
                cost = measure(message, version, site, candidate, False)
                if cost and (best is None or cost.deep > best.deep):
                    best, element = cost, candidate
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="responses too")
    args = parser.parse_args()
    rows = []
    for message in load_schemas():
        if message.type != "request" and not args.all:
            continue
        low, high = message.valid_versions
        for version in range(low, high + 1):
            for site in sites(message.codec(version).construct.root):
                cost = worst_element(message, version, site)
                if cost is None:
                    continue
                traced = measure(message, version, site, cost.element, True)
                assert traced is not None
                rows.append((traced.deep, traced.peak, message.name, version, site, traced))
    rows.sort(key=lambda row: (-row[0], row[2], row[3]))
    print(f"Python {sys.version.split()[0]}; marginal cost of one more element, per byte of the body\n")
    print("| message | version | array | element bytes | deep bytes / byte | peak bytes / byte | element |")
    print("|---|---:|---|---:|---:|---:|---|")
    shown: set[tuple[str, tuple[str, ...]]] = set()
    for deep, peak, name, version, site, cost in rows:
        if (name, site.path) in shown:  # the worst version of each array
            continue
        shown.add((name, site.path))
        print(
            f"| {name} | {version} | {'.'.join(site.path)} | {cost.element_bytes:.0f} | {deep:.1f} | {peak:.1f} "
            f"| `{cost.element!r}` |"
        )
    worst = max(rows, key=lambda row: row[1])
    print(
        f"\nWorst: {worst[1]:.1f} bytes at the decode's peak per byte of the body "
        f"({worst[2]} v{worst[3]} {'.'.join(worst[4].path)}; deep size {worst[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
