"""Placement metrics, checked against values worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from controller.placement.api import UsableBroker
from controller.placement.metrics import SUMMARY_KEYS, Balance, RackFailure, compute_metrics, rack_levels

# Fluvio's "Replica Assignment" documentation, unbalanced racks: racks of 1, 2 and 3 SPUs, 6 partitions x 3.
UNBALANCED = tuple(
    UsableBroker(i, rack, False)
    for i, rack in [(0, "rack-a"), (1, "rack-b"), (2, "rack-b"), (3, "rack-c"), (4, "rack-c"), (5, "rack-c")]
)
UNBALANCED_MAP = [[3, 2, 0], [2, 0, 4], [0, 4, 1], [4, 1, 5], [1, 5, 3], [5, 3, 2]]

# Fluvio's "Replica Assignment" documentation, balanced racks: 4 racks x 3 SPUs, 12 partitions x 4 replicas.
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


# Every summary figure of this placement differs from every other and from 0 and 1, so a summary that
# swaps two columns, or computes one over the wrong set (leaders instead of all replicas, brokers
# instead of racks, the fenced broker left out), fails. Broker 3 was fenced after its partitions were
# placed: it still comes first in t/13 and t/14 (their preferred leader) and holds replicas.
DISTINCT_BROKERS = (
    UsableBroker(0, "a", False),
    UsableBroker(1, "b", False),
    UsableBroker(2, "b", False),
    UsableBroker(3, "c", True),
)
DISTINCT_MAP = [
    [0, 3, 1], [0, 1], [0, 3], [0, 1, 3],                      # t/0-3: led by 0
    [1], [1, 2], [1, 2, 0], [1, 0, 2], [1, 3, 2], [1],          # t/4-9: led by 1
    [2, 3], [2, 1, 3], [2],                                     # t/10-12: led by 2
    [3, 1, 0], [3, 2, 0],                                       # t/13-14: led by 3 (fenced)
]  # fmt: skip
# Worked by hand:
# replicas per broker: 0 -> t/0,1,2,3,6,7,13,14 = 8; 1 -> t/0,1,3,4,5,6,7,8,9,11,13 = 11;
#   2 -> t/5,6,7,8,10,11,12,14 = 8; 3 -> t/0,2,3,8,10,11,13,14 = 8. 35 replicas, mean 35/4 = 8.75;
#   deviations -0.75, 2.25, -0.75, -0.75: variance (3 x 0.5625 + 5.0625) / 4 = 1.6875, stddev
#   sqrt(27)/4; skew 11 / 8.75 = 44/35; band +-0.875 holds the three 8s: 3/4.
# leaders per broker: 4, 6, 3, 2 (15 partitions), mean 3.75; deviations 0.25, 2.25, -0.75, -1.75:
#   variance (0.0625 + 5.0625 + 0.5625 + 3.0625) / 4 = 2.1875, stddev sqrt(35)/4; skew 6 / 3.75 = 1.6;
#   band +-0.375 holds only the 4: 1/4.
# racks a {0}, b {1, 2}, c {3}: replicas 8, 19, 8, mean 35/3, skew 19 / (35/3) = 57/35; leaders 4, 9, 2,
#   mean 5, skew 9/5 = 1.8.
# rack violations (3 racks): t/5 [1, 2] spans b only; t/6, t/7, t/8 and t/11 span two racks with 3
#   replicas: 5.
# losing rack a (broker 0): t/0 [0, 3, 1] skips the fenced 3 and moves to 1, t/1 and t/3 move to 1, t/2
#   [0, 3] has only the fenced 3 left: offline. Broker 1 then leads 6 + 3 = 9.
# losing rack b (brokers 1, 2): t/6 and t/7 move to 0 (which then leads 4 + 2 = 6); t/4, t/5, t/9, t/12
#   lose every replica and t/8, t/10, t/11 keep only the fenced 3: 7 offline.
# losing rack c (broker 3): t/13 moves to 1, t/14 to 2: 1 leads 7. Worst: 7 offline, 9 leaders, 9 / 6.
DISTINCT_SUMMARY = {
    "brokers": 4,
    "racks": 3,
    "partitions": 15,
    "replicas": 35,
    "replicas_min": 8,
    "replicas_max": 11,
    "replicas_mean": 8.75,
    "replicas_stddev": math.sqrt(27) / 4,
    "replicas_skew": 44 / 35,
    "replicas_within_10pct": 0.75,
    "leaders_min": 2,
    "leaders_max": 6,
    "leaders_mean": 3.75,
    "leaders_stddev": math.sqrt(35) / 4,
    "leaders_skew": 1.6,
    "leaders_within_10pct": 0.25,
    "rack_replicas_skew": 57 / 35,
    "rack_leaders_skew": 1.8,
    "rack_violations": 5,
    "rack_failure_max_offline_partitions": 7,
    "rack_failure_max_leaders": 9,
    "rack_failure_leader_growth": 1.5,
}


def test_the_worked_example_has_a_distinct_value_for_every_summary_key() -> None:
    assert tuple(DISTINCT_SUMMARY) == SUMMARY_KEYS
    values = list(DISTINCT_SUMMARY.values())
    assert not any(v in (0, 1) for v in values)
    assert all(abs(a - b) > 0.01 for i, a in enumerate(values) for b in values[i + 1 :])


def test_every_summary_column_carries_its_own_figure() -> None:
    m = compute_metrics(DISTINCT_BROKERS, topic(DISTINCT_MAP))
    summary = m.summary()
    assert list(summary) == list(SUMMARY_KEYS)
    for key in SUMMARY_KEYS:
        assert summary[key] == pytest.approx(DISTINCT_SUMMARY[key], rel=1e-12), key
    assert m.replicas_per_broker == {0: 8, 1: 11, 2: 8, 3: 8}
    assert m.leaders_per_broker == {0: 4, 1: 6, 2: 3, 3: 2}
    assert (m.replicas_per_rack, m.leaders_per_rack) == ({"a": 8, "b": 19, "c": 8}, {"a": 4, "b": 9, "c": 2})
    assert m.rack_violations == (("t", 5), ("t", 6), ("t", 7), ("t", 8), ("t", 11))
    assert m.rack_failures == (
        RackFailure("a", (0,), 1, 3, 9, 1),
        RackFailure("b", (1, 2), 7, 2, 6, 0),
        RackFailure("c", (3,), 0, 2, 7, 1),
    )


def test_rack_balance_counts_the_brokers_own_racks_not_their_data_centres() -> None:
    brokers = (
        UsableBroker(0, "/dc1/r1", False),
        UsableBroker(1, "/dc1/r1", False),
        UsableBroker(2, "/dc1/r2", False),
        UsableBroker(3, "/dc2/r3", False),
    )
    summary = compute_metrics(brokers, topic([[2, 3], [2, 3], [3]])).summary()
    # Own racks /dc1/r1, /dc1/r2, /dc2/r3: replicas 0, 2, 3 (mean 5/3, skew 3 / (5/3) = 9/5); leaders 0,
    # 2, 1 (mean 1, skew 2). Counting /dc1 and /dc2 as well would give 3 / 2 and 2 / 1.2; the data
    # centres alone 3 / 2.5 and 2 / 1.5. Over brokers: replicas 0, 0, 2, 3 (skew 3 / 1.25 = 12/5),
    # leaders 0, 0, 2, 1 (skew 2 / 0.75 = 8/3).
    assert summary["rack_replicas_skew"] == pytest.approx(9 / 5)
    assert summary["rack_leaders_skew"] == 2.0
    assert summary["replicas_skew"] == pytest.approx(12 / 5)
    assert summary["leaders_skew"] == pytest.approx(8 / 3)
