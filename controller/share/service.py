"""Share groups (KIP-932) as Kafka 4.x's brokers run them, joined to the server as one subsystem
(``controller.share``): the group coordinator's share part (:mod:`controller.share.groups`, on the group's
``__consumer_offsets`` partition, failing over with it), the share-partitions on the partitions' leaders
(:mod:`controller.share.partition`, Kafka's ``SharePartitionManager``), the share sessions of ShareFetch
and ShareAcknowledge, and the share coordinator (:mod:`controller.share.coordinator`, on
``__share_group_state``).

**Where state lives.** A share-partition's records in flight are in the memory of the partition's leader:
a new leader (a failover, an election) loads the state the share coordinator persisted, so records that
were acquired there become AVAILABLE again (a lock does not survive its leader) with the delivery count
last written. Every acknowledgement, released lock and start-offset move is written to the share
coordinator, and an acknowledgement is answered once that write is durable; a write that fails (no
coordinator for ``share.coordinator.write.timeout.ms``) undoes the acknowledgement and answers the
coordinator's error, so that no record is acknowledged that the coordinator does not hold.

**Loss accounting.** What a share group gives up on is reported, never dropped silently:
:attr:`ShareService.archived` lists every record archived without being accepted (rejected, a gap, or at
the delivery count limit) with its cause, and :attr:`ShareService.lost_acknowledgements` every accepted
record a share coordinator's move made deliverable again (:mod:`controller.share.coordinator`). No record
acknowledged as accepted is delivered again otherwise.

**Isolation.** ``share.isolation.level=read_committed`` reads up to the last stable offset
(:meth:`ShareService.read_bound`): nothing of an open transaction is acquired, and the records of aborted
transactions are archived as they are acquired, never delivered (``archived``, cause ``aborted
transaction``), as Kafka's share-partition does.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.clock import Timer
from controller.cluster import PartitionState
from controller.config.group_configs import parse_duration_ms
from controller.share.coordinator import LostAcknowledgement, ShareCoordinator, kafka_uuid, share_key
from controller.share.groups import Heartbeat, ShareGroup, ShareGroups, TopicInfo
from controller.share.partition import Acquired, Archived, SharePartition, ShareState
from protocol.codes import ErrorCode
from protocol.errors import Refusal

if TYPE_CHECKING:
    from controller.app import Controller
    from controller.records.log import StoredBatch

log = logging.getLogger(__name__)

__all__ = ["ShareService", "ShareSession"]

#: Kafka's ``group.share.max.share.sessions`` default (per broker).
MAX_SHARE_SESSIONS = 2000

#: The largest value of an int64 field (a share-partition's lag).
_INT64_MAX = 2**63 - 1


@dataclass
class ShareSession:
    """A member's share session on one broker: the partitions it fetches and the next epoch expected."""

    group: str
    member: str
    epoch: int = 1
    partitions: dict[tuple[uuid.UUID, int], None] = field(default_factory=dict)


@dataclass(frozen=True)
class Acquisition:
    """What a fetch acquired of one partition: the ranges, and the log batches that hold them."""

    acquired: list[Acquired]
    batches: list[StoredBatch]


class ShareService:
    """Share groups of one cluster (see the module docstring)."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        config = controller.config
        self.cluster = controller.cluster
        self.clock = controller.clock
        static = self.cluster.static_configs
        self.groups = ShareGroups(
            self.clock,
            self._topic_infos,
            self.cluster.group_config,
            _int(static, "group.share.max.size", 200),
            self._member_gone,
        )
        self.groups.log = self
        self.coordinator = ShareCoordinator(
            _int(static, "share.coordinator.state.topic.num.partitions", 50),
            _int(static, "share.coordinator.state.topic.replication.factor", 3),
            self.cluster,
            self.clock,
            controller.dynamics.replication,
            controller.topic_admin,
            config.replication_tick_ms,
            _int(static, "share.coordinator.write.timeout.ms", 5000),
        )
        self.max_sessions = _int(static, "group.share.max.share.sessions", MAX_SHARE_SESSIONS)
        self.partitions: dict[tuple[str, str, int], SharePartition] = {}
        #: (broker or None, group, member) -> its share session on that broker.
        self.sessions: dict[tuple[int | None, str, str], ShareSession] = {}
        self.archived: list[Archived] = []
        self.lost_acknowledgements: list[LostAcknowledgement] = []
        self._locks: dict[tuple[str, str, int], Timer] = {}
        self._changed: list[asyncio.Future[None]] = []
        #: The offset of the last share group record written (what a heartbeat's answer waits for).
        self._written: int | None = None
        controller.groups.families["share"] = self

    def close(self) -> None:
        self.groups.close()
        self.coordinator.close()
        for timer in self._locks.values():
            timer.cancel()
        self._locks.clear()

    @property
    def group_log(self) -> Any:
        return self.controller.groups

    # ------------------------------------------------------------------------------------- groups

    def check_group(self, group_id: str, broker: int | None) -> ErrorCode:
        """The group coordinator's checks (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...)."""
        return self.group_log.check(group_id, broker)

    def heartbeat(self, request: Heartbeat) -> tuple[dict[str, Any], asyncio.Future[ErrorCode] | None]:
        """The answer to a heartbeat, and a future to wait for before giving it when it changed the group
        (answered once the change is durable on ``__consumer_offsets``, as Kafka's coordinator answers
        after its write is committed; the future's error is NOT_COORDINATOR when a move lost the write
        first, and the heartbeat is answered with it)."""
        if request.group_id in self.group_log.coordinator.groups:
            raise Refusal(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a share group.")
        self._written = None
        answer = self.groups.heartbeat(request)
        written, self._written = self._written, None
        if written is None:
            return answer, None
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.group_log.when_durable(
            request.group_id, written, 1, lambda error: future.done() or future.set_result(error)
        )
        return answer, future

    def is_share_group(self, group_id: str) -> bool:
        self.group_log.follow_all()
        return group_id in self.groups.groups

    def list_groups(
        self, broker: int | None, states: Iterable[str], types: Iterable[str]
    ) -> list[dict[str, Any]]:
        """ListGroups' entries of the share groups ``broker`` coordinates (None: every one), filtered by
        state and type case-insensitively (empty: all)."""
        self.group_log.follow_all()
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "share" not in wanted_types:
            return []
        return [
            {"GroupId": gid, "ProtocolType": "share", "GroupState": g.state, "GroupType": "share"}
            for gid, g in sorted(self.groups.groups.items())
            if (not wanted_states or g.state.lower() in wanted_states)
            and (broker is None or self.group_log.coordinator_of(gid) == (ErrorCode.NONE, broker))
        ]

    def ensure_group(self, group_id: str) -> ShareGroup | None:
        """The share group ``group_id``, made empty when there is none (as AlterShareGroupOffsets makes
        it); None when the id is a classic group's."""
        if group_id in self.group_log.coordinator.groups:
            return None
        group = self.groups.groups.get(group_id)
        if group is None:
            group = self.groups.groups[group_id] = ShareGroup(group_id)
            self.write_share_group(group, group_id)
        return group

    def write_share_group(self, group: ShareGroup | None, group_id: str) -> None:
        """The group's state (or its removal) on its ``__consumer_offsets`` partition."""
        self._written = self.group_log.append(
            group_id, "share", [None if group is None else group.snapshot()]
        )

    def moved(self, index: int, kept: list[Any], lost: list[Any], now: int) -> int:
        """The group coordinator of ``__consumer_offsets`` partition ``index`` moved: its share groups are
        loaded from what the new leader's log holds."""
        names = {g for g in self.groups.groups if self.group_log.partition_of(g) == index}
        names |= {r.group_id for r in kept} | {r.group_id for r in lost}
        latest: dict[str, Any] = {}
        for record in kept:
            latest[record.group_id] = record.value
        for name in names:
            self.groups.load(name, latest.get(name))
        return sum(1 for name in names if name in self.groups.groups)

    def _topic_infos(self, names: set[str]) -> dict[str, TopicInfo]:
        out = {}
        for name in names:
            topic = self.cluster.topics.get(name)
            if topic is not None:
                out[name] = TopicInfo(name, topic.topic_id, len(topic.partitions))
        return out

    def _member_gone(self, group: str, member: str, expired: bool) -> None:
        """A member's session with the group ended without it leaving (a crash, a hang): its share sessions
        close and what it holds is released (an abnormal end: the deliveries count). A member that leaves
        closes its share sessions itself, with its last acknowledgements (its ShareAcknowledge with epoch
        -1 may arrive after its leaving heartbeat)."""
        if not expired:
            return
        for key in [k for k in self.sessions if k[1] == group and k[2] == member]:
            del self.sessions[key]
        self._release_member(group, member)

    # ------------------------------------------------------------------------------------- sessions

    def session(
        self,
        broker: int | None,
        group: str,
        member: str,
        epoch: int,
        add: Iterable[tuple[uuid.UUID, int]],
        forget: Iterable[tuple[uuid.UUID, int]],
    ) -> tuple[ErrorCode, str | None, ShareSession | None]:
        """A ShareFetch's or ShareAcknowledge's session step (Kafka's ``SharePartitionManager``): epoch 0
        opens a session (a member's earlier one on this broker closes, releasing what it held), -1 is the
        last request of the session, else it must be the session's next epoch (SHARE_SESSION_NOT_FOUND,
        INVALID_SHARE_SESSION_EPOCH)."""
        key = (broker, group, member)
        current = self.sessions.get(key)
        if epoch == 0:
            if current is not None:
                del self.sessions[key]
                self._release_member(group, member)
            elif sum(1 for k in self.sessions if k[0] == broker) >= self.max_sessions:
                return (
                    ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                    "The limit of share sessions has been reached.",
                    None,
                )
            current = self.sessions[key] = ShareSession(group, member)
        elif current is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, f"Share session for member {member} not found.", None
        elif epoch != -1 and epoch != current.epoch:
            return (
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                f"The share session epoch {epoch} is not the expected {current.epoch}.",
                None,
            )
        for tp in add:
            current.partitions[tp] = None
        for tp in forget:
            current.partitions.pop(tp, None)
        if epoch > 0:
            current.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        return ErrorCode.NONE, None, current

    def close_session(self, broker: int | None, group: str, member: str) -> None:
        """The member's final request (epoch -1): the session ends, and what the member still holds is
        released. Its deliveries count: Kafka 4.4 delivers such records again with the next count (seen with
        librdkafka's share consumer, whose last implicitly acknowledged batch is released so)."""
        if self.sessions.pop((broker, group, member), None) is not None:
            self._release_member(group, member)

    # ------------------------------------------------------------------------------------- share-partitions

    async def share_partition(
        self, group: str, p: PartitionState, topic_id: uuid.UUID
    ) -> tuple[ErrorCode, SharePartition | None]:
        """The share-partition of ``group`` on ``p``'s leader, loaded from the share coordinator (or made
        from ``share.auto.offset.reset``) when the leader has none yet."""
        key = (group, p.topic, p.index)
        sp = self.partitions.get(key)
        if _current(sp, p, topic_id):
            return ErrorCode.NONE, sp
        if await self.coordinator.ensure_topic():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        ckey = share_key(group, topic_id, p.index)
        error, state = self.coordinator.read(ckey)
        if error:
            return error, None
        sp = self.partitions.get(key)  # made while this waited
        if _current(sp, p, topic_id):
            return ErrorCode.NONE, sp
        fresh = state is None
        if state is None:
            state = ShareState(self._initial_offset(group, p), 0, p.leader_epoch)
        self._check_lost(ckey, group, p, state)
        sp = SharePartition(group, p.topic, p.index, state, p.leader, p.leader_epoch, self.archived.append)
        sp.topic_id = topic_id
        self.partitions[key] = sp
        self._bound_to_log(sp, p)
        if fresh:
            self.coordinator.write(ckey, sp.snapshot(), lambda _error: None)
        return ErrorCode.NONE, sp

    def _check_lost(self, ckey: str, group: str, p: PartitionState, state: ShareState) -> None:
        """The acceptances a move of the share coordinator lost, reported: those of the lost state that
        ``state`` (what the share-partition starts from now: the coordinator's older state, or a fresh one
        from ``share.auto.offset.reset`` when the move lost every record of the key) makes deliverable
        again, those below the lost start offset included."""
        lost = self.coordinator.lost.pop(ckey, None)
        if lost is None:
            return
        before, index, offset = lost
        kept = state.accepted()
        start = state.start_offset
        gone = tuple(sorted(o for o in before.accepted() if o not in kept and o >= start))
        gone += tuple(o for o in range(start, before.start_offset) if o not in kept)
        if gone:
            lost_ack = LostAcknowledgement(
                group, p.topic, p.index, tuple(sorted(set(gone))), index, offset, self.clock.now()
            )
            self.lost_acknowledgements.append(lost_ack)
            self.cluster.events.record(
                "loss",
                p.name,
                [("share group", None, group), ("accepted records", None, len(lost_ack.offsets))],
                f"the share coordinator's move lost their acceptance (__share_group_state-{index} offset {offset})",
            )
            log.warning(
                "%s: %d accepted record(s) of share group %s deliverable again", p.name, len(gone), group
            )

    def _initial_offset(self, group: str, p: PartitionState) -> int:
        """``share.auto.offset.reset``: ``earliest`` the log start, ``latest`` the high watermark,
        ``by_duration:D`` the first record at or after now minus D (the high watermark when none)."""
        reset = str(self.cluster.group_config(group, "share.auto.offset.reset")).strip().lower()
        data_path = self.controller.data_path
        leader_log = data_path.log_of(p, p.leader)
        if reset == "earliest":
            return leader_log.log_start_offset
        if reset.startswith("by_duration:"):
            duration = parse_duration_ms(reset[len("by_duration:") :]) or 0
            found = leader_log.offset_for_timestamp(data_path.now_ms() - duration)
            if found is not None and found.offset < p.high_watermark:
                return max(found.offset, leader_log.log_start_offset)
        return self.read_bound(group, p)

    def _read_committed(self, group: str) -> bool:
        return bool(self.cluster.group_config(group, "share.isolation.level") == "read_committed")

    def read_bound(self, group: str, p: PartitionState) -> int:
        """Where a share group may read to: the last stable offset with ``share.isolation.level=
        read_committed`` (no record of an open transaction is acquired), else the high watermark."""
        if self._read_committed(group):
            return min(p.high_watermark, self.controller.data_path.last_stable_offset(p))
        return p.high_watermark

    def _archive_aborted(
        self, sp: SharePartition, p: PartitionState, member: str, acquired: list[Acquired]
    ) -> list[Acquired]:
        """Under read_committed, the records just acquired that belong to aborted transactions are archived
        instead of delivered (as Kafka's share-partition does with the fetch's aborted transactions): a
        transactional batch of a producer whose aborted transaction began at or before it and ended (its
        marker) after it. What is left of ``acquired`` is returned."""
        first = acquired[0].first_offset
        last = max(run.last_offset for run in acquired)
        aborted = self.controller.data_path.aborted_transactions(p, first, last + 1)
        if not aborted:
            return acquired
        leader_log = self.controller.data_path.log_of(p, p.leader)
        doomed: set[int] = set()
        for run in acquired:
            offset = run.first_offset
            while offset <= run.last_offset:
                batch = leader_log.batch_at(offset)
                if batch is None or batch.is_synthetic:
                    offset += 1
                    continue
                header = batch.header()
                if (
                    header.is_transactional
                    and not header.is_control
                    and any(
                        t.producer_id == header.producer_id
                        and t.first_offset <= batch.base_offset < t.last_offset
                        for t in aborted
                    )
                ):
                    doomed.update(range(offset, min(batch.last_offset, run.last_offset) + 1))
                offset = batch.last_offset + 1
        if not doomed:
            return acquired
        sp.archive(sorted(doomed), member, "aborted transaction", self.clock.now())
        kept: list[Acquired] = []
        for run in acquired:
            start = None
            for offset in range(run.first_offset, run.last_offset + 2):
                if offset <= run.last_offset and offset not in doomed:
                    start = offset if start is None else start
                elif start is not None:
                    kept.append(run._replace(first_offset=start, last_offset=offset - 1))
                    start = None
        return kept

    def _bound_to_log(self, sp: SharePartition, p: PartitionState) -> None:
        leader_log = self.controller.data_path.log_of(p, p.leader)
        sp.move_start(leader_log.log_start_offset, self.clock.now())
        if sp.start_offset > p.high_watermark and sp.in_flight() == 0:
            sp.start_offset = sp.end_offset = min(sp.start_offset, leader_log.log_end_offset)

    # ------------------------------------------------------------------------------------- acquiring

    def acquire(
        self,
        sp: SharePartition,
        p: PartitionState,
        member: str,
        max_records: int,
        max_bytes: int,
        strict: bool,
        min_one: bool,
    ) -> Acquisition:
        """Locks records of ``sp`` to ``member`` (at most ``max_records``, batch-aligned unless
        ``strict``) and reads the log batches that hold them, within ``max_bytes`` (at least one batch when
        ``min_one``)."""
        group = sp.group
        lock_ms = self.cluster.group_config(group, "share.record.lock.duration.ms")
        max_locks = self.cluster.group_config(group, "share.partition.max.record.locks")
        leader_log = self.controller.data_path.log_of(p, p.leader)
        self._bound_to_log(sp, p)
        bound = self.read_bound(group, p)

        def batch_end(offset: int) -> int:
            batch = leader_log.batch_at(offset)
            return offset + 1 if batch is None or batch.is_synthetic else batch.last_offset + 1

        acquired = sp.acquire(
            member, bound, max(1, max_records), max_locks, self.clock.now() + lock_ms, batch_end, strict
        )
        if acquired and self._read_committed(group):
            acquired = self._archive_aborted(sp, p, member, acquired)
        batches: list[StoredBatch] = []
        seen: set[int] = set()
        kept: list[Acquired] = []
        budget = max_bytes
        for run in acquired:
            offset = run.first_offset
            # Up to the end of the batch that holds the run's last record, not the whole budget.
            until = min(bound, batch_end(run.last_offset))
            while offset <= run.last_offset:
                read = leader_log.read(offset, until, budget, min_one=min_one and not batches)
                taken = False
                for batch in read:
                    if batch.base_offset > run.last_offset:
                        break
                    taken = True
                    if batch.base_offset not in seen:
                        seen.add(batch.base_offset)
                        batches.append(batch)
                        budget -= batch.size
                    offset = batch.last_offset + 1
                if not taken:
                    break
            if offset <= run.last_offset:  # over the byte budget: the rest goes back
                if offset > run.first_offset:
                    kept.append(run._replace(last_offset=offset - 1))
                sp.release_range(offset, run.last_offset, member)
                break
            kept.append(run)
        if kept:
            self._schedule_locks(sp)
        return Acquisition(kept, batches)

    # ------------------------------------------------------------------------------------- acknowledging

    async def acknowledge(
        self,
        sp: SharePartition,
        topic_id: uuid.UUID,
        member: str,
        batches: list[tuple[int, int, list[int]]],
    ) -> tuple[ErrorCode, str | None]:
        """Acknowledges ranges of ``sp`` for ``member``; answered once the share coordinator holds the new
        state (undone, with the coordinator's error, when it cannot)."""
        group = sp.group
        limit = self.cluster.group_config(group, "share.delivery.count.limit")
        lock_ms = self.cluster.group_config(group, "share.record.lock.duration.ms")
        now = self.clock.now()
        saved = sp.save(batches)
        error, message = sp.acknowledge(member, batches, limit, now + lock_ms, now)
        if error:
            return error, message
        written = await self._persist(sp, topic_id)
        if written:
            # Put back as it was; a lock that ended while the write was pending ends now (its timer found
            # nothing acquired then), as Kafka's share-partition runs an expired lock's task when it rolls
            # a state transition back (KAFKA-19476). Without it the record stayed acquired for good (found
            # by the loss checker's share seed 0: never delivered again, never archived).
            sp.restore(*saved)
            self._schedule_locks(sp)
            return written, "The share coordinator could not persist the acknowledgement."
        self._wake()
        return ErrorCode.NONE, None

    def _persist(self, sp: SharePartition, topic_id: uuid.UUID) -> asyncio.Future[ErrorCode]:
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()

        def done(error: ErrorCode) -> None:
            if not future.done():
                future.set_result(error)

        self.coordinator.write(share_key(sp.group, topic_id, sp.partition), sp.snapshot(), done)
        return future

    def _persist_quietly(self, sp: SharePartition) -> None:
        """Writes ``sp``'s state under its own topic's id: a topic deleted and made again under its name
        is another share-partition, whose state this must not become (found by confluent-kafka-python's
        test_topic_recreate_resumes_with_fresh_delivery: the old topic's released records, written under
        the new topic's id, came back there at delivery count 2)."""
        if isinstance(sp.topic_id, uuid.UUID):
            self.coordinator.write(
                share_key(sp.group, sp.topic_id, sp.partition), sp.snapshot(), lambda _e: None
            )

    def _release_member(self, group: str, member: str) -> None:
        now = self.clock.now()
        for (g, _, _), sp in list(self.partitions.items()):
            if g == group:
                limit = self.cluster.group_config(group, "share.delivery.count.limit")
                if sp.release(member, limit, now):
                    self._persist_quietly(sp)
        self._wake()

    # ------------------------------------------------------------------------------------- locks

    def _schedule_locks(self, sp: SharePartition) -> None:
        key = (sp.group, sp.topic, sp.partition)
        deadline = sp.next_deadline()
        timer = self._locks.get(key)
        if deadline is None:
            if timer is not None:
                timer.cancel()
                del self._locks[key]
            return
        if timer is not None and timer.when <= deadline:
            return
        if timer is not None:
            timer.cancel()

        def fire() -> None:
            self._locks.pop(key, None)
            current = self.partitions.get(key)
            if current is not sp:
                # A new leader's share-partition took its place: the timer (one per share-partition key)
                # is its now. Without this its locks never ended (found by the loss checker's share seed
                # 23: a record acquired at the new leader before the old one's timer fired stayed
                # acquired for good).
                if current is not None:
                    self._schedule_locks(current)
                return
            limit = self.cluster.group_config(sp.group, "share.delivery.count.limit")
            if sp.expire(self.clock.now(), limit):
                self._persist_quietly(sp)
                self._wake()
            self._schedule_locks(sp)

        self._locks[key] = self.clock.call_later(
            max(0, deadline - self.clock.now()), fire, "share record locks"
        )

    # ------------------------------------------------------------------------------------- waiting

    def changed(self) -> asyncio.Future[None]:
        """A future set when a share-partition gets records back (released, a lock ended)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._changed = [f for f in self._changed if not f.done()]
        self._changed.append(future)
        return future

    def _wake(self) -> None:
        waiting, self._changed = self._changed, []
        for future in waiting:
            if not future.done():
                future.set_result(None)

    # ------------------------------------------------------------------------------------- admin

    def start_offsets(self, group: str) -> dict[tuple[str, int], tuple[int, int, int]]:
        """(topic, partition) -> (start offset, leader epoch, lag) of every share-partition with state."""
        out = {}
        by_id = {kafka_uuid(t.topic_id): t for t in self.cluster.topics.values()}
        for key in self.coordinator.keys_of(group):
            _, tid, index = key.rsplit(":", 2)
            topic = by_id.get(tid)
            if topic is None or int(index) >= len(topic.partitions):
                continue
            state = self.coordinator.states[key]
            p = topic.partitions[int(index)]
            done = sum(b.last_offset - b.first_offset + 1 for b in state.batches if b.state in (2, 4))
            # At most an int64: a start offset altered to -2**63 must not make an answer that cannot be
            # encoded (the million-frame fuzz run found one).
            lag = min(max(0, self.read_bound(group, p) - state.start_offset - done), _INT64_MAX)
            out[(topic.name, int(index))] = (state.start_offset, state.leader_epoch, lag)
        return out

    async def alter_start_offset(
        self, group: str, topic_id: uuid.UUID, p: PartitionState, offset: int
    ) -> ErrorCode:
        """AlterShareGroupOffsets of one partition (the group is empty): the state starts again at
        ``offset`` with a new state epoch."""
        if await self.coordinator.ensure_topic():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        ckey = share_key(group, topic_id, p.index)
        old = self.coordinator.states.get(ckey)
        state = ShareState(offset, (old.state_epoch + 1) if old is not None else 0, p.leader_epoch)
        self.partitions.pop((group, p.topic, p.index), None)
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.coordinator.write(ckey, state, lambda e: future.done() or future.set_result(e), time_out=True)
        return await future

    async def delete_state(self, group: str, topic: str) -> ErrorCode:
        """DeleteShareGroupOffsets of one topic, or a deleted group: its share-partitions' state goes."""
        t = self.cluster.topics.get(topic)
        keys = []
        for key in self.coordinator.keys_of(group):
            if t is None or key.split(":")[-2] != kafka_uuid(t.topic_id):
                continue
            self.partitions.pop((group, topic, int(key.rsplit(":", 1)[1])), None)
            keys.append(key)
        errors = await self._tombstones(keys)
        return next((e for e in reversed(errors) if e), ErrorCode.NONE)

    async def _tombstones(self, keys: list[str]) -> list[ErrorCode]:
        """Deletes the share-partition states of ``keys``, all written at once (Kafka's persister sends them
        in one request): the answers, each within ``share.coordinator.write.timeout.ms``."""
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[ErrorCode]] = []
        for key in keys:
            future: asyncio.Future[ErrorCode] = loop.create_future()
            self.coordinator.write(key, None, lambda e, f=future: f.done() or f.set_result(e), time_out=True)
            futures.append(future)
        return list(await asyncio.gather(*futures))

    def topic_deleted(self, topic: str) -> None:
        """A topic was deleted: its share-partitions leave the leaders' memory (their locks with them), and
        the share coordinator writes a tombstone for every share-partition state whose topic id the
        cluster no longer has, as Kafka's share coordinator does when the metadata shows the topic deleted
        (KAFKA-19201), whatever the groups' states: a topic made again under the name is another
        share-partition, which starts from ``share.auto.offset.reset``."""
        for key in [key for key in self.partitions if key[1] == topic]:
            del self.partitions[key]
            timer = self._locks.pop(key, None)
            if timer is not None:
                timer.cancel()
        live = {kafka_uuid(t.topic_id) for t in self.cluster.topics.values()}
        self.coordinator.follow_all()
        for key in sorted(self.coordinator.states):
            parts = key.rsplit(":", 2)
            if len(parts) == 3 and parts[1] not in live:
                self.coordinator.write(key, None, lambda _error: None)
        self._wake()

    async def delete_group(self, group: str) -> ErrorCode:
        """DeleteGroups of a share group, in Kafka's order: the group checked (it exists and is empty), then
        its share-partitions' states deleted at the share coordinator, then the group, unless a state could
        not be deleted: the group is then kept and answered that error (``GroupCoordinatorService``
        deletes only the share groups whose persister deletes succeeded)."""
        error = self.groups.deletable(group)
        if error:
            return error
        # Out of the leaders' memory first (Kafka marks them deleting), so that none writes its state
        # again behind the tombstones; a group that stays loads them afresh from the coordinator.
        for key in list(self.partitions):
            if key[0] == group:
                del self.partitions[key]
        failed = [e for e in await self._tombstones(self.coordinator.keys_of(group)) if e]
        if failed:
            return failed[0]
        return self.groups.delete(group)  # checked again: a member may have joined meanwhile


def _current(sp: SharePartition | None, p: PartitionState, topic_id: uuid.UUID) -> bool:
    """Whether ``sp`` is the share-partition of ``p`` as its leader now holds it (a new leader, or a topic
    deleted and made again under its name, loads its own)."""
    return (
        sp is not None
        and sp.leader == p.leader
        and sp.leader_epoch == p.leader_epoch
        and sp.topic_id == topic_id
    )


def _int(static: dict[str, str] | Any, key: str, default: int) -> int:
    raw = static.get(key)
    try:
        return int(str(raw).strip()) if raw is not None and str(raw).strip() else default
    except ValueError:
        return default
