"""Replica placers as plugins: the names ``replica.placer.class.name`` takes, and how results come back.

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

from controller.assignments import Assignments, Delta
from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    ReplicaPlacementError,
    ReplicaPlacer,
)
from controller.plugins.loader import (
    MalformedResult,
    Opaque,
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


_PLAIN = {list, tuple}


def replica_lists(result: Any, portable: bool) -> list[list[Any]] | None:
    """A placer's result as fresh plain lists (their contents are checked by the rules), or None.

    With ``portable`` an entry that is not an int is replaced by an :class:`Opaque` description, so
    that the lists always pickle and the server can still say what the entry was.
    """
    if result is None:
        return None
    if isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
        raise MalformedResult(f"returned {type(result).__name__}, not a list of replica lists")
    if type(result) in _PLAIN and set(map(type, result)) <= _PLAIN:
        lists = [list(replicas) for replicas in result]  # the usual shape, copied in one pass
        if not portable or all(set(map(type, rs)) <= {int} for rs in lists):
            return lists
    out: list[list[Any]] = []
    append = out.append
    for replicas in result:
        if type(replicas) not in _PLAIN and (
            isinstance(replicas, (str, bytes)) or not hasattr(replicas, "__iter__")
        ):
            raise MalformedResult(
                f"partition entry {len(out)} is {type(replicas).__name__} {replicas!r:.60}, "
                "not a list of broker ids"
            )
        entries = list(replicas)
        if portable:
            for i, r in enumerate(entries):
                if type(r) is not int:
                    entries[i] = Opaque(f"{type(r).__name__} {r!r:.40}")
        append(entries)
    return out


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
    declared=(InvalidReplicationFactorError, ReplicaPlacementError),
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
