"""One seeded run against a server in this process, on a virtual clock, with the project's own client.

:func:`run_seed` starts a server (its listeners on 127.0.0.1, ephemeral ports) on the caller's event
loop, makes a topic, and plays a :func:`~controller.losscheck.schedule.make_schedule` schedule: producers
(:class:`protocol.client.KafkaClient`, one connection per broker, one batch in flight each, as a producer
with ``max.in.flight.requests.per.connection=1``) write records with unique values to the partitions'
leaders and retry what was not acknowledged, while brokers fail and come back, elections and
reassignments run and request faults fire. Then every broker comes back, the producers finish, the
clock runs until the replicas have caught up, every partition is read from its beginning, and the
checks (:mod:`controller.losscheck.checks`) read what was acknowledged, what was read back,
``lost_records()`` and what the high watermark did.

Between steps the run waits until the server and the clients have nothing left to do (the sockets are
loopback ones on the same loop): every request a step sent has been handled before the clock moves, so
a seed gives the same interleaving from one run to the next. A producer's request timeout counts on the
cluster's clock (:data:`CLIENT_TIMEOUT_MS`): a request to a hung broker is given up, its connection
closed and the batch retried, as a real client does after ``request.timeout.ms``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import random
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.assembly import create_server
from controller.cluster import NO_LEADER, PartitionState, Process
from controller.config import ServerConfig
from controller.config.topic_configs import MIN_INSYNC_REPLICAS
from controller.election.api import ElectionStyle
from controller.embedded import server_properties
from controller.losscheck.checks import (
    DEFAULT_CHECKS,
    TRANSACTION_CHECKS,
    Acknowledged,
    Check,
    Loss,
    Observation,
    ReadRecord,
    RunRecord,
    TransactionsRecord,
    Unanswered,
    Violation,
    check_run,
    summarize,
)
from controller.losscheck.schedule import CONFIGURATIONS, Configuration, Step, make_schedule
from controller.records.batch import BatchHeader, client_batch, iter_batches
from controller.records.records import Record, consumer_records, read_batch_records, records_end
from protocol.client import ClientError, KafkaClient
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.server import Server

log = logging.getLogger(__name__)

__all__ = ["CLIENT_TIMEOUT_MS", "HighWatermarkWatch", "SeedResult", "Setup", "run_seed"]

#: A producer gives a request up after this long on the cluster's clock (its ``request.timeout.ms``).
CLIENT_TIMEOUT_MS = 5_000
#: The Produce's own TimeoutMs (how long an acks=all answer waits for the in-sync replicas).
PRODUCE_TIMEOUT_MS = 3_000
#: Errors after which an idempotent producer starts over with a new producer id (as Kafka's producers
#: reset their state): the partition's leader no longer knows the sequence it expects.
_RESET = frozenset(
    {ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.INVALID_PRODUCER_EPOCH}
)


@dataclass(frozen=True)
class Setup:
    """The cluster and workload of a run: brokers, the topic's partitions and replication factor, its
    ``min.insync.replicas``, producers and schedule steps, the recovery's clock time, and broker
    properties added to the server's (``{"simulator.eligible.leader.replicas.version": "0"}``: the runs
    with eligible leader replicas off, Kafka 3.x's rules)."""

    brokers: int = 5
    partitions: int = 6
    replication_factor: int = 3
    min_insync_replicas: int = 2
    producers: int = 3
    steps: int = 80
    recovery_ms: int = 20_000
    topic: str = "checked"
    properties: tuple[tuple[str, str], ...] = ()


@dataclass
class SeedResult:
    """A run's outcome: its seed and configuration, what it recorded, the rules broken, and the ERROR
    records the server logged meanwhile (none is expected: each is a fault of the server's to explain)."""

    seed: int
    configuration: Configuration
    run: RunRecord
    violations: list[Violation]
    steps: list[Step] = field(default_factory=list)
    errors_logged: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations and not self.errors_logged

    @property
    def lost(self) -> int:
        """Acknowledged records missing at the end (each covered by a reported loss when the run is ok)."""
        return len(self.run.missing())

    def describe(self, limit: int = 10) -> str:
        """The seed, its configuration, and the first ``limit`` rules broken (to replay it: the seed)."""
        head = f"seed {self.seed} ({self.configuration.label}): "
        if self.ok:
            return head + f"ok, {len(self.run.acknowledged)} acknowledged, {self.lost} lost and reported"
        lines = [head + f"{len(self.violations)} violation(s), {len(self.errors_logged)} ERROR(s) logged"]
        if self.violations:
            lines.append(summarize(self.violations, limit))
        lines += [f"logged: {message}" for message in self.errors_logged[:limit]]
        return "\n".join(lines)


class HighWatermarkWatch:
    """Watches a topic's high watermarks for the run: each move must have the policy's minimum of
    replicas behind it (Kafka: ``min.insync.replicas`` in the ISR; Fluvio: every replica of the
    assignment at or past it), and after each step it is at or below every in-sync member's log end."""

    def __init__(self, server: Server, topic: str, run: RunRecord) -> None:
        controller = server.controller
        self.topic = topic
        self.run = run
        self.cluster = controller.cluster
        self.clock = controller.clock
        self.dynamics = controller.dynamics
        self.kafka = controller.dynamics.elections.style is ElectionStyle.KAFKA
        controller.data_path  # noqa: B018 - built now: it installs the replication's hooks this wraps
        replication = controller.dynamics.replication
        self._inner = replication.on_high_watermark
        replication.on_high_watermark = self._moved

    def _note(self, p: PartitionState, what: str) -> None:
        self.run.high_watermark.append(Observation(self.clock.now(), p.topic, p.index, what))

    def _moved(self, p: PartitionState) -> None:
        if p.topic == self.topic:
            hw = p.high_watermark
            if self.kafka:
                minimum = self.cluster.min_insync_replicas(p)
                if len(p.isr) < minimum:
                    self._note(p, f"moved to {hw} with the ISR {p.isr} below min.insync.replicas={minimum}")
            else:
                lacking = [r for r, leo in zip(p.replicas, p.leo, strict=True) if leo < hw]
                if lacking:
                    self._note(
                        p, f"moved to {hw} while replica(s) {lacking} of {p.replicas} lack records below it"
                    )
        self._inner(p)

    def after_step(self) -> None:
        topic = self.cluster.topics.get(self.topic)
        if topic is None:
            return
        for p in topic.partitions:
            state = self.dynamics.partition_state(p.topic, p.index)
            if state.leader == NO_LEADER:
                continue
            above = [r for r in state.isr if state.log_end_offsets[r] < state.high_watermark]
            if above:
                self._note(
                    p,
                    f"high watermark {state.high_watermark} above the log end of in-sync member(s) {above} "
                    f"({state.log_end_offsets})",
                )


class _Connections:
    """A client's connections, one per broker, made when first needed and dropped when they fail."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.clients: dict[int, KafkaClient] = {}

    async def to(self, broker: int) -> KafkaClient | None:
        client = self.clients.get(broker)
        if client is not None:
            return client
        endpoint = self.server.endpoints.get(broker)
        if endpoint is None:
            return None
        try:
            # No ApiVersions first: a hung broker accepts and never answers (the versions are fixed here).
            client = await KafkaClient.connect(
                f"{endpoint[0]}:{endpoint[1]}", connect_timeout=5, request_timeout=600, negotiate=False
            )
        except (ClientError, OSError):
            return None
        self.clients[broker] = client
        return client

    def drop(self, broker: int) -> None:
        client = self.clients.pop(broker, None)
        if client is not None:
            asyncio.ensure_future(client.close())

    async def close(self) -> None:
        for client in self.clients.values():
            await client.close()
        self.clients.clear()


@dataclass
class _Batch:
    partition: int
    values: list[bytes]
    sequence: int = -1
    attempt: int = 0
    sent_at: int = 0
    broker: int = NO_LEADER
    task: asyncio.Future[dict[str, Any]] | None = None


class _Producer:
    """One producer: one batch in flight at most, retried until it is acknowledged."""

    def __init__(self, index: int, runner: _Runner) -> None:
        self.name = f"p{index}"
        self.runner = runner
        self.acks = runner.configuration.acks
        self.idempotent = runner.configuration.idempotent
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[int, int] = defaultdict(int)
        self.batch: _Batch | None = None
        self.count = 0
        self.reset = self.idempotent
        #: Its own connections, as every producer has.
        self.connections = _Connections(runner.server)

    def _value(self) -> bytes:
        self.count += 1
        return f"{self.name}-{self.count}".encode()

    async def produce(self, partition: int, records: int) -> None:
        if self.batch is None:
            self.batch = _Batch(partition, [self._value() for _ in range(records)])
            if self.idempotent:
                self.batch.sequence = -1  # drawn at the first send, after a reset if one is due
        await self.resend()

    async def resend(self) -> None:
        """Sends the batch not yet acknowledged, if it is not in flight."""
        batch = self.batch
        if batch is None or batch.task is not None:
            return
        runner = self.runner
        if self.idempotent and self.reset and not await self._init():
            return
        p = runner.partition(batch.partition)
        if p.leader == NO_LEADER:
            return
        client = await self.connections.to(p.leader)
        if client is None:
            return
        if self.idempotent:
            if batch.sequence < 0:
                batch.sequence = self.sequences[batch.partition]
                self.sequences[batch.partition] += len(batch.values)
            producer = (self.producer_id, self.producer_epoch, batch.sequence)
        else:
            if (
                batch.attempt
            ):  # a new write of the same records: new values (see checks.NoLossThatDidNotHappen)
                batch.values = [self._value() for _ in batch.values]
            producer = (-1, -1, -1)
        batch.attempt += 1
        records = client_batch([(None, v) for v in batch.values], runner.now_ms(), producer)
        request = {
            "Acks": self.acks,
            "TimeoutMs": PRODUCE_TIMEOUT_MS,
            "TopicData": [
                {"Name": runner.topic, "PartitionData": [{"Index": batch.partition, "Records": records}]}
            ],
        }
        batch.sent_at = runner.clock.now()
        batch.broker = p.leader
        if self.acks == 0:
            with contextlib.suppress(ClientError, OSError):
                await client.send_unanswered("ProduceRequest", request, version=9)
            self.unanswered(batch, batch.values, -1)
            self.batch = None  # never answered: never acknowledged
            return
        batch.task = asyncio.ensure_future(client.send("ProduceRequest", request, version=9, timeout=600))
        values, producer_id = tuple(batch.values), self.producer_id
        batch.task.add_done_callback(lambda task: self._answered(batch, task, values, producer_id))

    async def _init(self) -> bool:
        """InitProducerId: a new producer id, its sequences from 0 (a batch not yet acknowledged is sent
        again under it, with new values: a new write)."""
        runner = self.runner
        for broker in runner.serving_brokers():
            client = await self.connections.to(broker)
            if client is None:
                continue
            try:
                answer = await client.send(
                    "InitProducerIdRequest",
                    {"TransactionalId": None, "TransactionTimeoutMs": 60_000},
                    version=4,
                    timeout=10,  # answered at once by a serving broker, whatever the clock does
                )
            except (ClientError, OSError):
                self.connections.drop(broker)
                continue
            if answer["ErrorCode"] != ErrorCode.NONE:
                continue
            self.producer_id, self.producer_epoch = answer["ProducerId"], answer["ProducerEpoch"]
            self.sequences.clear()
            self.reset = False
            if self.batch is not None and self.batch.sequence >= 0:
                self.batch.sequence = -1
                self.batch.values = [self._value() for _ in self.batch.values]
            return True
        return False

    def unanswered(self, batch: _Batch, values: tuple[bytes, ...] | list[bytes], producer_id: int) -> None:
        """A write of ``batch`` (of ``values``, by ``producer_id``: -1 without idempotence) got no answer
        (it may have been appended all the same)."""
        for value in values:
            self.runner.run.unanswered.append(
                Unanswered(self.runner.topic, batch.partition, value, producer_id)
            )

    def _answered(
        self, batch: _Batch, task: asyncio.Future[dict[str, Any]], values: tuple[bytes, ...], producer_id: int
    ) -> None:
        if batch.task is task:
            batch.task = None
        if task.cancelled():
            self.unanswered(batch, values, producer_id)
            return  # given up (the client's timeout): retried
        error = task.exception()
        if error is not None:
            self.unanswered(batch, values, producer_id)
            self.connections.drop(batch.broker)
            return  # the connection went: retried
        if batch is not self.batch:
            return
        [partition] = task.result()["Responses"][0]["PartitionResponses"]
        code = ErrorCode(partition["ErrorCode"])
        if code is ErrorCode.NONE:
            base = partition["BaseOffset"]
            for i, value in enumerate(batch.values):
                self.runner.run.acknowledged.append(
                    Acknowledged(
                        self.runner.topic,
                        batch.partition,
                        base + i,
                        value,
                        self.acks,
                        self.producer_id,
                        self.producer_epoch,
                        batch.sequence + i if self.idempotent else -1,
                    )
                )
            self.batch = None
        elif code in _RESET and self.idempotent:
            self.reset = True

    def in_flight(self) -> bool:
        return self.batch is not None and self.batch.task is not None

    def give_up(self) -> None:
        """What is still unanswered is given up (the end of the run)."""
        if self.batch is not None and self.batch.task is not None:
            self.batch.task.cancel()

    def give_up_late(self, now: int) -> None:
        """The client's request timeout: a request unanswered for :data:`CLIENT_TIMEOUT_MS` is given up and
        its connection closed."""
        batch = self.batch
        if batch is not None and batch.task is not None and now - batch.sent_at >= CLIENT_TIMEOUT_MS:
            task, batch.task = batch.task, None
            task.cancel()
            self.connections.drop(batch.broker)


#: Answers after which a transactional request is sent again (to the coordinator found again).
_TXN_RETRY = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
#: Answers to a transactional Produce after which the same batch (its sequence) is sent again.
_PRODUCE_RETRY = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    }
)
#: A transactional producer's ``transaction.timeout.ms``: the coordinator aborts what it leaves open.
TRANSACTION_TIMEOUT_MS = 10_000
#: How often the coordinators of a transactional run abort the transactions open past their timeout.
TXN_ABORT_INTERVAL_MS = 2_000
#: How often a transactional producer sends one batch, or a request to its coordinator, before it gives up.
_ATTEMPTS = 6
_COORDINATOR_ATTEMPTS = 50
#: How long a transactional producer waits (the cluster's clock) before it asks again.
_BACKOFF_MS = 100


class _TxnProducer:
    """A transactional producer, as Kafka's ``TransactionManager`` runs one: FindCoordinator, InitProducerId
    with its transactional id, then per transaction AddPartitionsToTxn, one batch per partition (idempotent,
    acks=all, retried with its sequence), and EndTxn, committing or aborting as the seed draws (aborting
    when a batch could not be written). What it was told of each transaction's end goes to the run's
    :class:`~controller.losscheck.checks.TransactionsRecord`. Its requests wait on the cluster's clock, one
    at a time, and are given up after :data:`CLIENT_TIMEOUT_MS` of it."""

    def __init__(self, index: int, runner: _Runner) -> None:
        self.name = f"t{index}"
        self.transactional_id = f"losscheck-{index}"
        self.runner = runner
        self.record: TransactionsRecord = runner.run.extras["transactions"]
        self.rng = random.Random(runner.seed * 1_000 + index)
        self.connections = _Connections(runner.server)
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[int, int] = defaultdict(int)
        self.coordinator = NO_LEADER
        self.count = 0
        #: (partition, records) the schedule asked for since the transaction in progress began.
        self.wanted: list[tuple[int, int]] = []
        self.task: asyncio.Future[None] | None = None
        self.request: tuple[asyncio.Future[dict[str, Any]], int, int] | None = None

    # ------------------------------------------------------------------- what the runner asks of a producer

    async def produce(self, partition: int, records: int) -> None:
        self.wanted.append((partition, records))
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._transactions())

    async def resend(self) -> None:
        """Nothing: its task retries by itself as the clock moves."""

    def in_flight(self) -> bool:
        return self.request is not None

    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def give_up(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def give_up_late(self, now: int) -> None:
        if self.request is not None:
            future, sent_at, broker = self.request
            if now - sent_at >= CLIENT_TIMEOUT_MS:
                future.cancel()
                self.connections.drop(broker)

    # ------------------------------------------------------------------------------------- requests

    async def _pause(self) -> None:
        """Waits :data:`_BACKOFF_MS` of the cluster's clock."""
        waited: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.runner.clock.call_later(
            _BACKOFF_MS, lambda: None if waited.done() else waited.set_result(None), "losscheck backoff"
        )
        await waited

    async def _send(
        self, broker: int, name: str, body: dict[str, Any], version: int
    ) -> dict[str, Any] | None:
        """The answer of ``broker``, or None (no connection, the connection lost, or given up)."""
        if broker == NO_LEADER:
            return None
        client = await self.connections.to(broker)
        if client is None:
            return None
        future = asyncio.ensure_future(client.send(name, body, version=version, timeout=600))
        self.request = (future, self.runner.clock.now(), broker)
        try:
            await asyncio.wait({future})
        finally:
            self.request = None
        if future.cancelled():
            return None
        if future.exception() is not None:
            self.connections.drop(broker)
            return None
        return future.result()

    async def _find(self) -> None:
        for broker in self.runner.serving_brokers():
            answer = await self._send(
                broker, "FindCoordinatorRequest", {"Key": self.transactional_id, "KeyType": 1}, 3
            )
            if answer is not None and answer["ErrorCode"] == ErrorCode.NONE:
                self.coordinator = answer["NodeId"]
                return
        self.coordinator = NO_LEADER

    async def _coordinated(self, name: str, body: dict[str, Any], version: int) -> dict[str, Any] | None:
        """The coordinator's answer to ``name``, sent again (to the coordinator found again when needed)
        while it is a retriable error or none; None when none came within the attempts."""
        for _ in range(_COORDINATOR_ATTEMPTS):
            if self.coordinator == NO_LEADER:
                await self._find()
            answer = await self._send(self.coordinator, name, body, version)
            code = None if answer is None else _txn_error(name, answer)
            if answer is not None and code not in _TXN_RETRY:
                return answer
            if code in (None, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                self.coordinator = NO_LEADER
            await self._pause()
        return None

    async def _init(self) -> bool:
        body = {
            "TransactionalId": self.transactional_id,
            "TransactionTimeoutMs": TRANSACTION_TIMEOUT_MS,
            "ProducerId": -1,
            "ProducerEpoch": -1,
        }
        answer = await self._coordinated("InitProducerIdRequest", body, 4)
        if answer is None or answer["ErrorCode"] != ErrorCode.NONE:
            return False
        self.producer_id, self.producer_epoch = answer["ProducerId"], answer["ProducerEpoch"]
        self.sequences.clear()
        return True

    # ------------------------------------------------------------------------------------- transactions

    async def _transactions(self) -> None:
        while self.wanted:
            partitions: dict[int, int] = {}
            for partition, records in self.wanted:
                partitions[partition] = partitions.get(partition, 0) + records
            self.wanted.clear()
            if self.producer_id < 0 and not await self._init():
                continue  # the coordinator never answered: these records are never written
            await self._transaction(partitions)

    async def _transaction(self, partitions: dict[int, int]) -> None:
        runner = self.runner
        producer = (self.producer_id, self.producer_epoch)
        added = await self._coordinated(
            "AddPartitionsToTxnRequest",
            {
                "V3AndBelowTransactionalId": self.transactional_id,
                "V3AndBelowProducerId": producer[0],
                "V3AndBelowProducerEpoch": producer[1],
                "V3AndBelowTopics": [{"Name": runner.topic, "Partitions": sorted(partitions)}],
            },
            3,
        )
        if added is None or _txn_error("AddPartitionsToTxnRequest", added) is not ErrorCode.NONE:
            self.producer_id = -1  # fenced, or no answer: a new InitProducerId (it aborts what is open)
            return
        written: list[Acknowledged] = []
        doubtful: list[Unanswered] = []
        for partition, records in sorted(partitions.items()):
            values = [self._value() for _ in range(records)]
            acknowledged = await self._produce(partition, values)
            if acknowledged is None:
                doubtful = [Unanswered(runner.topic, partition, v, producer[0]) for v in values]
                break
            written += acknowledged
        commit = not doubtful and self.rng.random() < 0.7
        ended = await self._coordinated(
            "EndTxnRequest",
            {
                "TransactionalId": self.transactional_id,
                "ProducerId": producer[0],
                "ProducerEpoch": producer[1],
                "Committed": commit,
            },
            3,
        )
        code = None if ended is None else ErrorCode(ended["ErrorCode"])
        # Each partition gets a marker of the producer's: a write whose offset it never learns.
        runner.run.unanswered += [Unanswered(runner.topic, p, b"", producer[0]) for p in partitions]
        runner.run.unanswered += doubtful
        if code is ErrorCode.NONE and commit:
            runner.run.acknowledged += written
            self.record.committed += written
            return
        kept = [Unanswered(a.topic, a.partition, a.value, a.producer_id) for a in written]
        runner.run.unanswered += kept
        if code is ErrorCode.NONE:
            self.record.aborted += kept + doubtful
        else:
            self.record.uncertain += kept + doubtful
            self.producer_id = -1  # fenced (the coordinator aborted it), or no answer: start again

    def _value(self) -> bytes:
        self.count += 1
        return f"{self.name}-{self.count}".encode()

    async def _produce(self, partition: int, values: list[bytes]) -> list[Acknowledged] | None:
        """One transactional batch of ``values`` to ``partition``, sent again (same sequence) until its
        leader acknowledges it; None when it was not acknowledged (it may be in the log all the same)."""
        runner = self.runner
        sequence = self.sequences[partition]
        self.sequences[partition] += len(values)
        producer = (self.producer_id, self.producer_epoch, sequence)
        for _ in range(_ATTEMPTS):
            records = client_batch([(None, v) for v in values], runner.now_ms(), producer, transactional=True)
            request = {
                "TransactionalId": self.transactional_id,
                "Acks": -1,
                "TimeoutMs": PRODUCE_TIMEOUT_MS,
                "TopicData": [
                    {"Name": runner.topic, "PartitionData": [{"Index": partition, "Records": records}]}
                ],
            }
            answer = await self._send(runner.partition(partition).leader, "ProduceRequest", request, 9)
            if answer is not None:
                [entry] = answer["Responses"][0]["PartitionResponses"]
                code = ErrorCode(entry["ErrorCode"])
                if code is ErrorCode.NONE:
                    base = entry["BaseOffset"]
                    return [
                        Acknowledged(
                            runner.topic, partition, base + i, v, -1, producer[0], producer[1], sequence + i
                        )
                        for i, v in enumerate(values)
                    ]
                if code not in _PRODUCE_RETRY:
                    return None  # fenced, out of order, not in the transaction: the transaction aborts
            await self._pause()
        return None


def _txn_error(name: str, answer: dict[str, Any]) -> ErrorCode:
    """The error of a transaction API's answer (AddPartitionsToTxn v3: its partitions' first error)."""
    if name == "AddPartitionsToTxnRequest":
        codes = [
            ErrorCode(p["PartitionErrorCode"])
            for t in answer["ResultsByTopicV3AndBelow"]
            for p in t["ResultsByPartition"]
        ]
        return next((c for c in codes if c is not ErrorCode.NONE), ErrorCode.NONE)
    return ErrorCode(answer["ErrorCode"])


class _Runner:
    def __init__(self, server: Server, seed: int, configuration: Configuration, setup: Setup) -> None:
        self.server = server
        self.controller = server.controller
        self.cluster = server.controller.cluster
        self.clock = server.controller.clock
        self.dynamics = server.controller.dynamics
        self.seed = seed
        self.configuration = configuration
        self.setup = setup
        self.topic = setup.topic
        self.run = RunRecord(configuration.policy)
        self.producers: list[_Producer] | list[_TxnProducer]
        if configuration.transactional:
            self.run.extras["transactions"] = TransactionsRecord()
            self.producers = [_TxnProducer(i, self) for i in range(setup.producers)]
        else:
            self.producers = [_Producer(i, self) for i in range(setup.producers)]
        self.consumer: _Connections | None = None

    # ------------------------------------------------------------------------------------- helpers

    def now_ms(self) -> int:
        return int(self.controller.data_path.now_ms())

    def partition(self, index: int) -> PartitionState:
        return self.cluster.partition(self.topic, index)

    def serving_brokers(self) -> list[int]:
        return sorted(b for b in self.cluster.serving_ids() if b in self.server.endpoints)

    async def settle(self) -> None:
        """Lets the server and the clients run until neither has anything left to do."""
        quiet = 0
        last: tuple[Any, ...] | None = None
        for _ in range(10_000):
            await asyncio.sleep(0)
            pending = sum(1 for p in self.producers if p.in_flight())
            signature = (
                sum(self.server.stats.values()),
                len(self.run.acknowledged),
                pending,
                len(asyncio.all_tasks()),
            )
            if signature == last:
                quiet += 1
                if quiet >= 6:
                    return
            else:
                quiet, last = 0, signature

    async def _advance(self, ms: int) -> None:
        """Moves the clock in steps no longer than a replication tick's tenfold, the producers acting
        between them (their timeouts, their retries)."""
        left = ms
        while left > 0:
            step = min(left, 500)
            await self.dynamics.advance(step)
            left -= step
            await self.settle()
            now = self.clock.now()
            for producer in self.producers:
                producer.give_up_late(now)
            await self.settle()
            for producer in self.producers:
                await producer.resend()
            await self.settle()

    # ------------------------------------------------------------------------------------- the run

    async def setup_topic(self) -> None:
        rng = random.Random(self.seed)
        brokers = list(range(self.setup.brokers))
        assignment = [
            rng.sample(brokers, self.setup.replication_factor) for _ in range(self.setup.partitions)
        ]
        configs = {
            "unclean.leader.election.enable": "true" if self.configuration.unclean else "false",
            MIN_INSYNC_REPLICAS: str(self.setup.min_insync_replicas),
        }
        async with self.dynamics.lock:
            self.cluster.add_topic(self.topic, assignment, configs, now=self.clock.now())

    async def step(self, step: Step) -> None:
        kind, args = step.kind, step.args
        dynamics = self.dynamics
        if kind in ("crash", "hang", "isolate", "controlled"):
            b = self.cluster.broker_state(args[0])
            if b is None or b.process in (Process.CRASHED, Process.STOPPED):
                kind = "skipped"  # already stopped: stop_broker refuses it
        if kind != "skipped":
            if kind == "produce":
                producer, partition, records = args
                await self.producers[producer].produce(partition, records)
            elif kind == "advance":
                await self._advance(args[0])
            elif kind in ("crash", "hang", "isolate", "controlled"):
                await dynamics.stop_broker(args[0], kind)
            elif kind == "start":
                await dynamics.start_broker(args[0])
            elif kind == "stop copying":
                await dynamics.set_replication(args[0], records_per_s=0)
            elif kind == "copy again":
                await dynamics.set_replication(args[0], records_per_s=None)
            elif kind in ("preferred election", "unclean election"):
                await dynamics.elect(self.topic, args[0], kind.split()[0])
            elif kind == "reassign":
                await dynamics.reassign({(self.topic, args[0]): list(args[1])})
            elif kind == "disconnect after produce":
                self.controller.faults.disconnect_on(ApiKey.PRODUCE, after=True, broker=args[0]).once()
            elif kind == "delay produce":
                self.controller.faults.delay_on(ApiKey.PRODUCE, args[1], broker=args[0]).once()
            else:
                raise ValueError(f"no step {kind!r}")
        await self.settle()
        for producer in self.producers:
            await producer.resend()
        await self.settle()

    async def recover(self) -> None:
        """Every broker back and copying, no more faults; the producers finish what they had."""
        if self.controller.built("faults") is not None:
            self.controller.faults.clear()
        for broker in range(self.setup.brokers):
            await self.dynamics.set_replication(broker, records_per_s=None)
        # A resumed broker may go on with the controlled shutdown it had begun and stop: started again.
        for _ in range(10):
            stopped = [
                b.id
                for b in (self.cluster.broker_state(i) for i in range(self.setup.brokers))
                if b is not None and (b.process is not Process.UP or b.in_controlled_shutdown)
            ]
            if not stopped:
                break
            for broker in stopped:
                await self.dynamics.start_broker(broker)
            await self.settle()
            await self._advance(2_000)
        await self._advance(self.setup.recovery_ms)
        # Transactional producers end the transaction they are in (each request bounded in attempts).
        for _ in range(60):
            if not any(isinstance(p, _TxnProducer) and p.busy() for p in self.producers):
                break
            await self._advance(1_000)
        left_open = any(isinstance(p, _TxnProducer) and p.busy() for p in self.producers)
        for producer in self.producers:  # what is still unanswered now is given up
            producer.give_up()
        await self.settle()
        if left_open:  # a transaction given up in the middle: its coordinator aborts it at its timeout
            await self._advance(TRANSACTION_TIMEOUT_MS + TXN_ABORT_INTERVAL_MS)
        await self._advance(2_000)  # the followers catch up with the last writes

    async def finish(self) -> None:
        """After the schedule and the recovery: reads every partition back and takes the server's
        losses (and the transaction log's, in a transactional run) into the run."""
        await self.read_back()
        self.run.losses = [Loss.of(lost) for lost in self.server.controller.data_path.lost_records()]
        transactions = self.run.extras.get("transactions")
        service = self.server.controller.built("transactions")
        if isinstance(transactions, TransactionsRecord) and service is not None:
            transactions.state_lost = service.lost_records()

    async def read_back(self) -> None:
        """Every partition from its beginning to its high watermark, from its leader, as a consumer reads
        it (on connections of its own); in a transactional run, again as a read_committed consumer."""
        consumer = self.consumer = _Connections(self.server)
        transactions = self.run.extras.get("transactions")
        for index in range(self.setup.partitions):
            p = self.partition(index)
            client = await consumer.to(p.leader) if p.leader != NO_LEADER else None
            if client is None:
                self.run.unreadable.append((self.topic, index))
                continue
            await self._read(client, index, p.high_watermark, 0, self.run.read)
            if isinstance(transactions, TransactionsRecord):
                stopped = await self._read(client, index, p.high_watermark, 1, transactions.read_committed)
                if stopped < p.high_watermark:
                    transactions.unstable.append((self.topic, index, stopped, p.high_watermark))

    async def _read(
        self, client: KafkaClient, index: int, high_watermark: int, isolation: int, into: list[ReadRecord]
    ) -> int:
        """Partition ``index`` from its beginning up to ``high_watermark`` into ``into``: every record
        (``isolation`` 0), or those a read_committed consumer keeps (1: up to the last stable offset,
        without the records of aborted transactions or the markers); the offset where it stopped."""
        offset = 0
        while offset < high_watermark:
            answer = await client.send(
                "FetchRequest", _fetch(self.topic, index, offset, isolation), version=11, timeout=30
            )
            [partition] = answer["Responses"][0]["Partitions"]
            if partition["ErrorCode"] != ErrorCode.NONE or not partition["Records"]:
                break
            for header, record in _records(partition, isolation):
                if record.offset < offset:
                    continue
                sequence = header.base_sequence + (record.offset - header.base_offset)
                into.append(
                    ReadRecord(
                        self.topic,
                        index,
                        record.offset,
                        record.value,
                        header.partition_leader_epoch,
                        header.producer_id,
                        header.producer_epoch,
                        sequence if header.producer_id >= 0 and not header.is_control else -1,
                    )
                )
            offset = max(offset, records_end(partition["Records"]))
        return offset

    async def close(self) -> None:
        for producer in self.producers:
            producer.give_up()
            await producer.connections.close()
        if self.consumer is not None:
            await self.consumer.close()


def _records(partition: dict[str, Any], isolation: int) -> Iterator[tuple[BatchHeader, Record]]:
    """Every record of a Fetch answer's partition, markers too (``isolation`` 0), or those a read_committed
    consumer keeps (1)."""
    if isolation:
        aborted = [(t["FirstOffset"], t["ProducerId"]) for t in partition["AbortedTransactions"] or ()]
        yield from consumer_records(partition["Records"], aborted)
        return
    for header, batch in iter_batches(partition["Records"]):
        yield from ((header, record) for record in read_batch_records(batch, header))


def _fetch(topic: str, partition: int, offset: int, isolation: int = 0) -> dict[str, Any]:
    return {
        "ReplicaId": -1,
        "MaxWaitMs": 0,
        "MinBytes": 1,
        "MaxBytes": 1 << 24,
        "IsolationLevel": isolation,
        "Topics": [
            {
                "Topic": topic,
                "Partitions": [
                    {
                        "Partition": partition,
                        "FetchOffset": offset,
                        "PartitionMaxBytes": 1 << 24,
                        "CurrentLeaderEpoch": -1,
                    }
                ],
            }
        ],
    }


def server_config(
    seed: int, configuration: Configuration, setup: Setup = Setup(), extra: dict[str, Any] | None = None
) -> ServerConfig:
    """The server a run uses: ``setup.brokers`` brokers on a virtual clock, short failure timers (and the
    ``extra`` broker properties a family's run adds)."""
    properties: dict[str, Any] = {
        "auto.leader.rebalance.enable": "false",
        "replica.lag.time.max.ms": 1000,
        "broker.session.timeout.ms": 1500,
        "broker.heartbeat.interval.ms": 300,
        "simulator.replication.tick.ms": 50,
        "simulator.election.fluvio.health.timeout.ms": 1500,
        **dict(setup.properties),
        **(extra or {}),
    }
    if configuration.transactional:  # a small __transaction_state, open transactions aborted quickly
        properties["transaction.state.log.num.partitions"] = 5
        properties["transaction.abort.timed.out.transaction.cleanup.interval.ms"] = TXN_ABORT_INTERVAL_MS
    return ServerConfig.from_properties(
        server_properties(
            brokers=[(b, None) for b in range(setup.brokers)],
            properties=properties,
            seed=seed,
            clock="virtual",
            policy=configuration.policy,
        )
    )


async def run_seed(
    seed: int,
    configuration: Configuration | None = None,
    setup: Setup = Setup(),
    checks: Iterable[Check] = DEFAULT_CHECKS,
) -> SeedResult:
    """One run (see the module docstring): ``configuration`` defaults to the seed's turn in
    :data:`~controller.losscheck.schedule.CONFIGURATIONS`; a transactional one is also held to
    :data:`~controller.losscheck.checks.TRANSACTION_CHECKS`. Runs on the caller's event loop.

    A broker started again listens on its old port (its address stays the same); when another process
    took that port meanwhile (``EADDRINUSE``), the seed runs again from the start, up to three times."""
    if configuration is None:
        configuration = CONFIGURATIONS[seed % len(CONFIGURATIONS)]
    if configuration.transactional and checks is DEFAULT_CHECKS:
        checks = (*DEFAULT_CHECKS, *TRANSACTION_CHECKS)
    return await run_schedule(
        f"seed {seed}", _Runner, seed, configuration, setup, checks, server_config(seed, configuration, setup)
    )


async def run_schedule(
    what: str,
    runner_class: type[_Runner],
    seed: int,
    configuration: Configuration,
    setup: Setup,
    checks: Iterable[Check],
    config: ServerConfig,
) -> SeedResult:
    """Plays the seed's schedule with a ``runner_class`` on a server of ``config``, then checks the run:
    the one loop of :func:`run_seed` and the share groups' run. A broker started again listens on its old
    port; when another process took that port meanwhile (``EADDRINUSE``), the run starts again from the
    beginning, up to three times."""
    for attempt in range(3):
        try:
            return await _run_once(runner_class, seed, configuration, setup, checks, config)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == 2:
                raise
            log.warning("%s: %s; running it again", what, exc)
    raise AssertionError("not reached")


async def _run_once(
    runner_class: type[_Runner],
    seed: int,
    configuration: Configuration,
    setup: Setup,
    checks: Iterable[Check],
    config: ServerConfig,
) -> SeedResult:
    steps = make_schedule(seed, setup.brokers, setup.partitions, setup.producers, setup.steps)
    errors = _ErrorRecords()
    for name in _SERVER_LOGGERS:
        logging.getLogger(name).addHandler(errors)
    server = await create_server(config)
    await server.start()
    runner = runner_class(server, seed, configuration, setup)
    try:
        watch = HighWatermarkWatch(server, setup.topic, runner.run)
        await runner.setup_topic()
        for step in steps:
            await runner.step(step)
            watch.after_step()
        await runner.recover()
        watch.after_step()
        await runner.finish()
    finally:
        await runner.close()
        await server.stop()
        for name in _SERVER_LOGGERS:
            logging.getLogger(name).removeHandler(errors)
    return SeedResult(seed, configuration, runner.run, check_run(runner.run, checks), steps, errors.messages)


#: The loggers of the server's side.
_SERVER_LOGGERS = ("controller", "protocol")


class _ErrorRecords(logging.Handler):
    """Keeps the messages of the ERROR records logged during a run (the server's own loop only)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")
