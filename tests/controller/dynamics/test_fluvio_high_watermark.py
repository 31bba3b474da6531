"""Fluvio's high watermark, as its leader SPU computes it (``docs/election-policies.md`` has the rule and
its sources): the lowest log end offset over every replica of the assignment, an offline one too, so
it never moves with fewer replicas than the replication factor whatever the live replica set holds; no
minimum of in-sync replicas (Fluvio's leader reads none); a promoted follower keeps its own high
watermark, never above its log end.

The failure of issue 27: an SPU left the live replica set, the high watermark passed an offset only the
leader held, the leader went offline and the SPU that came back was elected without it: the high
watermark stayed above every replica's log end forever, followers never rejoined and acks=all was
refused for good."""

from __future__ import annotations

from controller.data_path import DataPath, LostRecords
from controller.records.checks import ClientBatch, check_client_batch
from protocol.codes import ErrorCode
from tests.controller.records.batches import build
from tests.support.dynamics import make_sim


async def _sim():  # type: ignore[no-untyped-def]
    sim = await make_sim([1, 2, 3], policy="fluvio")
    data = DataPath(sim.dynamics.config, sim.cluster, sim.clock, sim.dynamics)
    return sim, data


def _produce(sim, data, count: int, acks: int):  # type: ignore[no-untyped-def]
    settings = data.topic_settings("t")
    batch = check_client_batch(build(count), 9, settings.limits, data.now_ms(), "t", 0)
    assert isinstance(batch, ClientBatch)
    appended = data.append(sim.p("t"), batch, settings, acks)
    assert not isinstance(appended, type(None))
    return appended


async def test_an_offline_replica_holds_the_high_watermark_and_the_spu_elected_after_keeps_it_below_its_log() -> (
    None
):
    sim, data = await _sim()
    try:
        sim.topic("t", [[2, 3]], min_insync_replicas="2")
        _produce(sim, data, 2, acks=-1)
        await sim.dynamics.advance(100)
        p = sim.p("t")
        assert (p.leo, p.high_watermark) == ([2, 2], 2)
        await sim.crash(3)  # offline at once (its connection to the SC dropped): the LRS is [2]
        assert (p.isr, p.leader) == ([2], 2)
        # No minimum of in-sync replicas under Fluvio: acks=all is appended, and waits for every replica.
        assert data.topic_settings("t").min_insync_replicas == 1
        acks_1 = _produce(sim, data, 1, acks=1)  # offset 2
        acks_all = _produce(sim, data, 1, acks=-1)  # offset 3
        await sim.dynamics.advance(1_000)
        assert (p.leo, p.high_watermark) == ([4, 2], 2)  # broker 3 lacks 2-3: the high watermark stays
        assert acks_all.replicated is not None and not acks_all.replicated.done()
        await sim.crash(2)  # the leader goes offline: no live candidate, the partition is Offline
        assert (p.leader, p.status) == (-1, "Offline")
        await sim.dynamics.start_broker(3)  # back: elected (lag 2 behind the last leader, below 4)
        assert (p.leader, p.status, p.high_watermark) == (3, "Online", 2)
        assert p.high_watermark <= p.leo[p.replicas.index(3)]
        assert acks_all.replicated.result() is ErrorCode.NOT_LEADER_OR_FOLLOWER  # never acknowledged
        assert acks_1.last_offset == 2
        assert data.lost_records() == [
            LostRecords("t", 0, 2, 2, 0, 1, -1, "fluvio election: leader 3 elected with epoch 2")
        ]
        await sim.dynamics.start_broker(2)  # back as a follower: truncated to the new leader's log
        await sim.dynamics.advance(1_000)
        assert (p.leo, sorted(p.isr), p.high_watermark) == ([2, 2], [2, 3], 2)
        after = _produce(sim, data, 1, acks=-1)  # acks=all is answered again
        await sim.dynamics.advance(100)
        assert after.replicated is not None and after.replicated.result() is ErrorCode.NONE
        assert (after.base_offset, p.leo, p.high_watermark) == (2, [3, 3], 3)
    finally:
        await sim.close()


async def test_the_high_watermark_waits_for_every_replica_not_only_the_live_replica_set() -> None:
    sim, data = await _sim()
    try:
        sim.topic("t", [[1, 2, 3]])
        await sim.crash(3)  # the LRS is [1, 2]
        appended = _produce(sim, data, 2, acks=-1)
        await sim.dynamics.advance(5_000)
        p = sim.p("t")
        assert (p.isr, p.leo, p.high_watermark) == ([1, 2], [2, 2, 0], 0)
        assert appended.replicated is not None and not appended.replicated.done()
        await sim.dynamics.start_broker(3)  # it copies, and the high watermark moves
        await sim.dynamics.advance(200)
        assert (p.leo, p.high_watermark) == ([2, 2, 2], 2)
        assert appended.replicated.result() is ErrorCode.NONE
    finally:
        await sim.close()
