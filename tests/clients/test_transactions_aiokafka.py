"""aiokafka's transactions against the simulator: a consume-transform-produce loop (read_committed
consumer, transactional producer, the consumed offsets sent to each transaction) exactly once end to
end across the crash of the transaction coordinator's broker: every input record's output is read
exactly once by a read_committed consumer, and the group's committed offsets end at the inputs' end."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError, ProducerFenced

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.support.txn_clients import (
    TIMEOUT,
    coordinator_of,
    create,
    group_apart_from,
    read_committed,
    txn_cluster,
)

CLIENT = "aiokafka transactions"
INPUTS = 240
PARTITIONS = 3
TRANSACTIONAL_ID = "ctp-aiokafka"


@pytest.fixture
def server(wire_log: WireLog) -> Iterator[ServerThread]:
    with txn_cluster() as started:
        create(started, "in", PARTITIONS)
        create(started, "out", PARTITIONS)
        yield started
    wire_log.assert_clean(started)


async def feed(server: ServerThread) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap, acks="all", request_timeout_ms=10_000)
    await producer.start()
    try:
        for i in range(INPUTS):
            await producer.send("in", value=b"%d" % i, partition=i % PARTITIONS)
        await producer.flush()
    finally:
        await producer.stop()


class Loop:
    """The consume-transform-produce loop: one transaction per batch of records, the positions committed
    in it; an abortable failure aborts it and rewinds to the committed offsets (Kafka's EOS pattern)."""

    def __init__(self, server: ServerThread, group: str) -> None:
        self.server = server
        self.group = group
        self.processed = 0
        self.aborted = 0
        self.stopping = False

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(
            "in",
            bootstrap_servers=self.server.bootstrap,
            group_id=self.group,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=10_000,
            session_timeout_ms=10_000,
        )
        producer = AIOKafkaProducer(
            bootstrap_servers=self.server.bootstrap,
            transactional_id=TRANSACTIONAL_ID,
            transaction_timeout_ms=20_000,
            request_timeout_ms=10_000,
        )
        await consumer.start()
        await producer.start()
        try:
            while not self.stopping:
                batches = await consumer.getmany(timeout_ms=300, max_records=20)
                records = [r for rs in batches.values() for r in rs]
                if not records:
                    continue
                try:
                    async with producer.transaction():
                        for record in records:
                            await producer.send(
                                "out", value=b"out-" + record.value, partition=record.partition
                            )
                        positions = {
                            TopicPartition(tp.topic, tp.partition): rs[-1].offset + 1
                            for tp, rs in batches.items()
                        }
                        await producer.send_offsets_to_transaction(positions, self.group)
                    self.processed += len(records)
                except ProducerFenced:
                    raise
                except KafkaError:
                    self.aborted += 1
                    for tp in consumer.assignment():
                        committed = await consumer.committed(tp)
                        consumer.seek(tp, committed if committed is not None else 0)
        finally:
            await producer.stop()
            await stop_consumer(consumer)


async def stop_consumer(consumer: AIOKafkaConsumer) -> None:
    """``consumer.stop()``, less aiokafka's own CancelledError: its fetcher cancels the fetches in progress
    and awaits them without suppressing their cancellation (aio-libs/aiokafka#647), so a fetch to the
    crashed broker that is not fenced yet, sleeping its 100 ms retry back-off after NodeNotReadyError,
    makes ``stop()`` raise CancelledError though nobody cancelled this task (replayed alone: a consumer
    stopped while its partition's leader is crashed and not yet fenced raises it 2 times in 3). A
    cancellation of this task itself is raised on."""
    try:
        await consumer.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise


async def until(condition, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g}s")
        await asyncio.sleep(0.05)


async def test_consume_transform_produce_is_exactly_once_across_the_coordinators_crash(
    server: ServerThread,
) -> None:
    await feed(server)
    group = group_apart_from(server, TRANSACTIONAL_ID, "ctp-aiokafka")
    loop = Loop(server, group)
    task = asyncio.ensure_future(loop.run())
    try:
        await until(lambda: loop.processed >= INPUTS // 3 or task.done(), TIMEOUT)
        old = coordinator_of(server, TRANSACTIONAL_ID)
        await asyncio.to_thread(server.stop_broker, old, "crash")
        await until(lambda: coordinator_of(server, TRANSACTIONAL_ID) not in (old, -1) or task.done(), TIMEOUT)
        ends = {("in", p): INPUTS // PARTITIONS for p in range(PARTITIONS)}
        await until(lambda: server.committed_offsets(group) == ends or task.done(), 60)
    finally:
        loop.stopping = True
        await asyncio.wait_for(task, TIMEOUT)
    outputs = Counter(
        value for _, value in await asyncio.to_thread(read_committed, server, "out", PARTITIONS, INPUTS)
    )
    assert outputs == Counter(b"out-%d" % i for i in range(INPUTS))
    assert server.transactions()[TRANSACTIONAL_ID]["coordinator"] != old
