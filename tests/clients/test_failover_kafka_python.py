"""kafka-python's KafkaAdminClient through a broker failure: Metadata before and after the session
timeout, Fluvio's immediate failover, and ElectLeaders' answers.

kafka-python shows everything Metadata carries: ``describe_topics`` gives each partition's leader,
leader epoch, ISR and offline replicas. ``describe_cluster`` sends DescribeCluster asking for fenced
brokers too, so a fenced broker stays in its list, marked ``is_fenced``. After a crash, a request that
kafka-python sends to the crashed broker fails with KafkaConnectionError and is not retried; the tests
ask again (see ``answered``).

``elect_leaders(election_type, {topic: [partitions]})`` raises the error class of the first partition
that failed (its message carries the whole response), except ELECTION_NOT_NEEDED, which it ignores;
with ``raise_errors=False`` it returns the ElectLeadersResponse and every code is there to read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    EligibleLeadersNotAvailableError,
    KafkaConnectionError,
    PreferredLeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)

from controller.embedded import ServerThread
from tests.clients.conftest import FAILOVER_LAYOUT, SESSION_TIMEOUT_MS
from tests.clients.test_kafka_python import admin_for

CLIENT = "kafka-python"
PREFERRED, UNCLEAN = 0, 1
T = TypeVar("T")


@pytest.fixture(scope="module")
def failover_admin(failover_cluster: ServerThread) -> Iterator[KafkaAdminClient]:
    client = admin_for(failover_cluster, 5000)
    yield client
    client.close()


@pytest.fixture(scope="module")
def fluvio_admin(fluvio_cluster: ServerThread) -> Iterator[KafkaAdminClient]:
    client = admin_for(fluvio_cluster, 5000)
    yield client
    client.close()


@pytest.fixture(scope="module")
def election_admin(election_cluster: ServerThread) -> Iterator[KafkaAdminClient]:
    client = admin_for(election_cluster, 5000)
    yield client
    client.close()


def create_failover_topics(admin: KafkaAdminClient) -> None:
    """Creates orders and solo the way a user would (CreateTopics goes to the controller, broker 0)."""
    admin.create_topics(
        {
            "orders": {"num_partitions": 3, "replication_factor": 3},
            "solo": {"num_partitions": 1, "replication_factor": 1},
        }
    )
    topics = admin.describe_topics(["orders", "solo"])
    assert {t["name"]: [p["replica_nodes"] for p in t["partitions"]] for t in topics} == FAILOVER_LAYOUT


def answered(call: Callable[[], T]) -> T:
    """``call()``, made again (at most twice) while it fails with KafkaConnectionError.

    kafka-python does not retry an admin request whose broker went away: after a crash, a request can go
    out on the crashed broker's closed connection, or to its listener (refused) while Metadata still
    lists it. Each failure puts that broker in reconnect backoff, and the next try goes to another.
    """
    for attempt in range(3):
        try:
            return call()
        except KafkaConnectionError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def partitions(admin: KafkaAdminClient, *names: str) -> dict[str, tuple[Any, ...]]:
    """``topic-partition`` -> (error code, leader, leader epoch, ISR, offline replicas), from Metadata."""
    return {
        f"{t['name']}-{p['partition_index']}": (
            p["error_code"],
            p["leader_id"],
            p["leader_epoch"],
            p["isr_nodes"],
            p["offline_replicas"],
        )
        for t in answered(lambda: admin.describe_topics(list(names)))
        for p in t["partitions"]
    }


def fenced(admin: KafkaAdminClient) -> dict[int, bool]:
    return {b["broker_id"]: b["is_fenced"] for b in answered(admin.describe_cluster)["brokers"]}


def codes(response: Any) -> dict[str, int]:
    """``topic-partition`` -> error code, from an ElectLeadersResponse."""
    return {
        f"{r.topic}-{p.partition_id}": p.error_code
        for r in response.replica_election_results
        for p in r.partition_result
    }


def test_a_crashed_leader_leads_in_metadata_until_its_session_times_out(
    failover_cluster: ServerThread, failover_admin: KafkaAdminClient
):
    server, admin = failover_cluster, failover_admin
    create_failover_topics(admin)
    healthy = {
        "orders-0": (0, 0, 0, [0, 1, 2], []),
        "orders-1": (0, 1, 0, [1, 2, 0], []),
        "orders-2": (0, 2, 0, [2, 0, 1], []),
        "solo-0": (0, 1, 0, [1], []),
    }
    assert partitions(admin, "orders", "solo") == healthy
    server.stop_broker(1, "crash")
    server.advance(SESSION_TIMEOUT_MS - 1)
    # The controller has not noticed yet: broker 1 is listed, unfenced, and still leads (as in Kafka).
    assert partitions(admin, "orders", "solo") == healthy
    assert fenced(admin) == {0: False, 1: False, 2: False}
    server.advance(1)
    assert server.now() == SESSION_TIMEOUT_MS
    assert partitions(admin, "orders", "solo") == {
        "orders-0": (0, 0, 0, [0, 2], [1]),
        "orders-1": (0, 2, 1, [2, 0], [1]),  # the first in-sync replica in assignment order, epoch + 1
        "orders-2": (0, 2, 0, [2, 0], [1]),
        "solo-0": (
            5,
            -1,
            1,
            [],
            [1],
        ),  # LEADER_NOT_AVAILABLE; its last member left the ISR for the ELR (KIP-966)
    }
    assert fenced(admin) == {0: False, 1: True, 2: False}


def test_with_fluvio_rules_the_new_leader_is_there_right_after_the_crash(
    fluvio_cluster: ServerThread, fluvio_admin: KafkaAdminClient
):
    server, admin = fluvio_cluster, fluvio_admin
    create_failover_topics(admin)
    server.stop_broker(1, "crash")
    assert server.now() == 0  # no time has passed: the SC saw the SPU's connection drop
    assert partitions(admin, "orders", "solo") == {
        "orders-0": (0, 0, 0, [0, 2], [1]),
        # Fluvio takes the leader away first (epoch 1), then promotes the candidate (epoch 2).
        "orders-1": (0, 2, 2, [2, 0], [1]),
        "orders-2": (0, 2, 0, [2, 0], [1]),
        "solo-0": (5, -1, 1, [], [1]),  # Fluvio's in-sync set holds live replicas only: none is left
    }
    assert fenced(admin) == {0: False, 1: True, 2: False}


def test_preferred_elections(election_cluster: ServerThread, election_admin: KafkaAdminClient):
    admin = election_admin
    # ELECTION_NOT_NEEDED is not raised, but it is in the response.
    assert codes(admin.elect_leaders(PREFERRED, {"home": [0]})) == {"home-0": 84}
    with pytest.raises(PreferredLeaderNotAvailableError):
        admin.elect_leaders(PREFERRED, {"moved": [0]})
    with pytest.raises(PreferredLeaderNotAvailableError):
        admin.elect_leaders(PREFERRED, {"gone": [0]})  # leaderless, and its only replica is down
    assert partitions(admin, "back")["back-0"] == (0, 0, 1, [0, 2], [])
    assert codes(admin.elect_leaders(PREFERRED, {"back": [0]})) == {"back-0": 0}
    assert partitions(admin, "back")["back-0"] == (0, 2, 2, [0, 2], [])


def test_unclean_elections(election_cluster: ServerThread, election_admin: KafkaAdminClient):
    admin = election_admin
    assert codes(admin.elect_leaders(UNCLEAN, {"home": [0], "moved": [0]})) == {"home-0": 84, "moved-0": 84}
    with pytest.raises(EligibleLeadersNotAvailableError):
        admin.elect_leaders(UNCLEAN, {"gone": [0]})
    assert partitions(admin, "stale") == {"stale-0": (5, -1, 1, [], [3])}
    assert codes(admin.elect_leaders(UNCLEAN, {"stale": [0]})) == {"stale-0": 0}
    # 4 leads although it was not in the ISR: the ISR is reset to it alone.
    assert partitions(admin, "stale") == {"stale-0": (0, 4, 2, [4], [3])}


def test_unknown_partitions_and_topics(election_cluster: ServerThread, election_admin: KafkaAdminClient):
    admin = election_admin
    for election_type in (PREFERRED, UNCLEAN):
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.elect_leaders(election_type, {"home": [3]})
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.elect_leaders(election_type, {"no-such-topic": [0]})


def test_every_answer_is_in_the_response_when_errors_are_not_raised(
    election_cluster: ServerThread, election_admin: KafkaAdminClient
):
    response = election_admin.elect_leaders(
        PREFERRED, {"home": [0, 3], "moved": [0], "gone": [0], "no-such-topic": [0]}, raise_errors=False
    )
    assert response.error_code == 0
    assert codes(response) == {"home-0": 84, "home-3": 3, "moved-0": 80, "gone-0": 80, "no-such-topic-0": 3}


def test_an_exception_for_one_partition_does_not_undo_the_others(
    election_cluster: ServerThread, election_admin: KafkaAdminClient
):
    admin = election_admin
    with pytest.raises(PreferredLeaderNotAvailableError):
        admin.elect_leaders(PREFERRED, {"back": [1], "moved": [0]})
    assert partitions(admin, "back")["back-1"] == (0, 2, 2, [0, 2], [])  # elected all the same


def test_every_request_decoded_cleanly(failover_cluster, fluvio_cluster, election_cluster, wire_log):
    """Runs last: everything kafka-python sent in this module decoded without unknown tagged fields."""
    for server in (failover_cluster, fluvio_cluster, election_cluster):
        wire_log.assert_clean(server)
