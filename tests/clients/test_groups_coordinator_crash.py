"""The group coordinator's broker crashes while a group of confluent-kafka, kafka-python and aiokafka
consumers reads an acks=all feed and commits synchronously after processing. Each client finds the new
coordinator by itself and the group goes on from the committed offsets: no record a successful commit
covered is read twice; records read after the last successful commit may be read again (at least once).

The server runs on a virtual clock that a pump thread moves 50 ms every 100 ms of wall time (half
speed), so that broker fencing, the coordinator's load and the members' sessions are measured on the
cluster's clock. The time to resume is printed (``pytest -s``) in wall seconds and in clock ms, and the
clock's is checked against what the protocol allows: the broker is fenced after its session, the new
coordinator loads, then at worst a member's session ends and the group rebalances.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from controller.embedded import ServerThread
from controller.groups.durable import LOAD_MS
from tests.clients.group_members import MEMBERS, SESSION_TIMEOUT_MS, STEP_RECORDS, Member
from tests.clients.test_groups_confluent_kafka import create
from tests.clients.test_groups_mixed_clients import PARTITIONS, Feed, read_by_all, until
from tests.support.groups import BROKERS, coordinator_of, disjoint_and_complete
from tests.support.pump import Pump

CLIENT = "mixed group, coordinator crash"
#: Kafka's KRaft broker session: a crashed broker is fenced (its leaderships move) this long after its
#: last heartbeat, which comes every BROKER_HEARTBEAT_MS.
BROKER_SESSION_MS = 2000
BROKER_HEARTBEAT_MS = 500
PROPERTIES = {
    "group.initial.rebalance.delay.ms": 0,
    "broker.session.timeout.ms": BROKER_SESSION_MS,
    "broker.heartbeat.interval.ms": BROKER_HEARTBEAT_MS,
}
HALF = 300


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=BROKERS, seed=5, clock="virtual", properties=PROPERTIES) as started:
        pump = Pump(started)
        try:
            yield started
        finally:
            pump.stop()


def committed_read_twice(members: list[Member]) -> list[tuple[int, int]]:
    """(partition, offset) read again after a successful commit (by any member) had covered it."""
    events = sorted(e for m in members for e in m.events)
    covered: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    bad = []
    for _, kind, partition, offset in events:
        if kind == "commit":
            covered[partition] = max(covered.get(partition, 0), offset)
        elif (partition, offset) in seen and offset < covered.get(partition, 0):
            bad.append((partition, offset))
        else:
            seen.add((partition, offset))
    return bad


def test_each_client_finds_the_new_coordinator_and_the_group_resumes_from_its_commits(
    server: ServerThread,
) -> None:
    topic, group = "crash-feed", "crash-group"
    create(AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000}), topic, PARTITIONS)
    feed = Feed(server, topic)
    members: list[Member] = []
    old = -1
    try:
        for i, label in enumerate(MEMBERS):
            members.append(
                MEMBERS[label](server.bootstrap, group, topic, f"{label}-{i}", tolerant=True).run()
            )
        until(
            server,
            group,
            members,
            lambda: disjoint_and_complete([set(m.partitions) for m in members], PARTITIONS),
        )
        feed.produce(HALF)  # once every member has its partitions: each then has records to read
        until(server, group, members, lambda: all(len(m.read) >= STEP_RECORDS for m in members))
        state = server.group_state(group)
        assert state is not None and len(state["members"]) == 3
        old = state["coordinator"]
        assert old == coordinator_of(server, group)
        commits_before = {m.name: sum(1 for e in m.events if e[1] == "commit") for m in members}
        crashed_at, wall_start = server.now(), time.monotonic()
        server.stop_broker(old, "crash")
        producing = threading.Thread(target=feed.produce, args=(HALF,), name="feed", daemon=True)
        producing.start()
        resumed: dict[str, tuple[int, float]] = {}

        def every_member_committed_again() -> bool:
            for m in members:
                if (
                    m.name not in resumed
                    and sum(1 for e in m.events if e[1] == "commit") > commits_before[m.name]
                ):
                    resumed[m.name] = (server.now() - crashed_at, time.monotonic() - wall_start)
            return len(resumed) == len(members)

        until(server, group, members, every_member_committed_again)
        producing.join(30)
        assert not producing.is_alive()
        until(server, group, members, lambda: {(p, o) for p, o, _ in read_by_all(members)} >= set(feed.acked))
        for m in members:
            m.pause()
            m.check()
        new = coordinator_of(server, group)
        state = server.group_state(group)
        assert state is not None and state["coordinator"] == new != old
        for name, (clock_ms, wall_s) in sorted(resumed.items(), key=lambda kv: kv[1]):
            print(
                f"{name} committed again {clock_ms} clock ms ({wall_s:.2f} s wall) after the coordinator crashed"
            )
        # What the protocol allows: fenced after the broker session (plus the heartbeat in flight), the
        # new coordinator loads, then at worst a member's session ends and the group rebalances once
        # (every live member rejoins at its next heartbeat, within its session).
        bound = BROKER_SESSION_MS + BROKER_HEARTBEAT_MS + LOAD_MS + 2 * SESSION_TIMEOUT_MS
        assert max(ms for ms, _ in resumed.values()) <= bound
        got = read_by_all(members)
        assert {(p, o): v for p, o, v in got} == feed.acked and len(feed.acked) == 2 * HALF
        assert committed_read_twice(members) == []
        again = sorted(k for k, n in Counter((p, o) for p, o, _ in got).items() if n > 1)
        print(f"read again (after the last successful commit, allowed): {len(again)} records")
        # Every commit a client was told succeeded is kept: what the group has committed at the end is
        # the last answered commit of each partition. Commits the crashed coordinator had written but not
        # replicated were never answered (the clients saw their connection close, and retried them on
        # the new coordinator): lost_commits() lists them.
        answered: dict[int, int] = {}
        for m in members:
            for _, kind, p, o in m.events:
                if kind == "commit":
                    answered[p] = max(answered.get(p, 0), o)
        assert server.committed_offsets(group) == {(topic, p): o for p, o in answered.items()}
        assert answered == {p: 2 * HALF // PARTITIONS for p in range(PARTITIONS)}
        lost = server.lost_commits()
        assert all(c.group_id == group and c.topic == topic for c in lost), lost
        print(
            f"unanswered commits the crash lost: {len(lost)}; "
            f"commits the clients saw fail: {sum(len(m.failed_commits) for m in members)}"
        )
    finally:
        for m in members:
            m.close()
        if old != -1:
            server.start_broker(old)
