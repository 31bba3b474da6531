"""aiokafka's idempotent producer (acks=all) and a consumer that assigns partitions itself (no group): what
is read equals exactly what was acknowledged, in order."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.clients.data_path_support import (
    BULK,
    BULK_REPLICAS,
    PARTITIONS,
    bulk_record,
    by_partition,
    codecs_stored,
    expected_by_partition,
    new_topic,
    readable,
    start_cluster,
)

CLIENT = "aiokafka"


@pytest.fixture(scope="module")
def cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    with start_cluster() as server:
        yield server
        wire_log.assert_clean(server)


async def _round_trip(bootstrap: str, topic: str) -> tuple[list, list]:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", request_timeout_ms=5000
    )
    await producer.start()
    try:
        sent = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2) for i in range(100)]
        metadata = await asyncio.gather(*[await s for s in sent])
        acknowledged = sorted((m.partition, m.offset, b"k%d" % i, b"v%d" % i) for i, m in enumerate(metadata))
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=5000
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        await consumer.seek_to_beginning()
        got: list = []
        async with asyncio.timeout(20):
            while len(got) < 100:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    got += [(r.partition, r.offset, r.key, r.value) for r in records]
    finally:
        await consumer.stop()
    return acknowledged, got


def test_what_is_read_is_exactly_what_was_acknowledged_in_order(cluster: ServerThread) -> None:
    topic = new_topic(cluster, [[0, 1, 2], [2, 0, 1]])
    acknowledged, got = asyncio.run(_round_trip(cluster.bootstrap, topic))
    assert [(p, o) for p, o, _, _ in acknowledged] == [(p, o) for p in range(2) for o in range(50)]
    assert sorted(got) == acknowledged
    for partition in range(2):
        offsets = [o for p, o, _, _ in got if p == partition]
        assert offsets == sorted(offsets)


async def _through_a_crash(server: ServerThread, topic: str) -> list[tuple[int, bytes]]:
    producer = AIOKafkaProducer(
        bootstrap_servers=server.bootstrap, enable_idempotence=True, acks="all", request_timeout_ms=5000
    )
    await producer.start()
    acknowledged: list[tuple[int, bytes]] = []
    try:
        for i in range(100):
            if i == 40:
                await asyncio.to_thread(server.stop_broker, 0, "crash")
            metadata = await (await producer.send(topic, value=b"v%d" % i))
            acknowledged.append((metadata.offset, b"v%d" % i))
    finally:
        await producer.stop()
    return acknowledged


def test_a_leader_crash_with_a_clean_election_loses_nothing_acknowledged(cluster: ServerThread) -> None:
    topic = new_topic(cluster, [[0, 1, 2]])
    acknowledged = asyncio.run(_through_a_crash(cluster, topic))
    state = cluster.partition_state(topic, 0)
    assert state.leader in (1, 2) and state.leader_epoch == 1
    read = [(offset, value) for offset, _, value in readable(cluster, topic, 0)]
    assert read == acknowledged  # every acknowledged record, once, in order
    assert [value for _, value in read] == [b"v%d" % i for i in range(100)]
    assert cluster.lost_records() == []
    cluster.start_broker(0)


async def _bulk_round_trip(bootstrap: str, topic: str, codec: str) -> list:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        compression_type=codec,
        linger_ms=5,
        request_timeout_ms=5000,
    )
    await producer.start()
    try:
        sent = []
        for i in range(BULK):
            partition, key, value, headers = bulk_record(i)
            sent.append(
                await producer.send(topic, key=key, value=value, headers=headers, partition=partition)
            )
        async with asyncio.timeout(30):
            await asyncio.gather(*sent)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=5000
    )
    await consumer.start()
    got: list = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        await consumer.seek_to_beginning()
        async with asyncio.timeout(30):
            while len(got) < BULK:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    got += [(r.partition, r.offset, r.key, r.value, r.headers) for r in records]
    finally:
        await consumer.stop()
    return got


@pytest.mark.parametrize("codec", ["gzip", "snappy"])
def test_ten_thousand_keyed_records_with_headers_compressed_come_back_identical(
    cluster: ServerThread, codec: str
) -> None:
    topic = new_topic(cluster, BULK_REPLICAS)
    got = asyncio.run(_bulk_round_trip(cluster.bootstrap, topic, codec))
    assert codecs_stored(cluster, topic) == {codec}
    assert len(got) == BULK
    assert by_partition(got) == expected_by_partition()
