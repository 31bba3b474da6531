"""The shipped scenarios (examples/scenarios/) tell their stories: each is simulated and its outcome held."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.events import Event
from controller.scenario import load_scenario
from controller.scenario.player import SnapshotData, StepResult
from controller.scenario.simulation import Simulation, simulate

EXAMPLES = Path(__file__).parents[3] / "examples" / "scenarios"


async def run(name: str) -> Simulation:
    simulation = await simulate(load_scenario(EXAMPLES / name))
    assert simulation.failed_steps == []
    return simulation


def snapshots(simulation: Simulation) -> dict[str, SnapshotData]:
    return {
        e.snapshot.label: e.snapshot
        for e in simulation.entries
        if isinstance(e, StepResult) and e.snapshot is not None
    }


def partitions(snapshot: SnapshotData) -> list[dict[str, Any]]:
    return [p for t in snapshot.topics for p in t["Partitions"]]


def events(simulation: Simulation, subject: str | None = None) -> list[Event]:
    return [
        e for e in simulation.entries if isinstance(e, Event) and (subject is None or e.subject == subject)
    ]


async def test_a_follower_within_the_lag_takes_over_and_the_failed_leader_rejoins_as_a_follower() -> None:
    simulation = await run("leader-failover.toml")
    shots = snapshots(simulation)
    [before] = partitions(shots["before the failure"])
    offsets = {r["BrokerId"]: r["LogEndOffset"] for r in before["ReplicaStates"]}
    # Broker 1 is caught up with the leader; broker 2, copying 2 s behind, lags far more than 4 records.
    assert before["LeaderId"] == 0 and offsets[0] - offsets[1] < 4 <= offsets[0] - offsets[2]
    [after] = partitions(shots["broker 1 leads"])
    assert (after["LeaderId"], after["LeaderEpoch"], after["Isr"], after["OfflineReplicas"]) == (
        1,
        2,
        [1, 2],
        [0],
    )
    # Fluvio's partition statuses on the way: Election, CandidateFound (broker 1), then Online once it confirmed.
    statuses = [e.change("status") for e in events(simulation, "orders-0") if e.change("status")]
    assert statuses == [("Online", "Election"), ("Election", "CandidateFound"), ("CandidateFound", "Online")]
    [rejoined] = partitions(shots["broker 0 is a follower again"])
    assert (rejoined["LeaderId"], rejoined["LeaderEpoch"], rejoined["Isr"]) == (1, 2, [0, 1, 2])
    assert rejoined["OfflineReplicas"] == []
    leaders = [e.change("leader") for e in events(simulation, "orders-0") if e.change("leader")]
    assert leaders == [(0, -1), (-1, 1)]  # broker 0 never took the leadership back


async def test_a_rack_loss_under_kafkas_controller_moves_its_leaders_to_the_other_racks() -> None:
    simulation = await run("rack-loss.toml")
    lost = {0, 3}  # rack-a of brokers 0..5 on racks a, b, c in turn
    shots = snapshots(simulation)
    down = shots["rack-a down, not yet fenced"]
    fenced = shots["rack-a fenced, leaders moved"]
    table = partitions(fenced)
    assert [p["Replicas"] for p in table] == [
        [0, 1, 5],
        [4, 2, 3],
        [5, 0, 1],
        [3, 4, 2],
        [1, 5, 0],
        [2, 3, 4],
    ]
    led_by_rack_a = sum(1 for p in table if p["Replicas"][0] in lost)
    # Until the sessions expire the crashed brokers still lead: their partitions are unavailable.
    assert (down.partitions, down.offline, down.under_replicated) == (6, led_by_rack_a, 0)
    assert (fenced.offline, fenced.under_replicated) == (0, 6)
    for p in table:
        assert p["LeaderId"] not in lost
        assert p["Isr"] == [r for r in p["Replicas"] if r not in lost]
        assert p["OfflineReplicas"] == [r for r in p["Replicas"] if r in lost]
    moves = [(e.time, e.subject, e.change("leader")) for e in events(simulation) if e.change("leader")]
    assert moves == [(19_000, "orders-0", (0, 1)), (19_000, "orders-3", (3, 4))]


async def test_a_rolling_restart_with_controlled_shutdowns_never_leaves_a_partition_without_a_leader() -> (
    None
):
    simulation = await run("rolling-restart.toml")
    partition_events = [e for e in events(simulation) if e.kind == "partition"]
    assert all(e.change("leader")[1] >= 0 for e in partition_events if e.change("leader"))
    # Each broker's leaders move when its controlled shutdown starts, before its process stops.
    for broker, start in ((0, 10_000), (1, 30_000), (2, 50_000)):
        window = [e for e in partition_events if start <= e.time < start + 10_000]
        moved = [e for e in window if e.change("leader") and e.change("leader")[0] == broker]
        assert moved and {e.time for e in moved} == {start}
        stopped = [
            e for e in events(simulation, f"broker {broker}") if e.change("process") == ("up", "stopped")
        ]
        assert [e.time for e in stopped] == [start + 2000]  # at its next heartbeat
    final = snapshots(simulation)["every broker restarted, preferred leaders back"]
    assert (final.offline, final.under_replicated, final.leaders) == (0, 0, {0: 1, 1: 1, 2: 1})
    for p in partitions(final):
        assert p["LeaderId"] == p["Replicas"][0] and sorted(p["Isr"]) == sorted(p["Replicas"])
        assert {r["LogEndOffset"] for r in p["ReplicaStates"]} == {p["HighWatermark"]} == {3995}
