"""How good a placement is: balance over brokers and racks, rack spread, and what a rack failure does.

One library for the command line and for the evaluation pipeline::

    metrics = compute_metrics(brokers, assignments)
    metrics.summary()   # flat scalars with stable keys (a Parquet row)
    metrics.to_dict()   # everything, JSON-able

``assignments`` maps ``(topic, partition)`` to its replicas, leader first. Racks are counted at every
level of a multi-level rack id: a broker in ``/dc1/r2`` belongs to both ``/dc1`` and ``/dc1/r2``. A
rack id that does not start with ``/`` has one level. The rack spread and rack balance figures use the
brokers' own (deepest) racks; brokers without a rack are in no rack.

Rack failures: for every rack at every level, all its brokers are lost at once; a partition whose
leader was lost moves its leadership to its first surviving replica on an unfenced broker (a fenced
broker's replica is offline, as the server's Metadata shows it), and is offline when there is none. The
figure that matters is the most leaders any surviving broker then carries.

Balance figures (:class:`Balance`) cover every broker given, fenced or not, including those that hold
nothing. ``skew`` is max / mean (1.0 is perfectly even; 0.0 when nothing is placed); ``within_10pct``
is the share of holders whose count is within +-10% of the mean, Cruise Control's default balance bound.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from controller.placement.api import UsableBroker

__all__ = ["Balance", "PlacementMetrics", "RackFailure", "SUMMARY_KEYS", "compute_metrics", "rack_levels"]

#: Cruise Control's default balance threshold (``*.balance.threshold=1.10``): +-10% around the mean.
BALANCE_BAND = 0.10


def rack_levels(rack: str | None) -> tuple[str, ...]:
    """Every rack a broker with this rack id belongs to, top level first.

    ``/dc1/r2`` -> ``("/dc1", "/dc1/r2")``; ``/`` -> ``("/",)``; ``rack-1`` -> ``("rack-1",)``; None -> ().
    """
    if rack is None:
        return ()
    if not rack.startswith("/"):
        return (rack,)
    parts = [p for p in rack.split("/") if p]
    if not parts:
        return ("/",)
    return tuple("/" + "/".join(parts[: i + 1]) for i in range(len(parts)))


@dataclass(frozen=True)
class Balance:
    """How evenly a count (replicas or leaders) spreads over holders (brokers or racks)."""

    holders: int
    total: int
    min: int
    max: int
    mean: float
    stddev: float
    skew: float
    within_10pct: float

    @classmethod
    def of(cls, counts: Sequence[int]) -> Balance:
        n = len(counts)
        if n == 0:
            return cls(0, 0, 0, 0, 0.0, 0.0, 0.0, 1.0)
        total = sum(counts)
        mean = total / n
        stddev = math.sqrt(sum((c - mean) ** 2 for c in counts) / n)
        band = BALANCE_BAND * mean + 1e-9
        within = sum(1 for c in counts if abs(c - mean) <= band) / n
        skew = max(counts) / mean if mean > 0 else 0.0
        return cls(n, total, min(counts), max(counts), mean, stddev, skew, within)


@dataclass(frozen=True)
class RackFailure:
    """What losing every broker of ``rack`` at once does."""

    rack: str
    lost_brokers: tuple[int, ...]
    offline_partitions: int  # partitions that lost their leader and have no surviving unfenced replica
    moved_leaders: int  # partitions whose leader moved to a surviving unfenced replica
    max_leaders: int  # the most leaders any surviving broker then carries
    max_leaders_broker: int | None  # which broker (lowest id on ties); None when no broker survives


#: The keys of :meth:`PlacementMetrics.summary`, in order. Stable: add new keys at the end only.
SUMMARY_KEYS: tuple[str, ...] = (
    "brokers",
    "racks",
    "partitions",
    "replicas",
    "replicas_min",
    "replicas_max",
    "replicas_mean",
    "replicas_stddev",
    "replicas_skew",
    "replicas_within_10pct",
    "leaders_min",
    "leaders_max",
    "leaders_mean",
    "leaders_stddev",
    "leaders_skew",
    "leaders_within_10pct",
    "rack_replicas_skew",
    "rack_leaders_skew",
    "rack_violations",
    "rack_failure_max_offline_partitions",
    "rack_failure_max_leaders",
    "rack_failure_leader_growth",
)


@dataclass(frozen=True)
class PlacementMetrics:
    """The metrics of one placement; build it with :func:`compute_metrics`. Treat the dicts as read-only."""

    broker_racks: dict[int, str | None]  # every broker given, by id
    num_partitions: int
    num_replicas: int
    replicas_per_broker: dict[int, int]  # every broker, 0 included
    leaders_per_broker: dict[int, int]
    racks: tuple[str, ...]  # the brokers' own racks, sorted
    brokers_per_rack: dict[str, int]  # racks at every level
    replicas_per_rack: dict[str, int]
    leaders_per_rack: dict[str, int]
    replica_balance: Balance  # over brokers
    leader_balance: Balance
    rack_replica_balance: Balance  # over the brokers' own racks
    rack_leader_balance: Balance
    rack_violations: tuple[tuple[str, int], ...]  # partitions spanning fewer racks than min(RF, racks)
    rack_failures: tuple[RackFailure, ...]  # one per rack at every level, sorted by rack

    def summary(self) -> dict[str, float | int]:
        """Flat scalars for one row of a table (keys: :data:`SUMMARY_KEYS`).

        ``rack_failure_*`` take the worst rack: the most offline partitions, the most leaders on one
        surviving broker, and that number divided by the most leaders on a broker before the failure.
        """
        r, lead = self.replica_balance, self.leader_balance
        worst_offline = max((f.offline_partitions for f in self.rack_failures), default=0)
        worst_leaders = max((f.max_leaders for f in self.rack_failures), default=0)
        growth = worst_leaders / lead.max if lead.max and self.rack_failures else 0.0
        values: dict[str, float | int] = {
            "brokers": len(self.broker_racks),
            "racks": len(self.racks),
            "partitions": self.num_partitions,
            "replicas": self.num_replicas,
            "replicas_min": r.min,
            "replicas_max": r.max,
            "replicas_mean": r.mean,
            "replicas_stddev": r.stddev,
            "replicas_skew": r.skew,
            "replicas_within_10pct": r.within_10pct,
            "leaders_min": lead.min,
            "leaders_max": lead.max,
            "leaders_mean": lead.mean,
            "leaders_stddev": lead.stddev,
            "leaders_skew": lead.skew,
            "leaders_within_10pct": lead.within_10pct,
            "rack_replicas_skew": self.rack_replica_balance.skew,
            "rack_leaders_skew": self.rack_leader_balance.skew,
            "rack_violations": len(self.rack_violations),
            "rack_failure_max_offline_partitions": worst_offline,
            "rack_failure_max_leaders": worst_leaders,
            "rack_failure_leader_growth": growth,
        }
        return {key: values[key] for key in SUMMARY_KEYS}

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-able (string keys, lists of records)."""
        return {
            "summary": self.summary(),
            "brokers": [
                {
                    "id": b,
                    "rack": rack,
                    "replicas": self.replicas_per_broker[b],
                    "leaders": self.leaders_per_broker[b],
                }
                for b, rack in sorted(self.broker_racks.items())
            ],
            "racks": [
                {
                    "rack": rack,
                    "brokers": self.brokers_per_rack[rack],
                    "replicas": self.replicas_per_rack[rack],
                    "leaders": self.leaders_per_rack[rack],
                }
                for rack in sorted(self.brokers_per_rack)
            ],
            "replica_balance": asdict(self.replica_balance),
            "leader_balance": asdict(self.leader_balance),
            "rack_replica_balance": asdict(self.rack_replica_balance),
            "rack_leader_balance": asdict(self.rack_leader_balance),
            "rack_violations": [{"topic": t, "partition": p} for t, p in self.rack_violations],
            "rack_failures": [
                {**asdict(f), "lost_brokers": list(f.lost_brokers)} for f in self.rack_failures
            ],
        }


def compute_metrics(
    brokers: Sequence[UsableBroker], assignments: Mapping[tuple[str, int], Sequence[int]]
) -> PlacementMetrics:
    """The metrics of ``assignments`` (``(topic, partition)`` -> replicas, leader first) over ``brokers``.

    Raises ValueError for a broker listed twice, or a partition with no replica, a repeated replica or
    a replica on a broker not in ``brokers``.
    """
    broker_racks: dict[int, str | None] = {}
    for b in brokers:
        if b.id in broker_racks:
            raise ValueError(f"broker {b.id} is listed twice")
        broker_racks[b.id] = b.rack
    levels = {b: rack_levels(rack) for b, rack in broker_racks.items()}
    own_rack = {b: lv[-1] for b, lv in levels.items() if lv}
    racks = tuple(sorted(set(own_rack.values())))
    num_racks = len(racks)

    replicas_per_broker: Counter[int] = Counter()
    leaders_per_broker: Counter[int] = Counter()
    violations: list[tuple[str, int]] = []
    led_by: dict[int, list[Sequence[int]]] = {}  # leader -> replica lists it leads
    num_replicas = 0
    for key, replicas in assignments.items():
        if not replicas:
            raise ValueError(f"partition {key[0]}/{key[1]} has no replica")
        for r in replicas:
            if r not in broker_racks:
                raise ValueError(f"partition {key[0]}/{key[1]} names unknown broker {r}: {list(replicas)}")
        if len(set(replicas)) != len(replicas):
            raise ValueError(f"partition {key[0]}/{key[1]} repeats a broker: {list(replicas)}")
        num_replicas += len(replicas)
        replicas_per_broker.update(replicas)
        leader = replicas[0]
        leaders_per_broker[leader] += 1
        led_by.setdefault(leader, []).append(replicas)
        if num_racks:
            spanned = len({own_rack[r] for r in replicas if r in own_rack})
            if spanned < min(len(replicas), num_racks):
                violations.append(key)

    brokers_per_rack: Counter[str] = Counter()
    replicas_per_rack: Counter[str] = Counter()
    leaders_per_rack: Counter[str] = Counter()
    members: dict[str, list[int]] = {}
    for b, lv in levels.items():
        for rack in lv:
            brokers_per_rack[rack] += 1
            replicas_per_rack[rack] += replicas_per_broker[b]
            leaders_per_rack[rack] += leaders_per_broker[b]
            members.setdefault(rack, []).append(b)

    ids = sorted(broker_racks)
    fenced = {b.id for b in brokers if b.fenced}
    failures = tuple(
        _rack_failure(rack, members[rack], ids, fenced, leaders_per_broker, led_by)
        for rack in sorted(members)
    )
    return PlacementMetrics(
        broker_racks=broker_racks,
        num_partitions=len(assignments),
        num_replicas=num_replicas,
        replicas_per_broker={b: replicas_per_broker[b] for b in broker_racks},
        leaders_per_broker={b: leaders_per_broker[b] for b in broker_racks},
        racks=racks,
        brokers_per_rack=dict(brokers_per_rack),
        replicas_per_rack=dict(replicas_per_rack),
        leaders_per_rack=dict(leaders_per_rack),
        replica_balance=Balance.of([replicas_per_broker[b] for b in broker_racks]),
        leader_balance=Balance.of([leaders_per_broker[b] for b in broker_racks]),
        rack_replica_balance=Balance.of([replicas_per_rack[r] for r in racks]),
        rack_leader_balance=Balance.of([leaders_per_rack[r] for r in racks]),
        rack_violations=tuple(sorted(violations)),
        rack_failures=failures,
    )


def _rack_failure(
    rack: str,
    lost: Sequence[int],
    broker_ids: Sequence[int],
    fenced: set[int],
    leaders: Mapping[int, int],
    led_by: Mapping[int, list[Sequence[int]]],
) -> RackFailure:
    lost_set = set(lost)
    gained: Counter[int] = Counter()
    offline = moved = 0
    for leader in lost:
        for replicas in led_by.get(leader, ()):
            survivor = next((r for r in replicas if r not in lost_set and r not in fenced), None)
            if survivor is None:
                offline += 1
            else:
                gained[survivor] += 1
                moved += 1
    best_broker: int | None = None
    best = 0
    for b in broker_ids:
        if b in lost_set:
            continue
        count = leaders.get(b, 0) + gained[b]
        if best_broker is None or count > best:
            best_broker, best = b, count
    return RackFailure(rack, tuple(sorted(lost)), offline, moved, best, best_broker)
