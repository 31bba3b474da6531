"""The share coordinator and the share group's records when their coordinator moves, on a virtual clock: a
write not answered yet that a clean failover loses is written again at the new coordinator (Kafka's
persister retries) and is no loss; an answered write an unclean election loses is kept as lost for the
share-partition's leader to account for; a share heartbeat whose group record a clean failover loses is
answered NOT_COORDINATOR, as Kafka answers a write whose append fails."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from controller.coordinator_topic import LOAD_MS, coordinator_partition
from controller.embedded import ServerThread
from controller.groups.durable import OFFSETS_TOPIC
from controller.share.coordinator import SHARE_STATE_TOPIC, share_key
from controller.share.partition import RecordState, ShareState, StateBatch
from protocol.client import BlockingClient
from protocol.codes import ErrorCode

BROKERS = [(0, "a"), (1, "b"), (2, "c")]
TIMEOUT = 5.0
KEY = share_key("g", uuid.UUID(int=7), 0)


@pytest.fixture
def server() -> Iterator[ServerThread]:
    props = {
        "unclean.leader.election.enable": "true",
        # fenced within share.coordinator.write.timeout.ms (5000), for which a write is tried again
        "broker.session.timeout.ms": 2000,
        "broker.heartbeat.interval.ms": 500,
    }
    with ServerThread.start(brokers=BROKERS, clock="virtual", seed=3, properties=props) as started:
        yield started


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(2) as executor:
        yield executor


def find(client: BlockingClient, key: str, key_type: int) -> dict[str, Any]:
    answer = client.send(
        "FindCoordinatorRequest", {"CoordinatorKeys": [key], "KeyType": key_type}, version=6, timeout=TIMEOUT
    )
    [entry] = answer["Coordinators"]
    assert entry["ErrorCode"] == ErrorCode.NONE
    return entry


def state(accepted_to: int) -> ShareState:
    """A share-partition state with records 0..accepted_to accepted."""
    return ShareState(0, 0, 0, (StateBatch(0, accepted_to, RecordState.ACKNOWLEDGED, 1),))


def write(server: ServerThread, value: ShareState, time_out: bool = False) -> list[ErrorCode]:
    """Writes ``value`` for KEY on the server's loop; the list gets the answer."""
    answers: list[ErrorCode] = []
    coordinator = server.server.controller.share.coordinator
    server.call(lambda: coordinator.write(KEY, value, answers.append, time_out=time_out))
    return answers


def coordinator(server: ServerThread) -> Any:
    return server.call(lambda: server.server.controller.share.coordinator)


def leo(server: ServerThread, topic: str, index: int, broker: int) -> Callable[[], int]:
    return lambda: server.partition_state(topic, index).log_end_offsets[broker]


def test_a_write_a_clean_failover_loses_before_its_answer_is_written_again(server: ServerThread) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, KEY, 2)["NodeId"]
    index = coordinator_partition(KEY, 50)
    followers = [b for b in server.partition_state(SHARE_STATE_TOPIC, index).replicas if b != old]
    for f in followers:
        server.set_replication(f, records_per_s=0)  # they stay in the ISR for a while
    answers = write(server, state(4))
    server.wait_until(lambda: leo(server, SHARE_STATE_TOPIC, index, old)() == 1, TIMEOUT)
    server.advance(100)
    assert answers == []  # not durable: not answered
    server.stop_broker(old, "isolate")
    server.advance(2500)  # fenced: a follower in the ISR (without the record) is elected, cleanly
    new = server.partition_state(SHARE_STATE_TOPIC, index).leader
    assert new in followers
    assert leo(server, SHARE_STATE_TOPIC, index, new)() == 0
    shares = coordinator(server)
    server.call(shares.follow_all)  # the move is seen: the write waiting on the old leader is tried again
    assert answers == []
    for f in followers:
        server.set_replication(f, records_per_s=None)
    server.advance(LOAD_MS + 500)  # once the new coordinator has loaded, written there and copied
    server.wait_until(lambda: answers == [ErrorCode.NONE], TIMEOUT)
    assert server.call(lambda: shares.read(KEY)) == (ErrorCode.NONE, state(4))
    assert server.call(lambda: dict(shares.lost)) == {}  # answered once, at the new coordinator: no loss
    assert server.partition_state(SHARE_STATE_TOPIC, index).high_watermark == 1


def test_an_answered_write_an_unclean_election_loses_is_kept_as_lost(server: ServerThread) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, KEY, 2)["NodeId"]
    index = coordinator_partition(KEY, 50)
    followers = [b for b in server.partition_state(SHARE_STATE_TOPIC, index).replicas if b != old]
    first = write(server, state(1))
    server.advance(100)
    assert first == [ErrorCode.NONE]
    for f in followers:  # after replica.lag.time.max.ms they leave the ISR
        server.set_replication(f, records_per_s=0)
    second = write(server, state(4))
    server.advance(45_000)
    assert server.partition_state(SHARE_STATE_TOPIC, index).isr == (old,)
    assert second == [ErrorCode.NONE]
    server.stop_broker(old, "crash")
    server.advance(9000)  # no in-sync replica left: an unclean election picks a follower at offset 1
    assert server.partition_state(SHARE_STATE_TOPIC, index).leader in followers
    shares = coordinator(server)
    server.call(shares.follow_all)
    server.advance(LOAD_MS)
    assert server.call(lambda: shares.read(KEY)) == (ErrorCode.NONE, state(1))
    assert server.call(lambda: dict(shares.lost)) == {KEY: (state(4), index, 1)}


def test_a_share_heartbeat_whose_record_a_clean_failover_loses_is_answered_not_coordinator(
    server: ServerThread, pool: ThreadPoolExecutor
) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, "g", 0)["NodeId"]
    index = coordinator_partition("g", 50)
    for f in server.partition_state(OFFSETS_TOPIC, index).replicas:
        if f != old:
            server.set_replication(f, records_per_s=0)
    with BlockingClient.connect(server.brokers[old]) as c:
        request = {"GroupId": "g", "MemberId": "m1", "MemberEpoch": 0, "RackId": None}
        joining: Future[dict[str, Any]] = pool.submit(
            lambda: c.send(
                "ShareGroupHeartbeatRequest",
                {**request, "SubscribedTopicNames": ["jobs"]},
                version=1,
                timeout=TIMEOUT,
            )
        )
        server.wait_until(lambda: leo(server, OFFSETS_TOPIC, index, old)() >= 1, TIMEOUT)
        server.advance(100)
        assert not joining.done()  # its record is not durable yet
        server.stop_broker(old, "isolate")  # it still answers its clients
        server.advance(9000)
        assert server.partition_state(OFFSETS_TOPIC, index).leader != old
        share = server.call(lambda: server.server.controller.share)
        # The move is seen (at the next request, here a look): the new coordinator holds no join.
        assert server.call(lambda: share.is_share_group("g")) is False
        answer = joining.result(TIMEOUT)
    assert (answer["ErrorCode"], answer["MemberEpoch"]) == (ErrorCode.NOT_COORDINATOR, 0)


def test_an_admin_write_its_followers_never_copy_is_answered_when_the_write_timeout_passes(
    server: ServerThread,
) -> None:
    """Followers that stop copying stay in the ISR for replica.lag.time.max.ms (30 s): an admin write
    (AlterShareGroupOffsets, DeleteShareGroupOffsets) waiting on them is answered COORDINATOR_NOT_AVAILABLE
    once share.coordinator.write.timeout.ms (5000) passes, not held until the ISR shrinks (under the fuzz
    run AlterShareGroupOffsets waited so, unanswered)."""
    with BlockingClient.connect(server.bootstrap) as client:
        old = find(client, KEY, 2)["NodeId"]
    index = coordinator_partition(KEY, 50)
    for f in server.partition_state(SHARE_STATE_TOPIC, index).replicas:
        if f != old:
            server.set_replication(f, records_per_s=0)
    answers = write(server, state(4), time_out=True)
    server.wait_until(lambda: leo(server, SHARE_STATE_TOPIC, index, old)() == 1, TIMEOUT)
    server.advance(4900)
    assert answers == []  # within the write timeout, still waiting for the followers
    server.advance(200)
    assert answers == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    server.advance(40_000)  # the ISR shrinks to the leader and the record becomes durable: no second answer
    assert answers == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert server.partition_state(SHARE_STATE_TOPIC, index).high_watermark == 1


def test_a_share_partition_made_afresh_after_a_move_lost_every_record_of_its_key_reports_them(
    server: ServerThread,
) -> None:
    """The coordinator's move lost every record of the key (it holds no state for it), so the
    share-partition starts afresh from ``share.auto.offset.reset`` (earliest: offset 0); the records the
    lost state had accepted below its start offset are delivered again, and are reported (the loss
    checker's share seed 45 found them delivered again unreported)."""
    topic = server.create_topic("shared", partitions=1, replication_factor=3)
    share = server.call(lambda: server.server.controller.share)
    p = server.call(lambda: server.server.controller.cluster.partition("shared", 0))
    key = share_key("g", topic.topic_id, 0)
    lost = ShareState(3, 0, 0)  # records 0, 1, 2 accepted: the start offset past them
    server.call(lambda: share.coordinator.lost.__setitem__(key, (lost, 7, 1)))
    error, made = server._on_loop(share.share_partition("g", p, topic.topic_id))

    assert error == ErrorCode.NONE and made is not None and made.start_offset == 0
    [report] = server.call(lambda: list(share.lost_acknowledgements))
    assert (report.topic, report.partition, report.offsets) == ("shared", 0, (0, 1, 2))


def _answered(server: ServerThread, pending: Future[dict[str, Any]]) -> dict[str, Any]:
    """The answer of a request sent from the pool, the virtual clock moved on 100 ms at a time meanwhile."""
    for _ in range(200):
        if pending.done():
            return pending.result()
        server.advance(100)
    return pending.result(TIMEOUT)


def test_a_share_group_whose_state_cannot_be_deleted_is_kept_and_deleted_later(
    server: ServerThread, pool: ThreadPoolExecutor
) -> None:
    """DeleteGroups deletes a share group's states at the share coordinator first and the group only when
    they are deleted, as Kafka's GroupCoordinatorService does: with the state partition's followers not
    copying, the tombstone's write times out (share.coordinator.write.timeout.ms), the group stays and is
    answered COORDINATOR_NOT_AVAILABLE (it was answered NONE and deleted, its state left behind); once
    they copy again, the same request deletes both."""
    with BlockingClient.connect(server.bootstrap) as client:
        group_coordinator = find(client, "g", 0)["NodeId"]
        state_coordinator = find(client, KEY, 2)["NodeId"]
    share = server.call(lambda: server.server.controller.share)
    with BlockingClient.connect(server.brokers[group_coordinator]) as c:
        heartbeat = {"GroupId": "g", "MemberId": "m1", "RackId": None}
        for epoch, topics in ((0, ["jobs"]), (-1, None)):  # joins, then leaves: an empty share group
            body = {**heartbeat, "MemberEpoch": epoch, "SubscribedTopicNames": topics}
            sent = pool.submit(
                lambda b=body: c.send("ShareGroupHeartbeatRequest", b, version=1, timeout=TIMEOUT)
            )
            assert _answered(server, sent)["ErrorCode"] == ErrorCode.NONE
        written = write(server, state(4))
        server.advance(200)
        assert written == [ErrorCode.NONE]
        index = coordinator_partition(KEY, 50)
        followers = [
            b for b in server.partition_state(SHARE_STATE_TOPIC, index).replicas if b != state_coordinator
        ]
        for f in followers:
            server.set_replication(f, records_per_s=0)

        def delete() -> int:
            answer = c.send("DeleteGroupsRequest", {"GroupsNames": ["g"]}, version=2, timeout=TIMEOUT)
            [result] = answer["Results"]
            return int(result["ErrorCode"])

        assert _answered(server, pool.submit(delete)) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert server.call(lambda: share.is_share_group("g")) is True
        for f in followers:
            server.set_replication(f, records_per_s=None)
        server.advance(45_000)  # the timed-out tombstone becomes durable once they copy
        assert _answered(server, pool.submit(delete)) == ErrorCode.NONE
        assert server.call(lambda: share.is_share_group("g")) is False
        assert server.call(lambda: share.coordinator.keys_of("g")) == []
