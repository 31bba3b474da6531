"""The replication model: workloads, slow and delayed followers, the ISR's shrink and expansion after
replica.lag.time.max.ms, the high watermark and min.insync.replicas, and truncation after elections."""

from __future__ import annotations

import pytest

from controller.cluster import LeaderRecoveryState
from tests.support.dynamics import make_sim

QUIET = {"auto.leader.rebalance.enable": "false"}


def leos(sim, topic="t", index=0):
    return sim.dynamics.partition_state(topic, index).log_end_offsets


async def test_records_arrive_at_the_leader_and_followers_copy_them() -> None:
    sim = await make_sim([0, 1, 2], properties=QUIET)
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.produce_load("t", 250)  # 25 records per 100 ms tick
        await sim.dynamics.advance(1000)
        state = sim.dynamics.partition_state("t", 0)
        assert state.log_end_offsets == {0: 250, 1: 250, 2: 250}
        assert (state.high_watermark, state.isr) == (250, (0, 1, 2))
        await sim.dynamics.produce_load("t", 0)
        await sim.dynamics.advance(1000)
        assert leos(sim) == {0: 250, 1: 250, 2: 250}
    finally:
        await sim.close()


async def test_a_fractional_rate_has_no_rounding_drift() -> None:
    sim = await make_sim([0, 1], properties=QUIET)
    try:
        sim.topic("t", [[0, 1]])
        await sim.dynamics.produce_load("t", 3)  # 0.3 records per tick
        await sim.dynamics.advance(10_000)
        assert leos(sim) == {0: 30, 1: 30}
    finally:
        await sim.close()


async def test_a_slow_follower_leaves_the_isr_after_the_lag_time_and_rejoins_when_it_catches_up() -> None:
    sim = await make_sim([0, 1, 2], properties=QUIET)
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=50)
        await sim.dynamics.produce_load("t", 100)
        await sim.dynamics.advance(30_000)
        state = sim.dynamics.partition_state("t", 0)
        assert state.isr == (0, 1, 2)  # behind, but not yet for replica.lag.time.max.ms
        assert state.log_end_offsets == {0: 3000, 1: 3000, 2: 1500}
        assert state.high_watermark == 1500  # the ISR's lowest log end offset
        await sim.dynamics.advance(15_000)  # the lag check runs every 15 s
        state = sim.dynamics.partition_state("t", 0)
        assert state.isr == (0, 1)
        assert state.high_watermark == 4500
        shrink = [e for e in sim.dynamics.events() if e.change("isr")][-1]
        assert (shrink.time, shrink.cause) == (
            45_000,
            "broker(s) [2] not caught up for replica.lag.time.max.ms=30000",
        )
        await sim.dynamics.set_replication(2, records_per_s=None)  # no limit: it catches up at the next fetch
        await sim.dynamics.advance(100)
        state = sim.dynamics.partition_state("t", 0)
        assert state.isr == (0, 1, 2) and state.log_end_offsets[2] == state.log_end_offsets[0]
    finally:
        await sim.close()


@pytest.mark.parametrize(("delay", "stays"), [(500, True), (40_000, False)])
async def test_a_delayed_follower_stays_in_sync_unless_its_delay_passes_the_lag_time(
    delay: int, stays: bool
) -> None:
    sim = await make_sim([0, 1], properties=QUIET)
    try:
        sim.topic("t", [[0, 1]])
        await sim.dynamics.set_replication(1, delay_ms=delay)
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.advance(60_000)
        state = sim.dynamics.partition_state("t", 0)
        assert (1 in state.isr) is stays
        # It trails its leader by what the leader took in during the delay.
        expected_lag = 10 * min(delay, 60_000) // 1000
        assert state.log_end_offsets[0] - state.log_end_offsets[1] == pytest.approx(expected_lag, abs=1)
    finally:
        await sim.close()


async def test_a_delay_counts_from_when_it_is_set_for_records_appended_before_the_next_tick() -> None:
    sim = await make_sim([0, 1], properties=QUIET)
    try:
        sim.topic("t", [[0, 1]])
        await sim.dynamics.set_replication(1, delay_ms=5000)
        await sim.dynamics.set_log_end_offset("t", 0, 0, 7)  # appended at once, before any tick
        await sim.dynamics.advance(4900)
        state = sim.dynamics.partition_state("t", 0)
        assert (state.log_end_offsets, state.high_watermark, state.isr) == ({0: 7, 1: 0}, 0, (0, 1))
        await sim.dynamics.advance(200)
        state = sim.dynamics.partition_state("t", 0)
        assert (state.log_end_offsets, state.high_watermark) == ({0: 7, 1: 7}, 7)
    finally:
        await sim.close()


async def test_the_high_watermark_waits_for_min_insync_replicas() -> None:
    sim = await make_sim([0, 1, 2], properties={**QUIET, "min.insync.replicas": "3"})
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.advance(1000)
        assert sim.dynamics.partition_state("t", 0).high_watermark == 10
        await sim.fence(2)  # ISR [0, 1]: smaller than min.insync.replicas
        frozen = sim.dynamics.partition_state("t", 0).high_watermark
        await sim.dynamics.advance(5000)
        state = sim.dynamics.partition_state("t", 0)
        assert state.isr == (0, 1) and state.high_watermark == frozen < state.log_end_offsets[0]
    finally:
        await sim.close()


async def test_set_log_end_offset_keeps_the_leader_ahead() -> None:
    sim = await make_sim([0, 1], properties=QUIET)
    try:
        sim.topic("t", [[0, 1]])
        with pytest.raises(ValueError, match="cannot pass its leader's"):
            await sim.dynamics.set_log_end_offset("t", 0, 1, 5)
        await sim.dynamics.set_log_end_offset("t", 0, 0, 5)
        await sim.dynamics.set_log_end_offset("t", 0, 1, 5)
        with pytest.raises(ValueError, match="cannot be below a follower's"):
            await sim.dynamics.set_log_end_offset("t", 0, 0, 4)
        with pytest.raises(ValueError, match="no replica"):
            await sim.dynamics.set_log_end_offset("t", 0, 9, 1)
        assert sim.dynamics.partition_state("t", 0).high_watermark == 5
    finally:
        await sim.close()


async def test_an_unclean_election_truncates_to_the_new_leader() -> None:
    sim = await make_sim([0, 1, 2], properties=QUIET)
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=0)  # 2 copies nothing: it falls out of the ISR
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.advance(50_000)
        await sim.dynamics.produce_load("t", 0)
        state = sim.dynamics.partition_state("t", 0)
        assert state.isr == (0, 1) and state.log_end_offsets[2] == 0 and state.high_watermark == 500
        await sim.fence(0, 1)
        assert sim.dynamics.partition_state("t", 0).leader == -1
        outcome = await sim.dynamics.elect("t", 0, "unclean")
        assert outcome.error is None
        state = sim.dynamics.partition_state("t", 0)
        assert (state.leader, state.isr, state.high_watermark) == (2, (2,), 0)
        assert state.log_end_offsets == {0: 0, 1: 0, 2: 0}  # what 2 never had is gone
        assert any("unclean election" in e.cause for e in sim.dynamics.events())
    finally:
        await sim.close()


async def test_a_follower_rejoins_the_isr_at_the_high_watermark_and_not_one_record_before() -> None:
    """Partition.isFollowerInSync: follower LEO >= leader HW (and >= the leader epoch's start offset)."""
    sim = await make_sim([0, 1, 2], properties=QUIET)
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=0)
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.advance(50_000)
        await sim.dynamics.produce_load("t", 0)
        state = sim.dynamics.partition_state("t", 0)
        assert (state.isr, state.high_watermark, state.log_end_offsets[2]) == ((0, 1), 500, 0)
        await sim.dynamics.set_replication(2, records_per_s=4990)  # 499 records per 100 ms tick
        await sim.dynamics.advance(100)
        state = sim.dynamics.partition_state("t", 0)
        assert (state.isr, state.log_end_offsets[2]) == ((0, 1), 499)  # HW - 1: still out
        await sim.dynamics.advance(100)
        state = sim.dynamics.partition_state("t", 0)
        assert (state.isr, state.log_end_offsets[2]) == ((0, 1, 2), 500)  # LEO = HW: back in
    finally:
        await sim.close()


async def test_a_follower_leaves_the_isr_only_when_its_lag_is_greater_than_the_lag_time() -> None:
    """Replica.isCaughtUp: caught up while now - lastCaughtUpTimeMs <= replica.lag.time.max.ms."""
    sim = await make_sim([0, 1], properties=QUIET)
    try:
        sim.topic("t", [[0, 1]])
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.advance(15_000)  # the follower had everything at 15,000
        await sim.dynamics.set_replication(1, records_per_s=0)
        await sim.dynamics.advance(30_000)  # the lag check at 45,000 sees a lag of exactly 30,000
        assert sim.dynamics.partition_state("t", 0).isr == (0, 1)
        await sim.dynamics.advance(15_000)  # at 60,000: 45,000
        assert sim.dynamics.partition_state("t", 0).isr == (0,)
        # The only ISR change: no shrink at 45,000 (and so no rejoin right after it).
        assert [(e.time, e.change("isr")) for e in sim.dynamics.events() if e.change("isr")] == [
            (60_000, ((0, 1), (0,)))
        ]
    finally:
        await sim.close()


async def test_the_leader_of_an_unclean_election_is_recovering_until_the_next_tick() -> None:
    """Kafka: RECOVERING after an unclean election, RECOVERED once the new leader has recovered its log
    (its AlterPartition); a clean election leaves the state as it was."""
    sim = await make_sim([0, 1, 2], properties=QUIET)
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=0)
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.advance(50_000)
        await sim.dynamics.produce_load("t", 0)
        await sim.fence(0, 1)
        assert sim.dynamics.partition_state("t", 0).leader_recovery_state is LeaderRecoveryState.RECOVERED
        assert (await sim.dynamics.elect("t", 0, "unclean")).error is None
        state = sim.dynamics.partition_state("t", 0)
        assert (state.leader, state.leader_recovery_state) == (2, LeaderRecoveryState.RECOVERING)
        await sim.dynamics.advance(100)
        assert sim.dynamics.partition_state("t", 0).leader_recovery_state is LeaderRecoveryState.RECOVERED
        recovered = [e for e in sim.dynamics.events() if e.change("leader_recovery_state")][-1]
        assert (recovered.cause, recovered.change("leader_recovery_state")) == (
            "leader recovered its log",
            (1, 0),
        )
    finally:
        await sim.close()


async def test_a_follower_rejoins_only_once_it_reaches_the_start_of_the_leaders_epoch() -> None:
    """Kafka's ``Partition.isFollowerInSync``: a follower at the high watermark but below the offset the
    leader's epoch began at stays out of the ISR (its log may still diverge from the new leader's)."""
    sim = await make_sim(
        [0, 1, 2], properties={**QUIET, "replica.lag.time.max.ms": "1000", "min.insync.replicas": "3"}
    )
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_log_end_offset("t", 0, 0, 2)
        await sim.dynamics.advance(100)
        await sim.dynamics.set_replication(2, records_per_s=0)  # broker 2 stays at 2 from now on
        await sim.dynamics.set_log_end_offset("t", 0, 0, 5)
        await sim.dynamics.advance(100)  # broker 1 copies to 5; the ISR is below 3 soon: no commits
        await sim.fence(0)  # broker 1 leads from its log end: its epoch starts at 5
        state = sim.dynamics.partition_state("t", 0)
        assert (state.leader, state.high_watermark, state.log_end_offsets[2]) == (1, 2, 2)
        assert sim.p("t").epoch_start_offset == 5
        await sim.dynamics.advance(3000)  # lag checks: broker 2 (at the high watermark, below 5) is out
        assert sim.dynamics.partition_state("t", 0).isr == (1,)
        await sim.dynamics.set_replication(2, records_per_s=None)
        await sim.dynamics.advance(100)  # it copies up to 5, the start of the epoch: it rejoins
        assert sim.dynamics.partition_state("t", 0).isr == (1, 2)
    finally:
        await sim.close()


async def test_the_high_watermark_waits_for_a_caught_up_follower_about_to_join() -> None:
    """Kafka's ``maybeIncrementLeaderHW`` counts a follower outside the ISR that is caught up (within
    replica.lag.time.max.ms) and may join: the high watermark does not pass it, so it reaches the high
    watermark and joins, even while records keep arriving faster than its delay lets it catch up fully."""
    sim = await make_sim([0, 1, 2], properties={**QUIET, "replica.lag.time.max.ms": "1000"})
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.fence(2)  # out of the ISR
        await sim.dynamics.set_replication(2, delay_ms=300)  # it copies what the leader had 300 ms ago
        await sim.dynamics.produce_load("t", 100)
        await sim.dynamics.advance(1000)
        await sim.restart(2)
        await sim.dynamics.advance(1000)
        state = sim.dynamics.partition_state("t", 0)
        assert state.isr == (0, 1, 2)
        assert state.high_watermark <= state.log_end_offsets[2] < state.log_end_offsets[0]
    finally:
        await sim.close()
