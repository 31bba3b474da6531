"""librdkafka (confluent-kafka) consumers with ``group.protocol=consumer`` (KIP-848) against the simulator:
the coordinator assigns with the ``uniform`` assignor, members reconcile by the heartbeat (revocation
before assignment), a second consumer joining takes half the partitions from the first's committed
offsets, the coordinator's broker crashes and the group goes on from the new coordinator, and a classic
member (``group.protocol=classic``) shares a group with a consumer member (the group is upgraded from
classic and downgraded back when the last consumer member leaves).

Each member reads in a thread of its own and commits synchronously after each step
(:mod:`tests.clients.group_members`); an acks=all producer feeds the topic. What the group read is
checked against what the producer was told: every acknowledged record read, none read twice across a
clean rebalance, none that a successful commit covered read again after the crash.

The server runs on the real clock with KIP-848's timings shortened by its settings (a 500 ms heartbeat
interval, a 6 s session) so that the tests take seconds: the group configs' broker defaults
``group.consumer.heartbeat.interval.ms`` and ``group.consumer.session.timeout.ms`` are what Kafka
tunes the same way.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer

from controller.embedded import ServerThread
from tests.clients.group_members import STEP_RECORDS, TIMEOUT_S, Member, Read
from tests.clients.test_groups_confluent_kafka import create
from tests.clients.test_groups_coordinator_crash import committed_read_twice
from tests.clients.test_groups_mixed_clients import PARTITIONS, Feed, read_by_all
from tests.support.groups import BROKERS, coordinator_of, disjoint_and_complete, wait_for

CLIENT = "confluent-kafka, group.protocol=consumer"
TIMEOUT = 40.0
HALF = 300
PROPERTIES = {
    "group.initial.rebalance.delay.ms": 0,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.session.timeout.ms": 6000,
}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=BROKERS, seed=7, properties=PROPERTIES) as started:
        yield started


class NewProtocolMember(Member):
    """A librdkafka consumer of the consumer group protocol (``group.protocol=consumer``) or, with
    ``protocol="classic"``, of the classic one. Its rebalance callback makes librdkafka wait for the
    application's next ``consume()`` before it gives partitions up, so a step's commit precedes the
    handover."""

    label = "confluent-kafka"

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        name: str,
        protocol: str = "consumer",
        tolerant: bool = False,
    ) -> None:
        super().__init__(name, tolerant)
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "socket.timeout.ms": TIMEOUT_S * 1000,
            "log_level": 0,
        }
        if protocol == "consumer":
            config["group.remote.assignor"] = "uniform"
        else:
            config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
        self.consumer = Consumer(config)
        self.revoked: list[set[int]] = []
        self.consumer.subscribe(
            [topic], on_revoke=lambda _, partitions: self.revoked.append({p.partition for p in partitions})
        )

    def _read(self) -> list[Read]:
        return [
            (m.partition(), m.offset(), m.value())
            for m in self.consumer.consume(STEP_RECORDS, 0.05)
            if m.error() is None
        ]

    def _commit(self) -> None:
        done = self.consumer.commit(asynchronous=False)
        if done is None or any(tp.error is not None for tp in done):
            raise RuntimeError(f"commit failed: {done}")

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def _close(self) -> None:
        self.consumer.close()


def until(members: list[Member], condition: Any, timeout: float = TIMEOUT) -> None:
    def check() -> bool:
        for m in members:
            m.check()
        return bool(condition())

    wait_for(check, timeout)


def read_everything(feed: Feed, members: list[Member]) -> None:
    until(members, lambda: {(p, o) for p, o, _ in read_by_all(members)} >= set(feed.acked))


def test_two_consumers_share_a_topic_by_the_uniform_assignor_and_read_nothing_twice(
    server: ServerThread,
) -> None:
    create_topic(server, "kip848-orders")
    feed = Feed(server, "kip848-orders")
    first = NewProtocolMember(server.bootstrap, "kip848-shop", "kip848-orders", "c1").run()
    members: list[Member] = [first]
    try:
        feed.produce(HALF)
        until(members, lambda: first.partitions == set(range(PARTITIONS)))
        state = server.group_state("kip848-shop")
        assert state is not None and state["type"] == "consumer" and state["assignor"] == "uniform"
        second = NewProtocolMember(server.bootstrap, "kip848-shop", "kip848-orders", "c2").run()
        members.append(second)
        feed.produce(HALF)
        until(members, lambda: disjoint_and_complete([m.partitions for m in members], PARTITIONS))
        read_everything(feed, members)
        # Uniform: three partitions each; the first kept three of its six (stickiness), revoked first.
        assert [len(m.partitions) for m in members] == [3, 3]
        assert first.revoked and set.union(*first.revoked) == set(second.partitions)
        reads = Counter((p, o) for p, o, _ in read_by_all(members))
        assert [key for key, n in reads.items() if n > 1] == []
        assert {(p, o): v for p, o, v in read_by_all(members)} == feed.acked
        state = server.group_state("kip848-shop")
        assert state is not None and state["state"] == "Stable" and state["group_epoch"] == 2
        assert {m["member_epoch"] for m in state["members"].values()} == {2}
    finally:
        for m in members:
            m.close()


def test_the_group_goes_on_when_the_coordinators_broker_crashes(server: ServerThread) -> None:
    group, topic = "kip848-crash", "kip848-crash-feed"
    create_topic(server, topic)
    feed = Feed(server, topic)
    members: list[Member] = [
        NewProtocolMember(server.bootstrap, group, topic, f"x{i}", tolerant=True).run() for i in range(2)
    ]
    crashed = None
    try:
        feed.produce(HALF)
        until(members, lambda: disjoint_and_complete([m.partitions for m in members], PARTITIONS))
        read_everything(feed, members)
        before = server.group_state(group)
        assert before is not None
        crashed = coordinator_of(server, group)
        started = time.monotonic()
        server.stop_broker(crashed, "crash")
        feed.produce(HALF)
        read_everything(feed, members)
        resumed = time.monotonic() - started
        print(f"\n{CLIENT}: the group read again {resumed:.1f} s after its coordinator's broker crashed")
        after = server.group_state(group)
        assert after is not None and after["coordinator"] != crashed
        assert len(after["members"]) == 2 and after["type"] == "consumer"
        got = read_by_all(members)
        assert {(p, o): v for p, o, v in got} == feed.acked and len(feed.acked) == 2 * HALF
        # No record a successful commit covered was read again; records read after the last successful
        # commit may be (at least once).
        assert committed_read_twice(members) == []

        # Every commit a client was told succeeded is kept: once the members have committed all they read,
        # what the group has committed is each partition's last answered commit.
        def answered() -> dict[int, int]:
            last: dict[int, int] = {}
            for m in members:
                for _, kind, p, o in list(m.events):
                    if kind == "commit":
                        last[p] = max(last.get(p, 0), o)
            return last

        until(members, lambda: answered() == {p: 2 * HALF // PARTITIONS for p in range(PARTITIONS)})
        assert server.committed_offsets(group) == {(topic, p): o for p, o in answered().items()}
    finally:
        for m in members:
            m.close()
        if crashed is not None:
            server.start_broker(crashed)


def test_a_classic_member_and_a_consumer_member_share_one_group(server: ServerThread) -> None:
    group, topic = "kip848-mixed", "kip848-mixed-feed"
    create_topic(server, topic)
    feed = Feed(server, topic)
    classic = NewProtocolMember(server.bootstrap, group, topic, "classic", protocol="classic").run()
    members: list[Member] = [classic]
    try:
        feed.produce(HALF)
        until(members, lambda: classic.partitions == set(range(PARTITIONS)))
        state = server.group_state(group)
        assert state is not None and "type" not in state  # a classic group
        modern = NewProtocolMember(server.bootstrap, group, topic, "consumer").run()
        members.append(modern)
        until(members, lambda: disjoint_and_complete([m.partitions for m in members], PARTITIONS))
        state = server.group_state(group)
        assert state is not None and state["type"] == "consumer"  # upgraded
        kinds = {m["client_id"]: m["protocol"] for m in state["members"].values()}
        assert kinds == {"classic": "classic", "consumer": "consumer"}
        feed.produce(HALF)
        read_everything(feed, members)
        members.remove(modern)
        modern.close()
        until(members, lambda: classic.partitions == set(range(PARTITIONS)))
        state = server.group_state(group)
        assert state is not None and "type" not in state and state["state"] == "Stable"  # downgraded
        feed.produce(HALF)
        everyone: list[Member] = [classic, modern]
        read_everything(feed, everyone)
        reads = Counter((p, o) for p, o, _ in read_by_all(everyone))
        assert [key for key, n in reads.items() if n > 1] == []
        assert {(p, o): v for p, o, v in read_by_all(everyone)} == feed.acked
    finally:
        for m in members:
            m.close()


def create_topic(server: ServerThread, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    create(AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000}), topic, PARTITIONS)
