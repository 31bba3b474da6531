"""Share groups in the seeded loss checker: share consumers (the project's client speaking
ShareGroupHeartbeat, ShareFetch and ShareAcknowledge) read the checked topic while the producers write and
the cluster goes through the schedule's failures (:mod:`controller.losscheck.schedule`).

:func:`run_share_seed` plays a seed as :func:`~controller.losscheck.run_seed` does, with the producers'
``acks=all`` idempotent configurations, and two members of one share group (``share.auto.offset.reset``
earliest, a 3 s record lock, a delivery count limit of 3; with unclean elections on, the broker default
is on too, so that ``__share_group_state`` and ``__consumer_offsets`` may lose what they acknowledged). Each member heartbeats to the group's
coordinator, keeps a share session on every leader of its partitions, and answers each record it acquires
with a seeded choice: accept it (most), release it, reject it, or leave it unanswered until its lock
expires; its acknowledgements ride on its next ShareFetch or go in a ShareAcknowledge. Requests to a
broker that does not answer are given up after :data:`~controller.losscheck.runner.CLIENT_TIMEOUT_MS` on
the cluster's clock (the session starts over, as a client's does). After the recovery the members drain
the topic, accepting everything, until nothing more comes for two lock durations.

The checks (:data:`SHARE_CHECKS`, beside :data:`~controller.losscheck.DEFAULT_CHECKS`):

1. no record whose acceptance was answered without error is delivered again, unless the share service
   reported that acceptance lost (``lost_acknowledgements``: a share coordinator's move lost it);
2. every record of the final log was accepted (answered, or sent and never answered: the broker may have
   taken it), or is reported archived with its cause (rejected, at the delivery count limit), or its
   offset is covered by a reported loss of the data path (the offset held another record, which the
   group may have accepted).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controller.cluster import NO_LEADER
from controller.losscheck.checks import DEFAULT_CHECKS, Check, Loss, RunRecord, Violation
from controller.losscheck.runner import (
    CLIENT_TIMEOUT_MS,
    SeedResult,
    Setup,
    _Connections,
    _Runner,
    run_schedule,
    server_config,
)
from controller.losscheck.schedule import CONFIGURATIONS, Configuration, Step
from controller.records.batch import iter_batches
from controller.records.records import read_batch_records
from protocol.client import ClientError
from protocol.codes import ErrorCode

__all__ = [
    "SHARE_CHECKS",
    "SHARE_CONFIGURATIONS",
    "AcceptedNotDeliveredAgain",
    "EveryRecordConsumedOrReported",
    "ShareRecord",
    "run_share_seed",
]

#: The share group of a run.
GROUP = "checked-share"
#: Members of the group.
MEMBERS = 2
#: The group's record lock and delivery count limit (short, so that the run sees locks expire and
#: records archived at the limit).
LOCK_MS = 3_000
DELIVERY_LIMIT = 3
#: The broker properties a share run adds (the group configs' bounds let the short lock through).
SHARE_PROPERTIES: dict[str, Any] = {
    "group.share.min.record.lock.duration.ms": 1_000,
    "group.share.record.lock.duration.ms": LOCK_MS,
    "group.share.delivery.count.limit": DELIVERY_LIMIT,
    "group.share.min.heartbeat.interval.ms": 500,
    "group.share.heartbeat.interval.ms": 1_000,
}
#: The producers' configurations of a share run: acks=all and idempotent, both policies, unclean
#: elections on and off (each seed takes its turn).
SHARE_CONFIGURATIONS: tuple[Configuration, ...] = tuple(
    c for c in CONFIGURATIONS if c.acks == -1 and c.idempotent
)
#: The run's cluster and workload (the loss checker's).
_SETUP = Setup()
#: What a member answers to a record it acquired, with weights (``None``: nothing, its lock expires).
_ANSWERS: tuple[tuple[int | None, int], ...] = ((1, 80), (2, 8), (3, 4), (None, 8))
_ACCEPT, _RELEASE, _REJECT = 1, 2, 3
#: Session errors after which a member opens its share session again (epoch 0).
_SESSION_ERRORS = frozenset(
    {ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH, ErrorCode.INVALID_REQUEST}
)
#: Heartbeat errors after which a member joins again (epoch 0).
_REJOIN = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH})


@dataclass(frozen=True, slots=True)
class Delivery:
    """A record a member acquired: where, its value and delivery count; ``order`` numbers the run's
    answers as the members read them."""

    partition: int
    offset: int
    value: bytes | None
    delivery_count: int
    member: str
    order: int


@dataclass(frozen=True, slots=True)
class Acceptance:
    """An acceptance answered without error (``order`` as :attr:`Delivery.order`)."""

    partition: int
    offset: int
    value: bytes | None
    member: str
    order: int


@dataclass(frozen=True, slots=True)
class ReportedArchive:
    """An entry of the share service's ``archived``."""

    partition: int
    first_offset: int
    last_offset: int
    cause: str


@dataclass
class ShareRecord:
    """What a share run records (``RunRecord.extras["share"]``)."""

    topic: str
    deliveries: list[Delivery] = field(default_factory=list)
    accepted: list[Acceptance] = field(default_factory=list)
    #: Acceptances sent whose answer never came: (partition, offset, value).
    unanswered: list[tuple[int, int, bytes | None]] = field(default_factory=list)
    archived: list[ReportedArchive] = field(default_factory=list)
    #: (partition, offsets) of each reported lost acknowledgement.
    lost_acknowledgements: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    answers: int = 0

    def next_order(self) -> int:
        self.answers += 1
        return self.answers


def _share(run: RunRecord) -> ShareRecord:
    record = run.extras.get("share")
    if not isinstance(record, ShareRecord):
        raise ValueError("not a share run: RunRecord.extras has no 'share'")
    return record


class AcceptedNotDeliveredAgain(Check):
    name = "accepted record delivered again"

    def check(self, run: RunRecord) -> list[Violation]:
        share = _share(run)
        accepted: dict[tuple[int, int], Acceptance] = {}
        for a in share.accepted:
            accepted.setdefault((a.partition, a.offset), a)
        reported = {(p, o) for p, offsets in share.lost_acknowledgements for o in offsets}
        return [
            self._violation(
                f"{share.topic}-{d.partition} offset {d.offset} ({d.value!r}) was accepted by {a.member} "
                f"(answer {a.order}) and delivered again to {d.member} (answer {d.order}, delivery count "
                f"{d.delivery_count}) with no lost acknowledgement reported"
            )
            for d in share.deliveries
            if (a := accepted.get((d.partition, d.offset))) is not None
            and d.order > a.order
            and (d.partition, d.offset) not in reported
        ]


class EveryRecordConsumedOrReported(Check):
    name = "record neither consumed nor reported"

    def check(self, run: RunRecord) -> list[Violation]:
        share = _share(run)
        consumed = {(a.partition, a.offset, a.value) for a in share.accepted} | set(share.unanswered)
        found = []
        for r in run.read:
            if r.topic != share.topic or (r.partition, r.offset, r.value) in consumed:
                continue
            if any(
                a.partition == r.partition and a.first_offset <= r.offset <= a.last_offset
                for a in share.archived
            ):
                continue
            if any(loss.covers(r.topic, r.partition, r.offset) for loss in run.losses):
                continue
            found.append(
                self._violation(
                    f"{r.topic}-{r.partition} offset {r.offset} ({r.value!r}) is in the log, was never "
                    "accepted, and no archive or loss reports it"
                )
            )
        return found


#: The promise with the share group's rules.
SHARE_CHECKS: tuple[Check, ...] = (
    *DEFAULT_CHECKS,
    AcceptedNotDeliveredAgain(),
    EveryRecordConsumedOrReported(),
)


@dataclass
class _Session:
    """A member's share session on one broker, as the member sees it."""

    epoch: int = 0
    partitions: set[int] = field(default_factory=set)


@dataclass
class _InFlight:
    task: asyncio.Future[dict[str, Any]]
    sent_at: int
    broker: int


class _Member:
    """One share consumer: a heartbeat in flight at most, and one request per broker."""

    def __init__(self, index: int, runner: _ShareRunner) -> None:
        self.runner = runner
        self.rng = random.Random(f"{runner.seed}-member-{index}")
        self.member_id = str(uuid.UUID(int=self.rng.getrandbits(128)))
        self.name = f"m{index}"
        self.connections = _Connections(runner.server)
        #: FindCoordinator's own connections: a broker answers a connection's requests one at a time, so
        #: one asked where a ShareFetch or ShareAcknowledge waits on the clock would wait with it.
        self.lookups = _Connections(runner.server)
        self.epoch = 0
        self.coordinator = NO_LEADER
        self.assigned: set[int] = set()
        self.next_heartbeat = 0
        self.heartbeat: _InFlight | None = None
        self.sessions: dict[int, _Session] = defaultdict(_Session)
        self.requests: dict[int, _InFlight] = {}
        #: broker -> partition -> [(offset, type, value)] not yet sent.
        self.acks: dict[int, dict[int, list[tuple[int, int, bytes | None]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.accept_all = False

    @property
    def share(self) -> ShareRecord:
        return self.runner.share

    # ------------------------------------------------------------------------------------- acting

    async def act(self) -> None:
        now = self.runner.clock.now()
        if self.heartbeat is None and (now >= self.next_heartbeat or self.epoch == 0):
            await self._heartbeat(now)
        if self.epoch <= 0:
            return
        wanted: dict[int, set[int]] = defaultdict(set)
        for index in sorted(self.assigned):
            leader = self.runner.partition(index).leader
            if leader != NO_LEADER:
                wanted[leader].add(index)
        for broker in sorted(set(wanted) | {b for b, acks in self.acks.items() if acks}):
            if broker not in self.requests:
                await self._fetch(broker, wanted.get(broker, set()), now)

    async def _heartbeat(self, now: int) -> None:
        if self.coordinator == NO_LEADER:
            self.coordinator = await self._find_coordinator()
            if self.coordinator == NO_LEADER:
                return
        client = await self.connections.to(self.coordinator)
        if client is None:
            self.coordinator = NO_LEADER
            return
        request = {
            "GroupId": GROUP,
            "MemberId": self.member_id,
            "MemberEpoch": self.epoch,
            "RackId": None,
            "SubscribedTopicNames": [self.runner.topic] if self.epoch == 0 else None,
        }
        task = asyncio.ensure_future(
            client.send("ShareGroupHeartbeatRequest", request, version=1, timeout=600)
        )
        flight = self.heartbeat = _InFlight(task, now, self.coordinator)
        task.add_done_callback(lambda t: self._heartbeat_answered(flight, t))

    async def _find_coordinator(self) -> int:
        for broker in self.runner.serving_brokers():
            client = await self.lookups.to(broker)
            if client is None:
                continue
            try:
                answer = await client.send(
                    "FindCoordinatorRequest", {"Key": GROUP, "KeyType": 0}, version=3, timeout=10
                )
            except (ClientError, OSError):
                self.lookups.drop(broker)
                continue
            if answer["ErrorCode"] == ErrorCode.NONE:
                return int(answer["NodeId"])
        return NO_LEADER

    def _heartbeat_answered(self, flight: _InFlight, task: asyncio.Future[dict[str, Any]]) -> None:
        if self.heartbeat is flight:
            self.heartbeat = None
        if task.cancelled() or task.exception() is not None:
            self.connections.drop(flight.broker)
            self.coordinator = NO_LEADER
            return
        answer = task.result()
        code = ErrorCode(answer["ErrorCode"])
        now = self.runner.clock.now()
        if code in _REJOIN:
            self.epoch, self.assigned = 0, set()
            return
        if code is not ErrorCode.NONE:
            self.coordinator = NO_LEADER  # NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, ...: found again
            self.next_heartbeat = now + 500
            return
        self.epoch = answer["MemberEpoch"]
        self.next_heartbeat = now + answer["HeartbeatIntervalMs"]
        assignment = answer["Assignment"]
        if assignment is not None:
            topic_id = self.runner.topic_id
            self.assigned = {
                i
                for tp in assignment["TopicPartitions"]
                if tp["TopicId"] == topic_id
                for i in tp["Partitions"]
            }

    async def _fetch(self, broker: int, wanted: set[int], now: int) -> None:
        session = self.sessions[broker]
        pending = self.acks[broker]
        if not wanted and not pending and session.epoch == 0:
            return
        client = await self.connections.to(broker)
        if client is None:
            self._lost_session(broker)
            return
        acks = {p: list(entries) for p, entries in pending.items() if entries}
        pending.clear()
        if session.epoch == 0 and acks:
            # A new session cannot carry acknowledgements: the records come back when their locks expire.
            acks = {}
        topic_id = self.runner.topic_id
        separate = bool(acks) and self.rng.random() < 0.3
        if separate:
            name = "ShareAcknowledgeRequest"
            request: dict[str, Any] = {
                "GroupId": GROUP,
                "MemberId": self.member_id,
                "ShareSessionEpoch": session.epoch,
                "Topics": [
                    {"TopicId": topic_id, "Partitions": [_ack_entry(p, e) for p, e in sorted(acks.items())]}
                ],
            }
        else:
            name = "ShareFetchRequest"
            listed = sorted(wanted | set(acks))
            forget = sorted(session.partitions - wanted)
            request = {
                "GroupId": GROUP,
                "MemberId": self.member_id,
                "ShareSessionEpoch": session.epoch,
                "MaxWaitMs": 0,
                "MinBytes": 1,
                "MaxBytes": 1 << 20,
                "MaxRecords": 50,
                "BatchSize": 50,
                "Topics": [
                    {"TopicId": topic_id, "Partitions": [_ack_entry(p, acks.get(p, [])) for p in listed]}
                ]
                if listed
                else [],
                "ForgottenTopicsData": [{"TopicId": topic_id, "Partitions": forget}] if forget else [],
            }
            session.partitions = set(wanted)
        session.epoch += 1
        task = asyncio.ensure_future(client.send(name, request, version=1, timeout=600))
        flight = self.requests[broker] = _InFlight(task, now, broker)
        task.add_done_callback(lambda t: self._answered(flight, t, acks))

    def _lost_session(self, broker: int) -> None:
        self.sessions.pop(broker, None)
        self.acks.pop(broker, None)

    def _answered(
        self,
        flight: _InFlight,
        task: asyncio.Future[dict[str, Any]],
        acks: dict[int, list[tuple[int, int, bytes | None]]],
    ) -> None:
        broker = flight.broker
        if self.requests.get(broker) is flight:
            del self.requests[broker]
        share = self.share
        if task.cancelled() or task.exception() is not None:
            for partition, entries in sorted(acks.items()):
                share.unanswered += [(partition, o, v) for o, kind, v in entries if kind == _ACCEPT]
            self.connections.drop(broker)
            self._lost_session(broker)
            return
        answer = task.result()
        order = share.next_order()
        if answer["ErrorCode"] != ErrorCode.NONE:
            if ErrorCode(answer["ErrorCode"]) in _SESSION_ERRORS:
                self._lost_session(broker)
            return
        codes: dict[int, int] = {}
        for topic in answer["Responses"]:
            for p in topic["Partitions"]:
                index = p["PartitionIndex"]
                codes[index] = p.get("AcknowledgeErrorCode", p["ErrorCode"])
                if p.get("AcquiredRecords"):
                    self._acquired(broker, index, p, order)
        for partition, entries in sorted(acks.items()):
            if codes.get(partition, ErrorCode.NONE) != ErrorCode.NONE:
                continue  # not acknowledged: the records come back
            share.accepted += [
                Acceptance(partition, o, v, self.name, order) for o, kind, v in entries if kind == _ACCEPT
            ]

    def _acquired(self, broker: int, index: int, p: dict[str, Any], order: int) -> None:
        ranges = [(r["FirstOffset"], r["LastOffset"], r["DeliveryCount"]) for r in p["AcquiredRecords"]]
        values: dict[int, bytes | None] = {}
        for header, batch in iter_batches(p["Records"] or b""):
            for record in read_batch_records(batch, header):
                values[record.offset] = record.value
        for first, last, count in ranges:
            for offset in range(first, last + 1):
                if offset not in values:
                    continue  # a gap: the share-partition archives it
                value = values[offset]
                self.share.deliveries.append(Delivery(index, offset, value, count, self.name, order))
                kind = _ACCEPT if self.accept_all else self._answer()
                if kind is not None:
                    self.acks[broker][index].append((offset, kind, value))

    def _answer(self) -> int | None:
        kinds, weights = zip(*_ANSWERS, strict=True)
        return self.rng.choices(kinds, weights)[0]

    def give_up_late(self, now: int) -> None:
        flights = [self.heartbeat, *self.requests.values()]
        for flight in flights:
            if flight is not None and not flight.task.done() and now - flight.sent_at >= CLIENT_TIMEOUT_MS:
                flight.task.cancel()

    def busy(self) -> int:
        return (self.heartbeat is not None) + len(self.requests)

    async def close(self) -> None:
        for flight in [self.heartbeat, *self.requests.values()]:
            if flight is not None:
                flight.task.cancel()
        await self.connections.close()
        await self.lookups.close()


def _ack_entry(partition: int, entries: list[tuple[int, int, bytes | None]]) -> dict[str, Any]:
    return {
        "PartitionIndex": partition,
        "AcknowledgementBatches": [
            {"FirstOffset": o, "LastOffset": o, "AcknowledgeTypes": [kind]} for o, kind, _ in sorted(entries)
        ],
    }


class _ShareRunner(_Runner):
    """A run with share group members reading while the producers write (see the module docstring)."""

    def __init__(self, server: Any, seed: int, configuration: Configuration, setup: Setup) -> None:
        super().__init__(server, seed, configuration, setup)
        self.share = ShareRecord(setup.topic)
        self.run.extras["share"] = self.share
        self.members = [_Member(i, self) for i in range(MEMBERS)]
        self.topic_id: uuid.UUID | None = None

    async def setup_topic(self) -> None:
        await super().setup_topic()
        self.topic_id = self.cluster.topics[self.topic].topic_id
        self.cluster.set_group_configs(GROUP, {"share.auto.offset.reset": "earliest"}, "loss checker")

    async def members_act(self) -> None:
        now = self.clock.now()
        for member in self.members:
            member.give_up_late(now)
        await self.settle()
        for member in self.members:
            await member.act()
        await self.settle()

    async def step(self, step: Step) -> None:
        await super().step(step)
        await self.members_act()

    async def _advance(self, ms: int) -> None:
        left = ms
        while left > 0:
            tick = min(left, 500)
            await super()._advance(tick)  # one tick: the producers act
            left -= tick
            await self.members_act()

    async def drain(self, limit_ms: int = 60_000) -> None:
        """The members accept everything until nothing more is delivered for two lock durations (or
        ``limit_ms`` of the cluster's clock)."""
        for member in self.members:
            member.accept_all = True
        quiet = spent = 0
        while spent < limit_ms and quiet < 2 * LOCK_MS:
            before = len(self.share.deliveries)
            await self._advance(500)
            spent += 500
            busy = any(m.acks[b] for m in self.members for b in list(m.acks))
            quiet = quiet + 500 if len(self.share.deliveries) == before and not busy else 0

    def collect(self) -> None:
        service = self.controller.share
        self.share.archived = [
            ReportedArchive(a.partition, a.first_offset, a.last_offset, a.cause)
            for a in service.archived
            if a.group == GROUP and a.topic == self.topic
        ]
        self.share.lost_acknowledgements = [
            (lost.partition, tuple(lost.offsets))
            for lost in service.lost_acknowledgements
            if lost.group == GROUP and lost.topic == self.topic
        ]

    async def finish(self) -> None:
        """Drains the members, reads the topic back and takes its losses; those of the internal topics
        are the share service's to report (``lost_acknowledgements``, which check 1 reads)."""
        await self.drain()
        await self.read_back()
        self.run.losses = [
            Loss.of(lost)
            for lost in self.server.controller.data_path.lost_records()
            if lost.topic == self.setup.topic
        ]
        self.collect()

    async def close(self) -> None:
        for member in self.members:
            await member.close()
        await super().close()


async def run_share_seed(
    seed: int,
    configuration: Configuration | None = None,
    setup: Setup = _SETUP,
    checks: Iterable[Check] = SHARE_CHECKS,
) -> SeedResult:
    """One share run (see the module docstring); ``configuration`` defaults to the seed's turn in
    :data:`SHARE_CONFIGURATIONS`. Runs on the caller's event loop (and again from the start, up to three
    times, when a restarted broker's port was taken meanwhile, as :func:`run_seed` does)."""
    if configuration is None:
        configuration = SHARE_CONFIGURATIONS[seed % len(SHARE_CONFIGURATIONS)]
    properties = dict(SHARE_PROPERTIES)
    if configuration.unclean:  # the internal topics too: a share coordinator's move may lose acceptances
        properties["unclean.leader.election.enable"] = "true"
    config = server_config(seed, configuration, setup, properties)
    return await run_schedule(f"share seed {seed}", _ShareRunner, seed, configuration, setup, checks, config)
