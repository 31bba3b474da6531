"""Produce (0) v3-13: client batches appended at partition leaders, with Kafka's acks rules.

First, a request with a transactional batch and no TransactionalId (or, with an authorizer, one the
client may not WRITE) is TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition (with acks=0 the connection is closed). Then per
partition, in Kafka's order (``KafkaApis.handleProduceRequest``, ``ReplicaManager.appendRecords``,
``Partition.appendRecordsToLeader``): the topic (UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID by id in
v13), the form of its records (``ProduceRequest.validateRecords``:
:func:`controller.records.checks.check_records_form`), acks other than 0, 1 and -1
(INVALID_REQUIRED_ACKS), the answering broker must lead the partition (NOT_LEADER_OR_FOLLOWER, with
KIP-951's CurrentLeader and NodeEndpoints in v10+), the rest of the batch's checks
(:mod:`controller.records.checks`), ``acks=all`` with an ISR smaller than ``min.insync.replicas``
(NOT_ENOUGH_REPLICAS, before anything is appended), every record read (:mod:`controller.records.validator`,
Kafka's ``LogValidator``; the records that fail are named in RecordErrors from v8), then the idempotent
producer's sequence checks and the append (:meth:`controller.data_path.DataPath.append`; a retried
duplicate is answered with its original offsets). A partition named twice is answered once, with the
batch named last (:func:`_distinct`).

No request holds the event loop: the records of batches whose reading costs more than decoding
:data:`controller.offload.BIG_BODY` bytes would (:func:`controller.records.validator.validate_size`: by
their records, a compressed batch by 16 times its size) are read in a worker thread, and a Produce
naming more than :data:`IN_TURNS` partitions is answered in turns of the loop
(:class:`controller.offload.Turns`). Leadership is looked at again at the append, since others ran
while the records were read.

Acks: ``1`` answers once the leader appended; ``-1`` (all) waits until the high watermark covers the
batch in the leader epoch it was appended in (Kafka's ``DelayedProduce``, registered by the append
itself: :meth:`controller.data_path.DataPath.append`), at most TimeoutMs on the cluster's clock, then
answers REQUEST_TIMED_OUT; a leader change first answers NOT_LEADER_OR_FOLLOWER. The wait completes in
the step that moves the high watermark, which never moves while the ISR is smaller than
``min.insync.replicas`` (Kafka 4): Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND, a race between that step
and an ISR shrink on another thread, is not answered (``docs/fidelity.md``). ``0`` is never
answered; a partition that fails closes the connection, as Kafka does, so that the producer notices.

Transactions (a request with a TransactionalId): before a producer's first transactional batch on a
partition the leader asks the transaction's coordinator whether the partition is in the transaction
(KIP-890 part 1; :meth:`controller.transactions.service.TransactionService.verify_produce`): not in it is
INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11), a fenced producer INVALID_PRODUCER_EPOCH, a
coordinator that cannot answer NOT_ENOUGH_REPLICAS (so that every client retries), as Kafka's
``ReplicaManager`` translates them; from v12 (KIP-890 part 2) the leader adds the partition to the
transaction itself. Batches of more than one producer in one transactional request are
INVALID_PRODUCER_ID_MAPPING for every partition. The producer's state then checks the batch
(:mod:`controller.records.producers`: a plain batch inside an open transaction is INVALID_TXN_STATE). A
request without a TransactionalId never reaches the transactions subsystem.

With an authorizer (``authorizer.class.name``), as Kafka: a request with a transactional batch whose
TransactionalId the client may not WRITE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition; a
topic it may not WRITE is TOPIC_AUTHORIZATION_FAILED for its partitions (whether or not it exists), and
nothing of it is appended or added to a transaction.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Iterator
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.answers import NO_RESPONSE, Close, NoResponse, Sized
from controller.data_path import Appended, TopicSettings
from controller.handlers import RequestContext
from controller.handlers._partitions import (
    current_leader,
    find_topic,
    leads,
    node_endpoints,
    partition_of,
    unknown_topic,
)
from controller.offload import BIG_BODY, Turns, gc_paused, in_thread, off_loop
from controller.records.batch import ATTRIBUTES_OFFSET, HEADER_SIZE, MAGIC_V2, TRANSACTIONAL_FLAG, read_header
from controller.records.checks import ClientBatch, check_batch, check_records_form
from controller.records.validator import RecordsRefusal, validate_records, validate_size
from protocol.codes import ApiKey, ErrorCode
from protocol.errors import Refusal
from protocol.produce_request import decode as decode  # the body read in place (the records not copied)

log = logging.getLogger(__name__)

API_KEY = ApiKey.PRODUCE
VERSIONS = (3, 13)

#: Produce v13 names topics by id (KIP-516).
_TOPIC_IDS = 13
#: Produce v10 carries CurrentLeader and NodeEndpoints (KIP-951).
_CURRENT_LEADER = 10
#: Produce v8 carries RecordErrors and ErrorMessage (KIP-467).
_RECORD_ERRORS = 8
#: A Produce naming more partitions than this is answered in turns of the event loop (each partition
#: costs tens of microseconds: a hundred thousand of them held every client for seconds).
IN_TURNS = 64
_ENCODE_WEIGHT = 16
#: Produce v12+ of a KIP-890 part 2 transaction adds its partitions to the transaction itself.
_ADDS_PARTITIONS = 12


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    transactional_id = request.get("TransactionalId")
    denied = None
    if _has_transactional_batch(request) and (
        transactional_id is None
        or (
            ctx.authorizer is not None
            and not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
        )
    ):
        # Kafka's KafkaApis: transactional records need a transactional id the client may use.
        return _refuse_request(request, version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    if ctx.authorizer is not None:
        denied = _denied_topics(ctx, request, version >= _TOPIC_IDS)
    if transactional_id is not None:
        return _transactional(ctx, request, version, transactional_id, denied)
    return _produce(ctx, request, version, None, denied)


def _denied_topics(ctx: RequestContext, request: dict[str, Any], by_id: bool) -> set[str] | None:
    """The topics of the request the client may not WRITE (None: none)."""
    names = []
    for topic_data in request["TopicData"]:
        name = topic_data.get("Name")
        if by_id:
            topic = find_topic(ctx, name, topic_data.get("TopicId"), by_id)
            name = topic.name if topic is not None else None
        if name is not None:
            names.append(name)
    allowed = ctx.allowed_names(Operation.WRITE, ResourceType.TOPIC, names)
    return {name for name in names if name not in allowed} or None


def _transactional(
    ctx: RequestContext,
    request: dict[str, Any],
    version: int,
    transactional_id: str,
    denied: set[str] | None,
) -> Any:
    """A transactional Produce: the partitions of producers' first batches there are verified with (v12+:
    added to) the transaction first, then the request goes on as any other."""
    by_id = version >= _TOPIC_IDS
    data_path = ctx.controller.data_path
    unverified: list[tuple[tuple[str, int], int, int]] = []
    producers: set[tuple[int, int]] = set()
    for topic_data in request["TopicData"]:
        topic = find_topic(ctx, topic_data.get("Name"), topic_data.get("TopicId"), by_id)
        if topic is None or (denied is not None and topic.name in denied):
            continue
        for partition_data in topic_data["PartitionData"]:
            p = partition_of(topic, partition_data["Index"])
            records = partition_data["Records"]
            if p is None or records is None or len(records) < HEADER_SIZE or not leads(ctx, p):
                continue
            header = read_header(records, 0)
            if not header.is_transactional or not header.has_producer_id:
                continue
            producers.add((header.producer_id, header.producer_epoch))
            states = data_path.producer_states(p, p.leader)
            if not states.has_ongoing_transaction(header.producer_id):
                unverified.append(((p.topic, p.index), header.producer_id, header.producer_epoch))
    if len(producers) > 1:
        return _refuse_request(
            request,
            version,
            ErrorCode.INVALID_PRODUCER_ID_MAPPING,
            "Transactional records contained more than one producer ID",
        )
    if not unverified:
        return _produce(ctx, request, version, None, denied)
    transactions = ctx.controller.transactions
    _, producer_id, epoch = unverified[0]
    if version >= _ADDS_PARTITIONS:
        return _after_adding(
            ctx, request, version, transactional_id, producer_id, epoch, [u[0] for u in unverified], denied
        )
    refused = {}
    for tp, _, _ in unverified:
        refusal = transactions.verify_produce(transactional_id, producer_id, epoch, tp, version)
        if refusal is not None:
            refused[tp] = refusal
    return _produce(ctx, request, version, refused, denied)


async def _after_adding(
    ctx: RequestContext,
    request: dict[str, Any],
    version: int,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    tps: list[tuple[str, int]],
    denied: set[str] | None,
) -> Any:
    found = await ctx.controller.transactions.add_from_produce(
        transactional_id, producer_id, epoch, tps, version
    )
    refused = {tp: refusal for tp, refusal in found.items() if refusal is not None}
    answer = _produce(ctx, request, version, refused, denied)
    return await answer if inspect.isawaitable(answer) else answer


def _produce(
    ctx: RequestContext,
    request: dict[str, Any],
    version: int,
    refused: dict[tuple[str, int], Refusal] | None,
    denied: set[str] | None = None,
) -> Any:
    """The appends (``refused``: partitions the transaction's coordinator refused, answered so; ``denied``:
    topics the client may not write, answered TOPIC_AUTHORIZATION_FAILED)."""
    produce = _Produce(ctx, request, version, refused, denied)
    if produce.partitions > IN_TURNS:
        return produce.in_turns()
    for topic_data in produce.topics:
        for _ in produce.check_topic(topic_data):
            pass
    if sum(validate_size(batch) for _, _, batch, _ in produce.checked) > BIG_BODY:
        return produce.validated_off_loop()
    produce.append_all(_validate_all(produce.checked, produce.now))
    return produce.finish()


class _Produce:
    """One Produce request answered in Kafka's order: each partition's topic, leadership and batch checks
    (:meth:`check_topic`), then its records read (:func:`_validate_all`, in a worker thread when they are
    big), then the appends (:meth:`append_all`; leadership looked at again, as the records may have
    been read while others ran), then the answer (:meth:`finish`: at once, or after the acks=all wait)."""

    def __init__(
        self,
        ctx: RequestContext,
        request: dict[str, Any],
        version: int,
        refused: dict[tuple[str, int], Refusal] | None,
        denied: set[str] | None = None,
    ) -> None:
        self.ctx = ctx
        self.refused = refused
        self.denied = denied
        self.request = request
        self.version = version
        self.acks = request["Acks"]
        self.by_id = version >= _TOPIC_IDS
        self.data_path = ctx.controller.data_path
        self.now = self.data_path.now_ms()
        self.responses: list[dict[str, Any]] = []
        self.leaders: set[int] = set()
        self.waits: list[tuple[dict[str, Any], asyncio.Future[ErrorCode]]] = []
        self.failed: list[str] = []
        self.topics = request["TopicData"]  # each partition once: _distinct (in in_turns when many)
        self.partitions = sum(len(topic_data["PartitionData"]) for topic_data in self.topics)
        if self.partitions <= IN_TURNS:
            self.topics = _distinct(self.topics, self.by_id)
        #: Partitions whose batches passed the checks: their answer entry, partition, batch and settings.
        self.checked: list[tuple[dict[str, Any], Any, ClientBatch, TopicSettings]] = []

    def check_topic(self, topic_data: dict[str, Any]) -> Iterator[None]:
        """The checks before the records are read, for each partition of one topic of the request: a step
        per partition (so that :meth:`in_turns` shares the loop between them)."""
        ctx, version = self.ctx, self.version
        name, topic_id = topic_data.get("Name"), topic_data.get("TopicId")
        topic = find_topic(ctx, name, topic_id, self.by_id)
        entries: list[dict[str, Any]] = []
        self.responses.append({"Name": name, "TopicId": topic_id, "PartitionResponses": entries})
        denied = self.denied is not None and (topic.name if topic is not None else name) in self.denied
        for partition_data in topic_data["PartitionData"]:
            yield
            index = partition_data["Index"]
            entry: dict[str, Any] = {
                "Index": index,
                "BaseOffset": -1,
                "LogAppendTimeMs": -1,
                "LogStartOffset": -1,
            }
            entries.append(entry)
            if denied:
                self.fail(entry, f"{name}-{index}", Refusal(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            p = partition_of(topic, index) if topic is not None else None
            if p is None:
                code = unknown_topic(self.by_id) if topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                self.fail(entry, f"{name}-{index}", Refusal(code))
                continue
            # KafkaApis: the request's form of the records first (ProduceRequest.validateRecords).
            formed = check_records_form(partition_data["Records"], version, p.topic, p.index)
            if isinstance(formed, Refusal):
                self.fail(entry, p.name, formed)
                continue
            if self.acks not in (-1, 0, 1):
                # ReplicaManager.appendRecords: after the topics are known, before leadership.
                _fail(entry, ErrorCode.INVALID_REQUIRED_ACKS, None)
                continue
            if not leads(ctx, p):
                self.not_leader(entry, p)
                continue
            if self.refused:
                refusal = self.refused.get((p.topic, p.index))
                if refusal is not None:
                    self.fail(entry, p.name, refusal)
                    continue
            settings = self.data_path.topic_settings(p.topic)
            checked = check_batch(formed, settings.limits, p.topic, p.index)
            minimum = min(settings.min_insync_replicas, ctx.controller.cluster.min_insync_replicas(p))
            if isinstance(checked, Refusal):
                self.fail(entry, p.name, checked)
            elif self.acks == -1 and len(p.isr) < minimum:
                self.fail(
                    entry,
                    p.name,
                    Refusal(
                        ErrorCode.NOT_ENOUGH_REPLICAS,
                        f"The size of the current ISR {p.isr} is insufficient to satisfy the min.isr requirement "
                        f"of {minimum} for partition {p.name}",
                    ),
                )
            else:
                self.checked.append((entry, p, checked, settings))

    def append_all(self, validated: list[ClientBatch | Refusal]) -> None:
        for (entry, p, _, settings), batch in zip(self.checked, validated, strict=True):
            self.append(entry, p, batch, settings)

    def append(
        self, entry: dict[str, Any], p: Any, batch: ClientBatch | Refusal, settings: TopicSettings
    ) -> None:
        if isinstance(batch, Refusal):
            self.fail(entry, p.name, batch)
            return
        ctx = self.ctx
        topic = ctx.controller.cluster.topics.get(p.topic)
        if topic is None or partition_of(topic, p.index) is not p or not leads(ctx, p):
            self.not_leader(entry, p)  # it changed while the records were read
            return
        appended = self.data_path.append(p, batch, settings, self.acks)
        if isinstance(appended, Refusal):
            self.fail(entry, p.name, appended)
            return
        if appended.duplicate:
            header = batch.header
            log.debug(
                "%s: a retried duplicate of producer %d's batch (sequences %d-%d) at %s, answered "
                "with its original offsets %d-%d",
                ctx.peer,
                header.producer_id,
                header.base_sequence,
                header.last_sequence,
                p.name,
                appended.base_offset,
                appended.last_offset,
            )
        _succeeded(entry, appended)
        if appended.replicated is not None:
            self.waits.append((entry, appended.replicated))

    def fail(self, entry: dict[str, Any], name: str, refusal: Refusal) -> None:
        _fail(entry, refusal.code, refusal.message)
        if self.version >= _RECORD_ERRORS and isinstance(refusal, RecordsRefusal):
            entry["RecordErrors"] = [
                {"BatchIndex": index, "BatchIndexErrorMessage": message}
                for index, message in refusal.record_errors
            ]
        self.failed.append(name)

    def not_leader(self, entry: dict[str, Any], p: Any) -> None:
        _fail(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER, None)
        if self.version >= _CURRENT_LEADER:
            entry["CurrentLeader"] = current_leader(p)
            if p.leader >= 0:
                self.leaders.add(p.leader)
        self.failed.append(p.name)

    def finish(self) -> Any:
        """The answer, once every partition was appended or refused (see the module docstring)."""
        response: dict[str, Any] = {"Responses": self.responses, "ThrottleTimeMs": 0}
        if self.leaders and self.version >= _CURRENT_LEADER:
            response["NodeEndpoints"] = node_endpoints(self.ctx, self.leaders)
        if self.acks == 0:
            if self.failed:
                raise Close(
                    "acks=0 produce failed",
                    f"partition(s) {', '.join(self.failed[:10])}{' ...' if len(self.failed) > 10 else ''} "
                    "refused a Produce with acks=0",
                )
            return NO_RESPONSE
        waits = self.waits
        if all(future.done() for _, future in waits):
            _settle(waits)
            return self.sized(response)
        timeout_ms = min(max(self.request["TimeoutMs"], 0), self.ctx.controller.config.request_max_timeout_ms)
        waited = _wait_for_replicas(self.ctx, response, waits, timeout_ms)
        return waited if self.partitions <= IN_TURNS else self._sized_after(waited)

    def sized(self, response: dict[str, Any]) -> Any:
        """An answer naming many partitions is encoded off the event loop (a partition of a Produce answer
        costs about as much to encode as :data:`_ENCODE_WEIGHT` of :data:`controller.offload.BIG`'s
        units: 20,000 of them took 90 ms)."""
        if self.partitions <= IN_TURNS:
            return response
        return Sized(response, self.partitions * _ENCODE_WEIGHT)

    async def _sized_after(self, waited: Any) -> Any:
        return self.sized(await waited)

    async def validated_off_loop(self) -> Any:
        """The records of big batches read in a worker thread, then the appends."""
        self.append_all(await in_thread(_validate_all, self.checked, self.now))
        answer = self.finish()
        return await answer if asyncio.iscoroutine(answer) else answer

    async def in_turns(self) -> Any:
        """A Produce naming many partitions: every step in turns of the event loop (each partition costs
        tens of microseconds), the records read in a worker thread when they are big, the cyclic
        garbage collector paused meanwhile (:func:`controller.offload.gc_paused`: its full collections
        of the objects such a request makes held the loop for 70 ms at a time)."""
        self.topics = await off_loop(self.partitions * 4, _distinct, self.topics, self.by_id)
        self.partitions = sum(len(topic_data["PartitionData"]) for topic_data in self.topics)
        with gc_paused():
            turns = Turns()
            for topic_data in self.topics:
                for _ in self.check_topic(topic_data):
                    await turns.yield_if_due()
            checked = self.checked
            if sum(validate_size(batch) for _, _, batch, _ in checked) > BIG_BODY:
                validated = await in_thread(_validate_all, checked, self.now)
            else:
                validated = []
                for item in checked:
                    validated.extend(_validate_all([item], self.now))
                    await turns.yield_if_due()
            for (entry, p, _, settings), batch in zip(checked, validated, strict=True):
                self.append(entry, p, batch, settings)
                await turns.yield_if_due()
        answer = self.finish()
        return await answer if asyncio.iscoroutine(answer) else answer


def _distinct(topics: list[dict[str, Any]], by_id: bool) -> list[dict[str, Any]]:
    """The partitions a Produce names, each once, as Kafka's ``KafkaApis.handleProduceRequest`` keeps them
    in a map: the batch named last, answered in the place first named, under the topic's first entry
    (measured against Kafka 4.4: a partition named three times is appended once, the last batch)."""
    seen: set[tuple[Any, int]] = set()
    repeated = False
    for topic_data in topics:
        key = topic_data.get("TopicId") if by_id else topic_data.get("Name")
        for partition_data in topic_data["PartitionData"]:
            index = (key, partition_data["Index"])
            if index in seen:
                repeated = True
                break
            seen.add(index)
        if repeated:
            break
    if not repeated:
        return topics
    merged: dict[Any, tuple[dict[str, Any], dict[int, dict[str, Any]]]] = {}
    for topic_data in topics:
        key = topic_data.get("TopicId") if by_id else topic_data.get("Name")
        if key not in merged:
            merged[key] = (topic_data, {})
        partitions = merged[key][1]
        for partition_data in topic_data["PartitionData"]:
            partitions[partition_data["Index"]] = partition_data
    return [
        {
            "Name": first.get("Name"),
            "TopicId": first.get("TopicId"),
            "PartitionData": list(partitions.values()),
        }
        for first, partitions in merged.values()
    ]


def _validate_all(
    checked: list[tuple[dict[str, Any], Any, ClientBatch, TopicSettings]], now_ms: int
) -> list[ClientBatch | Refusal]:
    """Every record of each checked batch read (:func:`~controller.records.validator.validate_records`),
    against the leader's clock ``now_ms``: touches nothing shared, so it may run in a worker thread."""
    return [validate_records(batch, settings.limits, now_ms, p.name) for _, p, batch, settings in checked]


async def _wait_for_replicas(
    ctx: RequestContext,
    response: dict[str, Any],
    waits: list[tuple[dict[str, Any], asyncio.Future[ErrorCode]]],
    timeout_ms: int,
) -> dict[str, Any]:
    """Kafka's ``DelayedProduce``: the answer once every ``acks=all`` batch's wait (registered at its
    append) has completed, or at the timeout (on the cluster's clock)."""
    pending = [future for _, future in waits if not future.done()]
    if pending:
        loop = asyncio.get_running_loop()
        expired: asyncio.Future[None] = loop.create_future()
        timer = ctx.controller.clock.call_later(
            timeout_ms, lambda: expired.done() or expired.set_result(None), "produce timeout"
        )
        remaining: set[asyncio.Future[Any]] = set(pending)
        try:
            while remaining and not expired.done():
                done, _ = await asyncio.wait(remaining | {expired}, return_when=asyncio.FIRST_COMPLETED)
                remaining -= done
        finally:
            timer.cancel()
            for future in remaining:  # given up: their batches stay unacknowledged
                future.cancel()
            expired.cancel()
    _settle(waits)
    return response


def _settle(waits: list[tuple[dict[str, Any], asyncio.Future[ErrorCode]]]) -> None:
    """Each ``acks=all`` partition's answer from its wait: NONE, the wait's error, or REQUEST_TIMED_OUT
    (DelayedProduce's error until acks arrive) for one that had not completed (its batch stays
    unacknowledged)."""
    for entry, future in waits:
        if not future.done() or future.cancelled():
            _fail(entry, ErrorCode.REQUEST_TIMED_OUT, None)
            continue
        code = future.result()
        if code is not ErrorCode.NONE:
            _fail(entry, code, None)


def _succeeded(entry: dict[str, Any], appended: Appended) -> None:
    entry["ErrorCode"] = ErrorCode.NONE
    entry["BaseOffset"] = appended.base_offset
    entry["LogAppendTimeMs"] = appended.log_append_time
    entry["LogStartOffset"] = appended.log_start_offset


def _fail(entry: dict[str, Any], code: ErrorCode, message: str | None) -> None:
    entry["ErrorCode"] = code
    entry["BaseOffset"] = -1
    entry["LogAppendTimeMs"] = -1
    entry["LogStartOffset"] = -1
    entry["ErrorMessage"] = message


def _has_transactional_batch(request: dict[str, Any]) -> bool:
    """Whether a partition's records start with a transactional batch (Kafka's
    ``RequestUtils.hasTransactionalRecords`` looks at each partition's first batch)."""
    for topic_data in request.get("TopicData") or ():
        for partition_data in topic_data.get("PartitionData") or ():
            records = partition_data.get("Records")
            if records is not None and len(records) > ATTRIBUTES_OFFSET + 1 and records[16] == MAGIC_V2:
                if records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_FLAG:
                    return True
    return False


def _refuse_request(
    request: dict[str, Any], version: int, code: ErrorCode, message: str | None
) -> dict[str, Any] | NoResponse:
    """A refusal of the whole request: every partition ``code``; with acks=0, which has no answer, the
    connection closed (as Kafka's error response to an acks=0 Produce is none and it closes instead)."""
    if request.get("Acks") == 0:
        raise Close("acks=0 produce refused", f"a Produce with acks=0 refused as a whole: {code.name}")
    return _every_partition(request, version, code, message)


def _every_partition(
    request: dict[str, Any], version: int, code: ErrorCode, message: str | None
) -> dict[str, Any] | NoResponse:
    responses = []
    for topic_data in request.get("TopicData") or []:
        entries = []
        for partition_data in topic_data.get("PartitionData") or []:
            entry: dict[str, Any] = {"Index": partition_data["Index"]}
            _fail(entry, code, message)
            entries.append(entry)
        responses.append(
            {
                "Name": topic_data.get("Name"),
                "TopicId": topic_data.get("TopicId"),
                "PartitionResponses": entries,
            }
        )
    return {"Responses": responses, "ThrottleTimeMs": 0}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    answer = _every_partition(request, version, ErrorCode(error_code), message)
    assert isinstance(answer, dict)
    return answer
