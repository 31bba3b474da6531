"""Members of one consumer group made of three different clients (confluent-kafka, kafka-python, aiokafka),
each driven one step at a time: a step reads what the client hands over, notes every (partition, offset,
value) as processed, then commits synchronously. Each member steps in a thread of its own (``run()``), as
separate applications would: a rebalance completes only when every member rejoins, and a client that
blocks in its own call while it waits for the new assignment (aiokafka's ``getmany`` does) must not keep
the others from rejoining. aiokafka's consumer lives on an event loop of its own in that thread.

Each client gets the classic ``roundrobin`` assignor in common (confluent-kafka's default list is
``range,roundrobin``, kafka-python's ``range, roundrobin``, aiokafka's ``roundrobin`` alone, and the
coordinator picks the protocol every member supports), a 6 s session (Kafka's minimum, the shortest the
coordinator accepts) with heartbeats every 300 ms, and no automatic commits.

A commit after processing is safe across an eager rebalance only when the client does not hand its
partitions over while the application still holds records it has read and not yet committed. Each client
is set up so that it does not (what each does is noted at its class).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from confluent_kafka import Consumer
from kafka import KafkaConsumer

#: What a member has read: (partition, offset, value).
Read = tuple[int, int, bytes]
#: One thing a member did, in the order every member's things happened: (sequence number, "read" or
#: "commit", partition, offset read or next offset committed).
Event = tuple[int, str, int, int]

_sequence = itertools.count()  # next() on a count is atomic: one order across the members' threads

#: Every client's timeouts (seconds) are bounded by this.
TIMEOUT_S = 10
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 300
KAFKA_PYTHON_POLL_MS = 1000
#: Records handed over per step, so that a member reads a partition over many steps.
STEP_RECORDS = 20


class Member:
    """One client in the group: ``step()`` reads, notes and commits; ``assignment()``; ``_close()`` leaves.

    ``run()`` starts stepping in a thread of its own; ``read``, ``committed`` and ``partitions`` (the
    assignment after the last step) are what the test looks at; ``close()`` stops the thread and leaves.
    """

    label = ""

    def __init__(self, name: str, tolerate_failed_commits: bool = False) -> None:
        self.name = name
        #: Everything it read, in order; each step's reads are committed before the step returns.
        self.read: list[Read] = []
        #: The offsets each successful commit covered: partition -> next offset to read.
        self.committed: dict[int, int] = {}
        #: Its reads and successful commits, numbered in one order with every other member's.
        self.events: list[Event] = []
        #: False: a failed commit fails the member. True: it is noted here and the member goes on
        #: (what an at-least-once application does while its coordinator is away).
        self.tolerate_failed_commits = tolerate_failed_commits
        self.failed_commits: list[BaseException] = []
        #: Its assignment as of its last step.
        self.partitions: frozenset[int] = frozenset()
        #: What its thread raised, if anything.
        self.error: BaseException | None = None
        self.closed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self) -> list[Read]:
        """Reads what the client hands over, notes it as processed, then commits synchronously."""
        got = self._read()
        self.read += got
        self.events += [(next(_sequence), "read", p, o) for p, o, _ in got]
        if not got:
            return got
        try:
            self._commit()
        except Exception as exc:  # noqa: BLE001 - each client raises its own kinds
            if not self.tolerate_failed_commits:
                raise
            self.failed_commits.append(exc)
            return got
        last: dict[int, int] = {}
        for partition, offset, _ in got:
            last[partition] = offset + 1
        self.committed.update(last)
        self.events += [(next(_sequence), "commit", p, o) for p, o in sorted(last.items())]
        return got

    def _read(self) -> list[Read]:
        raise NotImplementedError

    def _commit(self) -> None:
        """Commits the positions of what was read, synchronously; raises when the commit failed."""
        raise NotImplementedError

    def assignment(self) -> set[int]:
        raise NotImplementedError

    def run(self) -> Member:
        def loop() -> None:
            try:
                while not self._stop.is_set():
                    self.step()
                    self.partitions = frozenset(self.assignment())
                    time.sleep(0.005)
            except BaseException as exc:  # noqa: BLE001 - handed to the test by check()
                self.error = exc

        self._thread = threading.Thread(target=loop, name=f"member-{self.name}", daemon=True)
        self._thread.start()
        return self

    def check(self) -> None:
        """Raises what the member's thread raised."""
        if self.error is not None:
            raise AssertionError(f"{self.name} failed: {self.error!r}") from self.error

    def pause(self) -> None:
        """Stops stepping (the client stays in the group until its session ends or it is closed)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(TIMEOUT_S * 3)
            assert not self._thread.is_alive(), f"{self.name} did not stop stepping"

    def close(self) -> None:
        """Stops stepping and leaves the group (once; later calls do nothing)."""
        if not self.closed:
            self.closed = True
            self.pause()
            self._close()

    def _close(self) -> None:
        raise NotImplementedError


class ConfluentMember(Member):
    """librdkafka. Without a rebalance callback librdkafka revokes the assignment in its own thread, at
    any time between the application's calls; with one (``on_revoke``) the revocation waits for the
    application's next ``consume()``, which serves it, so a step's commit always precedes the handover
    (the eager protocol's contract, as for the Java consumer's ``onPartitionsRevoked``)."""

    label = "confluent-kafka"

    def __init__(
        self, bootstrap: str, group: str, topic: str, name: str, tolerant: bool = False, **extra: Any
    ) -> None:
        super().__init__(name, tolerant)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
                "socket.timeout.ms": TIMEOUT_S * 1000,
                "log_level": 0,
                **extra,
            }
        )
        self.revoked: list[set[int]] = []
        self.consumer.subscribe(
            [topic], on_revoke=lambda _, partitions: self.revoked.append({p.partition for p in partitions})
        )

    def _read(self) -> list[Read]:
        return [
            (m.partition(), m.offset(), m.value())
            for m in self.consumer.consume(STEP_RECORDS, 0.05)
            if m.error() is None
        ]

    def _commit(self) -> None:
        done = self.consumer.commit(asynchronous=False)
        if done is None or any(tp.error is not None for tp in done):
            raise RuntimeError(f"commit failed: {done}")

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def _close(self) -> None:
        self.consumer.close()


class KafkaPythonMember(Member):
    """kafka-python. Joining and syncing happen inside ``poll()`` (kafka-python 3.0 runs them as tasks on
    its IO thread, which ``poll()`` drives), so a rebalance never overtakes a step's commit.

    ``poll()`` waits up to a second (KAFKA_PYTHON_POLL_MS), as applications do, not 50 ms: with 50 ms
    kafka-python 3.0.12 hangs now and then. A ``poll()`` that times out while its JoinGroup/SyncGroup
    is in flight returns early ("coordinator.poll: timeout in ensure_active_group") and leaves the
    join task running on the IO thread; after a few such rebalances the SyncGroup answer arrives (the
    wire log shows its bytes received) and is never handled, the IO thread stops running the tasks
    the caller hands it (a task put in its ready queue with a wake-up stays there for seconds), the
    caller's next ``poll()`` blocks, and as heartbeats are off while joining, the coordinator ends
    the member's session 6 s later, as Kafka's would. The member then sits outside the group with no
    partitions. With a 1 s poll none of about 30 runs of the group modules hung; with 50 ms about one in three
    did.
    """

    label = "kafka-python"

    def __init__(
        self, bootstrap: str, group: str, topic: str, name: str, tolerant: bool = False, **extra: Any
    ) -> None:
        super().__init__(name, tolerant)
        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            request_timeout_ms=TIMEOUT_S * 1000,
            max_poll_records=STEP_RECORDS,
            **extra,
        )

    def _read(self) -> list[Read]:
        return [
            (r.partition, r.offset, r.value)
            for records in self.consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS).values()
            for r in records
        ]

    def _commit(self) -> None:
        self.consumer.commit(timeout_ms=TIMEOUT_S * 1000)

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def _close(self) -> None:
        self.consumer.close(timeout_ms=TIMEOUT_S * 1000)


class _HoldWhileProcessing(ConsumerRebalanceListener):  # type: ignore[misc]
    """aiokafka rebalances in its coordinator task, concurrently with the application; it awaits
    ``on_partitions_revoked`` before it rejoins (with its heartbeat running, so a commit there is still
    of the old generation). Waiting there for the step in progress to finish keeps commit and handover
    in order, as aiokafka's documentation advises for manual commits."""

    def __init__(self, lock: asyncio.Lock) -> None:
        self.lock = lock

    async def on_partitions_revoked(self, revoked: Any) -> None:
        async with self.lock:
            pass

    async def on_partitions_assigned(self, assigned: Any) -> None:
        pass


class AiokafkaMember(Member):
    """aiokafka, on its own event loop in a background thread."""

    label = "aiokafka"

    def __init__(
        self, bootstrap: str, group: str, topic: str, name: str, tolerant: bool = False, **extra: Any
    ) -> None:
        super().__init__(name, tolerant)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f"aiokafka-{name}", daemon=True)
        self.thread.start()

        async def start() -> tuple[AIOKafkaConsumer, asyncio.Lock]:
            lock = asyncio.Lock()
            consumer = AIOKafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=group,
                client_id=name,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                session_timeout_ms=SESSION_TIMEOUT_MS,
                heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                request_timeout_ms=TIMEOUT_S * 1000,
                **extra,
            )
            consumer.subscribe([topic], listener=_HoldWhileProcessing(lock))
            await consumer.start()
            return consumer, lock

        self.consumer, self.lock = self._run(start)

    def _run(self, make: Callable[[], Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(TIMEOUT_S * 2)

    def _read(self) -> list[Read]:
        """Takes the lock that on_partitions_revoked waits for; it is held until the commit is done."""

        async def read() -> list[Read]:
            await self.lock.acquire()
            try:
                batch = await self.consumer.getmany(timeout_ms=50, max_records=STEP_RECORDS)
            except BaseException:
                self.lock.release()
                raise
            got = [(r.partition, r.offset, r.value) for records in batch.values() for r in records]
            if not got:
                self.lock.release()
            return got

        got: list[Read] = self._run(read)
        return got

    def _commit(self) -> None:
        async def commit() -> None:
            try:
                await self.consumer.commit()
            finally:
                self.lock.release()

        self._run(commit)

    def assignment(self) -> set[int]:
        return self._run(self._assignment)

    async def _assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def _close(self) -> None:
        try:
            self._run(self.consumer.stop)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(TIMEOUT_S)
            self.loop.close()


MEMBERS: dict[str, type[Member]] = {m.label: m for m in (ConfluentMember, KafkaPythonMember, AiokafkaMember)}
