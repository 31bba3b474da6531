"""Replica placers as plugins: the names ``replica.placer.class.name`` takes, and how results come back
(plain lists, checked by the server: :mod:`controller.placement.rules`).

A name is a built-in short name (``striped``, ``legacy``, ``fluvio``, ``fluvio-fair``,
``multi-level``), a name registered under the entry-point group ``placement_sim.placers``, a dotted
path ``package.module.ClassName`` or ``package.module:ClassName``, or a file
``path/to/file.py[:ClassName]`` (see :mod:`controller.plugins.loader`).
"""

from __future__ import annotations

import asyncio
import itertools
from array import array
from collections.abc import Mapping
from typing import Any

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacerNotApplicableError,
    ReplicaPlacementError,
    ReplicaPlacer,
)
from controller.placement.assignments import Assignments, Delta
from controller.placement.rules import first_problem, replica_lists
from controller.plugins.loader import (
    PluginKind,
    PluginLoadError,
    load_plugin,
    plugin_label,
    resolve_plugin_class,
)

__all__ = [
    "BUILTIN_PLACERS",
    "DEFAULT_PLACER",
    "ENTRY_POINT_GROUP",
    "PLACERS",
    "PlacerLoadError",
    "load_placer",
    "placer_label",
    "resolve_placer_class",
]

ENTRY_POINT_GROUP = "placement_sim.placers"

BUILTIN_PLACERS: dict[str, str] = {
    "striped": "controller.placement.builtin.striped:StripedReplicaPlacer",
    "legacy": "controller.placement.builtin.legacy:LegacyReplicaPlacer",
    "fluvio": "controller.placement.builtin.fluvio:FluvioReplicaPlacer",
    "fluvio-fair": "controller.placement.builtin.fluvio_fair:FluvioFairReplicaPlacer",
    "multi-level": "controller.placement.builtin.multi_level:MultiLevelReplicaPlacer",
}

#: The placer the server runs with no ``replica.placer.class.name``, and the one a deferring placer
#: (``place`` returned None) hands the request to.
DEFAULT_PLACER = "striped"
#: Kafka's classic rack-unaware algorithm: what ``ForceSimplePlacement`` asks for.
SIMPLE_PLACER = "legacy"

#: A placer that cannot be loaded (unknown name, import error, failing constructor or configure()).
PlacerLoadError = PluginLoadError


def _check(args: tuple[Any, ...], replicas: list[list[Any]]) -> str | None:
    """The server's check of a placer's replica lists: what the first problem is, or None."""
    spec, view = args
    problem = first_problem(spec, view, replicas)
    return problem.message if problem is not None else None


def _outbound(args: tuple[Any, ...], last: Any) -> tuple[tuple[Any, ...], Any]:
    """The server's side: the cluster's assignments travel as the topics that changed since the last call."""
    spec, view = args
    assignments = view.assignments
    if not isinstance(assignments, Assignments):
        return (spec, view.brokers, dict(assignments)), None
    delta = assignments.changes_since(last) if isinstance(last, Assignments) else None
    return (spec, view.brokers, delta if delta is not None else assignments), assignments


def _inbound(sent: tuple[Any, ...], state: Any) -> tuple[tuple[Any, ...], Any]:
    """The worker's side: the view rebuilt from what it holds and what changed."""
    spec, brokers, payload = sent
    if isinstance(payload, Delta):
        payload = payload.apply_to(state)
    return (spec, ClusterView(brokers, payload)), payload


class PackedLists:
    """Replica lists of ints as two arrays (lengths, then every id): pickles and unpickles in no time."""

    __slots__ = ("flat", "lengths")

    def __init__(self, lengths: bytes, flat: bytes) -> None:
        self.lengths = lengths
        self.flat = flat

    def __reduce__(self) -> tuple[object, ...]:
        return (PackedLists, (self.lengths, self.flat))


def _pack(value: Any) -> Any:
    if not isinstance(value, list) or len(value) < 1000:
        return value
    try:
        lengths = array("q", map(len, value))
        flat = array("q", itertools.chain.from_iterable(value))
    except TypeError:  # an entry that is not an int: sent as it is (the server names it)
        return value
    if any(type(r) is not int for rs in value for r in rs):
        return value
    return PackedLists(lengths.tobytes(), flat.tobytes())


async def _unpack(value: Any) -> Any:
    """Replica lists again, built in slices so that the event loop serves others in between."""
    if not isinstance(value, PackedLists):
        return value
    lengths = array("q")
    lengths.frombytes(value.lengths)
    flat = array("q")
    flat.frombytes(value.flat)
    ids = flat.tolist()
    out: list[list[int]] = []
    pos = 0
    for start in range(0, len(lengths), 50_000):
        for n in lengths[start : start + 50_000]:
            out.append(ids[pos : pos + n])
            pos += n
        await asyncio.sleep(0)
    return out


PLACERS = PluginKind(
    noun="placer",
    ref="controller.placement.loader:PLACERS",
    entry_point_group=ENTRY_POINT_GROUP,
    builtins=BUILTIN_PLACERS,
    method="place",
    normalize=replica_lists,
    # The most specific first: a placer that does not apply is told apart from one that failed.
    declared=(InvalidReplicationFactorError, PlacerNotApplicableError, ReplicaPlacementError),
    check=_check,
    outbound=_outbound,
    inbound=_inbound,
    pack=_pack,
    unpack=_unpack,
)


def resolve_placer_class(name: str) -> type:
    """The class a placer name stands for; raises PlacerLoadError saying why not."""
    return resolve_plugin_class(PLACERS, name)


def load_placer(name: str, configs: Mapping[str, str] | None = None) -> ReplicaPlacer:
    """Instantiates the named placer and calls ``configure(configs)`` on it."""
    placer: ReplicaPlacer = load_plugin(PLACERS, name, configs)
    return placer


def placer_label(placer: object) -> str:
    """``module.Class`` of a placer, or ``file.py:Class`` for one loaded from a file."""
    return plugin_label(placer)
