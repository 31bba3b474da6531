"""Placement metrics, checked against values worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from controller.placement.api import UsableBroker
from controller.placement.metrics import SUMMARY_KEYS, Balance, RackFailure, compute_metrics, rack_levels

# Seed 000, example 2: racks of 1, 2 and 3 SPUs, 6 partitions x 3 replicas.
UNBALANCED = tuple(
    UsableBroker(i, rack, False)
    for i, rack in [(0, "rack-a"), (1, "rack-b"), (2, "rack-b"), (3, "rack-c"), (4, "rack-c"), (5, "rack-c")]
)
UNBALANCED_MAP = [[3, 2, 0], [2, 0, 4], [0, 4, 1], [4, 1, 5], [1, 5, 3], [5, 3, 2]]

# Seed 000, example 1: 4 racks x 3 SPUs, 12 partitions x 4 replicas.
BALANCED = tuple(UsableBroker(i, f"rack-{'abcd'[i // 3]}", False) for i in range(12))
BALANCED_MAP = [
    [0, 4, 8, 9], [4, 8, 9, 1], [8, 9, 1, 5], [9, 1, 5, 6],
    [1, 5, 6, 10], [5, 6, 10, 2], [6, 10, 2, 3], [10, 2, 3, 7],
    [2, 3, 7, 11], [3, 7, 11, 0], [7, 11, 0, 4], [11, 0, 4, 8],
]  # fmt: skip


def topic(replica_map: list[list[int]], name: str = "t") -> dict[tuple[str, int], list[int]]:
    return {(name, p): replicas for p, replicas in enumerate(replica_map)}


def failure(metrics_failures: tuple[RackFailure, ...], rack: str) -> RackFailure:
    return next(f for f in metrics_failures if f.rack == rack)


def test_seed_unbalanced_example_per_rack_and_per_broker() -> None:
    m = compute_metrics(UNBALANCED, topic(UNBALANCED_MAP))
    assert m.leaders_per_rack == {"rack-a": 1, "rack-b": 2, "rack-c": 3}
    assert {r: m.replicas_per_rack[r] - m.leaders_per_rack[r] for r in m.racks} == {
        "rack-a": 2,
        "rack-b": 4,
        "rack-c": 6,
    }  # the seed's "Followers" row
    assert m.replicas_per_broker == dict.fromkeys(range(6), 3)
    assert m.leaders_per_broker == dict.fromkeys(range(6), 1)
    assert m.replica_balance == Balance(6, 18, 3, 3, 3.0, 0.0, 1.0, 1.0)
    # [4, 1, 5], [1, 5, 3] and [5, 3, 2] have two replicas in rack-c.
    assert m.rack_violations == (("t", 3), ("t", 4), ("t", 5))


def test_seed_unbalanced_example_losing_the_largest_rack() -> None:
    m = compute_metrics(UNBALANCED, topic(UNBALANCED_MAP))
    # rack-c leads p0 [3,2,0] -> 2, p3 [4,1,5] -> 1, p5 [5,3,2] -> 2; 2 already led p1.
    assert failure(m.rack_failures, "rack-c") == RackFailure("rack-c", (3, 4, 5), 0, 3, 3, 2)
    assert failure(m.rack_failures, "rack-a") == RackFailure("rack-a", (0,), 0, 1, 2, 4)
    assert failure(m.rack_failures, "rack-b") == RackFailure("rack-b", (1, 2), 0, 2, 2, 0)
    summary = m.summary()
    assert summary["rack_failure_max_leaders"] == 3
    assert summary["rack_failure_leader_growth"] == 3.0
    assert summary["rack_violations"] == 3


def test_balanced_four_racks_of_three() -> None:
    m = compute_metrics(BALANCED, topic(BALANCED_MAP))
    assert m.leaders_per_rack == dict.fromkeys(["rack-a", "rack-b", "rack-c", "rack-d"], 3)
    assert m.replicas_per_rack == dict.fromkeys(["rack-a", "rack-b", "rack-c", "rack-d"], 12)
    assert m.rack_violations == ()
    assert m.replica_balance.skew == 1.0 and m.leader_balance.skew == 1.0
    # rack-a leads p0 -> 4, p4 -> 5, p8 -> 3: each of those then leads 2.
    lost_a = failure(m.rack_failures, "rack-a")
    assert (lost_a.offline_partitions, lost_a.moved_leaders, lost_a.max_leaders) == (0, 3, 2)
    assert lost_a.max_leaders_broker == 3


def test_skew_stddev_and_share_within_ten_percent() -> None:
    brokers = tuple(UsableBroker(i, None, False) for i in range(3))
    m = compute_metrics(brokers, topic([[0, 1], [0, 2], [0, 1]]))
    # replicas 3, 2, 1: mean 2; leaders 3, 0, 0: mean 1.
    assert m.replica_balance.skew == 1.5
    assert m.replica_balance.stddev == pytest.approx(math.sqrt(2 / 3))
    assert m.replica_balance.within_10pct == pytest.approx(1 / 3)
    assert m.leader_balance.skew == 3.0
    assert m.leader_balance.stddev == pytest.approx(math.sqrt(2))
    assert m.leader_balance.within_10pct == 0.0
    assert m.racks == () and m.rack_violations == () and m.rack_failures == ()


def test_rack_balance_of_the_unbalanced_example() -> None:
    m = compute_metrics(UNBALANCED, topic(UNBALANCED_MAP))
    # replicas per rack 3, 6, 9 (mean 6); leaders per rack 1, 2, 3 (mean 2).
    assert m.rack_replica_balance == Balance(3, 18, 3, 9, 6.0, math.sqrt(6), 1.5, 1 / 3)
    assert m.rack_leader_balance.skew == 1.5
    assert m.rack_leader_balance.stddev == pytest.approx(math.sqrt(2 / 3))
    summary = m.summary()
    assert (summary["rack_replicas_skew"], summary["rack_leaders_skew"]) == (1.5, 1.5)


def test_the_ten_percent_band_is_inclusive() -> None:
    assert Balance.of([9, 10, 11, 12]).within_10pct == 0.5  # mean 10.5, band 1.05: 10 and 11
    assert Balance.of([9, 11]).within_10pct == 1.0  # mean 10, band 1: both on its edge
    assert Balance.of([8, 12]).within_10pct == 0.0


def test_rack_violation_of_a_single_partition() -> None:
    m = compute_metrics(UNBALANCED, {("x", 0): [4, 1, 5], ("x", 1): [3, 2, 0], ("y", 0): [3]})
    assert m.rack_violations == (("x", 0),)


def test_multi_level_racks_count_at_every_level() -> None:
    brokers = (
        UsableBroker(0, "/dc1/r1", False),
        UsableBroker(1, "/dc1/r1", False),
        UsableBroker(2, "/dc1/r2", False),
        UsableBroker(3, "/dc2/r3", False),
    )
    m = compute_metrics(brokers, topic([[0, 2], [1, 3], [3, 0], [0, 1]]))
    assert m.racks == ("/dc1/r1", "/dc1/r2", "/dc2/r3")
    assert m.brokers_per_rack == {"/dc1": 3, "/dc1/r1": 2, "/dc1/r2": 1, "/dc2": 1, "/dc2/r3": 1}
    assert m.replicas_per_rack == {"/dc1": 6, "/dc1/r1": 5, "/dc1/r2": 1, "/dc2": 2, "/dc2/r3": 2}
    assert m.leaders_per_rack == {"/dc1": 3, "/dc1/r1": 3, "/dc1/r2": 0, "/dc2": 1, "/dc2/r3": 1}
    assert m.rack_violations == (("t", 3),)  # [0, 1]: both in /dc1/r1
    # Losing /dc1: t/0 [0,2] and t/3 [0,1] go offline, t/1 [1,3] moves to 3, which then leads 2.
    assert failure(m.rack_failures, "/dc1") == RackFailure("/dc1", (0, 1, 2), 2, 1, 2, 3)
    # Losing /dc1/r1: t/0 -> 2, t/1 -> 3, t/3 [0,1] offline.
    assert failure(m.rack_failures, "/dc1/r1") == RackFailure("/dc1/r1", (0, 1), 1, 2, 2, 3)
    assert m.summary()["rack_failure_max_offline_partitions"] == 2


def test_rack_levels() -> None:
    assert rack_levels("/dc1/r2") == ("/dc1", "/dc1/r2")
    assert rack_levels("/dc1//r2/") == ("/dc1", "/dc1/r2")
    assert rack_levels("/") == ("/",)
    assert rack_levels("rack-1") == ("rack-1",)
    assert rack_levels(None) == ()


def test_summary_keys_are_stable_and_flat_and_to_dict_is_json() -> None:
    m = compute_metrics(UNBALANCED, topic(UNBALANCED_MAP))
    summary = m.summary()
    assert tuple(summary) == SUMMARY_KEYS
    assert all(isinstance(v, (int, float)) for v in summary.values())
    data = json.loads(json.dumps(m.to_dict()))
    assert data["summary"] == summary
    assert data["brokers"][0] == {"id": 0, "rack": "rack-a", "replicas": 3, "leaders": 1}
    assert data["racks"][2] == {"rack": "rack-c", "brokers": 3, "replicas": 9, "leaders": 3}
    assert data["rack_violations"][0] == {"topic": "t", "partition": 3}
    assert data["rack_failures"][2]["lost_brokers"] == [3, 4, 5]


def test_empty_placement() -> None:
    m = compute_metrics(UNBALANCED, {})
    assert m.summary()["replicas_skew"] == 0.0
    assert m.replica_balance.within_10pct == 1.0
    assert m.summary()["rack_failure_leader_growth"] == 0.0


@pytest.mark.parametrize(
    ("assignments", "message"),
    [
        ({("t", 0): [0, 9]}, "t/0 names unknown broker 9"),
        ({("t", 1): []}, "t/1 has no replica"),
        ({("t", 2): [1, 1]}, "t/2 repeats a broker"),
    ],
)
def test_bad_assignments_are_named(assignments: dict[tuple[str, int], list[int]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compute_metrics(UNBALANCED, assignments)


def test_broker_listed_twice() -> None:
    with pytest.raises(ValueError, match="broker 0 is listed twice"):
        compute_metrics((*UNBALANCED, UsableBroker(0, None, False)), {})


def test_a_lost_leader_never_moves_to_a_fenced_broker() -> None:
    # Broker 1 is fenced: its replicas are offline, as the server's Metadata shows them.
    brokers = (UsableBroker(0, "a", False), UsableBroker(1, "b", True), UsableBroker(2, "b", False))
    m = compute_metrics(brokers, {("t", 0): [0, 1], ("t", 1): [0, 1, 2]})
    # Losing rack a (broker 0): t/0 [0, 1] keeps only the fenced 1, so it is offline; t/1 [0, 1, 2]
    # skips the fenced 1 and moves to 2, which then leads 1 partition.
    assert failure(m.rack_failures, "a") == RackFailure("a", (0,), 1, 1, 1, 2)
    # Losing rack b (brokers 1, 2) takes no leader: broker 0 still leads both.
    assert failure(m.rack_failures, "b") == RackFailure("b", (1, 2), 0, 0, 2, 0)
    assert m.summary()["rack_failure_max_offline_partitions"] == 1
