"""The consumer of ``placement-sim consume``: reads a topic's partitions as Kafka's console consumer does.

Without ``--group`` it reads the partition named, or every partition of the topic, from ``--offset``,
the beginning (``--from-beginning``) or the end; with ``--group`` it joins the group (Kafka's classic
protocol, the range assignor: :mod:`placement_sim.cli.group_member`), starts each partition it gets at
the group's committed offset (else the beginning or the end, as ``auto.offset.reset``), and commits its
position every 5 s, before a rebalance and when it stops. It waits for new records until
``max_messages`` were printed, nothing came for ``idle_timeout`` seconds (``--timeout-ms``), or Ctrl-C.

Requests go to each partition's leader. A retriable error (a leader moved, an election in progress, a
broker that crashed, a coordinator failing over) is retried with fresh metadata for as long as the
consumer waits; an offset out of range starts the partition again where ``auto.offset.reset`` says.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from controller.records.records import Record, consumer_records, records_end
from placement_sim.cli.group_member import GroupMember
from placement_sim.cli.kafka_session import Failed, GaveUp, Retriable, Session, check
from protocol.codes import ErrorCode

__all__ = ["ConsoleConsumer", "Formatter"]

FETCH_VERSION = 11
EARLIEST = -2
LATEST = -1
#: Kafka's consumer defaults: ``fetch.max.wait.ms`` and ``auto.commit.interval.ms``.
FETCH_MAX_WAIT_MS = 500
AUTO_COMMIT_INTERVAL_S = 5.0
FETCH_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Formatter:
    """How a record is printed (Kafka's ``DefaultMessageFormatter``: ``print.partition``, ``print.offset``,
    ``print.key``, ``key.separator``); ``offsets``: the project's ``N: value`` prefix."""

    print_key: bool = False
    print_partition: bool = False
    print_offset: bool = False
    separator: str = "\t"
    offsets: bool = False

    def line(self, partition: int, record: Record) -> str:
        parts = []
        if self.print_partition:
            parts.append(f"Partition:{partition}")
        if self.print_offset:
            parts.append(f"Offset:{record.offset}")
        if self.print_key:
            parts.append(_text(record.key))
        parts.append(_text(record.value))
        text = self.separator.join(parts)
        return f"{record.offset}: {text}" if self.offsets else text


def _text(data: bytes | None) -> str:
    return "null" if data is None else bytes(data).decode(errors="replace")


class ConsoleConsumer:
    """Reads ``topic`` through ``session``; :meth:`run` prints records and returns how many it printed."""

    def __init__(
        self,
        session: Session,
        topic: str,
        formatter: Formatter,
        partition: int | None = None,
        start: int | None = None,
        from_beginning: bool = False,
        group: str | None = None,
        max_messages: int | None = None,
        idle_timeout: float | None = None,
        out: Callable[[str], None] = print,
        read_committed: bool = False,
    ) -> None:
        self.session = session
        self.topic = topic
        self.formatter = formatter
        self.partition = partition
        self.start = start
        self.reset = EARLIEST if from_beginning else LATEST
        self.member = GroupMember(session, group, topic) if group is not None else None
        self.max_messages = max_messages
        self.idle_timeout = idle_timeout
        self.out = out
        #: IsolationLevel 1: up to the last stable offset, without the records of aborted transactions.
        self.read_committed = read_committed
        self.printed = 0
        self.positions: dict[int, int] = {}
        self._committed: dict[int, int] = {}
        self._last_progress = time.monotonic()
        self._last_commit = time.monotonic()

    # ------------------------------------------------------------------------------------ the loop

    def _deadline(self) -> float | None:
        return None if self.idle_timeout is None else self._last_progress + self.idle_timeout

    def _done(self) -> bool:
        if self.max_messages is not None and self.printed >= self.max_messages:
            return True
        deadline = self._deadline()
        return deadline is not None and time.monotonic() >= deadline

    async def run(self) -> int:
        """Prints records until :meth:`_done` (Failed for an error it cannot retry; CancelledError on
        Ctrl-C: :meth:`close` commits and leaves either way)."""
        try:
            await self._assign()
            while not self._done():
                if self.member is not None and self.member.needs_join:
                    await self._rejoin()
                    continue
                if not self.positions:  # nothing assigned (more consumers than partitions): wait
                    await asyncio.sleep(min(FETCH_MAX_WAIT_MS / 1000, self._left()))
                    continue
                await self._fetch_round()
                await self._maybe_commit()
        except GaveUp:
            if self.idle_timeout is not None and self._done():
                return self.printed  # the wait ran out while retrying: as a timeout without records
            raise
        return self.printed

    def _left(self) -> float:
        deadline = self._deadline()
        return 3600.0 if deadline is None else max(0.0, deadline - time.monotonic())

    async def close(self) -> None:
        """Commits the position and leaves the group (a consumer with ``--group``)."""
        if self.member is None:
            return
        with contextlib.suppress(Failed):
            await self.member.commit(self._uncommitted(), time.monotonic() + 5)
        await self.member.leave()

    # ------------------------------------------------------------------------------------ assignment

    async def _assign(self) -> None:
        """The partitions to read and where each starts."""
        if self.member is not None:
            await self._rejoin()
            return
        if self.partition is not None:
            await self.session.retry(
                f"{self.topic}-{self.partition}",
                lambda: self.session.leader(self.topic, self.partition or 0),
                self._deadline(),
            )
            partitions = [self.partition]
        else:
            info = await self.session.retry(
                f"topic {self.topic}", lambda: self.session.topic(self.topic), self._deadline()
            )
            partitions = sorted(info.partitions)
        if self.start is not None and self.start >= 0:
            self.positions = {p: self.start for p in partitions}
        else:
            timestamp = self.start if self.start is not None else self.reset
            self.positions = await self._list_offsets(partitions, timestamp)

    async def _rejoin(self) -> None:
        """Commits what was read (the eager protocol gives every partition up), joins, and starts each
        partition it got at the group's committed offset, else as ``auto.offset.reset``."""
        assert self.member is not None
        if self.member.generation >= 0:
            await self.member.commit(self._uncommitted(), self._deadline())
        partitions = await self.member.join(self._deadline())
        committed = await self.member.committed(partitions, self._deadline())
        missing = [p for p in partitions if p not in committed]
        reset = await self._list_offsets(missing, self.reset) if missing else {}
        self.positions = {**committed, **reset}
        self._committed = dict(committed)

    async def _list_offsets(self, partitions: Iterable[int], timestamp: int) -> dict[int, int]:
        """Each partition's offset for ``timestamp`` (-2 the log start, -1 the end), from its leader."""
        return await self.session.offsets(self.topic, partitions, timestamp, self._deadline())

    # ------------------------------------------------------------------------------------ fetching

    async def _fetch_round(self) -> None:
        """One Fetch to each leader of the partitions read; prints what came back."""
        by_leader: dict[int, list[int]] = {}
        waiting: list[str] = []
        for partition in sorted(self.positions):
            try:
                leader = await self.session.leader(self.topic, partition)
            except Retriable as problem:
                waiting.append(str(problem))
                continue
            by_leader.setdefault(leader, []).append(partition)
        if not by_leader:
            self.session.waiting(f"topic {self.topic}: waiting: {waiting[0]}")
            self.session.invalidate()
            await asyncio.sleep(min(0.1, self._left()))
            return
        answers = await asyncio.gather(
            *(self._fetch(leader, partitions) for leader, partitions in by_leader.items()),
            return_exceptions=True,
        )
        for answer in answers:
            if isinstance(answer, Retriable):
                self.session.waiting(f"topic {self.topic}: waiting: {answer}")
                self.session.invalidate()
            elif isinstance(answer, BaseException):
                raise answer
        if any(isinstance(a, Retriable) for a in answers):
            await asyncio.sleep(min(0.1, self._left()))

    async def _fetch(self, leader: int, partitions: list[int]) -> None:
        wait_ms = int(min(FETCH_MAX_WAIT_MS, self._left() * 1000))
        request = {
            "ReplicaId": -1,
            "MaxWaitMs": wait_ms,
            "MinBytes": 1,
            "MaxBytes": FETCH_MAX_BYTES,
            "IsolationLevel": 1 if self.read_committed else 0,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [
                {
                    "Topic": self.topic,
                    "Partitions": [
                        {
                            "Partition": p,
                            "CurrentLeaderEpoch": -1,
                            "FetchOffset": self.positions[p],
                            "LogStartOffset": -1,
                            "PartitionMaxBytes": FETCH_MAX_BYTES,
                        }
                        for p in partitions
                    ],
                }
            ],
            "ForgottenTopicsData": [],
            "RackId": "",
        }
        response = await self.session.send(
            leader, "FetchRequest", request, FETCH_VERSION, timeout=wait_ms / 1000 + 10
        )
        check(response.get("ErrorCode", 0), None, f"Fetch from broker {leader}")
        for topic in response["Responses"]:
            for answer in topic["Partitions"]:
                await self._take(answer)

    async def _take(self, answer: dict[str, Any]) -> None:
        partition = answer["PartitionIndex"]
        if partition not in self.positions:
            return
        code = answer["ErrorCode"]
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            [self.positions[partition]] = (await self._list_offsets([partition], self.reset)).values()
            return
        if code:
            check(code, None, f"{self.topic}-{partition}")  # Retriable, or Failed
        data = answer["Records"] or b""
        aborted = None
        if self.read_committed:
            aborted = [(t["FirstOffset"], t["ProducerId"]) for t in answer.get("AbortedTransactions") or ()]
        for _, record in consumer_records(data, aborted):
            if record.offset < self.positions[partition]:
                continue
            if self.max_messages is not None and self.printed >= self.max_messages:
                return
            self.out(self.formatter.line(partition, record))
            self.printed += 1
            self.positions[partition] = record.offset + 1
            self._last_progress = time.monotonic()
        # Past the markers and the aborted records skipped, as Kafka's consumer moves on.
        self.positions[partition] = max(self.positions[partition], records_end(data))

    # ------------------------------------------------------------------------------------ commits

    def _uncommitted(self) -> dict[int, int]:
        return {p: o for p, o in self.positions.items() if self._committed.get(p) != o}

    async def _maybe_commit(self) -> None:
        """Every 5 s, as ``enable.auto.commit`` does."""
        if self.member is None or time.monotonic() - self._last_commit < AUTO_COMMIT_INTERVAL_S:
            return
        self._last_commit = time.monotonic()
        positions = self._uncommitted()
        if await self.member.commit(positions, self._deadline()):
            self._committed.update(positions)
