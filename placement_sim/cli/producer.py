"""The producer of ``placement-sim produce``: lines in, records out, as Kafka's console producer sends them.

Each record goes to ``--partition``, or where Kafka's built-in partitioner puts it
(:class:`protocol.partitioner.StickyPartitioner`: murmur2 of the key, a sticky partition for records
without one). Records wait in their partition's batch for at most ``linger`` seconds, or until the batch
holds ``batch_size`` bytes, then go to the partition's leader; one batch per partition is in flight at a
time, so a partition's records keep their order. With ``acks=all`` the producer is idempotent (as Kafka's
producers are by default): a batch sent again after a timeout or a lost connection is written once.
With a transactional id (``--transactional-id``, Kafka's ``transactional.id``) the whole input is one
transaction, as kcat's ``-X transactional.id`` producer runs it: InitProducerId from the transactional
id's coordinator first (fencing an older producer of the same id), AddPartitionsToTxn before a
partition's first batch, and at the end EndTxn: committed, or aborted when a record could not be written
or on Ctrl-C.

A batch answered with a retriable error (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT,
...) or whose broker cannot be reached is sent again with fresh metadata until ``delivery_timeout`` after
it was sealed (Kafka's ``delivery.timeout.ms``); each record of a batch that failed gets one line on
stderr with its line number (as Kafka's ``ErrorLoggingCallback``), and the others go on. Every batch
written prints its partition and offsets.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from controller.records.batch import client_batch
from placement_sim.cli.kafka_session import Failed, Retriable, Session, check
from protocol.partitioner import DEFAULT_BATCH_SIZE, StickyPartitioner

log = logging.getLogger(__name__)

__all__ = ["ConsoleProducer", "Line", "record_size"]

PRODUCE_VERSION = 9
INIT_PRODUCER_ID_VERSION = 3
ADD_PARTITIONS_TO_TXN_VERSION = 3
END_TXN_VERSION = 3
#: The transaction's ``transaction.timeout.ms`` (Kafka's producer default).
TRANSACTION_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class Line:
    """One record to send: its line number in the input (for error lines), key and value."""

    number: int
    key: bytes | None
    value: bytes


def _varint_size(value: int) -> int:
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def record_size(offset_delta: int, key: bytes | None, value: bytes) -> int:
    """The bytes one record takes in a v2 batch (Kafka's ``DefaultRecord.sizeInBytes``, no headers)."""
    key_size = -1 if key is None else len(key)
    body = (
        1  # attributes
        + 1  # timestamp delta 0
        + _varint_size(offset_delta)
        + _varint_size(key_size)
        + max(key_size, 0)
        + _varint_size(len(value))
        + len(value)
        + 1  # no headers
    )
    return _varint_size(body) + body


@dataclass
class _Batch:
    partition: int
    lines: list[Line] = field(default_factory=list)
    size: int = 0
    deadline: float = 0.0
    timestamp_ms: int = 0


@dataclass
class _Idempotence:
    """The producer id and epoch of an idempotent producer, and the next sequence of each partition."""

    producer_id: int
    epoch: int
    sequences: dict[int, int] = field(default_factory=dict)


class ConsoleProducer:
    """Sends :class:`Line` records to ``topic`` through ``session``; :meth:`run` returns the exit status."""

    def __init__(
        self,
        session: Session,
        topic: str,
        partition: int | None = None,
        acks: int = -1,
        linger: float = 1.0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        request_timeout_ms: int = 1500,
        delivery_timeout: float = 30.0,
        seed: int | None = None,
        transactional_id: str | None = None,
    ) -> None:
        self.session = session
        self.topic = topic
        self.partition = partition
        self.acks = acks
        self.linger = linger
        self.batch_size = batch_size
        self.request_timeout_ms = request_timeout_ms
        self.delivery_timeout = delivery_timeout
        self.partitioner = StickyPartitioner(batch_size, seed)
        self.failed = 0
        self._partitions = 0
        self._available: list[int] = []
        self._open: dict[int, _Batch] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._sealed: dict[int, collections.deque[_Batch]] = {}
        self._senders: dict[int, asyncio.Task[None]] = {}
        self._idempotence: _Idempotence | None = None
        self._idempotent = acks == -1
        self.transactional_id = transactional_id
        #: The partitions added to the transaction; whether a record of it failed (it can only abort).
        self._in_transaction: set[int] = set()
        self._doomed = False

    # ------------------------------------------------------------------------------------ input

    async def run(self, lines: AsyncIterator[Line]) -> int:
        """Sends every line, then waits for every batch: 0, or 1 when a record could not be written."""
        await self._start()
        try:
            async for line in lines:
                self.add(line)
        finally:
            await self.flush()
        return 1 if self.failed else 0

    async def _start(self) -> None:
        deadline = time.monotonic() + self.delivery_timeout
        info = await self.session.retry(
            f"topic {self.topic}", lambda: self.session.topic(self.topic), deadline
        )
        self._partitions = len(info.partitions)
        self._available = info.available
        if self.partition is not None and self.partition not in info.partitions:
            raise Failed(
                f"{self.topic}-{self.partition}: no such partition (the topic has partitions "
                f"0-{self._partitions - 1})"
            )
        if self.transactional_id is not None:
            await self.session.retry(
                f"transactional id {self.transactional_id}", self._init_transactions, deadline
            )

    # ------------------------------------------------------------------------------------ transactions

    async def _coordinated(self, name: str, body: dict[str, object], version: int) -> dict[str, Any]:
        """``name`` sent to the transactional id's coordinator (found again at each attempt)."""
        assert self.transactional_id is not None
        coordinator = await self.session.coordinator(self.transactional_id, key_type=1)
        return await self.session.send(coordinator, name, body, version)

    async def _init_transactions(self) -> None:
        """InitProducerId with the transactional id (``initTransactions``): the producer id and epoch."""
        body = {
            "TransactionalId": self.transactional_id,
            "TransactionTimeoutMs": TRANSACTION_TIMEOUT_MS,
            "ProducerId": -1,
            "ProducerEpoch": -1,
        }
        response = await self._coordinated("InitProducerIdRequest", body, INIT_PRODUCER_ID_VERSION)
        check(response["ErrorCode"], None, f"transactional id {self.transactional_id}: InitProducerId")
        self._idempotence = _Idempotence(response["ProducerId"], response["ProducerEpoch"])

    async def _add_partition(self, state: _Idempotence, partition: int) -> None:
        """AddPartitionsToTxn before the partition's first batch."""
        body = {
            "V3AndBelowTransactionalId": self.transactional_id,
            "V3AndBelowProducerId": state.producer_id,
            "V3AndBelowProducerEpoch": state.epoch,
            "V3AndBelowTopics": [{"Name": self.topic, "Partitions": [partition]}],
        }
        response = await self._coordinated("AddPartitionsToTxnRequest", body, ADD_PARTITIONS_TO_TXN_VERSION)
        for topic in response["ResultsByTopicV3AndBelow"]:
            for answer in topic["ResultsByPartition"]:
                check(answer["PartitionErrorCode"], None, f"{self.topic}-{partition}: AddPartitionsToTxn")
        self._in_transaction.add(partition)

    async def end_transaction(self, commit: bool) -> int:
        """Commits the transaction (aborts it when ``commit`` is false or a record of it failed), printing
        how it ended: 0, or 1 when it was aborted or could not end. Nothing without a transactional id."""
        if self.transactional_id is None or self._idempotence is None:
            return 0
        commit = commit and not self._doomed
        if self._in_transaction:  # as Kafka's producer, no EndTxn for a transaction without partitions
            state = self._idempotence
            body = {
                "TransactionalId": self.transactional_id,
                "ProducerId": state.producer_id,
                "ProducerEpoch": state.epoch,
                "Committed": commit,
            }

            async def end() -> None:
                response = await self._coordinated("EndTxnRequest", body, END_TXN_VERSION)
                check(response["ErrorCode"], None, f"transactional id {self.transactional_id}: EndTxn")

            try:
                await self.session.retry(
                    f"transactional id {self.transactional_id}", end, time.monotonic() + self.delivery_timeout
                )
            except Failed as failure:
                print(f"placement-sim: {failure}", file=sys.stderr, flush=True)
                return 1
        ended = "committed" if commit else "aborted"
        print(f"transaction {self.transactional_id}: {ended}", flush=True)
        return 0 if commit else 1

    def add(self, line: Line) -> None:
        """Puts a record in its partition's open batch (sealed when full; a timer seals it after linger)."""
        if self.partition is not None:
            partition = self.partition
        else:
            partition = self.partitioner.partition(line.key, self._partitions, self._available)
        batch = self._open.get(partition)
        if batch is None:
            batch = self._open[partition] = _Batch(partition)
            loop = asyncio.get_running_loop()
            self._timers[partition] = loop.call_later(self.linger, self._seal, partition)
        size = record_size(len(batch.lines), line.key, line.value)
        batch.lines.append(line)
        batch.size += size
        log.debug(
            "line %d: %s-%d, %d record(s) held (sent when %d bytes or after %g ms)",
            line.number,
            self.topic,
            partition,
            len(batch.lines),
            self.batch_size,
            self.linger * 1000,
        )
        if self.partition is None and line.key is None:
            self.partitioner.produced(size, self._partitions, self._available)
        if batch.size >= self.batch_size:
            self._seal(partition)

    def _seal(self, partition: int) -> None:
        """Closes a partition's open batch and queues it for its sender."""
        batch = self._open.pop(partition, None)
        timer = self._timers.pop(partition, None)
        if timer is not None:
            timer.cancel()
        if batch is None:
            return
        batch.deadline = time.monotonic() + self.delivery_timeout
        batch.timestamp_ms = int(time.time() * 1000)
        self._sealed.setdefault(partition, collections.deque()).append(batch)
        sender = self._senders.get(partition)
        if sender is None or sender.done():
            self._senders[partition] = asyncio.ensure_future(self._send_all(partition))

    async def flush(self) -> None:
        """Seals every open batch and waits until every batch was written or failed."""
        for partition in list(self._open):
            self._seal(partition)
        while any(not sender.done() for sender in self._senders.values()):
            await asyncio.gather(*self._senders.values(), return_exceptions=True)

    # ------------------------------------------------------------------------------------ sending

    async def _send_all(self, partition: int) -> None:
        queue = self._sealed[partition]
        while queue:
            batch = queue[0]
            try:
                base = await self.session.retry(
                    f"{self.topic}-{partition}", lambda b=batch: self._produce(b), batch.deadline
                )
            except Failed as failure:
                self._report(batch, str(failure).removeprefix(f"{self.topic}-{partition}: "))
                if self.transactional_id is not None:
                    self._doomed = True  # the transaction can only abort now
                elif self._idempotence is not None:
                    self._idempotence = None  # the sequence has a hole: a new producer id starts again
            else:
                last = base + len(batch.lines) - 1
                where = f"{self.topic}-{partition}"
                print(
                    f"{where}: offset {base}" if base == last else f"{where}: offsets {base}-{last}",
                    flush=True,
                )
            queue.popleft()

    async def _idempotence_state(self) -> _Idempotence | None:
        """An idempotent producer's id, epoch and sequences (InitProducerId the first time, and again after a
        batch failed for good); None for a producer without idempotence (acks=1)."""
        if not self._idempotent:
            return None
        if self._idempotence is None:
            response = await self.session.send(
                None,
                "InitProducerIdRequest",
                {"TransactionalId": None, "TransactionTimeoutMs": -1, "ProducerId": -1, "ProducerEpoch": -1},
                INIT_PRODUCER_ID_VERSION,
            )
            check(response["ErrorCode"], None, "InitProducerId")
            self._idempotence = _Idempotence(response["ProducerId"], response["ProducerEpoch"])
        return self._idempotence

    async def _produce(self, batch: _Batch) -> int:
        """One attempt at writing ``batch``: its base offset, or Retriable / Failed."""
        if self._doomed:
            raise Failed(
                f"{self.topic}-{batch.partition}: not sent: the transaction aborts (a record failed)"
            )
        state = await self._idempotence_state()
        producer = None
        if state is not None:
            producer = (state.producer_id, state.epoch, state.sequences.get(batch.partition, 0))
            if self.transactional_id is not None and batch.partition not in self._in_transaction:
                await self._add_partition(state, batch.partition)
        leader = await self.session.leader(self.topic, batch.partition)
        records = client_batch(
            [(line.key, line.value) for line in batch.lines],
            batch.timestamp_ms,
            producer,
            transactional=self.transactional_id is not None,
        )
        left_ms = int((batch.deadline - time.monotonic()) * 1000)
        timeout_ms = max(1, min(self.request_timeout_ms, left_ms))
        request = {
            "TransactionalId": self.transactional_id,
            "Acks": self.acks,
            "TimeoutMs": timeout_ms,
            "TopicData": [
                {"Name": self.topic, "PartitionData": [{"Index": batch.partition, "Records": records}]}
            ],
        }
        response = await self.session.send(
            leader, "ProduceRequest", request, PRODUCE_VERSION, timeout=timeout_ms / 1000 + 5
        )
        [answer] = response["Responses"][0]["PartitionResponses"]
        try:
            check(answer["ErrorCode"], answer.get("ErrorMessage"), f"{self.topic}-{batch.partition}")
        except Retriable:
            self.session.invalidate()
            raise
        if state is not None and producer is not None:
            state.sequences[batch.partition] = producer[2] + len(batch.lines)
        return int(answer["BaseOffset"])

    def _report(self, batch: _Batch, error: str) -> None:
        """One line per record of a batch that was not written (Kafka's ``ErrorLoggingCallback``)."""
        self.failed += len(batch.lines)
        for line in batch.lines:
            key = "null" if line.key is None else line.key.decode(errors="replace")
            print(
                f"placement-sim: line {line.number}: error when sending to {self.topic}-{batch.partition} "
                f"(key: {key}, value: {len(line.value)} bytes): {error}",
                file=sys.stderr,
                flush=True,
            )
