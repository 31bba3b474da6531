"""Topic administration as the controller performs it: create topics, add partitions, delete topics.

The wire handlers (CreateTopics, CreatePartitions, DeleteTopics, Metadata's auto-creation) translate
requests into these calls and the results back into responses. Every placement goes through
:class:`~controller.placement.service.PlacementService` with the topic's name and its first new partition.
Checks follow Kafka's controller, in Kafka's order and wording (manual assignments:
:mod:`controller.placement.manual`). One topic's failure never affects
another in the same call; each is refused with a :class:`~protocol.errors.Refusal`.

Calls are serialised by a lock, so a check and the change it guards are never interleaved with another
request's (placements may await a placer in a worker process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from controller.cluster import Cluster, Topic
from controller.config import ServerConfig
from controller.config.topic_configs import InvalidConfig, validate_topic_configs
from controller.logsafe import shown
from controller.offload import Turns, gc_paused, off_loop
from controller.placement.api import PlacementSpec, UsableBroker
from controller.placement.manual import check_new_partitions, check_replica_map
from controller.placement.rules import partition_limit_refusal, replica_limit_refusal, unable_to_replicate
from controller.placement.service import DEFAULT_TIMEOUT_MS, PlacementFailure, PlacementService
from controller.topic_names import topic_name_problem
from protocol.codes import ErrorCode
from protocol.errors import Refusal

log = logging.getLogger(__name__)

__all__ = [
    "MAX_TOPIC_CONFIGS",
    "NewPartitions",
    "NewTopic",
    "TopicAdmin",
    "TopicResult",
    "UNKNOWN_TOPIC_MESSAGE",
]

UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."

#: The most configs one topic of a CreateTopics request may carry (Kafka knows about 40 topic configs):
#: more is INVALID_CONFIG, refused before the request is decoded further.
MAX_TOPIC_CONFIGS = 1024


@dataclass(frozen=True)
class NewTopic:
    """A topic to create; -1 means the server's default (``num.partitions``, ``default.replication.factor``)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    #: A manual assignment as (partition id, replicas) pairs in request order; empty = use the placer.
    assignments: Sequence[tuple[int, Sequence[int]]] = ()
    configs: Mapping[str, str | None] = field(default_factory=dict)


def _many(topics: Sequence[NewTopic]) -> bool:
    """Whether a CreateTopics makes enough objects that the cyclic garbage collector is paused meanwhile
    (and what survives frozen after, :func:`controller.offload.gc_paused`): more than 200 topics, or
    more than 2,000 partitions. Counted in topics alone, requests of 100 topics of 1,000 partitions each
    let full collections run over every partition made so far: 0.2 to 0.5 s each, at 300,000 partitions."""
    if len(topics) > 200:
        return True
    return sum(max(t.num_partitions, len(t.assignments)) for t in topics) > 2000


@dataclass(frozen=True)
class NewPartitions:
    """Grow ``name`` to ``count`` partitions; ``assignments`` (one per new partition) or None for the placer."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass
class TopicResult:
    """The outcome for one topic: ``error`` is None on success, else the error code with ``message``.

    ``not_applicable`` is the placer's reason when it refused because it does not apply to the cluster."""

    name: str | None
    error: ErrorCode | None = None
    message: str | None = None
    topic_id: uuid.UUID | None = None
    #: The replica lists of the partitions the call created (or would create, when validating only).
    replicas: list[list[int]] = field(default_factory=list)
    not_applicable: str | None = None
    #: The new topic's own configs (CreateTopics v5+ answers with every config in effect:
    #: :meth:`Cluster.topic_config_entries`).
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failed(cls, name: str | None, refusal: Refusal) -> TopicResult:
        not_applicable = refusal.not_applicable if isinstance(refusal, PlacementFailure) else None
        return cls(name, refusal.code, refusal.message, not_applicable=not_applicable)


class _Named(Protocol):
    @property
    def name(self) -> str: ...


#: Requests of more topics than this log one line in all at INFO.
_TOPICS_LOGGED_ONE_BY_ONE = 100


class TopicAdmin:
    """Creates, grows and deletes topics of one cluster, placing replicas with the configured placer."""

    def __init__(
        self,
        config: ServerConfig,
        cluster: Cluster,
        placements: PlacementService,
        lock: asyncio.Lock | None = None,
        now: Callable[[], int] = lambda: 0,
        deleted: Callable[[str], None] = lambda name: None,
    ) -> None:
        """``lock`` is the controller's event lock (shared with the cluster's dynamics); ``now`` its clock;
        ``deleted`` is told of every deleted topic."""
        self.config = config
        self.cluster = cluster
        self.placements = placements
        self._lock = lock if lock is not None else asyncio.Lock()
        self._now = now
        self._deleted = deleted

    async def create_topics(
        self, topics: Sequence[NewTopic], validate_only: bool = False, timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> list[TopicResult]:
        """One result per distinct name, in request order; a name given twice fails as INVALID_REQUEST.

        A call that does not finish (cancelled because its client went away, or failed) leaves no topic
        behind: what it created is deleted again before the lock is released, so every topic that stays
        is one the answer acknowledges."""
        deadline = self._deadline(timeout_ms)
        async with self._lock:
            created: list[str] = []
            # Collisions are with the topics there before the request (Kafka's controller checks every
            # name first): two colliding names in one request are both created, as on Kafka.
            colliding = {t.name: self.cluster.colliding_topic(t.name) for t in topics}
            try:
                with gc_paused() if _many(topics) else contextlib.nullcontext():
                    results = await self._each_distinct(
                        topics,
                        lambda topic: self._create_topic(
                            topic, validate_only, timeout_ms, deadline, created, colliding.get(topic.name)
                        ),
                    )
            except BaseException:
                self._undo(created)
                raise
        self._log_results(results, "validated" if validate_only else "created")
        return results

    async def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        assignments: Sequence[Sequence[int]] | Mapping[int, Sequence[int]] | None = None,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> TopicResult:
        """One topic, as CreateTopics creates it (the placer, or ``assignments``: the replicas of
        partition 0, 1, ... or a map partition -> replicas, with ``partitions`` and ``replication_factor``
        left at -1); -1 takes the server's default. Its result, or the :class:`Refusal` a client would get."""
        if assignments is None:
            manual: list[tuple[int, Sequence[int]]] = []
        elif isinstance(assignments, Mapping):
            manual = sorted((int(p), list(r)) for p, r in assignments.items())
        else:
            manual = [(p, list(r)) for p, r in enumerate(assignments)]
        topic = NewTopic(name, partitions, replication_factor, manual, dict(configs or {}))
        [result] = await self.create_topics([topic], timeout_ms=timeout_ms)
        if result.error is not None:
            raise Refusal(result.error, result.message)
        return result

    def _undo(self, created: list[str]) -> None:
        """Deletes the topics of a CreateTopics call that will not be answered."""
        for name in reversed(created):
            self.cluster.delete_topic(name)
            self._deleted(name)
        if created:
            log.info("%d topic(s) not created: the request did not finish", len(created))

    @staticmethod
    def _log_results(results: list[TopicResult], done: str) -> None:
        """One line per topic; for a request of many topics, one line in all (and the rest at DEBUG)."""
        level = logging.INFO if len(results) <= _TOPICS_LOGGED_ONE_BY_ONE else logging.DEBUG
        if level == logging.DEBUG:
            failed = sum(1 for result in results if not result.ok)
            log.info("%s %d topic(s), %d not", done, len(results) - failed, failed)
        if not log.isEnabledFor(level):
            return
        for result in results:
            if result.ok:
                log.log(level, "%s topic %s: %d partition(s)", done, shown(result.name), len(result.replicas))
            else:
                log.log(
                    level,
                    "topic %s not %s: %s %s",
                    shown(result.name),
                    done,
                    result.error.name if result.error is not None else None,
                    shown(result.message),
                )

    @staticmethod
    async def _each_distinct(
        items: Sequence[_Named], act: Callable[[_Named], Awaitable[TopicResult]]
    ) -> list[TopicResult]:
        """``act`` on every item whose name is given once, in order; a name given twice gets one
        INVALID_REQUEST result (where it first appears) and is not acted on."""
        turns = Turns()
        counts: Counter[str] = Counter()
        for item in items:  # in turns too: a Counter of 100,000 names at once held the loop
            counts[item.name] += 1
            await turns.yield_if_due()
        results: list[TopicResult] = []
        reported: set[str] = set()
        for item in items:
            await turns.yield_if_due()  # a request naming thousands of topics shares the loop
            if counts[item.name] > 1:
                if item.name not in reported:
                    reported.add(item.name)
                    results.append(
                        TopicResult.failed(
                            item.name, Refusal(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
                        )
                    )
                continue
            try:
                results.append(await act(item))
            except Refusal as refused:
                results.append(TopicResult.failed(item.name, refused))
        return results

    def _deadline(self, timeout_ms: int) -> float:
        """One deadline (event-loop time) for every placement of a request; timeoutMs is capped at
        ``simulator.request.max.timeout.ms``."""
        effective = timeout_ms if timeout_ms > 0 else DEFAULT_TIMEOUT_MS
        return asyncio.get_running_loop().time() + self.placements.limits.capped_timeout_ms(effective) / 1000

    def _room_for(self, adding: int, rf: int) -> None:
        """The cluster-wide partition limit, and the replica limit of one request, for every path that
        creates partitions (placed or assigned by hand)."""
        limits = self.placements.limits
        refusal = partition_limit_refusal(
            adding, self.cluster.partition_count, limits.max_partitions
        ) or replica_limit_refusal(adding, rf, limits.max_replicas)
        if refusal is not None:
            raise refusal

    async def _create_topic(
        self,
        topic: NewTopic,
        validate_only: bool,
        timeout_ms: int,
        deadline: float,
        created: list[str],
        other: str | None,
    ) -> TopicResult:
        name = topic.name
        problem = topic_name_problem(name)
        if problem is not None:
            raise Refusal(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if other is not None and name not in self.cluster.topics:
            raise Refusal(
                ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {other}"
            )
        if name in self.cluster.topics:
            raise Refusal(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        null_configs = [key for key, value in topic.configs.items() if value is None]
        if null_configs:
            raise Refusal(
                ErrorCode.INVALID_CONFIG,
                f"Null value not supported for topic configs: {','.join(null_configs)}",
            )
        configs = {key: value for key, value in topic.configs.items() if value is not None}
        try:
            validate_topic_configs(configs)
        except InvalidConfig as invalid:
            raise Refusal(ErrorCode.INVALID_CONFIG, str(invalid)) from None
        if topic.assignments:
            replicas = await self._manual_topic(topic)
        else:
            replicas = await self._placed_topic(topic, timeout_ms, deadline)
        if validate_only:
            return TopicResult(name, topic_id=self.cluster.new_topic_id(), replicas=replicas, configs=configs)
        now = self._now()
        size = len(replicas) * (len(replicas[0]) if replicas else 0)
        prepared = await off_loop(size, self.cluster.prepare_partitions, name, 0, replicas, now)
        topic_id = self.cluster.add_topic(name, replicas, configs, now=now, prepared=prepared).topic_id
        created.append(name)
        return TopicResult(name, topic_id=topic_id, replicas=replicas, configs=configs)

    async def _manual_topic(self, topic: NewTopic) -> list[list[int]]:
        """The replica lists of a topic assigned by hand, checked (off the event loop when there are many:
        tens of thousands of assignments held every client for half a second)."""
        if topic.replication_factor != -1:
            raise Refusal(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor was not set to -1.",
            )
        if topic.num_partitions != -1:
            raise Refusal(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        assignments = topic.assignments
        most = await off_loop(len(assignments), _longest, assignments)
        self._room_for(len(assignments), most)
        return await off_loop(len(assignments) * most, _checked_replica_map, assignments, self._brokers())

    async def _placed_topic(self, topic: NewTopic, timeout_ms: int, deadline: float) -> list[list[int]]:
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            raise Refusal(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            raise Refusal(
                ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        num_partitions = self.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
        rf = (
            self.config.default_replication_factor
            if topic.replication_factor == -1
            else topic.replication_factor
        )
        self._room_for(num_partitions, 0)  # the replica limit is the placement service's request check
        return await self._place(topic.name, num_partitions, rf, 0, timeout_ms, deadline)

    async def _place(
        self, name: str, num_partitions: int, rf: int, start: int, timeout_ms: int, deadline: float
    ) -> list[list[int]]:
        spec = PlacementSpec(start, num_partitions, rf, topic=name)
        timeout_ms = timeout_ms if timeout_ms > 0 else DEFAULT_TIMEOUT_MS
        try:
            return await self.placements.place(spec, timeout_ms, deadline=deadline)  # fresh lists already
        except PlacementFailure as failure:
            if failure.code is ErrorCode.INVALID_REPLICATION_FACTOR:
                raise Refusal(failure.code, unable_to_replicate(rf, failure.message)) from None
            raise

    async def create_partitions(
        self,
        requests: Sequence[NewPartitions],
        validate_only: bool = False,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> list[TopicResult]:
        """One result per distinct topic, in request order; a topic given twice fails as INVALID_REQUEST."""
        deadline = self._deadline(timeout_ms)
        async with self._lock:
            results = await self._each_distinct(
                requests,
                lambda request: self._create_partitions(request, validate_only, timeout_ms, deadline),
            )
        for result in results:
            if not result.ok:
                log.info(
                    "partitions of %s not added: %s %s",
                    shown(result.name),
                    result.error.name if result.error is not None else None,
                    shown(result.message),
                )
        return results

    async def _create_partitions(
        self, request: NewPartitions, validate_only: bool, timeout_ms: int, deadline: float
    ) -> TopicResult:
        topic = self.cluster.topics.get(request.name)
        if topic is None:
            raise Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)  # Kafka's controller gives no message
        current = len(topic.partitions)
        if request.count < current:
            raise Refusal(
                ErrorCode.INVALID_PARTITIONS,
                f"The topic {topic.name} currently has {current} partition(s); {request.count} would not be "
                "an increase.",
            )
        if request.count == current:
            raise Refusal(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        rf = topic.replication_factor
        self._room_for(request.count - current, rf if request.assignments is not None else 0)
        if request.assignments is not None:
            replicas = await off_loop(
                len(request.assignments) * rf,
                _checked_new_partitions,
                request.assignments,
                current,
                request.count,
                rf,
                self._brokers(),
            )
        else:
            replicas = await self._place(
                topic.name, request.count - current, rf, current, timeout_ms, deadline
            )
        if not validate_only:
            now = self._now()
            prepared = await off_loop(
                len(replicas) * rf, self.cluster.prepare_partitions, topic.name, current, replicas, now
            )
            self.cluster.add_partitions(topic.name, replicas, now=now, prepared=prepared)
            log.info("added %d partition(s) to %s", len(replicas), shown(topic.name))
        return TopicResult(topic.name, topic_id=topic.topic_id, replicas=replicas)

    async def delete_topics(self, topics: Sequence[tuple[str | None, uuid.UUID | None]]) -> list[TopicResult]:
        """Deletes topics named by name (preferred) or id; one result per entry, in request order."""
        results: list[TopicResult] = []
        turns = Turns()
        async with self._lock:
            for name, topic_id in topics:
                await turns.yield_if_due()  # a request naming thousands of topics shares the loop
                found: Topic | None
                if name is not None:
                    found = self.cluster.topics.get(name)
                    if found is None:
                        results.append(
                            TopicResult(
                                name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE, topic_id
                            )
                        )
                        continue
                elif topic_id is not None and topic_id.int != 0:
                    found = self.cluster.topic_by_id(topic_id)
                    if found is None:
                        results.append(
                            TopicResult(
                                None,
                                ErrorCode.UNKNOWN_TOPIC_ID,
                                "This server does not host this topic ID.",
                                topic_id,
                            )
                        )
                        continue
                else:
                    results.append(
                        TopicResult(
                            None, ErrorCode.INVALID_REQUEST, "Neither a topic name nor a topic id was given."
                        )
                    )
                    continue
                self.cluster.delete_topic(found.name)
                self._deleted(found.name)
                log.info("deleted topic %s", shown(found.name))
                results.append(TopicResult(found.name, topic_id=found.topic_id))
        return results

    def _brokers(self) -> dict[int, UsableBroker]:
        return {b.id: b for b in self.cluster.brokers}


def _longest(assignments: Sequence[tuple[int, Sequence[int]]]) -> int:
    return max((len(replicas) for _, replicas in assignments), default=0)


def _checked_replica_map(
    assignments: Sequence[tuple[int, Sequence[int]]], brokers: Mapping[int, UsableBroker]
) -> list[list[int]]:
    """A manual assignment's replica lists, checked (touches no shared state: may run off the loop)."""
    return check_replica_map(assignments, brokers)


def _checked_new_partitions(
    assignments: Sequence[Sequence[int]],
    current: int,
    count: int,
    rf: int,
    brokers: Mapping[int, UsableBroker],
) -> list[list[int]]:
    """CreatePartitions' assignments, checked (touches no shared state: may run off the loop)."""
    return check_new_partitions(assignments, current, count, rf, brokers)
