"""kafka-python's KafkaAdminClient moves partitions on the simulator (alter_partition_reassignments,
list_partition_reassignments), over a real socket, the virtual clock driven so that the new replicas copy
the log and the reassignment completes.

confluent-kafka's AdminClient (2.16) has no call for these APIs, and aiokafka's admin client none either:
kafka-python is the real client that proves them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from controller.embedded import ServerThread
from tests.clients.conftest import kafka_python_admin

CLIENT = "kafka-python"


@pytest.fixture(scope="module")
def server(wire_log) -> Iterator[ServerThread]:
    brokers = [(i, None) for i in range(4)]
    with ServerThread.start(
        placer="legacy",
        brokers=brokers,
        clock="virtual",
        seed=5,
        properties={"auto.leader.rebalance.enable": "false"},
    ) as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: ServerThread) -> Iterator[KafkaAdminClient]:
    with kafka_python_admin(server) as client:
        yield client


def test_a_reassignment_runs_to_completion(admin: KafkaAdminClient, server: ServerThread) -> None:
    admin.create_topics([NewTopic("kp-move", replica_assignments={0: [0, 1], 1: [1, 2]})])
    server.set_log_end_offset("kp-move", 0, 0, 300)
    server.set_log_end_offset("kp-move", 1, 1, 300)
    server.advance(100)
    server.set_replication(3, records_per_s=100)
    p0, p1, p9 = TopicPartition("kp-move", 0), TopicPartition("kp-move", 1), TopicPartition("kp-move", 9)
    assert admin.alter_partition_reassignments({p0: [3, 1], p1: [2, 3], p9: [0, 1]}) == {
        p0: None,
        p1: None,
        p9: UnknownTopicOrPartitionError,
    }
    ongoing = {
        p0: {"replicas": [3, 1, 0], "adding_replicas": [3], "removing_replicas": [0]},
        p1: {"replicas": [2, 3, 1], "adding_replicas": [3], "removing_replicas": [1]},
    }
    assert admin.list_partition_reassignments() == ongoing
    assert admin.list_partition_reassignments({"kp-move": [1, 5]}) == {p1: ongoing[p1]}
    assert admin.list_partition_reassignments([p0]) == {p0: ongoing[p0]}
    server.advance(2000)  # 200 of 300 records copied
    assert admin.list_partition_reassignments() == ongoing
    server.advance(1100)
    assert admin.list_partition_reassignments() == {}
    described = admin.describe_topics(["kp-move"])[0]["partitions"]
    shown = sorted(
        (p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"]) for p in described
    )
    # The ISR in the order of the leader's AlterPartition (ascending ids), as Kafka 4.4 keeps it.
    assert shown == [(0, 3, [3, 1], [1, 3]), (1, 2, [2, 3], [2, 3])]
    server.set_replication(3, records_per_s=None)


def test_errors_and_a_cancel(admin: KafkaAdminClient, server: ServerThread) -> None:
    admin.create_topics([NewTopic("kp-cancel", replica_assignments={0: [0, 1]})])
    server.set_log_end_offset("kp-cancel", 0, 0, 50)
    server.advance(100)
    server.set_replication(2, records_per_s=0)
    p0, gone = TopicPartition("kp-cancel", 0), TopicPartition("kp-nothing", 0)
    assert admin.alter_partition_reassignments({p0: [0, 2], gone: [0]}) == {
        p0: None,
        gone: UnknownTopicOrPartitionError,
    }
    assert admin.alter_partition_reassignments({p0: [7, 1]}) == {p0: InvalidReplicationAssignmentError}
    assert admin.alter_partition_reassignments({p0: None}) == {p0: None}
    assert admin.alter_partition_reassignments({p0: None}) == {p0: NoReassignmentInProgressError}
    assert admin.list_partition_reassignments() == {}
    assert server.partition_state("kp-cancel", 0).replicas == (0, 1)
    server.set_replication(2, records_per_s=None)


def test_the_records_follow_the_partition_to_its_new_brokers(
    admin: KafkaAdminClient, server: ServerThread
) -> None:
    admin.create_topics([NewTopic("kp-data", replica_assignments={0: [0, 1]})])
    producer = KafkaProducer(
        bootstrap_servers=server.bootstrap, acks=1, linger_ms=0, request_timeout_ms=5000, max_block_ms=5000
    )
    for i in range(50):
        producer.send("kp-data", value=b"v%d" % i)
    producer.flush(5)
    producer.close(5)
    server.advance(100)
    tp = TopicPartition("kp-data", 0)
    assert admin.alter_partition_reassignments({tp: [2, 3]}) == {tp: None}
    server.advance(100)  # 2 and 3 copy the log and join; the leader moves off broker 0
    state = server.partition_state("kp-data", 0)
    assert (state.replicas, state.isr, state.leader) == ((2, 3), (2, 3), 2)
    assert state.log_end_offsets == {2: 50, 3: 50}
    consumer = KafkaConsumer(
        bootstrap_servers=server.bootstrap, group_id=None, enable_auto_commit=False, consumer_timeout_ms=5000
    )
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning()
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == 50:
                break
    finally:
        consumer.close()
    assert values == [b"v%d" % i for i in range(50)]


def test_every_request_decoded_cleanly(admin: KafkaAdminClient, server: ServerThread, wire_log) -> None:
    """Runs last: everything kafka-python sent in this module decoded without unknown tagged fields."""
    wire_log.assert_clean(server)
