"""The data path on the replication model: a log per replica, leaders append client batches, followers
copy them at the model's ticks, leadership moves truncate diverging replicas, and committed records an
unclean election takes away, and acks=1 records any election takes away before they were copied, are
accounted exactly."""

from __future__ import annotations

from controller.data_path import DataPath, LostRecords
from controller.records.checks import ClientBatch, check_client_batch
from controller.records.records import iter_records
from protocol.codes import ErrorCode
from tests.controller.records.batches import build
from tests.support.dynamics import Sim, make_sim

QUIET = {"auto.leader.rebalance.enable": "false"}


async def _sim(brokers=(0, 1, 2), **properties: str) -> tuple[Sim, DataPath]:
    sim = await make_sim(list(brokers), properties={**QUIET, **properties})
    data = DataPath(sim.dynamics.config, sim.cluster, sim.clock, sim.dynamics)
    return sim, data


def _produce(sim: Sim, data: DataPath, count: int, topic: str = "t", producer=(-1, -1, -1), acks: int = -1):
    p = sim.p(topic)
    batch = check_client_batch(
        build(count, producer=producer), 9, data.topic_settings(topic).limits, 1_700_000_000_000, topic, 0
    )
    assert isinstance(batch, ClientBatch)
    return data.append(p, batch, data.topic_settings(topic), acks)


def _values(log) -> list[tuple[int, bytes | None]]:
    from controller.records.log import join_batches

    batches = list(log.batches())
    return [(r.offset, r.key) for r in iter_records(join_batches(batches))] if batches else []


async def test_followers_copy_the_leaders_batches_at_ticks_and_the_high_watermark_counts_them() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[0, 1, 2]])
        first = _produce(sim, data, 3)
        second = _produce(sim, data, 2)
        assert (first.base_offset, first.last_offset, second.base_offset) == (0, 2, 3)
        p = sim.p("t")
        assert (p.leo, p.high_watermark) == ([5, 0, 0], 0)
        await sim.dynamics.advance(100)
        assert (p.leo, p.high_watermark) == ([5, 5, 5], 5)
        leader = data.log_of(p, 0)
        for follower in (1, 2):
            copies = list(data.log_of(p, follower).batches())
            assert [id(b) for b in copies] == [id(b) for b in leader.batches()]  # shared, not copied
        assert _values(data.log_of(p, 2)) == [(0, b"k0"), (1, b"k1"), (2, b"k2"), (3, b"k0"), (4, b"k1")]
        assert data.lost_records() == []
    finally:
        await sim.close()


async def test_the_synthetic_workload_and_client_batches_move_the_same_log_end_offset() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.produce_load("t", 100)  # 10 records per tick
        await sim.dynamics.advance(300)
        appended = _produce(sim, data, 4)
        assert appended.base_offset == 30
        await sim.dynamics.advance(200)
        await sim.dynamics.produce_load("t", 0)
        await sim.dynamics.advance(200)
        p = sim.p("t")
        assert p.leo == [54, 54, 54]
        assert p.high_watermark == 54
        for broker in (0, 1, 2):
            replica = data.log_of(p, broker)
            assert replica.log_end_offset == 54
            kinds = [(b.base_offset, b.last_offset, b.is_synthetic) for b in replica.batches()]
            assert kinds == [(0, 29, True), (30, 33, False), (34, 53, True)]
    finally:
        await sim.close()


async def test_a_rate_limited_follower_copies_whole_client_batches() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=10)  # one record per tick
        _produce(sim, data, 5)
        _produce(sim, data, 5)
        await sim.dynamics.advance(100)
        p = sim.p("t")
        assert p.leo == [10, 10, 5]  # one record's budget, but a batch is copied whole
        await sim.dynamics.advance(100)
        assert p.leo == [10, 10, 10]
    finally:
        await sim.close()


async def test_a_clean_failover_loses_nothing_committed_and_the_old_leader_truncates_what_diverged() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[0, 1, 2]])
        _produce(sim, data, 3)
        await sim.dynamics.advance(100)
        for follower in (1, 2):
            await sim.dynamics.set_replication(follower, records_per_s=0)
        _produce(sim, data, 2)  # only the leader has these (acks=1 at most): not committed
        await sim.dynamics.advance(100)
        p = sim.p("t")
        assert (p.leo, p.high_watermark) == ([5, 3, 3], 3)
        await sim.fence(0)
        assert (p.leader, p.leader_epoch) == (1, 1)
        for follower in (1, 2):
            await sim.dynamics.set_replication(follower, records_per_s=None)
        appended = _produce(sim, data, 1)
        assert appended.base_offset == 3  # the new leader's log ends at 3
        await sim.restart(0)
        await sim.dynamics.advance(200)
        assert p.leo == [4, 4, 4]
        old = data.log_of(p, 0)
        assert [(b.base_offset, b.leader_epoch) for b in old.batches()] == [(0, 0), (3, 1)]
        assert old.epochs.entries == data.log_of(p, 1).epochs.entries
        assert data.lost_records() == []
    finally:
        await sim.close()


async def test_an_unclean_election_accounts_exactly_the_committed_records_it_loses() -> None:
    sim, data = await _sim(**{"unclean.leader.election.enable": "true", "replica.lag.time.max.ms": "1000"})
    try:
        sim.topic("t", [[0, 1]])
        _produce(sim, data, 3)
        await sim.dynamics.advance(100)
        await sim.dynamics.set_replication(1, records_per_s=0)
        _produce(sim, data, 2)
        await sim.dynamics.advance(1500)  # broker 1 leaves the ISR: the leader alone commits
        p = sim.p("t")
        assert (p.isr, p.high_watermark) == ([0], 5)
        _produce(sim, data, 4)
        assert (p.leo, p.high_watermark) == ([9, 3], 9)
        await sim.fence(0)  # no ISR member left: broker 1 is elected uncleanly
        assert (p.leader, p.high_watermark) == (1, 3)
        assert data.lost_records() == [
            LostRecords("t", 0, 3, 4, 0, -1, -1, "unclean election: leader 1 elected with epoch 1"),
            LostRecords("t", 0, 5, 8, 0, -1, -1, "unclean election: leader 1 elected with epoch 1"),
        ]
        await sim.dynamics.set_replication(1, records_per_s=None)
        await sim.restart(0)
        await sim.dynamics.advance(200)
        assert p.leo == [3, 3]
        assert _values(data.log_of(p, 0)) == [(0, b"k0"), (1, b"k1"), (2, b"k2")]
    finally:
        await sim.close()


async def test_a_clean_election_loses_the_acks_1_records_the_followers_had_not_copied() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[0, 1, 2]])
        _produce(sim, data, 3, acks=1)
        await sim.dynamics.advance(100)  # copied: committed
        for follower in (1, 2):
            await sim.dynamics.set_replication(follower, records_per_s=0)
        _produce(sim, data, 2, producer=(7, 0, 0), acks=1)  # 3-4: acknowledged by the leader alone
        _produce(sim, data, 1, acks=0)  # 5: never acknowledged
        _produce(sim, data, 2, acks=-1)  # 6-7: its answer waits for the followers: never acknowledged
        p = sim.p("t")
        assert (p.leo, p.high_watermark, p.isr) == ([8, 3, 3], 3, [0, 1, 2])
        seq = sim.cluster.events.last_seq
        await sim.fence(0)  # broker 1 (in the ISR) is elected: a clean election
        assert (p.leader, p.leader_epoch, p.high_watermark) == (1, 1, 3)
        cause = "clean election: leader 1 elected with epoch 1"
        assert data.lost_records() == [LostRecords("t", 0, 3, 4, 0, 1, 7, cause)]
        losses = [e for e in sim.cluster.events.since(seq) if e.kind == "loss"]
        assert [(e.subject, e.changes, e.cause) for e in losses] == [
            (
                "t-0",
                (
                    ("first_offset", None, 3),
                    ("last_offset", None, 4),
                    ("leader_epoch", None, 0),
                    ("acks", None, 1),
                    ("producer_id", None, 7),
                ),
                cause,
            )
        ]
        # The old leader comes back as a follower: it truncates to the new leader's log.
        for follower in (1, 2):
            await sim.dynamics.set_replication(follower, records_per_s=None)
        await sim.restart(0)
        await sim.dynamics.advance(200)
        assert p.leo == [3, 3, 3]
        assert _values(data.log_of(p, 0)) == [(0, b"k0"), (1, b"k1"), (2, b"k2")]
        assert len(data.lost_records()) == 1
    finally:
        await sim.close()


async def test_acks_1_records_a_follower_copied_survive_its_election() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=0)
        _produce(sim, data, 2, acks=1)
        await sim.dynamics.advance(100)  # broker 1 copies, broker 2 does not: not committed
        p = sim.p("t")
        assert (p.leo, p.high_watermark) == ([2, 2, 0], 0)
        await sim.fence(0)
        assert p.leader == 1
        assert data.lost_records() == []
        await sim.fence(1)  # then broker 2, which never copied them, is elected: now they are lost
        assert (p.leader, p.leader_epoch) == (2, 2)
        assert data.lost_records() == [
            LostRecords("t", 0, 0, 1, 0, 1, -1, "clean election: leader 2 elected with epoch 2")
        ]
    finally:
        await sim.close()


async def test_a_leader_log_cut_inside_acks_1_batches_loses_them_whole_and_not_acks_0() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[0, 1]])
        _produce(sim, data, 2, acks=1)
        await sim.dynamics.advance(100)  # copied: committed
        await sim.dynamics.set_replication(1, records_per_s=0)
        _produce(sim, data, 3, acks=1)  # 2-4
        _produce(sim, data, 2, acks=0)  # 5-6
        p = sim.p("t")
        assert (p.leo, p.high_watermark) == ([7, 2], 2)
        await sim.dynamics.set_log_end_offset("t", 0, 0, 3)
        assert p.leo[0] == 2  # the batch holding offset 3 goes whole
        cause = "log end offset of leader 0 set to 3"
        assert data.lost_records() == [LostRecords("t", 0, 2, 4, 0, 1, -1, cause)]
    finally:
        await sim.close()


async def test_past_simulator_log_max_bytes_the_oldest_committed_batches_go() -> None:
    sim, data = await _sim(**{"simulator.log.max.bytes": "400"})
    try:
        sim.topic("t", [[0, 1]])
        size = len(build(2))
        for _ in range(8):
            _produce(sim, data, 2)
        p = sim.p("t")
        leader = data.log_of(p, 0)
        # Nothing is committed yet (the follower has not copied): nothing may go, whatever the size.
        assert (leader.log_start_offset, leader.size_bytes) == (0, 8 * size)
        await sim.dynamics.advance(100)  # the follower copies, the eight batches are committed
        _produce(sim, data, 2)
        kept = -(-400 // size)  # the fewest whole batches that hold at least the bound
        leader_offsets = [b.base_offset for b in leader.batches()]
        assert leader_offsets == [2 * i for i in range(9 - kept, 9)]
        follower = data.log_of(p, 1)  # has not copied the ninth batch yet
        assert [b.base_offset for b in follower.batches()] == [2 * i for i in range(8 - kept, 8)]
        for replica in (leader, follower):
            assert replica.log_start_offset == next(replica.batches()).base_offset
        assert data.topic_settings("t").retention_bytes == 400
    finally:
        await sim.close()


async def test_a_topics_retention_bytes_applies_when_it_is_lower() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[0]], retention_bytes="100")
        sim.topic("u", [[0]], retention_bytes="1000000000")
        assert data.topic_settings("t").retention_bytes == 100
        assert data.topic_settings("u").retention_bytes == 67_108_864
        size = len(build(2))
        for _ in range(3):
            _produce(sim, data, 2)
            _produce(sim, data, 2, topic="u")
        kept = -(-100 // size)  # the fewest whole batches that hold at least 100 bytes
        assert [b.base_offset for b in data.log_of(sim.p("t"), 0).batches()] == [
            2 * i for i in range(3 - kept, 3)
        ]
        assert [b.base_offset for b in data.log_of(sim.p("u"), 0).batches()] == [0, 2, 4]
    finally:
        await sim.close()


def test_describe_producers_lists_producers_until_they_expire():
    """As Kafka: a producer whose batches retention removed is still listed (its state outlives them), until
    it appended nothing for producer.id.expiration.ms (default a day, pinned)."""
    from controller.config import ServerConfig
    from controller.embedded import ServerThread
    from protocol.client import BlockingClient
    from tests.controller.records.batches import build as build_batch

    assert ServerConfig().producer_id_expiration_ms == 86_400_000
    props = {
        "producer.id.expiration.ms": "1000",
        "producer.id.expiration.check.interval.ms": "100",
        "simulator.log.max.bytes": "200",
    }
    with ServerThread.start(brokers=[(0, None)], clock="virtual", properties=props) as server:
        server.call(lambda: server.server.controller.cluster.add_topic("idem", [[0]]))
        with BlockingClient.connect(server.bootstrap) as client:

            def produce(producer: tuple[int, int, int]) -> int:
                batch = build_batch(2, producer=producer, value_size=100)
                now = server.call(server.server.controller.data_path.now_ms)
                batch = rewrite_timestamps(batch, now)
                request = {
                    "Acks": 1,
                    "TimeoutMs": 1000,
                    "TopicData": [{"Name": "idem", "PartitionData": [{"Index": 0, "Records": batch}]}],
                }
                return client.send("ProduceRequest", request, version=9)["Responses"][0][
                    "PartitionResponses"
                ][0]["ErrorCode"]

            def listed() -> list[int]:
                answer = client.send(
                    "DescribeProducersRequest", {"Topics": [{"Name": "idem", "PartitionIndexes": [0]}]}
                )
                return [p["ProducerId"] for p in answer["Topics"][0]["Partitions"][0]["ActiveProducers"]]

            assert produce((7, 0, 0)) == 0
            server.advance(600)
            for seq in range(0, 20, 2):
                assert produce((8, 0, seq)) == 0  # retention (200 bytes) drops producer 7's batch
            data_path = server.server.controller.data_path
            topic = server.server.controller.cluster.topics["idem"]
            assert server.call(lambda: data_path.log_of(topic.partitions[0], 0).log_start_offset) > 0
            assert listed() == [7, 8]
            server.advance(500)  # producer 7 idle 1.1 s, producer 8 0.5 s
            assert listed() == [8]


def rewrite_timestamps(batch: bytes, now: int) -> bytes:
    from tests.controller.records.batches import rewrite

    return rewrite(batch, base_timestamp=now, max_timestamp=now)


async def test_acks_1_records_lost_by_an_unclean_election_are_labelled_unclean() -> None:
    """The cause names the kind of election (an unclean one: its new leader was outside the ISR), not
    whether committed records went with it: here the new leader holds every committed record and only
    acks=1 records above the high watermark are lost."""
    sim, data = await _sim(
        brokers=(0, 1), **{"unclean.leader.election.enable": "true", "min.insync.replicas": "2"}
    )
    try:
        sim.topic("t", [[0, 1]])
        _produce(sim, data, 2)
        await sim.dynamics.advance(100)
        await sim.fence(1)  # the ISR is [0], below min.insync.replicas: nothing more is committed
        _produce(sim, data, 3, acks=1)  # 2-4: acknowledged by the leader alone
        p = sim.p("t")
        assert (p.isr, p.high_watermark, p.leo) == ([0], 2, [5, 2])
        await sim.fence(0)  # leaderless
        seq = sim.cluster.events.last_seq
        await sim.restart(1)  # unfenced: elected uncleanly (outside the ISR and the ELR)
        election = [e for e in sim.cluster.events.since(seq) if e.change("leader")][0]
        # Eligible leader replicas on (the default): 0, fenced last, left the ISR for the ELR; 1 came back
        # from a crash, so it is in neither.
        assert "unclean election: 1 was not in the ISR []" in election.cause
        assert election.change("elr") == ((0,), ())
        assert (p.leader, p.high_watermark) == (1, 2)
        assert data.lost_records() == [
            LostRecords("t", 0, 2, 4, 0, 1, -1, "unclean election: leader 1 elected with epoch 2")
        ]
    finally:
        await sim.close()


async def test_an_acks_all_batch_whose_answer_failed_is_no_acknowledged_loss() -> None:
    """An acks=all batch is acknowledged when its wait succeeds. One whose answer gave up (the Produce's
    timeout) is committed later all the same; an unclean election that takes both away lists only the
    acknowledged one."""
    sim, data = await _sim(**{"unclean.leader.election.enable": "true", "replica.lag.time.max.ms": "1000"})
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=0)  # broker 2 will be elected uncleanly
        await sim.dynamics.set_replication(1, records_per_s=0)
        timed_out = _produce(sim, data, 2)  # 0-1
        await sim.dynamics.advance(100)
        assert timed_out.replicated is not None and not timed_out.replicated.done()
        timed_out.replicated.cancel()  # what the Produce does at its timeout: REQUEST_TIMED_OUT
        answered = _produce(sim, data, 3)  # 2-4
        await sim.dynamics.set_replication(1, records_per_s=None)
        await sim.dynamics.advance(1500)  # broker 1 copies both, broker 2 leaves the ISR
        p = sim.p("t")
        assert (p.isr, p.high_watermark, p.leo) == ([0, 1], 5, [5, 5, 0])
        assert answered.replicated is not None and answered.replicated.result() is ErrorCode.NONE
        await sim.fence(
            0, 1
        )  # 1 leads, then no ISR member is left: broker 2 (log end 0) is elected uncleanly
        assert (p.leader, p.high_watermark) == (2, 0)
        cause = "unclean election: leader 2 elected with epoch 2"
        assert data.lost_records() == [LostRecords("t", 0, 2, 4, 0, -1, -1, cause)]
    finally:
        await sim.close()


async def test_an_unclean_loss_inside_a_run_ends_at_the_last_committed_record() -> None:
    """The committed records end inside the leader's last run (the synthetic workload's records are cut
    anywhere): the loss names exactly the committed records the new leader lacks, up to the high
    watermark - 1, not the record at the high watermark (never committed, never acknowledged)."""
    sim, data = await _sim(
        **{
            "unclean.leader.election.enable": "true",
            "replica.lag.time.max.ms": "1000",
            "min.insync.replicas": "2",
        }
    )
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_log_end_offset("t", 0, 0, 5)
        await sim.dynamics.advance(100)  # everybody at 5
        await sim.dynamics.set_replication(2, records_per_s=0)
        await sim.dynamics.set_log_end_offset("t", 0, 0, 10)
        await sim.dynamics.advance(1500)  # broker 2 leaves the ISR; [0, 1] commits up to 10
        await sim.dynamics.set_replication(1, records_per_s=0)
        await sim.dynamics.set_log_end_offset("t", 0, 0, 20)  # the leader's run is now [0, 20)
        await sim.dynamics.advance(1500)  # broker 1 (at the high watermark) leaves and rejoins: no commits
        p = sim.p("t")
        assert (p.leo, p.high_watermark) == ([20, 10, 5], 10)
        assert [(b.base_offset, b.last_offset) for b in data.log_of(p, 0).batches()] == [(0, 19)]
        await sim.fence(1, 0)  # no ISR member left: broker 2 (log end 5) is elected uncleanly
        assert (p.leader, p.high_watermark) == (2, 5)
        [lost] = data.lost_records()
        assert (lost.first_offset, lost.last_offset, lost.acks) == (5, 9, -1)
        assert lost.cause.startswith("unclean election: leader 2")
    finally:
        await sim.close()


async def test_an_acks_all_wait_through_an_isr_below_the_minimum_succeeds_once_the_isr_covers_it() -> None:
    """A follower's broker is fenced while an acks=all batch waits: the ISR falls below
    min.insync.replicas and the high watermark stays; the broker comes back, catches up and rejoins, and
    the wait ends NONE in the step that moves the high watermark past the batch, the ISR at the minimum
    again. Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND (the ISR found below the minimum when the high
    watermark already covers the batch: a race between two threads) is never the answer
    (docs/fidelity.md)."""
    sim, data = await _sim(**{"min.insync.replicas": "3"})
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.set_replication(2, records_per_s=0)
        waiting = _produce(sim, data, 2)
        await sim.fence(2)
        p = sim.p("t")
        assert (p.isr, p.high_watermark) == ([0, 1], 0)
        assert waiting.replicated is not None and not waiting.replicated.done()
        await sim.restart(2)
        await sim.dynamics.set_replication(2, records_per_s=None)
        for _ in range(100):
            if waiting.replicated.done():
                break
            await sim.dynamics.advance(100)
        assert waiting.replicated.result() is ErrorCode.NONE
        assert (sorted(p.isr), p.high_watermark) == ([0, 1, 2], 2)
    finally:
        await sim.close()


async def test_records_lost_by_a_last_known_leader_election_are_labelled_with_it() -> None:
    """With eligible leader replicas on, a partition whose every replica crashed elects its last known
    leader when it comes back (Kafka's balanced recovery, an unclean election). Its log is trusted as it
    is: a crash that took its log's tail (what it had not flushed; cut by hand here) loses the committed
    records there, reported with the election that took them."""
    sim, data = await _sim(brokers=(0, 1), **{"simulator.eligible.leader.replicas.version": "1"})
    try:
        sim.topic("t", [[0, 1]])
        _produce(sim, data, 3)  # 0-2
        _produce(sim, data, 2)  # 3-4
        await sim.dynamics.advance(100)
        p = sim.p("t")
        assert (p.isr, p.high_watermark, p.leo) == ([0, 1], 5, [5, 5])
        await sim.fence(1, 0)  # 1, then 0: leaderless, and 0, its last leader, is remembered
        assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, [], [0], [0])
        await sim.dynamics.set_log_end_offset("t", 0, 0, 3)  # the crash took 0's records from offset 3
        seq = sim.cluster.events.last_seq
        await sim.restart(0)  # back from a crash it leaves the ELR; unfenced, elected as the last leader
        election = [e for e in sim.cluster.events.since(seq) if e.change("leader")][0]
        assert "unclean election of the last known leader 0" in election.cause
        assert (p.leader, p.isr, p.high_watermark) == (0, [0], 3)
        cause = "unclean election of the last known leader: leader 0 elected with epoch 2"
        assert data.lost_records() == [LostRecords("t", 0, 3, 4, 0, -1, -1, cause)]
    finally:
        await sim.close()
