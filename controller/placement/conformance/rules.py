"""What the conformance kit holds a placer's results to, beyond the server's own rules.

The server's rules (:mod:`controller.placement.rules`, :func:`placement_problems`) are applied as they are; on top, the kit checks
rack spread for placers that declare ``rack_aware = True``, and lets placers declare preconditions:
calls outside them may be refused with ``ReplicaPlacementError``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from controller.placement.api import ClusterView, PlacementSpec
from controller.placement.rules import placement_problems

__all__ = [
    "PRECONDITION_METHOD",
    "Precondition",
    "every_broker_has_a_rack",
    "placement_problems",
    "rack_spread_applies",
    "rack_spread_problems",
    "racks_are_paths",
]

#: A declared precondition: why a call falls outside what the placer supports, or None.
Precondition = Callable[[PlacementSpec, ClusterView], "str | None"]

#: The optional placer method that declares its preconditions.
PRECONDITION_METHOD = "unmet_precondition"


def every_broker_has_a_rack(spec: PlacementSpec, cluster: ClusterView) -> str | None:
    """Rack mode (some usable broker has a rack) needs every usable broker to have one."""
    usable = cluster.usable(spec)
    missing = [b.id for b in usable if b.rack is None]
    if missing and len(missing) < len(usable):
        return f"brokers {missing} have no rack while others have one"
    return None


def racks_are_paths(spec: PlacementSpec, cluster: ClusterView) -> str | None:
    """Multi-level racks: every usable broker's rack is a path starting with ``/``."""
    bad = sorted({repr(b.rack) for b in cluster.usable(spec) if b.rack is None or not b.rack.startswith("/")})
    if bad:
        return f"racks {', '.join(bad)} do not start with '/'"
    return None


def _rack_tree_is_uniform(racks: set[str]) -> bool:
    paths = [tuple(r.strip("/").split("/")) for r in racks]
    depth = len(paths[0])
    if any(len(p) != depth for p in paths):
        return False
    for level in range(depth - 1):
        children: dict[tuple[str, ...], set[str]] = {}
        for p in paths:
            children.setdefault(p[: level + 1], set()).add(p[level + 1])
        if len({len(c) for c in children.values()}) > 1:
            return False
    return True


def rack_spread_applies(spec: PlacementSpec, cluster: ClusterView) -> bool:
    """Whether the kit checks rack spread for this call (for placers declaring ``rack_aware``).

    Yes when ``force_simple`` is off, every usable broker is unfenced, every rack (brokers without a
    rack count as one) holds the same number of usable brokers, and ``/`` rack paths form a uniform
    tree (all the same depth, every node of a level with the same number of children).
    """
    usable = cluster.usable(spec)
    if spec.force_simple or not usable or any(b.fenced for b in usable):
        return False
    sizes = Counter(b.rack for b in usable)
    if len(set(sizes.values())) != 1:
        return False
    named = {r for r in sizes if r is not None}
    if named and all(r.startswith("/") for r in named) and None not in sizes:
        return _rack_tree_is_uniform(named)
    return True


def rack_spread_problems(
    spec: PlacementSpec, cluster: ClusterView, result: Sequence[Sequence[int]]
) -> list[str]:
    rack_of = {b.id: b.rack for b in cluster.usable(spec)}
    wanted = min(spec.num_replicas, len(set(rack_of.values())))
    problems = []
    for index, replicas in enumerate(result):
        racks = {rack_of[r] for r in replicas}
        if len(racks) < wanted:
            problems.append(
                f"partition {spec.start_partition + index}: replicas {list(replicas)} span {len(racks)} rack(s) "
                f"{sorted(racks, key=str)}, expected {wanted}"
            )
    return problems
