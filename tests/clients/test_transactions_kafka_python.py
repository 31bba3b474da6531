"""kafka-python's transactions against the simulator: a consume-transform-produce loop (read_committed
consumer, transactional producer, the consumed offsets sent to each transaction) exactly once end to
end across the crash of the transaction coordinator's broker: every input record's output is read
exactly once by a read_committed consumer, and the group's committed offsets end at the inputs' end.

The group's coordinator is kept on another broker than the transaction's: when the group's coordinator
dies mid-transaction, kafka-python 3.0.12 drops the pending TxnOffsetCommit (``Sender
._maybe_send_pending_request`` keeps the dead node as its target when ``await_ready`` raises, so the
request is never retried) and ``send_offsets_to_transaction`` waits forever; with Kafka the same happens
(a dead broker refuses connections just the same)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, ProducerFencedError
from kafka.structs import OffsetAndMetadata

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.support.groups import wait_for
from tests.support.txn_clients import (
    TIMEOUT,
    coordinator_of,
    create,
    group_apart_from,
    read_committed,
    txn_cluster,
)

CLIENT = "kafka-python transactions"
INPUTS = 240
PARTITIONS = 3
TRANSACTIONAL_ID = "ctp-kafka-python"


@pytest.fixture
def server(wire_log: WireLog) -> Iterator[ServerThread]:
    with txn_cluster() as started:
        create(started, "in", PARTITIONS)
        create(started, "out", PARTITIONS)
        feed = KafkaProducer(bootstrap_servers=started.bootstrap, acks="all", request_timeout_ms=10_000)
        for i in range(INPUTS):
            feed.send("in", value=b"%d" % i, partition=i % PARTITIONS)
        feed.flush(TIMEOUT)
        feed.close(5)
        yield started
    wire_log.assert_clean(started)


class Loop:
    """The consume-transform-produce loop in a thread: one transaction per poll, the positions committed
    in it; an abortable failure aborts it and rewinds to the committed offsets (Kafka's EOS pattern)."""

    def __init__(self, server: ServerThread, group: str) -> None:
        self.server = server
        self.group = group
        self.processed = 0
        self.aborted = 0
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ctp", daemon=True)

    def start(self) -> Loop:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT)

    def _run(self) -> None:
        consumer = KafkaConsumer(
            "in",
            bootstrap_servers=self.server.bootstrap,
            group_id=self.group,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=10_000,
            session_timeout_ms=10_000,
        )
        producer = KafkaProducer(
            bootstrap_servers=self.server.bootstrap,
            transactional_id=TRANSACTIONAL_ID,
            transaction_timeout_ms=20_000,
            request_timeout_ms=10_000,
            max_block_ms=20_000,
        )
        try:
            producer.init_transactions()
            while not self._stop.is_set():
                batches = consumer.poll(timeout_ms=300, max_records=20)
                records = [r for rs in batches.values() for r in rs]
                if not records:
                    continue
                producer.begin_transaction()
                try:
                    for record in records:
                        producer.send("out", value=b"out-" + record.value, partition=record.partition)
                    positions = {
                        TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(rs[-1].offset + 1, "", -1)
                        for tp, rs in batches.items()
                    }
                    producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                    producer.commit_transaction()
                    self.processed += len(records)
                except ProducerFencedError:
                    raise
                except KafkaError:
                    self.aborted += 1
                    producer.abort_transaction()
                    for tp in consumer.assignment():
                        committed = consumer.committed(tp)
                        consumer.seek(tp, committed if committed is not None else 0)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.failure = exc
        finally:
            producer.close(5)
            consumer.close()


def test_consume_transform_produce_is_exactly_once_across_the_coordinators_crash(
    server: ServerThread,
) -> None:
    group = group_apart_from(server, TRANSACTIONAL_ID, "ctp-kafka-python")
    loop = Loop(server, group).start()
    try:
        wait_for(lambda: loop.processed >= INPUTS // 3 or loop.failure is not None, TIMEOUT)
        old = coordinator_of(server, TRANSACTIONAL_ID)
        server.stop_broker(old, "crash")
        wait_for(lambda: coordinator_of(server, TRANSACTIONAL_ID) not in (old, -1), TIMEOUT)
        ends = {("in", p): INPUTS // PARTITIONS for p in range(PARTITIONS)}
        wait_for(lambda: server.committed_offsets(group) == ends or loop.failure is not None, 60)
    finally:
        loop.stop()
    assert loop.failure is None, repr(loop.failure)
    outputs = Counter(value for _, value in read_committed(server, "out", PARTITIONS, expected=INPUTS))
    assert outputs == Counter(b"out-%d" % i for i in range(INPUTS))
    assert server.transactions()[TRANSACTIONAL_ID]["coordinator"] != old
