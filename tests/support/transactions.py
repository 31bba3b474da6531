"""What the transaction tests share: raw transaction requests on the wire against a server on a virtual
clock (a request that waits for replication is answered while the test moves the clock), transactional
batches, and reading a partition back as a read_committed consumer would."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from controller.coordinator_topic import coordinator_partition
from controller.embedded import ServerThread
from controller.records.records import consumer_records, iter_batches
from controller.transactions.state_log import TRANSACTION_STATE_TOPIC
from protocol.client import BlockingClient
from tests.controller.records.batches import NOW, build

TIMEOUT = 10.0
BROKERS = [(0, "a"), (1, "b"), (2, "c")]
#: A virtual clock; a crashed broker is fenced (its leaders move) after 1 s of it.
PROPERTIES: dict[str, Any] = {
    "group.initial.rebalance.delay.ms": 0,
    "broker.session.timeout.ms": 1000,
    "broker.heartbeat.interval.ms": 250,
}


@contextmanager
def virtual_cluster(**properties: Any) -> Iterator[ServerThread]:
    with ServerThread.start(
        brokers=BROKERS, clock="virtual", seed=11, properties={**PROPERTIES, **properties}
    ) as server:
        yield server


def settle(server: ServerThread, future: Future[Any], step_ms: int = 100, limit_ms: int = 60_000) -> Any:
    """Moves the virtual clock ``step_ms`` at a time until ``future`` is done (its request answered);
    AssertionError past ``limit_ms`` of virtual time or 30 s of real time."""
    moved = 0
    deadline = time.monotonic() + 30
    while not future.done():
        time.sleep(0.005)
        if future.done():
            break
        if moved >= limit_ms or time.monotonic() > deadline:
            raise AssertionError(f"no answer within {moved} ms of the cluster's clock")
        server.advance(step_ms)
        moved += step_ms
    return future.result(TIMEOUT)


def coordinator_partition_of(transactional_id: str, partitions: int = 50) -> int:
    return coordinator_partition(transactional_id, partitions)


class Wire:
    """Transaction requests sent to one broker (or the bootstrap listener) of a virtual-clock server."""

    def __init__(self, server: ServerThread, pool: ThreadPoolExecutor, address: str | None = None) -> None:
        self.server = server
        self.pool = pool
        self.client = BlockingClient.connect(address or server.bootstrap)

    def close(self) -> None:
        self.client.close()

    def send(self, name: str, body: dict[str, Any], version: int) -> dict[str, Any]:
        """The answer, the clock moved until it comes."""
        future = self.pool.submit(self.client.send, name, body, version=version, timeout=TIMEOUT * 3)
        answer: dict[str, Any] = settle(self.server, future)
        return answer

    def later(self, name: str, body: dict[str, Any], version: int) -> Future[dict[str, Any]]:
        """The answer's future, the clock left alone."""
        return self.pool.submit(self.client.send, name, body, version=version, timeout=TIMEOUT * 3)

    # -------------------------------------------------------------------------------- the transaction APIs

    def find(self, transactional_id: str, version: int = 3) -> dict[str, Any]:
        return self.send("FindCoordinatorRequest", {"Key": transactional_id, "KeyType": 1}, version)

    def init(
        self,
        transactional_id: str | None,
        timeout_ms: int = 60_000,
        version: int = 4,
        producer: tuple[int, int] = (-1, -1),
    ) -> dict[str, Any]:
        body = {
            "TransactionalId": transactional_id,
            "TransactionTimeoutMs": timeout_ms,
            "ProducerId": producer[0],
            "ProducerEpoch": producer[1],
        }
        return self.send("InitProducerIdRequest", body, version)

    def add(
        self,
        transactional_id: str,
        producer: tuple[int, int],
        partitions: dict[str, list[int]],
        version: int = 3,
    ) -> dict[tuple[str, int], int]:
        body = {
            "V3AndBelowTransactionalId": transactional_id,
            "V3AndBelowProducerId": producer[0],
            "V3AndBelowProducerEpoch": producer[1],
            "V3AndBelowTopics": [{"Name": t, "Partitions": ps} for t, ps in partitions.items()],
        }
        answer = self.send("AddPartitionsToTxnRequest", body, version)
        return {
            (t["Name"], p["PartitionIndex"]): p["PartitionErrorCode"]
            for t in answer["ResultsByTopicV3AndBelow"]
            for p in t["ResultsByPartition"]
        }

    def add_offsets(
        self, transactional_id: str, producer: tuple[int, int], group: str, version: int = 3
    ) -> int:
        body = {
            "TransactionalId": transactional_id,
            "ProducerId": producer[0],
            "ProducerEpoch": producer[1],
            "GroupId": group,
        }
        return int(self.send("AddOffsetsToTxnRequest", body, version)["ErrorCode"])

    def end(
        self, transactional_id: str, producer: tuple[int, int], commit: bool, version: int = 3
    ) -> dict[str, Any]:
        body = {
            "TransactionalId": transactional_id,
            "ProducerId": producer[0],
            "ProducerEpoch": producer[1],
            "Committed": commit,
        }
        return self.send("EndTxnRequest", body, version)

    def produce(
        self,
        transactional_id: str | None,
        topic: str,
        partition: int,
        records: bytes,
        version: int = 9,
    ) -> dict[str, Any]:
        body = {
            "TransactionalId": transactional_id,
            "Acks": -1,
            "TimeoutMs": 30_000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": partition, "Records": records}]}],
        }
        answer = self.send("ProduceRequest", body, version)
        [entry] = answer["Responses"][0]["PartitionResponses"]
        return entry

    def txn_commit(
        self,
        transactional_id: str,
        producer: tuple[int, int],
        group: str,
        offsets: dict[tuple[str, int], int],
        version: int = 3,
    ) -> dict[tuple[str, int], int]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append(
                {"PartitionIndex": partition, "CommittedOffset": offset, "CommittedMetadata": ""}
            )
        body = {
            "TransactionalId": transactional_id,
            "GroupId": group,
            "ProducerId": producer[0],
            "ProducerEpoch": producer[1],
            "Topics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()],
        }
        answer = self.send("TxnOffsetCommitRequest", body, version)
        return {
            (t["Name"], p["PartitionIndex"]): p["ErrorCode"]
            for t in answer["Topics"]
            for p in t["Partitions"]
        }

    def fetch(
        self, topic: str, partition: int, offset: int = 0, isolation: int = 1, version: int = 11
    ) -> dict[str, Any]:
        body = {
            "ReplicaId": -1,
            "MaxWaitMs": 0,
            "MinBytes": 0,
            "MaxBytes": 1 << 24,
            "IsolationLevel": isolation,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [
                {
                    "Topic": topic,
                    "Partitions": [
                        {
                            "Partition": partition,
                            "CurrentLeaderEpoch": -1,
                            "FetchOffset": offset,
                            "LastFetchedEpoch": -1,
                            "LogStartOffset": -1,
                            "PartitionMaxBytes": 1 << 24,
                        }
                    ],
                }
            ],
            "ForgottenTopicsData": [],
            "RackId": "",
        }
        answer = self.client.send("FetchRequest", body, version=version, timeout=TIMEOUT)
        [entry] = answer["Responses"][0]["Partitions"]
        return entry


def leader_address(server: ServerThread, topic: str, partition: int) -> str:
    return server.brokers[server.partition_state(topic, partition).leader]


def txn_batch(producer: tuple[int, int], sequence: int, values: list[bytes]) -> bytes:
    """A transactional batch of ``values`` (keys ``k0``, ``k1``, ...) of the producer, from ``sequence``."""
    entries = [(NOW, b"k%d" % i, value, []) for i, value in enumerate(values)]
    return build(entries, producer=(producer[0], producer[1], sequence), transactional=True)


def committed_view(records: bytes, aborted: list[dict[str, Any]] | None) -> list[bytes | None]:
    """The values a consumer keeps from a Fetch answer's records: read_committed given the answer's
    aborted transactions (:func:`controller.records.records.consumer_records`), markers skipped."""
    if aborted is None:
        return [record.value for _, record in consumer_records(records)]
    pairs = [(txn["FirstOffset"], txn["ProducerId"]) for txn in aborted]
    return [record.value for _, record in consumer_records(records, pairs)]


def control_batches(records: bytes) -> list[tuple[int, int, int]]:
    """(offset, producer id, producer epoch) of each control batch of a Fetch answer's records."""
    return [
        (h.base_offset, h.producer_id, h.producer_epoch) for h, _ in iter_batches(records) if h.is_control
    ]


def wait_for(
    condition: Callable[[], bool], server: ServerThread, step_ms: int = 100, limit_ms: int = 60_000
) -> None:
    """Moves the virtual clock until ``condition()`` holds."""
    moved = 0
    while not condition():
        if moved >= limit_ms:
            raise AssertionError(f"not reached within {moved} ms of the cluster's clock")
        server.advance(step_ms)
        moved += step_ms


__all__ = [
    "BROKERS",
    "PROPERTIES",
    "TRANSACTION_STATE_TOPIC",
    "Wire",
    "committed_view",
    "control_batches",
    "coordinator_partition_of",
    "leader_address",
    "settle",
    "txn_batch",
    "virtual_cluster",
    "wait_for",
]
