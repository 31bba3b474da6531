"""aiokafka consumers in a classic group: subscribe, disjoint assignments covering every partition, explicit
commits, a consumer leaving, the coordinator's broker crashing; and the admin API it has (list, describe,
list offsets; aiokafka 0.14 has no group or offset deletion).

aiokafka's group coordinator runs in its own task from ``start()``; records are not consumed here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import OffsetAndMetadata

from controller.embedded import ServerThread
from tests.support.groups import coordinator_of, disjoint_and_complete, group_cluster

CLIENT = "aiokafka groups"
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with group_cluster() as started:
        yield started


def consumer(server: ServerThread, group: str, name: str, topic: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        topic,
        bootstrap_servers=server.bootstrap,
        group_id=group,
        client_id=name,
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        request_timeout_ms=7000,
    )


async def stop(c: AIOKafkaConsumer) -> None:
    await c.stop()


def assigned(c: AIOKafkaConsumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


async def until(condition, timeout: float = TIMEOUT) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g}s")
        await asyncio.sleep(0.02)


async def admin_for(server: ServerThread) -> AIOKafkaAdminClient:
    admin = AIOKafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=5000)
    await admin.start()
    return admin


async def test_subscribers_share_commit_take_over_and_are_administered(server: ServerThread) -> None:
    admin = await admin_for(server)
    consumers = [consumer(server, "shop", f"a{i}", "orders") for i in range(3)]
    try:
        await admin.create_topics([NewTopic("orders", 6, 3)])
        for c in consumers:
            await c.start()
        await until(lambda: disjoint_and_complete([assigned(c) for c in consumers], 6))
        first = consumers[0]
        mine = sorted(assigned(first))
        await first.commit({TopicPartition("orders", p): OffsetAndMetadata(300 + p, "") for p in mine})
        assert server.committed_offsets("shop") == {("orders", p): 300 + p for p in mine}
        assert [await first.committed(TopicPartition("orders", p)) for p in mine] == [300 + p for p in mine]
        assert ("shop", "consumer") in await admin.list_consumer_groups()
        [described] = await admin.describe_consumer_groups(["shop"])
        [group] = described.groups
        assert (group[0], group[1], group[2], group[3]) == (0, "shop", "Stable", "consumer")
        assert sorted(m[1] for m in group[5]) == ["a0", "a1", "a2"]
        offsets = await admin.list_consumer_group_offsets("shop")
        assert {tp.partition: m.offset for tp, m in offsets.items()} == {p: 300 + p for p in mine}
        await stop(consumers.pop())
        await until(lambda: disjoint_and_complete([assigned(c) for c in consumers], 6))
        state = server.group_state("shop")
        assert state is not None and state["state"] == "Stable" and len(state["members"]) == 2
    finally:
        for c in consumers:
            await stop(c)
        await admin.close()


async def test_committed_offsets_survive_the_coordinators_broker_crashing(server: ServerThread) -> None:
    admin = await admin_for(server)
    c = consumer(server, "billing", "b0", "payments")
    old = -1
    try:
        await admin.create_topics([NewTopic("payments", 3, 3)])
        await c.start()
        await until(lambda: assigned(c) == {0, 1, 2})
        await c.commit({TopicPartition("payments", p): OffsetAndMetadata(50 + p, "") for p in range(3)})
        old = coordinator_of(server, "billing")
        server.stop_broker(old, "crash")
        await until(lambda: coordinator_of(server, "billing") not in (old, -1))
        # While the new coordinator loads, OffsetFetch v2/v3 carries COORDINATOR_LOAD_IN_PROGRESS as the
        # group's error (Kafka's OffsetFetchRequest.getErrorResponse); aiokafka reads only partition errors
        # and returns None then, so the test asks until the load is over.
        seen: list[int | None] = []
        deadline = time.monotonic() + TIMEOUT
        while seen != [50, 51, 52] and time.monotonic() < deadline:
            seen = [await c.committed(TopicPartition("payments", p)) for p in range(3)]
            await asyncio.sleep(0.05)
        assert seen == [50, 51, 52]
        await c.commit({TopicPartition("payments", 0): OffsetAndMetadata(60, "")})
        assert server.committed_offsets("billing") == {
            ("payments", 0): 60,
            ("payments", 1): 51,
            ("payments", 2): 52,
        }
        state = server.group_state("billing")
        assert state is not None and state["coordinator"] == coordinator_of(server, "billing") != old
        assert server.lost_commits() == []
    finally:
        await stop(c)
        await admin.close()
        if old != -1:
            server.start_broker(old)
