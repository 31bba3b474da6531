"""KIP-879 multi-level rack awareness (short name ``multi-level``).

Rack ids are paths from a root: ``/dc1/rack2``. The brokers form a tree (data centres, racks, ...,
brokers at the leaves) and every node keeps a ring over its children. A replica is placed by
descending from the root: at each node the placer takes the child the ring points at, moves the ring
past it, and goes on until it reaches a broker. The rings start at random children (drawn from
``simulator.seed``) and are kept between calls, so adding partitions continues where the last
placement stopped.

Spread comes first at the top level and then within each subtree: while choosing a follower, a node
prefers, in this order, a child holding a rack the partition does not use yet, the child holding the
fewest replicas of the partition, and a child with an unfenced broker left; the ring decides among
equals. So every partition spans min(RF, racks) racks, and its replicas are spread as evenly as the
tree allows over data centres, then over racks inside each one.

Leaders walk their own rings (one more per node). With a single ring per node, a replication factor
that is a multiple of a node's child count would send every leader to the same child.

Fenced brokers never lead. They hold a follower only where the spread needs them (a rack or a
subtree the partition would otherwise miss) or when the unfenced brokers are too few for RF, as
Kafka's striped placer does.

Every usable broker, fenced or not, needs a rack that starts with ``/``; otherwise the placer does not
apply to the cluster (:class:`~controller.placement.api.PlacerNotApplicableError`, a
``ReplicaPlacementError``).
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from controller.placement.api import (
    ClusterView,
    PlacementSpec,
    PlacerNotApplicableError,
    ReplicaPlacer,
    UsableBroker,
)
from controller.placement.builtin.java_random import JavaRandom, JavaRandomLike, random_from_configs
from controller.placement.rules import require_enough_brokers, require_positive, require_some_unfenced

log = logging.getLogger(__name__)

ROOT = "/"

RingId = tuple[str, str]  # ("node" | "rack", path)


def rack_path(rack: str) -> str:
    """The normalised path of a rack id: ``/dc1//r2/`` -> ``/dc1/r2``."""
    return ROOT + "/".join(part for part in rack.split("/") if part)


def parent_path(path: str) -> str:
    return path.rsplit("/", 1)[0] or ROOT


@dataclass(eq=False)
class _Node:
    """A tree node: an inner node (children) or a rack (brokers). Counters cover its whole subtree."""

    ring_id: RingId
    key: str  # orders siblings
    parent: _Node | None
    children: list[_Node] = field(default_factory=list)
    brokers: list[int] = field(default_factory=list)  # racks only, sorted
    fenced: list[bool] = field(default_factory=list)
    keys: list[str] | list[int] = field(default_factory=list)  # the ring's keys: child keys or broker ids
    leader_pos: int = 0  # ring positions during one call (saved as keys between calls)
    follower_pos: int = 0
    total: int = 0
    unfenced: int = 0
    racks: int = 0
    # Replicas of the partition being placed, valid while stamp equals the partition's number.
    stamp: int = -1
    used: int = 0
    used_unfenced: int = 0
    used_racks: int = 0

    @property
    def is_rack(self) -> bool:
        return not self.children

    def walk(self) -> Iterator[_Node]:
        yield self
        for child in self.children:
            yield from child.walk()


def _build_tree(brokers: Sequence[UsableBroker]) -> _Node:
    by_rack: dict[str, list[UsableBroker]] = {}
    for b in brokers:
        by_rack.setdefault(rack_path(b.rack or ""), []).append(b)
    inner_paths = {ROOT}
    for path in by_rack:
        while path != ROOT:
            path = parent_path(path)
            inner_paths.add(path)
    nodes: dict[str, _Node] = {}
    for path in sorted(inner_paths, key=lambda p: (p.count("/"), p) if p != ROOT else (0, "")):
        parent = None if path == ROOT else nodes[parent_path(path)]
        nodes[path] = node = _Node(("node", path), path, parent)
        if parent is not None:
            parent.children.append(node)
    for path, members in by_rack.items():
        # A rack that is also the prefix of other racks hangs under its own inner node.
        parent = nodes[path] if path in inner_paths else nodes[parent_path(path)]
        rack = _Node(("rack", path), path, parent)
        members = sorted(members, key=lambda b: b.id)
        rack.brokers = [b.id for b in members]
        rack.fenced = [b.fenced for b in members]
        parent.children.append(rack)
        unfenced = sum(1 for b in members if not b.fenced)
        node: _Node | None = rack
        while node is not None:
            node.total += len(members)
            node.unfenced += unfenced
            node.racks += 1
            node = node.parent
    for node in nodes.values():
        node.children.sort(key=lambda c: c.key)
        node.keys = [c.key for c in node.children]
    for node in nodes[ROOT].walk():
        if node.is_rack:
            node.keys = node.brokers
    return nodes[ROOT]


class _Rings:
    """The ring pointers of every node, for leaders and for followers, kept between calls.

    A pointer is the key of the child it points at, so that it survives brokers and racks coming and
    going; a pointer to a child that is gone moves on to the next one in key order.
    """

    def __init__(self) -> None:
        self.leader: dict[RingId, str | int] = {}
        self.follower: dict[RingId, str | int] = {}

    def load(self, root: _Node, random: JavaRandomLike) -> None:
        """Sets the positions of every node; new rings start at random (tree order, leader ring first)."""
        for node in root.walk():
            keys = node.keys
            if node.ring_id not in self.leader:
                self.leader[node.ring_id] = keys[random.next_int(len(keys))]
            if node.ring_id not in self.follower:
                self.follower[node.ring_id] = keys[random.next_int(len(keys))]
            node.leader_pos = _position(keys, self.leader[node.ring_id])
            node.follower_pos = _position(keys, self.follower[node.ring_id])

    def save(self, root: _Node) -> None:
        for node in root.walk():
            self.leader[node.ring_id] = node.keys[node.leader_pos]
            self.follower[node.ring_id] = node.keys[node.follower_pos]


def _position(keys: list[str] | list[int], key: str | int) -> int:
    index = bisect.bisect_left(keys, key)  # type: ignore[arg-type]
    return 0 if index == len(keys) else index


class _PartitionPlacer:
    """Places the replicas of one partition after another over one tree."""

    def __init__(self, root: _Node) -> None:
        self.root = root
        self.stamp = 0
        self.chosen: list[int] = []

    def place(self, rf: int) -> list[int]:
        self.stamp += 1
        self.chosen = []
        self._take(self._leader())
        for _ in range(rf - 1):
            self._take(self._follower())
        return self.chosen

    def _leader(self) -> tuple[_Node, int]:
        node = self.root
        while not node.is_rack:
            children = node.children
            start = node.leader_pos
            n = len(children)
            for step in range(n):
                index = (start + step) % n
                if children[index].unfenced:
                    break
            else:  # pragma: no cover - the root has an unfenced broker (checked before placing)
                raise AssertionError("no unfenced broker below " + node.key)
            node.leader_pos = (index + 1) % n
            node = children[index]
        start = node.leader_pos
        n = len(node.brokers)
        for step in range(n):
            index = (start + step) % n
            if not node.fenced[index]:
                break
        node.leader_pos = (index + 1) % n
        return node, index

    def _follower(self) -> tuple[_Node, int]:
        stamp = self.stamp
        node = self.root
        while not node.is_rack:
            children = node.children
            start = node.follower_pos
            n = len(children)
            best_index = -1
            best_rank = (2, 0, 2)
            for step in range(n):
                index = (start + step) % n
                child = children[index]
                if child.stamp == stamp:
                    used, used_unfenced, used_racks = child.used, child.used_unfenced, child.used_racks
                else:
                    used = used_unfenced = used_racks = 0
                if used == child.total:
                    continue
                rank = (
                    0 if used_racks < child.racks else 1,
                    used,
                    0 if used_unfenced < child.unfenced else 1,
                )
                if best_index < 0 or rank < best_rank:
                    best_index, best_rank = index, rank
                    if rank == (0, 0, 0):
                        break
            node.follower_pos = (best_index + 1) % n
            node = children[best_index]
        start = node.follower_pos
        n = len(node.brokers)
        fallback = -1
        for step in range(n):
            index = (start + step) % n
            if node.brokers[index] in self.chosen:
                continue
            if not node.fenced[index]:
                break
            if fallback < 0:
                fallback = index
        else:
            index = fallback
        node.follower_pos = (index + 1) % n
        return node, index

    def _take(self, where: tuple[_Node, int]) -> None:
        rack, index = where
        self.chosen.append(rack.brokers[index])
        unfenced = not rack.fenced[index]
        new_rack = rack.stamp != self.stamp or rack.used == 0
        node: _Node | None = rack
        while node is not None:
            if node.stamp != self.stamp:
                node.stamp = self.stamp
                node.used = node.used_unfenced = node.used_racks = 0
            node.used += 1
            node.used_unfenced += unfenced
            node.used_racks += new_rack
            node = node.parent


def _rack_problem(brokers: Sequence[UsableBroker]) -> str | None:
    bad = [b for b in brokers if b.rack is None or not b.rack.startswith(ROOT)]
    if not bad:
        return None
    shown = ", ".join(f"broker {b.id} has {b.rack!r}" for b in bad[:5])
    more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
    return (
        f"Multi-level rack awareness needs every rack id to be a path starting with '/' "
        f"(like /dc1/rack2): {shown}{more}."
    )


class MultiLevelReplicaPlacer(ReplicaPlacer):
    """KIP-879's multi-level rack-aware placer: rings per tree node, even spread from the top down.

    ``random`` is any generator with Java's ``next_int(bound)``; without one the placer uses
    ``JavaRandom(simulator.seed)`` from ``configure()``, or an unseeded ``JavaRandom``.
    """

    rack_aware = True

    def __init__(self, random: JavaRandomLike | None = None) -> None:
        self._random_given = random is not None
        self._random: JavaRandomLike = random if random is not None else JavaRandom()
        self._rings = _Rings()
        self._lock = threading.Lock()

    def configure(self, configs: Mapping[str, str]) -> None:
        if not self._random_given:
            self._random = random_from_configs(configs)

    def unmet_precondition(self, spec: PlacementSpec, cluster: ClusterView) -> str | None:
        """Why this call is refused with ReplicaPlacementError, or None (see the conformance kit)."""
        return _rack_problem(cluster.usable(spec))

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        rf = spec.num_replicas
        usable = cluster.usable(spec)
        require_positive(rf)
        require_some_unfenced(sum(1 for b in usable if not b.fenced))
        require_enough_brokers(rf, len(usable))
        problem = _rack_problem(usable)
        if problem is not None:
            raise PlacerNotApplicableError(problem)
        if spec.num_partitions <= 0:
            return []
        root = _build_tree(usable)
        with self._lock:
            self._rings.load(root, self._random)
            placer = _PartitionPlacer(root)
            result = [placer.place(rf) for _ in range(spec.num_partitions)]
            self._rings.save(root)
        log.debug(
            "multi-level placed %d partition(s) x %d on %d broker(s) in %d rack(s)",
            spec.num_partitions,
            rf,
            root.total,
            root.racks,
        )
        return result
