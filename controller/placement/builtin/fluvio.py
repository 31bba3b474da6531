"""Fluvio's computed replica assignment (the SC's algorithm before its load-weighted scheduler).

Without racks the SPUs are used round-robin with gaps: partition ``p`` of a run that starts at index
``s`` has its leader at ``ids[(s + p) % n]`` and its followers right after it, shifted by a gap that
grows by one every ``n`` partitions and wraps after ``n - rf + 1`` gaps. With racks, the SPUs are laid
out in a matrix (one row per rack, largest rack first) that is read diagonally into one sequence;
partition ``p`` then takes the ``rf`` consecutive SPUs from position ``s + p`` of that sequence.

Runs are chained: the next placement starts at the index where the last one stopped, so that the
leaders of consecutive topics keep rotating over the SPUs.

Properties:
- ``simulator.placer.fluvio.start.index``: the index of the first run (default 0);
- ``simulator.placer.fluvio.ignore.rack``: ``true`` to ignore racks (default ``false``).

Only unfenced brokers receive replicas. Rack mode is used when any usable broker has a rack (and racks
are not ignored); it then requires every usable broker, fenced or not, to have one (else the placer
does not apply: :class:`~controller.placement.api.PlacerNotApplicableError`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    PlacerNotApplicableError,
    ReplicaPlacementError,
    ReplicaPlacer,
    UsableBroker,
)
from controller.plugins.properties import Property

log = logging.getLogger(__name__)


def _parse_bool(key: str, value: str) -> bool:
    text = value.strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0", ""):
        return False
    raise ValueError(f"{key} must be true or false, got {value!r}")


def _parse_start_index(key: str, value: str) -> int:
    try:
        index = int(value.strip())
    except ValueError:
        raise ValueError(f"{key} must be a non-negative integer, got {value!r}") from None
    if index < 0:
        raise ValueError(f"{key} must be a non-negative integer, got {value!r}")
    return index


#: The index of the first run (default 0).
START_INDEX = Property(
    "simulator.placer.fluvio.start.index",
    "0",
    _parse_start_index,
    "`fluvio` and `fluvio-fair` placers: the index of the first run",
)
#: ``true`` to ignore racks (default ``false``).
IGNORE_RACK = Property(
    "simulator.placer.fluvio.ignore.rack",
    "false",
    _parse_bool,
    "`fluvio` and `fluvio-fair` placers: ignore racks",
)
START_INDEX_KEY = START_INDEX.key
IGNORE_RACK_KEY = IGNORE_RACK.key


PARTITIONS_NOT_POSITIVE = "partition must be greater than 0"


def check_fluvio_request(spec: PlacementSpec, online_spus: int) -> None:
    """Fluvio's checks, with its messages: partitions and replication factor positive, enough SPUs."""
    if spec.num_partitions <= 0:
        raise ReplicaPlacementError(PARTITIONS_NOT_POSITIVE)
    if spec.num_replicas <= 0:
        raise InvalidReplicationFactorError("replication factor must be greater than 0")
    if online_spus < spec.num_replicas:
        raise InvalidReplicationFactorError(f"need {spec.num_replicas - online_spus} more SPU")


def round_robin_with_gaps(
    spu_ids: Sequence[int], num_partitions: int, replication_factor: int, start_index: int
) -> list[list[int]]:
    """Fluvio's rack-unaware assignment over ``spu_ids`` (sorted by the caller)."""
    n = len(spu_ids)
    gap_max = n - replication_factor + 1
    result: list[list[int]] = []
    for p in range(num_partitions):
        base = start_index + p
        gap = (base // n) % gap_max
        leader = spu_ids[base % n]
        followers = [spu_ids[(base + r + gap) % n] for r in range(1, replication_factor)]
        result.append([leader, *followers])
    return result


def rack_sequence(racks: Mapping[str, Sequence[int]]) -> list[int]:
    """The SPU matrix read diagonally: rows are racks (largest first, ties by rack name), SPUs sorted."""
    rows = sorted((sorted(ids) for _, ids in sorted(racks.items())), key=len, reverse=True)
    rows = [row for row in rows if row]
    if not rows:
        return []
    row_max = len(rows)
    col_max = max(len(row) for row in rows)
    seen: set[int] = set()
    sequence: list[int] = []
    row = col = 0
    for idx in range(row_max * col_max):
        spu = rows[row][col % len(rows[row])]
        if spu not in seen:
            seen.add(spu)
            sequence.append(spu)
        row = (row + 1) % row_max
        col = ((idx + 1) // row_max + row) % col_max
    return sequence


def consecutive_windows(
    sequence: Sequence[int], num_partitions: int, replication_factor: int, start_index: int
) -> list[list[int]]:
    """Fluvio's rack-aware assignment: ``rf`` consecutive SPUs of the rack sequence per partition."""
    n = len(sequence)
    return [
        [sequence[(start_index + p + r) % n] for r in range(replication_factor)]
        for p in range(num_partitions)
    ]


class FluvioReplicaPlacer(ReplicaPlacer):
    """Fluvio's computed replica assignment (round-robin with gaps; diagonal rack matrix)."""

    rack_aware = False  # unbalanced racks can put two replicas of a partition in one rack
    properties = (START_INDEX, IGNORE_RACK)

    def __init__(self, start_index: int = 0, ignore_rack: bool = False) -> None:
        if start_index < 0:
            raise ValueError(f"start index must be non-negative, got {start_index}")
        self._next_index = start_index
        self._ignore_rack = ignore_rack
        self._lock = threading.Lock()

    @property
    def next_index(self) -> int:
        """The index the next placement starts at."""
        return self._next_index

    def configure(self, configs: Mapping[str, str]) -> None:
        if START_INDEX_KEY in configs:
            self._next_index = _parse_start_index(START_INDEX_KEY, configs[START_INDEX_KEY])
        if IGNORE_RACK_KEY in configs:
            self._ignore_rack = _parse_bool(IGNORE_RACK_KEY, configs[IGNORE_RACK_KEY])

    def _rack_mode(self, usable: Sequence[UsableBroker]) -> bool:
        return not self._ignore_rack and any(b.rack is not None for b in usable)

    def unmet_precondition(self, spec: PlacementSpec, cluster: ClusterView) -> str | None:
        """Why this call is refused with ReplicaPlacementError, or None (see the conformance kit)."""
        if spec.num_partitions <= 0:
            return PARTITIONS_NOT_POSITIVE
        usable = cluster.usable(spec)
        return _missing_racks(usable) if self._rack_mode(usable) else None

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        rf = spec.num_replicas
        usable = cluster.usable(spec)
        online = [b for b in usable if not b.fenced]
        check_fluvio_request(spec, len(online))
        rack_mode = self._rack_mode(usable)
        if rack_mode:
            problem = _missing_racks(usable)
            if problem is not None:
                raise PlacerNotApplicableError(problem)
        with self._lock:
            start = self._next_index
            if rack_mode:
                racks: dict[str, list[int]] = {}
                for b in online:
                    racks.setdefault(b.rack or "", []).append(b.id)
                result = consecutive_windows(rack_sequence(racks), spec.num_partitions, rf, start)
            else:
                ids = sorted(b.id for b in online)
                result = round_robin_with_gaps(ids, spec.num_partitions, rf, start)
            self._next_index = start + spec.num_partitions
        log.debug(
            "fluvio placed %d partitions x %d from index %d (%s)",
            spec.num_partitions,
            rf,
            start,
            "racks" if rack_mode else "no racks",
        )
        return result


def _missing_racks(brokers: Sequence[UsableBroker]) -> str | None:
    missing = sorted(b.id for b in brokers if b.rack is None)
    if not missing:
        return None
    ids = ", ".join(str(i) for i in missing)
    return (
        f"rack-aware assignment needs a rack on every SPU; SPU(s) without a rack: {ids} "
        f"(set {IGNORE_RACK_KEY}=true to ignore racks)"
    )
