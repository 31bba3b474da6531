"""The transaction coordinator on the wire, on a virtual clock: ``__transaction_state`` made at the first
FindCoordinator, producer ids and epochs, a transaction's life (partitions added, batches verified and
appended, commit and abort markers written to every partition), what a read_committed consumer gets
(the last stable offset, the aborted transactions), zombies fenced, TxnOffsetCommit's offsets visible
only at commit, DescribeTransactions and ListTransactions."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from controller.embedded import ServerThread
from controller.groups.durable import OFFSETS_TOPIC, coordinator_partition
from placement_sim.cli.commands.partitions import partition_table
from protocol.codes import ErrorCode
from tests.support.transactions import (
    TRANSACTION_STATE_TOPIC,
    Wire,
    committed_view,
    control_batches,
    leader_address,
    txn_batch,
    virtual_cluster,
    wait_for,
)

TOPIC = "orders"


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with virtual_cluster() as started:
        yield started


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(4) as executor:
        yield executor


@pytest.fixture
def wire(server: ServerThread, pool: ThreadPoolExecutor) -> Iterator[Wire]:
    client = Wire(server, pool)
    client.send(
        "CreateTopicsRequest",
        {
            "Topics": [
                {"Name": TOPIC, "NumPartitions": 3, "ReplicationFactor": 3, "Assignments": [], "Configs": []}
            ],
            "timeoutMs": 5000,
        },
        4,
    )
    yield client
    client.close()


def begin(wire: Wire, transactional_id: str, partitions: list[int]) -> tuple[int, int]:
    """FindCoordinator, InitProducerId, AddPartitionsToTxn: (producer id, epoch)."""
    assert wire.find(transactional_id)["ErrorCode"] == ErrorCode.NONE
    init = wire.init(transactional_id)
    assert init["ErrorCode"] == ErrorCode.NONE
    producer = (init["ProducerId"], init["ProducerEpoch"])
    assert set(wire.add(transactional_id, producer, {TOPIC: partitions}).values()) == {ErrorCode.NONE}
    return producer


def values(wire: Wire, partition: int, isolation: int = 1) -> list[Any]:
    entry = wire.fetch(TOPIC, partition, isolation=isolation)
    assert entry["ErrorCode"] == ErrorCode.NONE
    return committed_view(entry["Records"], entry["AbortedTransactions"] if isolation else None)


def test_find_coordinator_makes_the_transaction_log_and_names_its_partition_leader(
    server: ServerThread, wire: Wire
) -> None:
    answer = wire.find("tx-1", version=1)
    assert answer["ErrorCode"] == ErrorCode.NONE
    index = coordinator_partition("tx-1", 50)
    state = server.partition_state(TRANSACTION_STATE_TOPIC, index)
    assert answer["NodeId"] == state.leader
    assert f"{answer['Host']}:{answer['Port']}" == server.brokers[state.leader]
    topic = server.server.controller.cluster.topics[TRANSACTION_STATE_TOPIC]
    assert len(topic.partitions) == 50 and len(state.replicas) == 3
    assert topic.configs["min.insync.replicas"] == "2"
    batched = wire.send("FindCoordinatorRequest", {"KeyType": 1, "CoordinatorKeys": ["tx-1", "tx-2", ""]}, 4)
    assert [(c["Key"], c["ErrorCode"]) for c in batched["Coordinators"]] == [
        ("tx-1", 0),
        ("tx-2", 0),
        ("", ErrorCode.INVALID_REQUEST),
    ]
    assert batched["Coordinators"][0]["NodeId"] == answer["NodeId"]


def test_init_producer_id_gives_an_id_then_bumps_its_epoch(server: ServerThread, wire: Wire) -> None:
    wire.find("tx")
    first = wire.init("tx")
    assert (first["ErrorCode"], first["ProducerEpoch"]) == (ErrorCode.NONE, 0)
    second = wire.init("tx")
    assert (second["ErrorCode"], second["ProducerId"], second["ProducerEpoch"]) == (0, first["ProducerId"], 1)
    # KIP-360: a producer naming its id and epoch resumes with the next epoch; a stale one is fenced.
    resumed = wire.init("tx", version=4, producer=(first["ProducerId"], 1))
    assert (resumed["ErrorCode"], resumed["ProducerEpoch"]) == (ErrorCode.NONE, 2)
    assert (
        wire.init("tx", version=4, producer=(first["ProducerId"], 0))["ErrorCode"]
        == ErrorCode.PRODUCER_FENCED
    )
    assert wire.init("tx", version=3, producer=(999, 0))["ErrorCode"] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert wire.init("tx", timeout_ms=900_001)["ErrorCode"] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert wire.init("", version=4)["ErrorCode"] == ErrorCode.INVALID_REQUEST
    idempotent = wire.init(None)
    assert idempotent["ErrorCode"] == ErrorCode.NONE and idempotent["ProducerId"] != first["ProducerId"]
    state = server.transactions()["tx"]
    assert (state["state"], state["producer_id"], state["producer_epoch"]) == (
        "Empty",
        first["ProducerId"],
        2,
    )


def test_requests_to_a_broker_that_is_not_the_coordinator_get_not_coordinator(
    server: ServerThread, wire: Wire, pool: ThreadPoolExecutor
) -> None:
    leader = wire.find("tx")["NodeId"]
    other = next(b for b in server.brokers if b != leader)
    wrong = Wire(server, pool, server.brokers[other])
    try:
        assert wrong.init("tx")["ErrorCode"] == ErrorCode.NOT_COORDINATOR
        assert wrong.end("tx", (0, 0), True)["ErrorCode"] == ErrorCode.NOT_COORDINATOR
    finally:
        wrong.close()


def test_a_committed_transaction_is_read_whole_and_an_aborted_one_not_at_all(
    server: ServerThread, wire: Wire, pool: ThreadPoolExecutor
) -> None:
    producer = begin(wire, "tx", [0, 1, 2])
    leaders = {p: Wire(server, pool, leader_address(server, TOPIC, p)) for p in range(3)}
    try:
        for p in range(3):
            entry = leaders[p].produce("tx", TOPIC, p, txn_batch(producer, 0, [b"c%d" % p, b"d%d" % p]))
            assert (entry["ErrorCode"], entry["BaseOffset"]) == (ErrorCode.NONE, 0)
        # Open: the last stable offset stays at the transaction's first offset.
        open_entry = leaders[0].fetch(TOPIC, 0)
        assert (open_entry["HighWatermark"], open_entry["LastStableOffset"]) == (2, 0)
        assert committed_view(open_entry["Records"], open_entry["AbortedTransactions"]) == []
        assert values(leaders[0], 0, isolation=0) == [b"c0", b"d0"]
        assert wire.end("tx", producer, commit=True)["ErrorCode"] == ErrorCode.NONE
        wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteCommit", server)
        for p in range(3):
            assert values(leaders[p], p) == [b"c%d" % p, b"d%d" % p]
            entry = leaders[p].fetch(TOPIC, p)
            assert control_batches(entry["Records"]) == [(2, producer[0], producer[1])]
            assert entry["LastStableOffset"] == entry["HighWatermark"] == 3
        # A second transaction, aborted: its records are listed as aborted and dropped by the reader.
        assert set(wire.add("tx", producer, {TOPIC: [0, 1]}).values()) == {ErrorCode.NONE}
        for p in (0, 1):
            assert leaders[p].produce("tx", TOPIC, p, txn_batch(producer, 2, [b"x%d" % p]))["ErrorCode"] == 0
        assert wire.end("tx", producer, commit=False)["ErrorCode"] == ErrorCode.NONE
        wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteAbort", server)
        for p in (0, 1):
            entry = leaders[p].fetch(TOPIC, p)
            assert entry["AbortedTransactions"] == [{"ProducerId": producer[0], "FirstOffset": 3}]
            assert committed_view(entry["Records"], entry["AbortedTransactions"]) == [b"c%d" % p, b"d%d" % p]
            assert values(leaders[p], p, isolation=0) == [b"c%d" % p, b"d%d" % p, b"x%d" % p]
        assert leaders[2].fetch(TOPIC, 2)["AbortedTransactions"] == []
    finally:
        for client in leaders.values():
            client.close()


def test_the_last_stable_offset_in_list_offsets_and_the_open_transaction_in_describe_producers(
    server: ServerThread, wire: Wire, pool: ThreadPoolExecutor
) -> None:
    producer = begin(wire, "tx", [0])
    leader = Wire(server, pool, leader_address(server, TOPIC, 0))
    try:
        plain = leader.send(
            "ProduceRequest",
            {
                "Acks": -1,
                "TimeoutMs": 30_000,
                "TopicData": [
                    {
                        "Name": TOPIC,
                        "PartitionData": [{"Index": 0, "Records": txn_batch((-1, -1), -1, [b"p"])}],
                    }
                ],
            },
            9,
        )
        assert (
            plain["Responses"][0]["PartitionResponses"][0]["ErrorCode"]
            == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
        assert leader.produce("tx", TOPIC, 0, txn_batch(producer, 0, [b"a", b"b"]))["ErrorCode"] == 0

        def latest(isolation: int) -> int:
            answer = leader.send(
                "ListOffsetsRequest",
                {
                    "ReplicaId": -1,
                    "IsolationLevel": isolation,
                    "Topics": [
                        {
                            "Name": TOPIC,
                            "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": -1}],
                        }
                    ],
                },
                7,
            )
            return int(answer["Topics"][0]["Partitions"][0]["Offset"])

        assert (latest(0), latest(1)) == (2, 0)
        assert server.partition_state(TOPIC, 0).last_stable_offset == 0
        [shown] = leader.client.partition_state([TOPIC])[0]["Partitions"][:1]
        assert (shown["HighWatermark"], shown["LastStableOffset"]) == (2, 0)
        assert "2 (LSO 0)" in partition_table(leader.client.partition_state([TOPIC]))[1]
        described = leader.send(
            "DescribeProducersRequest", {"Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]}, 0
        )
        [active] = described["Topics"][0]["Partitions"][0]["ActiveProducers"]
        assert (active["ProducerId"], active["CurrentTxnStartOffset"], active["CoordinatorEpoch"]) == (
            producer[0],
            0,
            -1,
        )
        assert wire.end("tx", producer, commit=True)["ErrorCode"] == 0
        wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteCommit", server)
        assert (latest(0), latest(1)) == (3, 3)
        assert server.partition_state(TOPIC, 0).last_stable_offset == 3
        described = leader.send(
            "DescribeProducersRequest", {"Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]}, 0
        )
        [active] = described["Topics"][0]["Partitions"][0]["ActiveProducers"]
        coordinator_epoch = server.partition_state(
            TRANSACTION_STATE_TOPIC, coordinator_partition("tx", 50)
        ).leader_epoch
        assert (active["CurrentTxnStartOffset"], active["CoordinatorEpoch"]) == (-1, coordinator_epoch)
    finally:
        leader.close()


@pytest.mark.parametrize(
    ("version", "error"), [(9, ErrorCode.INVALID_TXN_STATE), (11, ErrorCode.TRANSACTION_ABORTABLE)]
)
def test_a_batch_to_a_partition_not_in_the_transaction_is_refused(
    server: ServerThread, wire: Wire, pool: ThreadPoolExecutor, version: int, error: ErrorCode
) -> None:
    producer = begin(wire, "tx", [0])
    leader = Wire(server, pool, leader_address(server, TOPIC, 1))
    try:
        entry = leader.produce("tx", TOPIC, 1, txn_batch(producer, 0, [b"x"]), version=version)
        assert entry["ErrorCode"] == error
        assert leader.fetch(TOPIC, 1, isolation=0)["HighWatermark"] == 0
    finally:
        leader.close()


def test_a_zombie_is_fenced_its_transaction_aborted_and_its_late_batches_refused(
    server: ServerThread, wire: Wire, pool: ThreadPoolExecutor
) -> None:
    zombie = begin(wire, "tx", [0])
    leader = Wire(server, pool, leader_address(server, TOPIC, 0))
    try:
        assert leader.produce("tx", TOPIC, 0, txn_batch(zombie, 0, [b"z0"]))["ErrorCode"] == 0
        # A new producer with the same transactional id: the open transaction is aborted first.
        assert wire.init("tx")["ErrorCode"] == ErrorCode.CONCURRENT_TRANSACTIONS
        wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteAbort", server)
        fresh = wire.init("tx")
        assert fresh["ErrorCode"] == ErrorCode.NONE and fresh["ProducerEpoch"] > zombie[1] + 1
        late = leader.produce("tx", TOPIC, 0, txn_batch(zombie, 1, [b"z1"]))
        assert late["ErrorCode"] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert wire.end("tx", zombie, commit=True)["ErrorCode"] == ErrorCode.PRODUCER_FENCED
        assert wire.end("tx", zombie, commit=True, version=1)["ErrorCode"] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert wire.add("tx", zombie, {TOPIC: [1]}) == {(TOPIC, 1): ErrorCode.PRODUCER_FENCED}
        entry = leader.fetch(TOPIC, 0)
        assert committed_view(entry["Records"], entry["AbortedTransactions"]) == []
        assert entry["AbortedTransactions"] == [{"ProducerId": zombie[0], "FirstOffset": 0}]
    finally:
        leader.close()


def test_end_txn_v5_bumps_the_epoch_at_every_end_and_a_retry_is_answered_the_same(
    server: ServerThread, wire: Wire, pool: ThreadPoolExecutor
) -> None:
    producer = begin(wire, "tx", [0])
    leader = Wire(server, pool, leader_address(server, TOPIC, 0))
    try:
        assert leader.produce("tx", TOPIC, 0, txn_batch(producer, 0, [b"a"]), version=11)["ErrorCode"] == 0
        ended = wire.end("tx", producer, commit=True, version=5)
        bumped = (ended["ProducerId"], ended["ProducerEpoch"])
        assert (ended["ErrorCode"], bumped) == (ErrorCode.NONE, (producer[0], producer[1] + 1))
        wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteCommit", server)
        retry = wire.end("tx", producer, commit=True, version=5)
        assert (retry["ErrorCode"], retry["ProducerEpoch"]) == (ErrorCode.NONE, bumped[1])
        # The next transaction: Produce v12 adds its partition itself (KIP-890 part 2), at sequence 0.
        entry = leader.produce("tx", TOPIC, 0, txn_batch(bumped, 0, [b"b"]), version=12)
        assert (entry["ErrorCode"], entry["BaseOffset"]) == (ErrorCode.NONE, 2)
        assert server.transactions()["tx"]["partitions"] == [(TOPIC, 0)]
        assert wire.end("tx", bumped, commit=False, version=5)["ProducerEpoch"] == bumped[1] + 1
        wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteAbort", server)
        assert values(leader, 0) == [b"a"]
        assert [epoch for _, _, epoch in control_batches(leader.fetch(TOPIC, 0)["Records"])] == [1, 2]
    finally:
        leader.close()


def test_end_txn_answers_for_each_state(server: ServerThread, wire: Wire) -> None:
    wire.find("tx")
    init = wire.init("tx")
    producer = (init["ProducerId"], init["ProducerEpoch"])
    assert wire.end("tx", producer, commit=True)["ErrorCode"] == ErrorCode.INVALID_TXN_STATE
    assert (
        wire.end("tx", (producer[0] + 100, 0), commit=True)["ErrorCode"]
        == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    )
    assert wire.end("other", producer, commit=True)["ErrorCode"] == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert set(wire.add("tx", producer, {TOPIC: [0]}).values()) == {0}
    assert wire.end("tx", producer, commit=False)["ErrorCode"] == ErrorCode.NONE
    # While its markers are written (a transition in progress) any end is CONCURRENT_TRANSACTIONS; once
    # complete, the same end is answered NONE (a retry) and the other INVALID_TXN_STATE.
    assert server.transactions()["tx"]["state"] == "PrepareAbort"
    assert wire.end("tx", producer, commit=True)["ErrorCode"] == ErrorCode.CONCURRENT_TRANSACTIONS
    wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteAbort", server)
    assert wire.end("tx", producer, commit=False)["ErrorCode"] == ErrorCode.NONE
    assert wire.end("tx", producer, commit=True)["ErrorCode"] == ErrorCode.INVALID_TXN_STATE
    unknown = wire.add("tx", producer, {TOPIC: [0], "no-such-topic": [0]})
    assert unknown == {
        (TOPIC, 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_transactional_offsets_are_visible_only_once_committed(
    server: ServerThread, wire: Wire, pool: ThreadPoolExecutor
) -> None:
    producer = begin(wire, "tx", [0])
    group = "g"
    assert wire.send("FindCoordinatorRequest", {"Key": group, "KeyType": 0}, 3)["ErrorCode"] == 0
    group_leader = server.partition_state(OFFSETS_TOPIC, coordinator_partition(group, 50)).leader
    coordinator = Wire(server, pool, server.brokers[group_leader])

    def fetch(stable: bool) -> tuple[int, int]:
        answer = coordinator.send(
            "OffsetFetchRequest",
            {
                "Groups": [{"GroupId": group, "Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]}],
                "RequireStable": stable,
            },
            8,
        )
        [p] = answer["Groups"][0]["Topics"][0]["Partitions"]
        return p["ErrorCode"], p["CommittedOffset"]

    try:
        assert coordinator.txn_commit("tx", producer, group, {(TOPIC, 0): 5}) == {
            (TOPIC, 0): ErrorCode.INVALID_TXN_STATE
        }
        assert wire.add_offsets("tx", producer, group) == ErrorCode.NONE
        assert coordinator.txn_commit("tx", producer, group, {(TOPIC, 0): 5}) == {(TOPIC, 0): ErrorCode.NONE}
        assert fetch(stable=False) == (ErrorCode.NONE, -1)
        assert fetch(stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert wire.end("tx", producer, commit=True)["ErrorCode"] == 0
        wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteCommit", server)
        assert fetch(stable=True) == (ErrorCode.NONE, 5)
        # An aborted transaction's offsets never show.
        assert wire.add_offsets("tx", producer, group) == ErrorCode.NONE
        assert coordinator.txn_commit("tx", producer, group, {(TOPIC, 0): 9}) == {(TOPIC, 0): ErrorCode.NONE}
        assert wire.end("tx", producer, commit=False)["ErrorCode"] == 0
        wait_for(lambda: server.transactions()["tx"]["state"] == "CompleteAbort", server)
        assert fetch(stable=True) == (ErrorCode.NONE, 5)
        assert server.committed_offsets(group) == {(TOPIC, 0): 5}
    finally:
        coordinator.close()


def test_describe_and_list_transactions(server: ServerThread, wire: Wire) -> None:
    producer = begin(wire, "tx-a", [0, 2])
    wire.find("tx-b")
    wire.init("tx-b")
    server.advance(5000)
    described = wire.send("DescribeTransactionsRequest", {"TransactionalIds": ["tx-a", "nope", ""]}, 0)
    by_id = {s["TransactionalId"]: s for s in described["TransactionStates"]}
    a = by_id["tx-a"]
    assert (a["ErrorCode"], a["TransactionState"], a["ProducerId"], a["ProducerEpoch"]) == (
        0,
        "Ongoing",
        *producer,
    )
    assert a["Topics"] == [{"Topic": TOPIC, "Partitions": [0, 2]}]
    assert a["TransactionTimeoutMs"] == 60_000 and a["TransactionStartTimeMs"] >= 0
    assert by_id["nope"]["ErrorCode"] in (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, ErrorCode.NOT_COORDINATOR)
    assert by_id[""]["ErrorCode"] == ErrorCode.INVALID_REQUEST

    def listed(**filters: Any) -> tuple[int, list[str], list[tuple[str, str]]]:
        body = {"StateFilters": [], "ProducerIdFilters": [], "DurationFilter": -1, **filters}
        answer = wire.send("ListTransactionsRequest", body, 1)
        return (
            answer["ErrorCode"],
            answer["UnknownStateFilters"],
            sorted((s["TransactionalId"], s["TransactionState"]) for s in answer["TransactionStates"]),
        )

    assert listed() == (0, [], [("tx-a", "Ongoing"), ("tx-b", "Empty")])
    assert listed(StateFilters=["Ongoing", "Nonsense"]) == (0, ["Nonsense"], [("tx-a", "Ongoing")])
    assert listed(ProducerIdFilters=[producer[0]]) == (0, [], [("tx-a", "Ongoing")])
    # The duration counts from the transaction's start; an id without one (start -1) passes any duration,
    # as Kafka's listTransactionStates compares them.
    assert listed(DurationFilter=4000) == (0, [], [("tx-a", "Ongoing"), ("tx-b", "Empty")])
    assert listed(DurationFilter=10_000) == (0, [], [("tx-b", "Empty")])
