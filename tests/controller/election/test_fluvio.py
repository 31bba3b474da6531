"""Fluvio's election as documented (statuses, live replica set, high watermark) with the numbers of Fluvio's
SC (a candidate must lag the last leader's log end offset by less than 4; ties to the first in order),
and the candidate tests of Fluvio's partition store (``store.rs``)."""

from __future__ import annotations

import pytest

from controller.election.api import PartitionView, Trigger
from controller.election.builtin.fluvio import FluvioElectionPolicy
from controller.election.rules import eligible_leaders
from tests.support.dynamics import make_sim


def view(leos: dict[int, int], hws: dict[int, int], online: set[int], leader: int = 5000) -> PartitionView:
    replicas = tuple(leos)
    lrs = replicas  # every follower reported in the live replica set
    eligibility = eligible_leaders(replicas, lrs, online, Trigger.LEADER_OFFLINE, False, "fluvio", leader)
    return PartitionView(
        "t",
        0,
        replicas,
        lrs,
        leader,
        leader,
        tuple(leos.values()),
        tuple(hws[r] for r in replicas),
        frozenset(online),
        eligibility.eligible,
        eligibility.unclean,
        Trigger.LEADER_OFFLINE,
    )


@pytest.mark.parametrize(
    ("leos", "hws", "online", "expected"),
    [
        ({5000: 0}, {5000: 0}, set(), None),  # test_candidate_spu_no_candidate
        ({5000: 110, 5001: 110, 5002: 105}, {5000: 100, 5001: 100, 5002: 100}, {5001, 5002}, 5001),  # best
        (
            {5000: 110, 5001: 110, 5002: 105},
            {5000: 100, 5001: 95, 5002: 100},
            {5000, 5001, 5002},
            5001,
        ),  # conflict
        ({5000: 110, 5001: 110, 5002: 105}, {5000: 100, 5001: 95, 5002: 100}, set(), None),  # no online
    ],
)
def test_fluvio_store_candidate_tests(leos, hws, online, expected) -> None:
    [candidates] = FluvioElectionPolicy().elect([view(leos, hws, online)])
    assert (candidates[0] if candidates else None) == expected


def test_a_candidate_must_lag_by_less_than_four_and_ties_go_to_the_first() -> None:
    policy = FluvioElectionPolicy()
    [candidates] = policy.elect(
        [view({1: 10, 2: 6, 3: 7, 4: 7}, {1: 0, 2: 0, 3: 0, 4: 0}, {2, 3, 4}, leader=1)]
    )
    assert candidates == (3, 4)  # lag 3 and 3 (first in order first); broker 2 lags 4: not suitable
    policy.configure({"simulator.election.fluvio.max.lag": "5"})
    [candidates] = policy.elect(
        [view({1: 10, 2: 6, 3: 7, 4: 7}, {1: 0, 2: 0, 3: 0, 4: 0}, {2, 3, 4}, leader=1)]
    )
    assert candidates == (3, 4, 2)


async def seed_example():
    sim = await make_sim([1, 2, 3], policy="fluvio")
    sim.topic("stream", [[1, 2, 3]])
    for broker, leo in ((1, 4), (2, 3), (3, 2)):
        await sim.dynamics.set_log_end_offset("stream", 0, broker, leo)
    return sim


async def test_seed_003_worked_example() -> None:
    sim = await seed_example()
    try:
        state = sim.dynamics.partition_state("stream", 0)
        assert (len(state.isr), state.high_watermark) == (3, 2)
        assert state.log_end_offsets == {1: 4, 2: 3, 3: 2}
        await sim.crash(3)  # follower-2 goes offline
        state = sim.dynamics.partition_state("stream", 0)
        # The high watermark counts every replica, an offline one too (Fluvio's compute_hw with
        # in_sync_replica = the replica count): it stays at 2 while broker 3 lacks offset 2.
        assert (state.isr, state.high_watermark, state.leader, state.status) == ((1, 2), 2, 1, "Online")
    finally:
        await sim.close()


async def test_seed_003_statuses_in_order_when_the_leader_goes_offline() -> None:
    sim = await seed_example()
    try:
        before = sim.dynamics.events()[-1].seq
        await sim.crash(1)  # the leader: follower-1 (lag 1) is the candidate, follower-2 (lag 2) next
        statuses = [
            e.change("status")[1]
            for e in sim.dynamics.events(before)
            if e.subject == "stream-0" and e.change("status")
        ]
        assert statuses == ["Election", "CandidateFound", "Online"]
        state = sim.dynamics.partition_state("stream", 0)
        # The leader epoch went up twice: to no leader during the election, then to the new leader.
        assert (state.leader, state.isr, state.leader_epoch) == (2, (2, 3), 2)
    finally:
        await sim.close()


async def test_a_candidate_that_does_not_confirm_is_replaced_when_the_timer_fires() -> None:
    sim = await seed_example()
    try:
        await sim.dynamics.fail_promotion(2)
        await sim.crash(1)
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.status, state.leader) == ("CandidateFound", -1)  # no leader while it elects one
        assert sim.p("stream").candidate == 2
        await sim.dynamics.advance(4999)
        assert sim.dynamics.partition_state("stream", 0).status == "CandidateFound"
        await sim.dynamics.advance(1)  # simulator.election.fluvio.promotion.timeout.ms=5000
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.status, state.leader) == ("Online", 3)  # the next candidate (lag 2)
    finally:
        await sim.close()


async def test_no_candidate_left_means_offline_and_an_spu_coming_back_refreshes() -> None:
    sim = await seed_example()
    try:
        await sim.dynamics.fail_promotion(2)
        await sim.dynamics.fail_promotion(3)
        await sim.crash(1)
        await sim.dynamics.advance(10_000)  # both candidates time out
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.status, state.leader) == ("Offline", -1)
        before = sim.dynamics.events()[-1].seq
        await sim.dynamics.start_broker(1)  # the failed leader comes back: lag 0, it is the candidate
        statuses = [e.change("status")[1] for e in sim.dynamics.events(before) if e.change("status")]
        assert statuses == ["Election", "CandidateFound", "Online"]
        assert sim.dynamics.partition_state("stream", 0).leader == 1
    finally:
        await sim.close()


async def test_a_follower_going_offline_leaves_the_status_online() -> None:
    sim = await seed_example()
    try:
        await sim.crash(2)
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.status, state.leader, state.isr) == ("Online", 1, (1, 3))
    finally:
        await sim.close()


async def test_a_failed_leader_rejoins_as_a_follower() -> None:
    sim = await make_sim([1, 2, 3], policy="fluvio")
    try:
        sim.topic("stream", [[1, 2, 3]])
        await sim.crash(1)
        assert sim.dynamics.partition_state("stream", 0).leader == 2
        await sim.dynamics.start_broker(1)
        await sim.dynamics.advance(100)  # it fetches from the new leader and rejoins the LRS
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.leader, state.isr) == (2, (1, 2, 3))
    finally:
        await sim.close()


@pytest.mark.parametrize("mode", ["hang", "isolate"])
async def test_a_silent_spu_is_offline_after_the_health_timeout(mode: str) -> None:
    sim = await make_sim([1, 2, 3], policy="fluvio")
    try:
        sim.topic("stream", [[1, 2, 3]])
        await sim.crash(1, mode=mode)
        await sim.dynamics.advance(89_999)
        assert sim.dynamics.partition_state("stream", 0).leader == 1
        await sim.dynamics.advance(1)
        assert sim.dynamics.partition_state("stream", 0).leader == 2
    finally:
        await sim.close()


@pytest.mark.parametrize(
    ("back", "leader_leo", "statuses", "leader"),
    [
        (2, 4, ["Election", "CandidateFound", "Online"], 2),  # lag 1
        (3, 4, ["Election", "CandidateFound", "Online"], 3),  # lag 2
        (3, 6, ["Election", "Offline"], -1),  # lag 4: not suitable, the replica set stays Offline
    ],
)
async def test_a_follower_coming_back_after_every_spu_stopped_is_elected_if_close_enough(
    back: int, leader_leo: int, statuses: list[str], leader: int
) -> None:
    """Fluvio: an SPU coming back refreshes the Offline replica sets, the candidate taken from the
    follower membership list by smallest lag (Fluvio's own Test.MD notes its SC does not do this yet)."""
    sim = await seed_example()
    try:
        await sim.dynamics.set_log_end_offset("stream", 0, 1, leader_leo)
        await sim.crash(3, 2, 1)  # the followers first, then the leader: no live follower is left
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.status, state.leader) == ("Offline", -1)
        before = sim.dynamics.events()[-1].seq
        await sim.dynamics.start_broker(back)
        changes = [e.change("status") for e in sim.dynamics.events(before) if e.subject == "stream-0"]
        assert [c[1] for c in changes if c] == statuses
        assert sim.dynamics.partition_state("stream", 0).leader == leader
    finally:
        await sim.close()


async def test_followers_behind_stay_in_the_live_replica_set_however_long_they_lag() -> None:
    """Fluvio's SC removes only offline SPUs from a replica set (no replica.lag.time.max.ms)."""
    sim = await make_sim([0, 1, 2], policy="fluvio")
    try:
        sim.topic("stream", [[0, 1, 2]])
        for broker in (1, 2):
            await sim.dynamics.set_replication(broker, records_per_s=0)  # they copy nothing from now on
        await sim.dynamics.set_log_end_offset("stream", 0, 0, 10)
        for broker in (1, 2):
            await sim.dynamics.set_log_end_offset("stream", 0, broker, 8)
        await sim.dynamics.advance(60_000)
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.isr, state.log_end_offsets) == ((0, 1, 2), {0: 10, 1: 8, 2: 8})
        await sim.crash(0)
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.leader, state.status, state.isr) == (1, "Online", (1, 2))
    finally:
        await sim.close()


async def test_the_record_lag_setting_removes_followers_too_far_behind() -> None:
    sim = await make_sim(
        [0, 1, 2], policy="fluvio", properties={"simulator.election.fluvio.lrs.max.lag.records": "2"}
    )
    try:
        sim.topic("stream", [[0, 1, 2]])
        await sim.dynamics.set_replication(1, records_per_s=0)
        await sim.dynamics.set_replication(2, records_per_s=0)
        await sim.dynamics.set_log_end_offset("stream", 0, 0, 10)
        await sim.dynamics.set_log_end_offset("stream", 0, 1, 8)  # 2 behind: stays
        await sim.dynamics.set_log_end_offset("stream", 0, 2, 7)  # 3 behind: leaves at the next tick
        await sim.dynamics.advance(100)
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.isr, state.high_watermark) == ((0, 1), 7)  # the LRS elects; every replica commits
        shrink = [e for e in sim.dynamics.events() if e.change("isr")][-1]
        assert shrink.cause == (
            "broker(s) [2] more than simulator.election.fluvio.lrs.max.lag.records=2 records behind"
        )
        await sim.dynamics.set_replication(2, records_per_s=None)  # it copies again, and rejoins
        await sim.dynamics.advance(100)
        assert sim.dynamics.partition_state("stream", 0).isr == (0, 1, 2)
    finally:
        await sim.close()


async def test_a_removed_spu_does_not_stay_leader() -> None:
    sim = await make_sim([1, 2, 3], policy="fluvio")
    try:
        sim.topic("stream", [[1, 2, 3]])
        await sim.dynamics.remove_broker(1)
        await sim.dynamics.advance(10_000)
        state = sim.dynamics.partition_state("stream", 0)
        assert (state.leader, state.status, state.isr) == (2, "Online", (2, 3))
    finally:
        await sim.close()


async def test_an_spu_started_again_is_not_taken_offline_by_the_health_timer_of_its_old_process() -> None:
    """Found by the seeded loss checker (seed 2440): an SPU hung (its health timer started), then shut
    down and started again; the old process's health timer fired after the new one registered and took
    the running SPU offline for good (nothing brings a running SPU back), leaving the replica sets it
    alone could lead Offline."""
    sim = await make_sim(
        [0, 1, 2], policy="fluvio", properties={"simulator.election.fluvio.health.timeout.ms": "1500"}
    )
    try:
        sim.topic("stream", [[0, 1, 2]])
        await sim.dynamics.stop_broker(0, "hang")  # silent: offline after the health timeout
        await sim.dynamics.advance(500)
        await sim.dynamics.stop_broker(0, "controlled")  # shut down meanwhile: offline at once
        await sim.dynamics.start_broker(0)  # a new process: online at once
        await sim.dynamics.advance(5_000)  # past the old process's health timeout
        b = sim.cluster.broker_state(0)
        assert (b.fenced, b.process.value) == (False, "up")
        assert 0 in sim.dynamics.partition_state("stream", 0).isr
    finally:
        await sim.close()
