"""Topic configs read through the cluster at run time: min.insync.replicas per topic and per leader's
broker, and unclean.leader.election.enable turned on for a leaderless partition, elected at KRaft's
periodic check (every 5 minutes of the cluster's clock)."""

from __future__ import annotations

from controller.config_admin import TOPIC, ConfigAdmin, ConfigChange
from controller.dynamics import UNCLEAN_ELECTION_CHECK_MS
from tests.support.dynamics import make_sim

QUIET = {"auto.leader.rebalance.enable": "false"}


async def test_altering_min_insync_replicas_changes_when_the_high_watermark_advances() -> None:
    sim = await make_sim([0, 1, 2], properties=QUIET)
    try:
        sim.topic("t", [[0, 1, 2]])
        sim.topic("u", [[0, 1, 2]])
        await sim.fence(2)  # ISR [0, 1] for both topics
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.produce_load("u", 10)
        await sim.dynamics.advance(1000)
        assert sim.dynamics.partition_state("t", 0).high_watermark == 10

        sim.cluster.set_topic_configs("t", {"min.insync.replicas": "3"}, "test")
        await sim.dynamics.advance(1000)
        t, u = sim.dynamics.partition_state("t", 0), sim.dynamics.partition_state("u", 0)
        assert (t.high_watermark, t.log_end_offsets[0]) == (10, 20)  # t waits for a third in-sync replica
        assert u.high_watermark == 20  # u is not held back: the config is per topic

        # A dynamic broker value applies where no topic value is set, as the leader's broker has it.
        sim.cluster.set_broker_configs(0, {"min.insync.replicas": "3"}, "test")
        await sim.dynamics.advance(1000)
        assert sim.dynamics.partition_state("u", 0).high_watermark == 20

        sim.cluster.set_topic_configs("t", {}, "test")
        sim.cluster.set_broker_configs(0, {}, "test")
        await sim.dynamics.advance(1000)
        assert sim.dynamics.partition_state("t", 0).high_watermark == 40
        assert sim.dynamics.partition_state("u", 0).high_watermark == 40
    finally:
        await sim.close()


async def test_turning_unclean_election_on_elects_a_leaderless_partition_at_the_next_check() -> None:
    sim = await make_sim([0, 1, 2], properties=QUIET)
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=0)  # 2 falls out of the ISR
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.advance(50_000)
        await sim.dynamics.produce_load("t", 0)
        assert sim.dynamics.partition_state("t", 0).isr == (0, 1)
        await sim.fence(0, 1)
        assert sim.dynamics.partition_state("t", 0).leader == -1
        [lost] = [
            e.time for e in sim.dynamics.events() if e.subject == "t-0" and e.change("leader") == (1, -1)
        ]

        # Leaderless and unclean elections off: the checks pass it by.
        await sim.dynamics.advance(UNCLEAN_ELECTION_CHECK_MS)
        assert sim.dynamics.partition_state("t", 0).leader == -1

        sim.cluster.set_topic_configs("t", {"unclean.leader.election.enable": "true"}, "test")
        assert sim.dynamics.partition_state("t", 0).leader == -1  # not at once
        # The checks run every 5 minutes from the moment the partition lost its leader.
        next_check = (
            lost + ((sim.clock.now() - lost) // UNCLEAN_ELECTION_CHECK_MS + 1) * UNCLEAN_ELECTION_CHECK_MS
        )
        await sim.dynamics.advance(next_check - sim.clock.now() - 1)
        assert sim.dynamics.partition_state("t", 0).leader == -1
        await sim.dynamics.advance(1)
        state = sim.dynamics.partition_state("t", 0)
        assert (state.leader, state.isr) == (2, (2,))
        causes = [e.cause for e in sim.dynamics.events() if e.subject == "t-0"]
        # Eligible leader replicas on: the ISR emptied (1 is its ELR), and 2 is in neither.
        assert "unclean leader election check; unclean election: 2 was not in the ISR []" in causes
    finally:
        await sim.close()


async def test_a_static_unclean_setting_elects_at_the_check_after_the_partition_lost_its_leader() -> None:
    sim = await make_sim([0, 1], properties={**QUIET, "unclean.leader.election.enable": "false"})
    try:
        sim.topic("t", [[0, 1]])
        sim.topic("u", [[0, 1]], unclean_leader_election_enable="true")
        await sim.dynamics.set_replication(1, records_per_s=0)
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.produce_load("u", 10)
        await sim.dynamics.advance(50_000)
        await sim.fence(0)
        # u's own config elected 1 at once (the leader went offline); t waits, leaderless.
        assert sim.dynamics.partition_state("u", 0).leader == 1
        assert sim.dynamics.partition_state("t", 0).leader == -1
        sim.cluster.set_broker_configs(None, {"unclean.leader.election.enable": "true"}, "test")
        await sim.dynamics.advance(UNCLEAN_ELECTION_CHECK_MS)
        assert sim.dynamics.partition_state("t", 0).leader == 1
    finally:
        await sim.close()


async def test_lowering_min_insync_replicas_moves_an_idle_partitions_high_watermark_at_once() -> None:
    # A minimum above the replica count is the replica count (Kafka's effectiveMinIsr): the ISR is made
    # smaller than the minimum by fencing a replica instead.
    sim = await make_sim([0, 1, 2], properties=QUIET)
    admin = ConfigAdmin(sim.cluster, sim.dynamics.lock, sim.dynamics.configs_changed)
    try:
        sim.topic("t", [[0, 1, 2]], min_insync_replicas="3")
        await sim.fence(2)  # ISR [0, 1], below the minimum: nothing commits
        await sim.dynamics.produce_load("t", 10)
        await sim.dynamics.advance(1000)
        await sim.dynamics.produce_load("t", 0)
        await sim.dynamics.advance(1000)
        state = sim.dynamics.partition_state("t", 0)
        assert (state.high_watermark, state.log_end_offsets[0], state.log_end_offsets[1]) == (0, 10, 10)

        [checked] = await admin.alter(
            [(TOPIC, "t", [ConfigChange("min.insync.replicas", "2")])], validate_only=True
        )
        assert checked.error is None and sim.dynamics.partition_state("t", 0).high_watermark == 0
        [done] = await admin.alter([(TOPIC, "t", [ConfigChange("min.insync.replicas", "2")])])
        assert done.error is None
        assert sim.dynamics.partition_state("t", 0).high_watermark == 10  # no clock step needed
    finally:
        await sim.close()


async def test_values_read_from_configs_are_kept_until_any_config_changes() -> None:
    """ConfigDerived (what a Produce or a heartbeat reads on every call) reads again after a topic's or a
    broker's configs are set and after a topic is deleted, and not otherwise."""
    from controller.cluster import ConfigDerived

    sim = await make_sim([0, 1, 2], properties=QUIET)
    try:
        sim.topic("t", [[0, 1, 2]])
        cluster = sim.cluster
        reads: list[str] = []

        def read(topic: str) -> int:
            reads.append(topic)
            return int(cluster.topic_config(topic, "min.insync.replicas", 0))

        kept: ConfigDerived[str, int] = ConfigDerived(cluster)
        assert [kept.get("t", read, "t") for _ in range(3)] == [1, 1, 1] and reads == ["t"]
        cluster.set_topic_configs("t", {"min.insync.replicas": "2"}, "test")
        assert kept.get("t", read, "t") == 2 and reads == ["t", "t"]
        cluster.set_broker_configs(0, {"min.insync.replicas": "3"}, "test")
        assert kept.get("t", read, "t") == 2 and reads == ["t", "t", "t"]  # the topic's own value wins
        cluster.delete_topic("t")
        sim.topic("t", [[0, 1, 2]])  # made again without configs: the broker's value now
        assert kept.get("t", read, "t") == 3 and len(reads) == 4
    finally:
        await sim.close()
