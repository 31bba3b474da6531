"""Coasting on an exclusive virtual clock: partitions whose ticks only carry their workload are brought
up to date in one step when they are next needed, and every state and event is the same as with the
ticks one by one (the replication model's module docstring)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.dynamics.replication import Replication
from tests.support.dynamics import Sim, make_sim

BROKERS = [(b, f"rack-{b % 3}") for b in range(6)]
#: Six partitions x RF 3 and one of RF 1 over brokers 0-5.
REPLICAS = [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 0], [5, 0, 1]]


def snapshot(sim: Sim) -> list[Any]:
    """Every partition's whole state (bookkeeping included) and every event. The events are read as
    written; the partitions after the replication model brought the coasting ones up to date, as a
    reader outside the dynamics must on an exclusive clock."""
    sim.dynamics.replication.settle()
    fields = (
        "replicas",
        "adding_replicas",
        "removing_replicas",
        "leader",
        "isr",
        "leader_epoch",
        "partition_epoch",
        "leo",
        "high_watermark",
        "status",
        "last_leader",
        "epoch_start_offset",
        "leader_recovery_state",
        "caught_up",
        "candidate",
    )
    partitions = [(p.name, *(getattr(p, f) for f in fields)) for p in sim.cluster.partitions()]
    events = [(e.seq, e.time, e.kind, e.subject, e.changes, e.cause) for e in sim.dynamics.events()]
    return [sim.clock.now(), partitions, events]


async def timeline(sim: Sim, slow: bool) -> list[list[Any]]:
    """The failure simulation's steps (warm-up, crash, restart, a preferred election, reassignments, a
    controlled shutdown), with a snapshot after each."""
    d = sim.dynamics
    sim.topic("t", REPLICAS)
    sim.topic("single", [[3]])
    sim.topic("idle", [[0, 1], [2, 3]])
    await d.produce_load("t", 333)  # 33.3 records per 100 ms tick: whole records telescope
    await d.produce_load("single", 7)
    if slow:
        await d.set_replication(4, delay_ms=3000)
        await d.set_replication(5, records_per_s=20)
    shots = []
    await d.advance(4000)
    shots.append(snapshot(sim))
    await sim.crash(1)
    await sim.crash(2, mode="hang")
    await d.advance(12_000)
    shots.append(snapshot(sim))
    await d.start_broker(1)
    await d.start_broker(2)
    await d.advance(6000)
    shots.append(snapshot(sim))
    await d.elect_leaders("preferred", None)
    await d.advance(2000)
    shots.append(snapshot(sim))
    await d.reassign({("t", 0): [3, 4, 5], ("t", 1): [1, 2, 4, 5]})  # new replicas copy, then complete
    await d.advance(3000)
    shots.append(snapshot(sim))
    await d.stop_broker(0, "controlled")
    await d.advance(3000)
    await d.start_broker(0)
    await d.advance(40_000)  # past the ISR lag checks
    shots.append(snapshot(sim))
    await d.produce_load("t", 0)
    await d.advance(1000)
    shots.append(snapshot(sim))
    return shots


async def run(
    policy: str, slow: bool, exclusive: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Any], int]:
    steps = 0
    step = Replication._step

    def counted(self: Replication, *args: Any) -> bool:
        nonlocal steps
        steps += 1
        return step(self, *args)

    monkeypatch.setattr(Replication, "_step", counted)
    sim = await make_sim(BROKERS, policy=policy, exclusive=exclusive)
    try:
        return await timeline(sim, slow), steps
    finally:
        await sim.close()
        monkeypatch.setattr(Replication, "_step", step)


@pytest.mark.parametrize("policy", ["kafka", "fluvio"])
@pytest.mark.parametrize("slow", [False, True], ids=["plain", "slow-followers"])
async def test_coasting_gives_the_states_and_events_of_the_ticks_one_by_one(
    policy: str, slow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticked, ticked_steps = await run(policy, slow, False, monkeypatch)
    coasted, coasted_steps = await run(policy, slow, True, monkeypatch)
    for one_by_one, at_once in zip(ticked, coasted, strict=True):
        assert at_once == one_by_one
    # Kafka's style reassigns (the timeline exercises it): t-0 has its new replicas, completed unless a
    # rate-limited follower (broker 5) cannot catch up; Fluvio's style refuses reassignments.
    replicas, adding = next((r, a) for name, r, a, *_ in coasted[4][1] if name == "t-0")
    if policy == "kafka":
        assert (replicas, adding) == (([3, 4, 5, 0, 1, 2], [3, 4, 5]) if slow else ([3, 4, 5], []))
    else:
        assert (replicas, adding) == ([0, 1, 2], [])
    # Most ticks were not stepped one by one (the partitions of a slow follower's broker are).
    assert coasted_steps < ticked_steps / (2 if slow else 4)


async def test_a_partition_does_not_coast_while_someone_follows_its_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim = await make_sim(BROKERS, exclusive=True)
    try:
        followed: list[list[int]] = []

        def follow(p: Any, leo: list[int]) -> list[int]:
            followed.append(list(leo))
            return leo

        sim.dynamics.replication.on_log_end_offsets = follow
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.produce_load("t", 10)  # one record per tick
        await sim.dynamics.advance(1000)
        # The data path saw every tick's log end offsets.
        assert followed == [[n, n, n] for n in range(1, 11)]
    finally:
        await sim.close()
