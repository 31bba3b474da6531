"""Java's string hashing, string ordering and ``HashMap`` iteration order, for exact Kafka results.

Kafka's placers keep racks in a ``java.util.HashMap`` and sort rack names with ``String.compareTo``;
the order they visit racks in decides which random numbers go where. These helpers reproduce both.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

__all__ = [
    "hashmap_capacity",
    "hashmap_iteration_order",
    "java_string_hash",
    "java_string_sort_key",
    "optional_string_hash",
    "optional_string_sort_key",
]

K = TypeVar("K", bound=Hashable)

_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75


def _utf16_units(text: str) -> Iterable[int]:
    if text.isascii():
        return text.encode("ascii")
    data = text.encode("utf-16-be", "surrogatepass")
    return (int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a Java int."""
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def optional_string_hash(text: str | None) -> int:
    """``Optional<String>.hashCode()``: the string's hash, 0 for an absent value."""
    return 0 if text is None else java_string_hash(text)


def java_string_sort_key(text: str) -> bytes:
    """A key that sorts like ``String.compareTo`` (UTF-16 code unit order, not code point order)."""
    return text.encode("utf-16-be", "surrogatepass")


def optional_string_sort_key(text: str | None) -> tuple[int, bytes]:
    """Kafka's ``OptionalStringComparator``: the absent value first, then ``String.compareTo`` order."""
    return (0, b"") if text is None else (1, java_string_sort_key(text))


def hashmap_capacity(size: int) -> int:
    """The table size of a default ``new HashMap<>()`` after ``size`` distinct insertions."""
    capacity = _DEFAULT_CAPACITY
    while size > int(capacity * _LOAD_FACTOR):
        capacity *= 2
    return capacity


def hashmap_iteration_order(keys: Sequence[K], hash_code: Callable[[K], int]) -> list[K]:
    """The order a default ``java.util.HashMap`` iterates ``keys`` (distinct, in insertion order).

    A key lands in bucket ``(h ^ (h >>> 16)) & (capacity - 1)``; buckets are visited in index order
    and keys within a bucket in insertion order (resizing keeps that order). Exact unless more than
    eight keys share one bucket of a table of 64 or more, where Java turns the bucket into a tree
    whose order depends on identity hash codes and so is not reproducible even in Java.
    """
    mask = hashmap_capacity(len(keys)) - 1

    def bucket(key: K) -> int:
        h = hash_code(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(keys, key=bucket)  # sorted() is stable: insertion order within a bucket
