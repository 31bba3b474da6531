"""Produce (0) v3-13: client batches appended at partition leaders, with Kafka's acks rules.

Per partition, in Kafka's order (``KafkaApis.handleProduceRequest``, ``ReplicaManager.appendRecords``,
``Partition.appendRecordsToLeader``): the topic (UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID by id in
v13), the answering broker must lead the partition (NOT_LEADER_OR_FOLLOWER, with KIP-951's CurrentLeader
and NodeEndpoints in v10+), the batch's checks (:mod:`controller.records.checks`), ``acks=all`` with an ISR
smaller than ``min.insync.replicas`` (NOT_ENOUGH_REPLICAS, before anything is appended), then the
idempotent producer's sequence checks and the append (:meth:`controller.data_path.DataPath.append`; a
retried duplicate is answered with its original offsets).

Acks: ``1`` answers once the leader appended; ``-1`` (all) waits until the high watermark covers the
batch in the leader epoch it was appended in (Kafka's ``DelayedProduce``, registered by the append
itself: :meth:`controller.data_path.DataPath.append`), at most TimeoutMs on the cluster's clock, then
answers REQUEST_TIMED_OUT; a leader change first answers NOT_LEADER_OR_FOLLOWER. The wait completes in
the step that moves the high watermark, which never moves while the ISR is smaller than
``min.insync.replicas`` (Kafka 4): Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND, a race between that step
and an ISR shrink on another thread, is not answered (``docs/fidelity.md``). ``0`` is never
answered; a partition that fails closes the connection, as Kafka does, so that the producer notices.
Any other acks is INVALID_REQUIRED_ACKS for every partition.

Transactions are not simulated: a transactional Produce (a TransactionalId, or a transactional batch)
is refused for every partition with TRANSACTIONAL_ID_AUTHORIZATION_FAILED / INVALID_TXN_STATE and a
message that says so.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from controller.answers import NO_RESPONSE, Close, NoResponse
from controller.data_path import Appended
from controller.handlers import RequestContext
from controller.handlers._partitions import (
    current_leader,
    find_topic,
    leads,
    node_endpoints,
    partition_of,
    unknown_topic,
)
from controller.records.checks import check_client_batch
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
_NO_TRANSACTIONS = "transactions are not simulated by placement-sim"


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    acks = request["Acks"]
    by_id = version >= _TOPIC_IDS
    if acks not in (-1, 0, 1):
        return _every_partition(request, version, ErrorCode.INVALID_REQUIRED_ACKS, None)
    if request.get("TransactionalId") is not None:
        log.warning("%s: transactional Produce refused: %s", ctx.peer, _NO_TRANSACTIONS)
        return _every_partition(
            request, version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, _NO_TRANSACTIONS
        )
    data_path = ctx.controller.data_path
    now = data_path.now_ms()
    responses = []
    leaders: set[int] = set()
    waits: list[tuple[dict[str, Any], asyncio.Future[ErrorCode]]] = []
    failed: list[str] = []
    for topic_data in request["TopicData"]:
        name, topic_id = topic_data.get("Name"), topic_data.get("TopicId")
        topic = find_topic(ctx, name, topic_id, by_id)
        entries = []
        for partition_data in topic_data["PartitionData"]:
            index = partition_data["Index"]
            entry: dict[str, Any] = {
                "Index": index,
                "BaseOffset": -1,
                "LogAppendTimeMs": -1,
                "LogStartOffset": -1,
            }
            entries.append(entry)
            p = partition_of(topic, index) if topic is not None else None
            if p is None:
                _fail(
                    entry,
                    unknown_topic(by_id) if topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    None,
                )
                failed.append(f"{name}-{index}")
                continue
            if not leads(ctx, p):
                _fail(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER, None)
                if version >= _CURRENT_LEADER:
                    entry["CurrentLeader"] = current_leader(p)
                    if p.leader >= 0:
                        leaders.add(p.leader)
                failed.append(p.name)
                continue
            settings = data_path.topic_settings(p.topic)
            checked = check_client_batch(
                partition_data["Records"], version, settings.limits, now, p.topic, p.index
            )
            if isinstance(checked, Refusal):
                _fail(entry, checked.code, checked.message)
                failed.append(p.name)
                continue
            if checked.header.is_transactional:
                _fail(entry, ErrorCode.INVALID_TXN_STATE, _NO_TRANSACTIONS)
                failed.append(p.name)
                continue
            if acks == -1 and len(p.isr) < settings.min_insync_replicas:
                _fail(
                    entry,
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    f"The size of the current ISR {p.isr} is insufficient to satisfy the min.isr requirement "
                    f"of {settings.min_insync_replicas} for partition {p.name}",
                )
                failed.append(p.name)
                continue
            appended = data_path.append(p, checked, settings, acks)
            if isinstance(appended, Refusal):
                _fail(entry, appended.code, appended.message)
                failed.append(p.name)
                continue
            if appended.duplicate:
                header = checked.header
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
                waits.append((entry, appended.replicated))
        responses.append({"Name": name, "TopicId": topic_id, "PartitionResponses": entries})
    response: dict[str, Any] = {"Responses": responses, "ThrottleTimeMs": 0}
    if leaders and version >= _CURRENT_LEADER:
        response["NodeEndpoints"] = node_endpoints(ctx, leaders)
    if acks == 0:
        if failed:
            raise Close(
                "acks=0 produce failed", f"partition(s) {', '.join(failed)} refused a Produce with acks=0"
            )
        return NO_RESPONSE
    if all(future.done() for _, future in waits):
        _settle(waits)
        return response
    timeout_ms = min(max(request["TimeoutMs"], 0), ctx.controller.config.request_max_timeout_ms)
    return _wait_for_replicas(ctx, response, waits, timeout_ms)


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
