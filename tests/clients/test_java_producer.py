"""Kafka's Java producer (kafka-clients, the pinned 4.x release), idempotent with acks=all, through the
crash of a partition leader: every record it was told is written is read back by a Java consumer, at the
partition and offset it was acknowledged at, once."""

from __future__ import annotations

from collections import Counter

from harness.java_clients import JavaProgram
from tests.clients.java_support import java_cluster

RECORDS = 3_000
TOPIC = "payments"


def test_every_acknowledged_record_is_read_back_after_a_leader_crash() -> None:
    with java_cluster() as server:
        with JavaProgram("ProducerFailover", [server.bootstrap, TOPIC, str(RECORDS)]) as program:
            program.expect("third", timeout=120)
            before = server.partition_state(TOPIC, 0)
            leader = before.leader
            server.stop_broker(leader, "crash")
            server.wait_until(lambda: server.partition_state(TOPIC, 0).leader not in (leader, -1), timeout=60)
            moved_at = len(program.events)  # the crashed broker acknowledges nothing after this
            program.expect("sent", timeout=180)
            done = program.expect("done", timeout=120)
            program.finish(timeout=30)
        after = server.partition_state(TOPIC, 0)
        lost = server.lost_records()

    acked = {(e["partition"], e["offset"]): f"value-{e['i']}" for e in program.of("ack")}
    read = [(e["partition"], e["offset"], e["value"]) for e in program.of("read")]
    assert program.of("record failed") == []
    assert len(acked) == RECORDS  # every record acknowledged, each at its own offset
    assert {(p, o): v for p, o, v in read} == acked  # every one read back where it was acknowledged
    values = Counter(v for _, _, v in read)
    assert [v for v, n in values.items() if n > 1] == []  # none written twice (idempotence)
    assert sum(done["end"].values()) == RECORDS
    assert after.leader != leader and leader not in after.isr  # the leader did move
    assert after.leader_epoch > before.leader_epoch
    # Records of partition 0 were still being acknowledged after its leader moved: by the new leader.
    assert [e for e in program.events[moved_at:] if e["event"] == "ack" and e["partition"] == 0]
    assert lost == []
