"""A consumer's membership of a group in Kafka's classic protocol, for ``placement-sim consume --group``:
find the coordinator, join, (as the leader) assign with Kafka's range assignor, sync, heartbeat, commit,
fetch committed offsets, leave.

The protocol bytes a consumer group carries (its subscription in JoinGroup, its assignment in SyncGroup)
are Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment, read and written with their
specs in ``schemas/``. Timings are the Java consumer's defaults: ``session.timeout.ms`` 45 s,
``heartbeat.interval.ms`` 3 s, ``max.poll.interval.ms`` (the rebalance timeout) 5 minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any

from placement_sim.cli.kafka_session import Failed, Retriable, Session, check, error_text
from protocol import load_schemas
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = [
    "GroupMember",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "range_assign",
]

SESSION_TIMEOUT_MS = 45_000
REBALANCE_TIMEOUT_MS = 300_000
HEARTBEAT_INTERVAL_S = 3.0
PROTOCOL = "range"

JOIN_GROUP_VERSION = 5
SYNC_GROUP_VERSION = 3
HEARTBEAT_VERSION = 3
LEAVE_GROUP_VERSION = 3
OFFSET_COMMIT_VERSION = 7
OFFSET_FETCH_VERSION = 7

#: The newest version of the consumer protocol's bytes this client writes and knows how to read.
_PROTOCOL_VERSION = 0
_NEWEST_KNOWN = 3
#: Errors that mean the member must join again (its generation or id is no longer the group's).
_REJOIN = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID}
#: Errors that mean the coordinator moved: find it again.
_COORDINATOR_MOVED = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}


def _versioned(name: str, data: Mapping[str, Any]) -> bytes:
    body = load_schemas().message(name).encode(dict(data), _PROTOCOL_VERSION)
    return struct.pack(">h", _PROTOCOL_VERSION) + body


def _read_versioned(name: str, data: bytes) -> dict[str, Any]:
    """A newer version is read as the newest known, what follows ignored (versions only add fields at the
    end), as Kafka's ``ConsumerProtocol`` reads them."""
    if len(data) < 2:
        raise ValueError(f"{name}: {len(data)} bytes, no version")
    (version,) = struct.unpack_from(">h", data)
    decoded, _ = load_schemas().message(name).decode_from(bytes(data), 2, min(version, _NEWEST_KNOWN))
    return dict(decoded)


def encode_subscription(topics: Sequence[str]) -> bytes:
    return _versioned("ConsumerProtocolSubscription", {"Topics": list(topics), "UserData": None})


def decode_subscription(data: bytes) -> list[str]:
    return list(_read_versioned("ConsumerProtocolSubscription", data)["Topics"])


def encode_assignment(partitions: Mapping[str, Sequence[int]]) -> bytes:
    assigned = [{"Topic": t, "Partitions": list(p)} for t, p in sorted(partitions.items())]
    return _versioned("ConsumerProtocolAssignment", {"AssignedPartitions": assigned, "UserData": None})


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """Topic -> partitions (empty bytes: nothing assigned, as a coordinator answers a member left out)."""
    if not data:
        return {}
    decoded = _read_versioned("ConsumerProtocolAssignment", data)
    return {entry["Topic"]: sorted(entry["Partitions"]) for entry in decoded["AssignedPartitions"]}


def range_assign(
    subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Kafka's ``RangeAssignor``: for each topic, its members in member id order each take a contiguous
    range of partitions, the first ``partitions % members`` of them one more. Member -> topic -> partitions
    (every member appears, with nothing when it gets nothing)."""
    assignment: dict[str, dict[str, list[int]]] = {member: {} for member in subscriptions}
    for topic, count in sorted(partitions.items()):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        each, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            size = each + (1 if i < extra else 0)
            if size:
                assignment[member][topic] = list(range(start, start + size))
            start += size
    return assignment


class GroupMember:
    """One consumer of ``group`` subscribed to ``topic``."""

    def __init__(self, session: Session, group: str, topic: str) -> None:
        self.session = session
        self.group = group
        self.topic = topic
        self.member_id = ""
        self.generation = -1
        self.assignment: list[int] = []
        self.needs_join = True
        self._coordinator: int | None = None
        self._heartbeats: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------------------------ requests

    async def _send(self, name: str, data: dict[str, Any], version: int, timeout: float | None = None) -> Any:
        """A request to the coordinator (found first when not known); Retriable when it moved."""
        if self._coordinator is None:
            self._coordinator = await self.session.coordinator(self.group)
        try:
            return await self.session.send(self._coordinator, name, data, version, timeout)
        except Retriable:
            self._coordinator = None
            raise

    def _check(self, code: int, what: str) -> None:
        if code in _COORDINATOR_MOVED:
            self._coordinator = None
        if code in _REJOIN:
            self.needs_join = True
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            raise Retriable(f"group {self.group}: {what}: {error_text(code)}")
        check(code, None, f"group {self.group}: {what}")

    # ------------------------------------------------------------------------------------ joining

    async def join(self, deadline: float | None) -> list[int]:
        """Joins (or joins again) until it has an assignment: the partitions of ``topic`` it got."""
        self.stop_heartbeats()
        assignment = await self.session.retry(f"group {self.group}", self._join_once, deadline)
        self.assignment = assignment
        self.needs_join = False
        self._heartbeats = asyncio.ensure_future(self._heartbeat())
        return assignment

    async def _join_once(self) -> list[int]:
        request = {
            "GroupId": self.group,
            "SessionTimeoutMs": SESSION_TIMEOUT_MS,
            "RebalanceTimeoutMs": REBALANCE_TIMEOUT_MS,
            "MemberId": self.member_id,
            "GroupInstanceId": None,
            "ProtocolType": "consumer",
            "Protocols": [{"Name": PROTOCOL, "Metadata": encode_subscription([self.topic])}],
        }
        joined = await self._send(
            "JoinGroupRequest", request, JOIN_GROUP_VERSION, REBALANCE_TIMEOUT_MS / 1000 + 5
        )
        code = joined["ErrorCode"]
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = joined["MemberId"]
            raise Retriable(f"group {self.group}: JoinGroup: {error_text(code)}")
        self._check(code, "JoinGroup")
        self.member_id = joined["MemberId"]
        self.generation = joined["GenerationId"]
        assignments: list[dict[str, Any]] = []
        if joined["Leader"] == self.member_id:
            assignments = await self._assign(joined["Members"])
        synced = await self._send(
            "SyncGroupRequest",
            {
                "GroupId": self.group,
                "GenerationId": self.generation,
                "MemberId": self.member_id,
                "GroupInstanceId": None,
                "Assignments": assignments,
            },
            SYNC_GROUP_VERSION,
            REBALANCE_TIMEOUT_MS / 1000 + 5,
        )
        self._check(synced["ErrorCode"], "SyncGroup")
        mine = decode_assignment(synced["Assignment"] or b"")
        log.info("group %s: generation %d, %s got %s", self.group, self.generation, self.member_id, mine)
        return mine.get(self.topic, [])

    async def _assign(self, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The leader's part: every member's partitions, by the range assignor."""
        subscriptions: dict[str, list[str]] = {}
        for member in members:
            try:
                subscriptions[member["MemberId"]] = decode_subscription(member["Metadata"])
            except Exception as exc:  # noqa: BLE001 - another client's bytes, whatever is wrong with them
                raise Failed(
                    f"group {self.group}: member {member['MemberId']}'s subscription: {exc}"
                ) from None
        counts = {}
        for topic in sorted({t for topics in subscriptions.values() for t in topics}):
            with contextlib.suppress(Failed):  # a topic that does not exist gets no partitions
                counts[topic] = len((await self.session.topic(topic)).partitions)
        plan = range_assign(subscriptions, counts)
        return [{"MemberId": member, "Assignment": encode_assignment(plan[member])} for member in plan]

    # ------------------------------------------------------------------------------------ heartbeats

    async def _heartbeat(self) -> None:
        """Every 3 s until a heartbeat says the group rebalances (or the member is gone): then
        :attr:`needs_join`. A moved coordinator is found again at the next beat."""
        while not self.needs_join:
            await asyncio.sleep(HEARTBEAT_INTERVAL_S)
            request = {
                "GroupId": self.group,
                "GenerationId": self.generation,
                "MemberId": self.member_id,
                "GroupInstanceId": None,
            }
            try:
                answer = await self._send("HeartbeatRequest", request, HEARTBEAT_VERSION)
                self._check(answer["ErrorCode"], "Heartbeat")
            except Retriable as problem:
                self.session.waiting(str(problem))
            except Failed as failure:
                log.warning("%s", failure)
                self.needs_join = True

    def stop_heartbeats(self) -> None:
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            self._heartbeats = None

    # ------------------------------------------------------------------------------------ offsets

    async def committed(self, partitions: Sequence[int], deadline: float | None) -> dict[int, int]:
        """The group's committed offsets of ``partitions`` (those without one are left out)."""

        async def fetch() -> dict[int, int]:
            request = {
                "GroupId": self.group,
                "Topics": [{"Name": self.topic, "PartitionIndexes": list(partitions)}],
                "RequireStable": False,
            }
            answer = await self._send("OffsetFetchRequest", request, OFFSET_FETCH_VERSION)
            self._check(answer["ErrorCode"], "OffsetFetch")
            found = {}
            for topic in answer["Topics"]:
                for p in topic["Partitions"]:
                    self._check(p["ErrorCode"], f"OffsetFetch {self.topic}-{p['PartitionIndex']}")
                    if p["CommittedOffset"] >= 0:
                        found[p["PartitionIndex"]] = int(p["CommittedOffset"])
            return found

        return await self.session.retry(f"group {self.group}", fetch, deadline)

    async def commit(self, positions: Mapping[int, int], deadline: float | None) -> bool:
        """Commits ``positions`` (partition -> next offset); False when the group rebalanced meanwhile
        (the next owner starts from the last commit, as Kafka's consumer leaves it)."""
        if not positions:
            return True
        request = {
            "GroupId": self.group,
            "GenerationIdOrMemberEpoch": self.generation,
            "MemberId": self.member_id,
            "GroupInstanceId": None,
            "Topics": [
                {
                    "Name": self.topic,
                    "Partitions": [
                        {
                            "PartitionIndex": p,
                            "CommittedOffset": offset,
                            "CommittedLeaderEpoch": -1,
                            "CommittedMetadata": "",
                        }
                        for p, offset in sorted(positions.items())
                    ],
                }
            ],
        }

        async def attempt() -> None:
            answer = await self._send("OffsetCommitRequest", request, OFFSET_COMMIT_VERSION)
            for topic in answer["Topics"]:
                for p in topic["Partitions"]:
                    if p["ErrorCode"] in _REJOIN:
                        self.needs_join = True
                        raise Failed(f"group {self.group}: OffsetCommit: {error_text(p['ErrorCode'])}")
                    self._check(p["ErrorCode"], f"OffsetCommit {self.topic}-{p['PartitionIndex']}")

        try:
            await self.session.retry(f"group {self.group}", attempt, deadline)
        except Failed as failure:
            if not self.needs_join:
                raise
            log.info("%s", failure)
            return False
        return True

    async def leave(self) -> None:
        """LeaveGroup, so that the others get its partitions at once (a failure is only logged)."""
        self.stop_heartbeats()
        if not self.member_id:
            return
        request = {"GroupId": self.group, "Members": [{"MemberId": self.member_id, "GroupInstanceId": None}]}
        try:
            await self.session.retry(
                f"group {self.group}",
                lambda: self._send("LeaveGroupRequest", request, LEAVE_GROUP_VERSION),
                time.monotonic() + 5,
            )
        except Failed as failure:
            log.info("%s", failure)
