"""The group coordinator as a broker, on the wire with a virtual clock: ``__consumer_offsets`` made at the
first FindCoordinator, the coordinator is its partition's leader, commits answered once the high watermark
covers them, and a coordinator that moves: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, offsets kept
after a clean election and lost (and listed) after an unclean one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from controller.embedded import ServerThread
from controller.groups.coordinator import OffsetCommit
from controller.groups.durable import (
    COMPACT_AT,
    LOAD_MS,
    OFFSETS_TOPIC,
    coordinator_partition,
    java_string_hash,
)
from protocol.client import BlockingClient
from protocol.codes import ErrorCode

BROKERS = [(0, "a"), (1, "b"), (2, "c")]
TIMEOUT = 5.0


@pytest.fixture
def server() -> Iterator[ServerThread]:
    props = {"group.initial.rebalance.delay.ms": 0, "unclean.leader.election.enable": "true"}
    with ServerThread.start(brokers=BROKERS, clock="virtual", seed=3, properties=props) as started:
        # The topic the tests commit offsets of: Kafka refuses commits of partitions it does not know.
        started.call(lambda: started.server.controller.cluster.add_topic("orders", [[0, 1, 2], [1, 2, 0]]))
        yield started


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(4) as executor:
        yield executor


def later(pool: ThreadPoolExecutor, fn: Callable[[], Any]) -> Future[Any]:
    return pool.submit(fn)


def find(client: BlockingClient, group: str, version: int = 3) -> dict[str, Any]:
    return client.send(
        "FindCoordinatorRequest", {"Key": group, "KeyType": 0}, version=version, timeout=TIMEOUT
    )


def commit(
    client: BlockingClient, group: str, offsets: dict[int, int], generation: int = -1, member: str = ""
) -> list[int]:
    response = client.send(
        "OffsetCommitRequest",
        {
            "GroupId": group,
            "GenerationIdOrMemberEpoch": generation,
            "MemberId": member,
            "GroupInstanceId": None,
            "Topics": [
                {
                    "Name": "orders",
                    "Partitions": [
                        {
                            "PartitionIndex": p,
                            "CommittedOffset": o,
                            "CommittedLeaderEpoch": -1,
                            "CommittedMetadata": "",
                        }
                        for p, o in offsets.items()
                    ],
                }
            ],
        },
        version=8,
        timeout=TIMEOUT,
    )
    return [p["ErrorCode"] for t in response["Topics"] for p in t["Partitions"]]


def committed(
    server: ServerThread,
    pool: ThreadPoolExecutor,
    client: BlockingClient,
    broker: int,
    group: str,
    offsets: dict[int, int],
    log_end: int,
) -> list[int]:
    """A commit at the coordinator ``broker``, whose record takes its log to ``log_end``; answered after
    one replication tick (the followers copy it, the high watermark covers it): the error codes."""
    index = coordinator_partition(group, 50)
    pending = later(pool, lambda: commit(client, group, offsets))
    server.wait_until(
        lambda: server.partition_state(OFFSETS_TOPIC, index).log_end_offsets[broker] == log_end, TIMEOUT
    )
    server.advance(100)
    return list(pending.result(TIMEOUT))


def heartbeat(client: BlockingClient, group: str, member: str) -> int:
    response = client.send(
        "HeartbeatRequest",
        {"GroupId": group, "GenerationId": 1, "MemberId": member, "GroupInstanceId": None},
        version=4,
        timeout=TIMEOUT,
    )
    return int(response["ErrorCode"])


def fetch(client: BlockingClient, group: str) -> tuple[int, dict[int, int]]:
    response = client.send(
        "OffsetFetchRequest",
        {"Groups": [{"GroupId": group, "Topics": None}], "RequireStable": False},
        version=8,
        timeout=TIMEOUT,
    )
    [g] = response["Groups"]
    return g["ErrorCode"], {
        p["PartitionIndex"]: p["CommittedOffset"] for t in g["Topics"] for p in t["Partitions"]
    }


def test_java_string_hash_and_the_coordinator_partition_follow_kafka() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -(2**31)  # Utils.abs maps it to 0
    assert coordinator_partition("polygenelubricants", 50) == 0
    assert coordinator_partition("hello", 50) == 99162322 % 50
    assert java_string_hash("\u00e9t\u00e9") == (0xE9 * 31 * 31 + ord("t") * 31 + 0xE9)


def test_find_coordinator_makes_the_offsets_topic_and_names_its_partition_leader(
    server: ServerThread,
) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        answer = find(client, "g1", version=0)
        assert answer["ErrorCode"] == 0
        partition = server.partition_state(OFFSETS_TOPIC, coordinator_partition("g1", 50))
        assert answer["NodeId"] == partition.leader
        assert f"{answer['Host']}:{answer['Port']}" == server.brokers[partition.leader]
        assert len(partition.replicas) == 3
        assert len(server.server.controller.cluster.topics[OFFSETS_TOPIC].partitions) == 50
        batched = client.send(
            "FindCoordinatorRequest", {"KeyType": 0, "CoordinatorKeys": ["g1", "g2", ""]}, version=4
        )
        assert [(c["Key"], c["ErrorCode"]) for c in batched["Coordinators"]] == [
            ("g1", 0),
            ("g2", 0),
            ("", ErrorCode.INVALID_REQUEST),
        ]
        assert batched["Coordinators"][0]["NodeId"] == answer["NodeId"]
        share = client.send("FindCoordinatorRequest", {"KeyType": 2, "CoordinatorKeys": ["s"]}, version=6)
        assert share["Coordinators"][0]["ErrorCode"] == ErrorCode.INVALID_REQUEST


def test_group_requests_before_the_offsets_topic_exists_get_not_coordinator(server: ServerThread) -> None:
    # No broker holds the group's partition before FindCoordinator makes the topic (Kafka 4's answer).
    with BlockingClient.connect(server.bootstrap) as client:
        assert commit(client, "early", {0: 1}) == [ErrorCode.NOT_COORDINATOR]
        assert commit(client, "early", {0: 1, 7: 1}) == [
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ]


def test_a_commit_is_answered_once_the_high_watermark_covers_it(server: ServerThread, pool) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        broker = find(client, "g")["NodeId"]
    with BlockingClient.connect(server.brokers[broker]) as coordinator:
        pending = later(pool, lambda: commit(coordinator, "g", {0: 5, 1: 7}))
        index = coordinator_partition("g", 50)
        server.wait_until(
            lambda: server.partition_state(OFFSETS_TOPIC, index).log_end_offsets[broker] == 2, TIMEOUT
        )
        assert not pending.done()
        assert server.partition_state(OFFSETS_TOPIC, index).high_watermark == 0
        server.advance(100)  # one replication tick: the followers copy, the high watermark moves
        assert pending.result(TIMEOUT) == [0, 0]
        assert server.committed_offsets("g") == {("orders", 0): 5, ("orders", 1): 7}
        assert fetch(coordinator, "g") == (0, {0: 5, 1: 7})


def test_requests_to_a_broker_that_is_not_the_coordinator_get_not_coordinator(server: ServerThread) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        broker = find(client, "g")["NodeId"]
    other = next(b for b in server.brokers if b != broker)
    with BlockingClient.connect(server.brokers[other]) as wrong:
        assert commit(wrong, "g", {0: 1}) == [ErrorCode.NOT_COORDINATOR]
        heartbeat = wrong.send(
            "HeartbeatRequest", {"GroupId": "g", "GenerationId": 1, "MemberId": "m"}, version=1
        )
        assert heartbeat["ErrorCode"] == ErrorCode.NOT_COORDINATOR


def join(client: BlockingClient, member_id: str = "") -> dict[str, Any]:
    return client.send(
        "JoinGroupRequest",
        {
            "GroupId": "g",
            "SessionTimeoutMs": 10_000,
            "RebalanceTimeoutMs": 10_000,
            "MemberId": member_id,
            "GroupInstanceId": None,
            "ProtocolType": "consumer",
            "Protocols": [{"Name": "range", "Metadata": b"meta"}],
        },
        version=5,
        timeout=TIMEOUT,
    )


def test_join_sync_heartbeat_and_describe_on_the_wire(server: ServerThread, pool) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        broker = find(client, "g")["NodeId"]
    with BlockingClient.connect(server.brokers[broker]) as c:
        first = join(c)
        assert first["ErrorCode"] == ErrorCode.MEMBER_ID_REQUIRED
        member = first["MemberId"]
        parked = later(pool, lambda: join(c, member))
        server.wait_until(
            lambda: (server.group_state("g") or {}).get("state") == "PreparingRebalance", TIMEOUT
        )
        server.advance(0)  # the initial delay (0) is over
        joined = parked.result(TIMEOUT)
        assert (joined["ErrorCode"], joined["GenerationId"], joined["Leader"], joined["ProtocolName"]) == (
            0,
            1,
            member,
            "range",
        )
        assert joined["Members"] == [{"MemberId": member, "GroupInstanceId": None, "Metadata": b"meta"}]
        index = coordinator_partition("g", 50)
        written = server.partition_state(OFFSETS_TOPIC, index).log_end_offsets[broker]
        pending = later(
            pool,
            lambda: c.send(
                "SyncGroupRequest",
                {
                    "GroupId": "g",
                    "GenerationId": 1,
                    "MemberId": member,
                    "GroupInstanceId": None,
                    "Assignments": [{"MemberId": member, "Assignment": b"all"}],
                },
                version=3,
            ),
        )
        # As Kafka, the assignment is handed out once the group's record is committed: one replication
        # tick (the followers copy it, the high watermark covers it).
        server.wait_until(
            lambda: server.partition_state(OFFSETS_TOPIC, index).log_end_offsets[broker] == written + 1,
            TIMEOUT,
        )
        assert not pending.done()
        assert (server.group_state("g") or {}).get("state") == "CompletingRebalance"
        server.advance(100)
        synced = pending.result(TIMEOUT)
        assert (synced["ErrorCode"], synced["Assignment"]) == (0, b"all")
        beat = c.send(
            "HeartbeatRequest",
            {"GroupId": "g", "GenerationId": 1, "MemberId": member, "GroupInstanceId": None},
            version=3,
        )
        assert beat["ErrorCode"] == 0
        state = server.group_state("g")
        assert state is not None
        assert (state["state"], state["generation"], state["leader"], state["coordinator"]) == (
            "Stable",
            1,
            member,
            broker,
        )
        assert state["members"][member]["assignment"] == b"all"
        described = c.send(
            "DescribeGroupsRequest", {"Groups": ["g"], "IncludeAuthorizedOperations": False}, version=4
        )
        [g] = described["Groups"]
        assert (g["GroupState"], g["ProtocolData"], [m["MemberAssignment"] for m in g["Members"]]) == (
            "Stable",
            "range",
            [b"all"],
        )
    with BlockingClient.connect(server.bootstrap) as client:  # the bootstrap listener answers for any group
        [none] = client.send("DescribeGroupsRequest", {"Groups": ["none"]}, version=0)["Groups"]
        assert (none["ErrorCode"], none["GroupState"], none["Members"]) == (0, "Dead", [])
        assert [e.subject for e in server.events() if e.kind == "group"][-1] == "group g"


def test_after_a_clean_failover_the_new_coordinator_loads_the_committed_offsets(
    server: ServerThread, pool
) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, "g")["NodeId"]
    with BlockingClient.connect(server.brokers[old]) as c:
        assert committed(server, pool, c, old, "g", {0: 11, 1: 12}, 2) == [0, 0]
    index = coordinator_partition("g", 50)
    server.stop_broker(old, "crash")
    server.advance(9000)  # the broker's session expires: it is fenced and its leaders move
    with BlockingClient.connect(server.bootstrap) as client:
        new = find(client, "g")["NodeId"]
    assert new != old
    with BlockingClient.connect(server.brokers[new]) as c:
        assert fetch(c, "g")[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        # A heartbeat meanwhile is answered NONE unhandled (Kafka's GroupCoordinatorService: "the group
        # is still loading, so blindly respond"); once loaded, it is handled.
        assert heartbeat(c, "g", "nobody") == ErrorCode.NONE
        server.advance(LOAD_MS)
        assert fetch(c, "g") == (0, {0: 11, 1: 12})
        assert heartbeat(c, "g", "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    assert server.lost_commits() == []
    moves = [e for e in server.events() if e.kind == "group" and e.subject == f"{OFFSETS_TOPIC}-{index}"]
    assert [m.change("coordinator") for m in moves] == [(old, new)]


def test_an_unclean_election_loses_the_commits_the_new_leader_lacks(server: ServerThread, pool) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, "g")["NodeId"]
    index = coordinator_partition("g", 50)
    followers = [b for b in server.partition_state(OFFSETS_TOPIC, index).replicas if b != old]
    with BlockingClient.connect(server.brokers[old]) as c:
        assert committed(server, pool, c, old, "g", {0: 1}, 1) == [0]
        for f in followers:  # the followers stop copying; after replica.lag.time.max.ms they leave the ISR
            server.set_replication(f, records_per_s=0)
        second = later(pool, lambda: commit(c, "g", {0: 2}))
        server.wait_until(
            lambda: server.partition_state(OFFSETS_TOPIC, index).log_end_offsets[old] == 2, TIMEOUT
        )
        server.advance(45_000)
        assert server.partition_state(OFFSETS_TOPIC, index).isr == (old,)
        assert second.result(TIMEOUT) == [0]
    server.stop_broker(old, "crash")
    server.advance(9000)  # no in-sync replica left: an unclean election picks a follower at offset 1
    with BlockingClient.connect(server.bootstrap) as client:
        new = find(client, "g")["NodeId"]
    assert new in followers
    server.advance(LOAD_MS)
    assert server.committed_offsets("g") == {("orders", 0): 1}
    [lost] = server.lost_commits()
    assert (lost.group_id, lost.topic, lost.partition, lost.offset, lost.log_partition, lost.log_offset) == (
        "g",
        "orders",
        0,
        2,
        index,
        1,
    )


@pytest.mark.parametrize(
    ("software", "versions"),
    [
        ("apache-kafka-java", (0, 1)),
        ("confluent-kafka-python", (0, 1)),
        ("librdkafka", (0, 1)),
        ("placement-sim", (0, 0)),
        ("kcat", (0, 0)),
    ],
)
def test_api_key_68_is_offered_to_every_client_as_the_api_its_connection_speaks(
    server: ServerThread, software: str, versions: tuple[int, int]
) -> None:
    """ConsumerGroupHeartbeat (v0-1) to a client of a KIP-848 library, CreateReplicaPlacement (v0) to the
    others; the group APIs to all."""
    with BlockingClient.connect(server.bootstrap) as client:
        answer = client.send(
            "ApiVersionsRequest", {"ClientSoftwareName": software, "ClientSoftwareVersion": "1.0"}, version=3
        )
        offered = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in answer["ApiKeys"]}
        assert offered[68] == versions
        assert {10, 11, 12, 13, 14, 8, 9, 15, 16, 42, 47} <= offered.keys()
        assert 68 in {k["ApiKey"] for k in client.send("ApiVersionsRequest", {}, version=0)["ApiKeys"]}


def test_compacted_records_load_and_lose_what_the_whole_log_would(server: ServerThread) -> None:
    """``__consumer_offsets`` is compacted below every replica's log end offset (the last record of each
    key kept): the partition holds what a new coordinator needs, not every commit ever made; after an
    unclean election the new leader loads the last commit below its log end offset and the commits above
    it are the lost ones, as with the whole log."""
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, "g")["NodeId"]
    index = coordinator_partition("g", 50)
    followers = [b for b in server.partition_state(OFFSETS_TOPIC, index).replicas if b != old]
    service = server.server.controller.groups

    def commits(start: int, count: int) -> Callable[[], None]:
        def run() -> None:  # on the server's loop: a commit of offset n to partition n % 3, n from start
            for n in range(start, start + count):
                service.coordinator.commit(
                    "g", -1, "", None, [OffsetCommit("orders", n % 3, n)], 8, lambda codes: None
                )

        return run

    for start in range(0, 6000, 1000):  # the followers copy each thousand at the next tick
        server.call(commits(start, 1000))
        server.advance(100)
    assert server.partition_state(OFFSETS_TOPIC, index).log_end_offsets == dict.fromkeys(
        (old, *followers), 6000
    )
    # Compacted once, at record COMPACT_AT (the followers had 4,000): 3 keys below 4,000, then every record.
    assert COMPACT_AT == 4096
    assert len(service._records[index]) == 3 + 6000 - 4000
    assert server.committed_offsets("g") == {("orders", 0): 5997, ("orders", 1): 5998, ("orders", 2): 5999}
    for f in followers:
        server.set_replication(f, records_per_s=0)
    server.call(commits(6000, 3))
    server.advance(45_000)  # the followers leave the ISR: the three commits are durable on the leader alone
    assert server.partition_state(OFFSETS_TOPIC, index).isr == (old,)
    server.stop_broker(old, "crash")
    server.advance(9000)  # an unclean election picks a follower at offset 6,000
    with BlockingClient.connect(server.bootstrap) as client:
        assert find(client, "g")["NodeId"] in followers
    server.advance(LOAD_MS)
    assert server.committed_offsets("g") == {("orders", 0): 5997, ("orders", 1): 5998, ("orders", 2): 5999}
    assert [(c.partition, c.offset, c.log_offset) for c in server.lost_commits()] == [
        (0, 6000, 6000),
        (1, 6001, 6001),
        (2, 6002, 6002),
    ]


def _stop_copying(server: ServerThread, index: int, leader: int) -> None:
    for follower in server.partition_state(OFFSETS_TOPIC, index).replicas:
        if follower != leader:
            server.set_replication(follower, records_per_s=0)


def test_a_commit_is_not_answered_while_the_high_watermark_is_at_its_record(
    server: ServerThread, pool
) -> None:
    """The commit's record is at offset 1: the high watermark at 1 does not cover it (answered at 2)."""
    with BlockingClient.connect(server.bootstrap) as client:
        broker = find(client, "g")["NodeId"]
    index = coordinator_partition("g", 50)
    with BlockingClient.connect(server.brokers[broker]) as coordinator:
        assert committed(server, pool, coordinator, broker, "g", {0: 5}, 1) == [ErrorCode.NONE]
        followers = [b for b in server.partition_state(OFFSETS_TOPIC, index).replicas if b != broker]
        server.set_replication(followers[0], records_per_s=0)  # it stays in the ISR for a while
        second = later(pool, lambda: commit(coordinator, "g", {0: 6}))  # its record at offset 1
        server.wait_until(
            lambda: server.partition_state(OFFSETS_TOPIC, index).log_end_offsets[broker] == 2, TIMEOUT
        )
        server.advance(100)
        state = server.partition_state(OFFSETS_TOPIC, index)
        assert (state.high_watermark, sorted(state.isr)) == (1, sorted(state.replicas))
        assert not second.done()
        with BlockingClient.connect(server.brokers[broker]) as other:
            assert fetch(other, "g") == (0, {0: 5})  # OffsetFetch answers what is replicated
        assert server.committed_offsets("g") == {("orders", 0): 5}
        server.set_replication(followers[0], records_per_s=None)
        server.advance(100)
        assert second.result(TIMEOUT) == [ErrorCode.NONE]
        assert server.committed_offsets("g") == {("orders", 0): 6}


def test_a_commit_whose_record_a_clean_failover_loses_is_answered_not_coordinator(
    server: ServerThread, pool
) -> None:
    """Issue 29: ``committed_offsets`` showed a commit before its coordinator failed and ``lost_commits``
    listed it after a clean failover. Replayed alone: the commit was applied when it arrived, before its
    record was replicated (OffsetFetch answered it too), and when the coordinator moved to a replica
    without its record the waiting commit was answered NONE. Kafka shows a commit once its record is
    committed and answers NOT_COORDINATOR when the coordinator moves first: an unanswered commit lost
    with its coordinator is no lost commit."""
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, "app")["NodeId"]
    index = coordinator_partition("app", 50)
    _stop_copying(server, index, old)
    with BlockingClient.connect(server.brokers[old]) as c:
        pending = later(pool, lambda: commit(c, "app", {1: 91}))
        server.wait_until(
            lambda: server.partition_state(OFFSETS_TOPIC, index).log_end_offsets[old] == 1, TIMEOUT
        )
        assert server.committed_offsets("app") == {}  # not replicated yet: not shown
        with BlockingClient.connect(server.brokers[old]) as other:
            assert fetch(other, "app") == (0, {})
        server.stop_broker(old, "isolate")  # it still answers its clients
        server.advance(9000)  # fenced: a follower in the ISR (without the record) is elected, cleanly
        new = server.partition_state(OFFSETS_TOPIC, index).leader
        assert new != old
        assert server.committed_offsets("app") == {}  # the new coordinator loads what it holds
        assert pending.result(TIMEOUT) == [ErrorCode.NOT_COORDINATOR]
    assert server.lost_commits() == []


def test_after_a_failover_the_group_loads_only_the_records_below_the_new_leaders_log_end(
    server: ServerThread, pool
) -> None:
    """The new leader's log ends at 1: the record at offset 1 (a commit acknowledged before an unclean
    election) is not loaded, the one at 0 is."""
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, "g")["NodeId"]
    index = coordinator_partition("g", 50)
    followers = [b for b in server.partition_state(OFFSETS_TOPIC, index).replicas if b != old]
    with BlockingClient.connect(server.brokers[old]) as c:
        assert committed(server, pool, c, old, "g", {0: 1, 1: 1}, 2) == [0, 0]
        _stop_copying(server, index, old)
        second = later(pool, lambda: commit(c, "g", {0: 2}))  # its record at offset 2
        server.wait_until(
            lambda: server.partition_state(OFFSETS_TOPIC, index).log_end_offsets[old] == 3, TIMEOUT
        )
        server.advance(45_000)  # the followers leave the ISR: the leader alone commits
        assert second.result(TIMEOUT) == [0]
    server.stop_broker(old, "crash")
    server.advance(9000)  # an unclean election of a follower whose log ends at 2
    assert server.partition_state(OFFSETS_TOPIC, index).leader in followers
    server.advance(LOAD_MS)
    assert server.committed_offsets("g") == {("orders", 0): 1, ("orders", 1): 1}
    assert [(c.offset, c.log_offset) for c in server.lost_commits()] == [(2, 2)]


def test_a_coordinator_an_election_moves_is_seen_at_the_next_request(server: ServerThread, pool) -> None:
    """The coordinator check remembers where a group's coordinator is until the cluster changes: a
    preferred election that moves the partition's leader (every broker serving on) is seen at once."""
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, "g")["NodeId"]
    index = coordinator_partition("g", 50)
    with BlockingClient.connect(server.brokers[old]) as c:
        assert committed(server, pool, c, old, "g", {0: 5}, 1) == [0]
        assert heartbeat(c, "g", "nobody") == ErrorCode.UNKNOWN_MEMBER_ID  # checked at ``old``
    replicas = list(server.partition_state(OFFSETS_TOPIC, index).replicas)
    new = next(b for b in replicas if b != old)
    [moved] = server.reassign({(OFFSETS_TOPIC, index): [new] + [b for b in replicas if b != new]})
    assert moved.error is None
    server.advance(1000)
    assert server.elect(OFFSETS_TOPIC, index, "preferred").error is None
    assert server.partition_state(OFFSETS_TOPIC, index).leader == new
    with BlockingClient.connect(server.brokers[old]) as c:
        assert commit(c, "g", {0: 6}) == [ErrorCode.NOT_COORDINATOR]
        assert heartbeat(c, "g", "nobody") == ErrorCode.NOT_COORDINATOR
    with BlockingClient.connect(server.brokers[new]) as c:
        assert fetch(c, "g")[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        server.advance(LOAD_MS)
        assert fetch(c, "g") == (0, {0: 5})
