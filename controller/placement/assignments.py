"""Every partition's replicas, as placers see them: immutable, and cheap to take again after a change.

:class:`Assignments` holds one tuple of replica lists per topic in a persistent map (a hash array
mapped trie, from the ``immutables`` package): adding or removing a topic makes a new map that shares
everything else with the old one, so taking a view of the cluster costs the same with 10 topics or
10,000. Topics keep their creation order. Each new :class:`Assignments` knows what changed since the
one before it (:meth:`Assignments.changes_since`), so that a placer in a worker process is sent only the
topics that changed since its last call, not the whole cluster.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import immutables

__all__ = ["Assignments", "Delta"]

#: How far back a view remembers its predecessors (older workers get a full copy).
_HISTORY = 64

Replicas = tuple[tuple[int, ...], ...]


class Assignments(Mapping[tuple[str, int], tuple[int, ...]]):
    """``(topic, partition) -> replicas`` (leader first), read-only; iterates topics in creation order."""

    __slots__ = ("_changed", "_depth", "_next", "_order", "_parent", "_size", "_topics")

    def __init__(
        self,
        topics: immutables.Map[str, tuple[int, Replicas]] | None = None,
        size: int = 0,
        parent: Assignments | None = None,
        changed: frozenset[str] = frozenset(),
        next_seq: int | None = None,
    ) -> None:
        self._topics: immutables.Map[str, tuple[int, Replicas]] = (
            topics if topics is not None else immutables.Map()
        )
        self._size = size
        if next_seq is None:
            next_seq = max((seq for seq, _ in self._topics.values()), default=-1) + 1
        self._next = next_seq
        self._order: list[str] | None = None
        self._changed = changed
        depth = parent._depth + 1 if parent is not None else 0
        if depth > _HISTORY:
            parent, depth = None, 0
        self._parent = parent
        self._depth = depth

    # ------------------------------------------------------------------------------------- making new ones

    def with_topic(self, name: str, replicas: Replicas) -> Assignments:
        """This plus (or with a new value for) ``name``."""
        old = self._topics.get(name)
        seq = old[0] if old is not None else self._next
        size = self._size - (len(old[1]) if old is not None else 0) + len(replicas)
        topics = self._topics.set(name, (seq, replicas))
        return Assignments(topics, size, self, frozenset((name,)), max(self._next, seq + 1))

    def without_topic(self, name: str) -> Assignments:
        old = self._topics.get(name)
        if old is None:
            return self
        return Assignments(
            self._topics.delete(name), self._size - len(old[1]), self, frozenset((name,)), self._next
        )

    # ------------------------------------------------------------------------------------- reading

    def topic(self, name: str) -> Replicas | None:
        entry = self._topics.get(name)
        return entry[1] if entry is not None else None

    def topic_names(self) -> list[str]:
        if self._order is None:
            self._order = [name for name, _ in sorted(self._topics.items(), key=lambda item: item[1][0])]
        return self._order

    def __getitem__(self, key: tuple[str, int]) -> tuple[int, ...]:
        topic, partition = key
        entry = self._topics.get(topic)
        if entry is None or not 0 <= partition < len(entry[1]):
            raise KeyError(key)
        return entry[1][partition]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        topics = self._topics
        for name in self.topic_names():
            for partition in range(len(topics[name][1])):
                yield name, partition

    def __len__(self) -> int:
        return self._size

    def items(self) -> Any:
        return self._items()

    def _items(self) -> Iterator[tuple[tuple[str, int], tuple[int, ...]]]:
        topics = self._topics
        for name in self.topic_names():
            for partition, replicas in enumerate(topics[name][1]):
                yield (name, partition), replicas

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        entry = self._topics.get(key[0])
        return entry is not None and isinstance(key[1], int) and 0 <= key[1] < len(entry[1])

    # ------------------------------------------------------------------------------------- deltas

    def changes_since(self, earlier: Assignments) -> Delta | None:
        """What changed between ``earlier`` and this, if ``earlier`` is a recent predecessor; else None."""
        names: set[str] = set()
        node: Assignments | None = self
        while node is not None and node is not earlier:
            names |= node._changed
            node = node._parent
        if node is None:
            return None
        return Delta({name: self._topics.get(name) for name in names}, self._size, self._next)

    def __reduce__(self) -> tuple[object, ...]:
        return (Assignments, (self._topics, self._size, None, frozenset(), self._next))

    def __repr__(self) -> str:
        return f"Assignments({dict(self._items())!r})"


class Delta:
    """The topics that changed (None: deleted) between two :class:`Assignments`, and the new size."""

    __slots__ = ("next_seq", "size", "topics")

    def __init__(self, topics: Mapping[str, tuple[int, Replicas] | None], size: int, next_seq: int) -> None:
        self.topics = dict(topics)
        self.size = size
        self.next_seq = next_seq

    def apply_to(self, base: Assignments) -> Assignments:
        topics = base._topics
        with topics.mutate() as mutable:
            for name, entry in self.topics.items():
                if entry is None:
                    mutable.pop(name, None)
                else:
                    mutable[name] = entry
            topics = mutable.finish()
        return Assignments(topics, self.size, None, frozenset(), self.next_seq)

    def __reduce__(self) -> tuple[object, ...]:
        return (Delta, (self.topics, self.size, self.next_seq))
