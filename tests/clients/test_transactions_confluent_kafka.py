"""confluent-kafka (librdkafka) transactions against the simulator: a transactional producer (init, begin,
produce to 3 partitions, send_offsets_to_transaction, commit; a second transaction aborted) read back by
a read_committed consumer that gets exactly the committed records; the same through the crash of the
coordinator's broker between produce and commit, and through the crash of a partition's leader; and a
zombie fenced, its late records refused and never seen."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.support.groups import wait_for
from tests.support.txn_clients import TIMEOUT, coordinator_of, create, read_committed, txn_cluster

CLIENT = "confluent-kafka transactions"
TOPIC = "out"


@pytest.fixture
def server(wire_log: WireLog) -> Iterator[ServerThread]:
    with txn_cluster() as started:
        create(started, TOPIC)
        create(started, "in", 1)
        yield started
    wire_log.assert_clean(started)


def producer(server: ServerThread, transactional_id: str) -> Producer:
    return Producer(
        {
            "bootstrap.servers": server.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 20_000,
            "socket.timeout.ms": 5000,
            "message.timeout.ms": 20_000,
            "log_level": 0,
        }
    )


def group_metadata(server: ServerThread, group: str) -> object:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group, "log_level": 0})
    try:
        return consumer.consumer_group_metadata()
    finally:
        consumer.close()


def produce_round(p: Producer, tag: str, count: int = 9) -> list[tuple[int, bytes]]:
    sent = [(i % 3, f"{tag}-{i}".encode()) for i in range(count)]
    for partition, value in sent:
        p.produce(TOPIC, value=value, partition=partition)
    assert p.flush(TIMEOUT) == 0
    return sent


def test_commit_with_offsets_and_abort_read_back_by_a_read_committed_consumer(server: ServerThread) -> None:
    p = producer(server, "txn-app")
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    committed = produce_round(p, "committed")
    p.send_offsets_to_transaction([TopicPartition("in", 0, 42)], group_metadata(server, "app"), TIMEOUT)
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    produce_round(p, "aborted")
    p.send_offsets_to_transaction([TopicPartition("in", 0, 99)], group_metadata(server, "app"), TIMEOUT)
    p.abort_transaction(TIMEOUT)
    got = read_committed(server, TOPIC, 3, expected=len(committed))
    assert sorted(got) == sorted(committed)
    assert server.committed_offsets("app") == {("in", 0): 42}
    state = server.transactions()["txn-app"]
    assert state["state"] == "CompleteAbort" and state["partitions"] == []
    assert server.lost_records() == [] and server.lost_transaction_records() == []


def test_the_coordinators_broker_crashes_between_produce_and_commit(server: ServerThread) -> None:
    p = producer(server, "txn-crash")
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    sent = produce_round(p, "through-crash")
    old = coordinator_of(server, "txn-crash")
    server.stop_broker(old, "crash")
    wait_for(lambda: coordinator_of(server, "txn-crash") not in (old, -1), TIMEOUT)
    p.commit_transaction(TIMEOUT)
    assert sorted(read_committed(server, TOPIC, 3, expected=len(sent))) == sorted(sent)
    assert server.transactions()["txn-crash"]["state"] == "CompleteCommit"
    assert server.transactions()["txn-crash"]["coordinator"] != old


def test_a_partition_leader_crashes_between_produce_and_commit(server: ServerThread) -> None:
    p = producer(server, "txn-leader")
    p.init_transactions(TIMEOUT)
    coordinator = coordinator_of(server, "txn-leader")
    victim = next(i for i in range(3) if server.partition_state(TOPIC, i).leader != coordinator)
    old = server.partition_state(TOPIC, victim).leader
    p.begin_transaction()
    sent = produce_round(p, "first")
    server.stop_broker(old, "crash")
    wait_for(lambda: server.partition_state(TOPIC, victim).leader not in (old, -1), TIMEOUT)
    sent += produce_round(p, "second")
    p.commit_transaction(TIMEOUT)
    assert sorted(read_committed(server, TOPIC, 3, expected=len(sent))) == sorted(sent)


def test_a_zombie_is_fenced_and_nothing_of_it_is_visible(server: ServerThread) -> None:
    zombie = producer(server, "txn-zombie")
    zombie.init_transactions(TIMEOUT)
    zombie.begin_transaction()
    produce_round(zombie, "zombie", 3)
    successor = producer(server, "txn-zombie")
    successor.init_transactions(TIMEOUT)  # fences the zombie: its open transaction is aborted
    successor.begin_transaction()
    kept = produce_round(successor, "successor", 3)
    successor.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException) as raised:
        zombie.produce(TOPIC, value=b"zombie-late", partition=0)
        zombie.flush(10)  # the late batch is refused (INVALID_PRODUCER_EPOCH): fatal for librdkafka
        zombie.commit_transaction(TIMEOUT)
    error = raised.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED
    assert sorted(read_committed(server, TOPIC, 3, expected=len(kept))) == sorted(kept)
