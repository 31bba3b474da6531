"""A share group of Kafka's Java share consumers (``KafkaShareConsumer`` of kafka-clients, the pinned 4.x
release, explicit acknowledgement) through the crash of the broker of a share coordinator: the members
accept, release and reject, commit their acknowledgements with commitSync, and go on when the share
coordinator of the first partition's share state moves. Every record ends accepted or rejected; a record
released at its first delivery comes back with delivery count 2; a rejected one is archived with its
cause; no record whose acceptance was committed without error is delivered again."""

from __future__ import annotations

from harness.java_clients import JavaProgram
from tests.clients.java_support import java_cluster

RECORDS = 300
MEMBERS = 2
TOPIC, GROUP = "jobs", "java-sharers"


def delivered_after_accepted(events: list[dict]) -> list[tuple[int, int]]:
    """(partition, offset) delivered after a commit without error had accepted it (in emitted order)."""
    accepted: set[tuple[int, int]] = set()
    again = []
    for e in events:
        if e["event"] == "committed":
            accepted |= {(p, o) for p, o, kind in e["ok"] if kind == "accept"}
        elif e["event"] == "read" and (e["partition"], e["offset"]) in accepted:
            again.append((e["partition"], e["offset"]))
    return again


def test_java_share_consumers_go_on_through_a_share_coordinator_crash() -> None:
    with java_cluster() as server:
        controller = server.server.controller
        with JavaProgram(
            "ShareFailover", [server.bootstrap, TOPIC, GROUP, str(RECORDS), str(MEMBERS)]
        ) as program:
            produced = program.expect("produced", timeout=120)
            program.expect("third", timeout=120)

            def share_coordinator() -> int:
                from controller.share.coordinator import share_key

                key = share_key(GROUP, controller.cluster.topics[TOPIC].topic_id, 0)
                return controller.share.coordinator.coordinator_of(key)[1]

            crashed = server.call(share_coordinator)
            server.stop_broker(crashed, "crash")
            program.send("crashed")
            final = program.expect("final", timeout=240)
            program.finish(timeout=60)
        moved_to = server.call(share_coordinator)
        archived = server.call(lambda: list(controller.share.archived))
        lost = server.call(lambda: list(controller.share.lost_acknowledgements))

    end = {int(p): o for p, o in produced["end"].items()}
    assert sum(end.values()) == RECORDS and program.of("record failed") == []
    assert final["done"] == RECORDS
    reads = program.of("read")
    assert {(e["partition"], e["offset"]) for e in reads} == {
        (p, o) for p, last in end.items() for o in range(last)
    }
    committed = [(p, o, kind) for e in program.of("committed") for p, o, kind in e["ok"]]
    accepted = {(p, o) for p, o, kind in committed if kind == "accept"}
    rejected = {(p, o) for p, o, kind in committed if kind == "reject"}
    assert len(accepted | rejected) == RECORDS and not accepted & rejected
    assert lost == [] and delivered_after_accepted(program.events) == []
    # Released at the first delivery: delivered again, counted.
    released = {(e["partition"], e["offset"]) for e in reads if e["type"] == "release"}
    assert released and all(
        any(r["partition"] == p and r["offset"] == o and r["count"] >= 2 for r in reads) for p, o in released
    )
    # Rejected: archived with the cause.
    assert rejected and all(
        any(a.group == GROUP and a.partition == p and a.first_offset <= o <= a.last_offset
            and a.cause == "rejected by its member" for a in archived)
        for p, o in rejected
    )  # fmt: skip
    assert moved_to != crashed
    crash = next(i for i, e in enumerate(program.events) if e["event"] == "third")
    assert [e for e in program.events[crash:] if e["event"] == "committed" and e["ok"]]
