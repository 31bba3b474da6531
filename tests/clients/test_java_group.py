"""A consumer group of Kafka's Java consumers (kafka-clients, the pinned 4.x release), of the classic
protocol and of the consumer group protocol (KIP-848, ``group.protocol=consumer``), through the crash of its
coordinator: the members find the new coordinator, the group goes on from its committed
offsets, every record is read, the committed offsets reach the end of every partition, and no record a
successful commit covered is read again (records read after the last successful commit may be: at least
once)."""

from __future__ import annotations

import pytest

from harness.java_clients import JavaProgram
from tests.clients.java_support import java_cluster
from tests.support.groups import coordinator_of

RECORDS = 1_200
MEMBERS = 3
TOPIC, GROUP = "feed", "java-readers"


def read_again_after_commit(events: list[dict]) -> list[tuple[int, int]]:
    """(partition, offset) read after a successful commit had covered it (events in the order emitted)."""
    covered: dict[int, int] = {}
    again = []
    for e in events:
        if e["event"] == "committed":
            for p, offset in e["offsets"].items():
                covered[int(p)] = max(covered.get(int(p), 0), offset)
        elif e["event"] == "read" and e["offset"] < covered.get(e["partition"], 0):
            again.append((e["partition"], e["offset"]))
    return again


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_group_goes_on_through_a_coordinator_crash(protocol: str) -> None:
    with java_cluster() as server:
        with JavaProgram(
            "GroupFailover", [server.bootstrap, TOPIC, GROUP, str(RECORDS), str(MEMBERS), protocol]
        ) as program:
            produced = program.expect("produced", timeout=120)
            program.expect("third", timeout=120)
            state = server.group_state(GROUP)
            assert state is not None and state.get("type", "classic") == protocol
            coordinator = coordinator_of(server, GROUP)
            server.stop_broker(coordinator, "crash")
            final = program.expect("final", timeout=240)
            program.finish(timeout=60)
        moved_to = coordinator_of(server, GROUP)
        committed = server.committed_offsets(GROUP)

    end = {int(p): o for p, o in produced["end"].items()}
    assert sum(end.values()) == RECORDS and program.of("record failed") == []
    read = {(e["partition"], e["offset"]) for e in program.of("read")}
    assert read == {(p, o) for p, last in end.items() for o in range(last)}  # every record read
    assert {int(p): o for p, o in final["committed"].items()} == end  # as the Admin client lists them
    assert committed == {(TOPIC, p): o for p, o in end.items()}  # as the coordinator holds them
    assert moved_to != coordinator
    assert read_again_after_commit(program.events) == []
    # The group did read through the crash: members committed after the coordinator moved.
    crash = next(i for i, e in enumerate(program.events) if e["event"] == "third")
    assert [e for e in program.events[crash:] if e["event"] == "committed"]
