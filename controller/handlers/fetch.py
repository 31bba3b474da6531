"""Fetch (1) v4-18 for consumers: records up to the high watermark from partition leaders.

Per partition, as Kafka's ``ReplicaManager.readFromLog`` and ``Partition.fetchRecords``: the topic
(UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID by id in v13+), the answering broker must lead it
(NOT_LEADER_OR_FOLLOWER, with CurrentLeader in v12+ and NodeEndpoints in v16+), the client's
CurrentLeaderEpoch (v9+: FENCED_LEADER_EPOCH when older, UNKNOWN_LEADER_EPOCH when newer), its
LastFetchedEpoch (v12+: when the leader's log ends that epoch before the fetch offset, or has no such
epoch, the answer carries DivergingEpoch and no records), and the offset within the leader's log
(OFFSET_OUT_OF_RANGE). Records are whole batches below the high watermark, within PartitionMaxBytes, and
MaxBytes capped by the broker's ``fetch.max.bytes`` (``ReplicaManager.fetchMessages``), at least one batch
for the first partition with data (KIP-74). With IsolationLevel 1 (read_committed) they stop at the last
stable offset (:meth:`DataPath.last_stable_offset`: below any transaction still open, or whose marker is
not yet replicated) and the answer lists the aborted transactions among them (producer id and first
offset): the client drops their records itself, as with Kafka, and control batches (the markers) are
returned like any batch. ``LastStableOffset`` is given at either level. A partition named twice is
answered once, as Kafka's ``FetchRequest.fetchData`` keeps partitions in a map (in the place first named,
with the offsets named last). While the server holds more than ``simulator.unsent.answers.max.bytes`` of
answers for clients that do not read them, an answer carries at most its first batch: what those clients
hold is bounded in total, not only per connection (``docs/limits.md``). A Fetch naming more than
:data:`IN_TURNS` partitions is answered in turns of the event loop and encoded in a worker thread.

MaxWaitMs and MinBytes: an answer with fewer than MinBytes of records waits (Kafka's ``DelayedFetch``)
until a partition asked for changes (its high watermark moves, its leader changes) and the answer then
has MinBytes, or until MaxWaitMs pass on the cluster's clock. On a virtual clock the wait also ends
after MaxWaitMs of real time, so that a client polling a cluster whose time a test drives is never
left without an answer (its answer is the same as at the virtual timeout: what is there).

Fetch sessions (KIP-227) are not kept: every answer has SessionId 0, which tells a client that asked for
a session that it has none, and it goes on with full fetches; a request naming a session the server
never gave is answered FETCH_SESSION_ID_NOT_FOUND.

Fetching from followers (KIP-392): a consumer's Fetch v11+ (it carries client metadata) that reaches a
follower's own listener is served from the follower's log, as Kafka's ``FetchParams.fetchOnlyLeader``
allows, up to the high watermark the follower knows: the leader's, but no further than the follower's
own log end (Kafka's follower learns the leader's high watermark with its next fetch; the model has no
per-follower high watermark, so this is the nearest it gets). Older versions, and brokers that hold no
replica, answer NOT_LEADER_OR_FOLLOWER. The server never names a preferred read replica
(PreferredReadReplica -1: no ``replica.selector.class``), and followers' own fetches (ReplicaId >= 0)
are answered like a consumer's.

With an authorizer (``authorizer.class.name``), as Kafka's ``handleFetchRequest`` for consumers: a topic
the client may not READ is TOPIC_AUTHORIZATION_FAILED for its partitions (whether or not it exists).
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.answers import Pieces, Sized
from controller.clock import VirtualClock
from controller.cluster import PartitionState
from controller.handlers import RequestContext
from controller.handlers._partitions import (
    current_leader,
    epoch_error,
    find_topic,
    leads,
    node_endpoints,
    partition_of,
    unknown_topic,
)
from controller.handlers._partitions import leader_log as leader_of
from controller.offload import Turns, gc_paused, off_loop
from protocol import fetch_response
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.FETCH
_READ_COMMITTED = 1
VERSIONS = (4, 18)

_TOPIC_IDS = 13
_CURRENT_LEADER = 12
_NODE_ENDPOINTS = 16
_LEADER_EPOCH = 9
_CLIENT_METADATA = 11  # KIP-392: a consumer's fetch may be served by a follower
#: A Fetch naming more partitions than this is answered in turns of the event loop, and encoded in a
#: worker thread.
IN_TURNS = 256


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    if request.get("SessionId", 0) != 0:
        return {
            "ThrottleTimeMs": 0,
            "ErrorCode": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            "SessionId": 0,
            "Responses": [],
        }
    named = sum(len(fetch_topic["Partitions"]) for fetch_topic in request["Topics"])
    if named > IN_TURNS:
        return _in_turns(ctx, request, named, version)
    fetches = _distinct(request["Topics"], version)
    denied = _denied_topics(ctx, fetches, version) if ctx.authorizer is not None else None
    response, size, done, watched = _run(_answer(ctx, request, fetches, version, denied))
    max_wait = request["MaxWaitMs"]
    if done or max_wait <= 0 or size >= _min_bytes(ctx, request) or not watched:
        return _sized(response, version)
    return _long_poll(ctx, request, fetches, version, max_wait, watched, denied)


def _denied_topics(ctx: RequestContext, fetches: list[Any], version: int) -> set[str] | None:
    """The topics of the request the client may not READ (None: none)."""
    by_id = version >= _TOPIC_IDS
    names = []
    for name, topic_id, _ in fetches:
        topic = find_topic(ctx, name, topic_id, by_id)
        name = topic.name if topic is not None else name
        if name is not None:
            names.append(name)
    allowed = ctx.allowed_names(Operation.READ, ResourceType.TOPIC, names)
    return {name for name in names if name not in allowed} or None


def _min_bytes(ctx: RequestContext, request: dict[str, Any]) -> int:
    """MinBytes, at most ``fetch.max.bytes`` (``KafkaApis.handleFetchRequest``: an answer never waits for
    more than it may carry)."""
    return min(request["MinBytes"], ctx.controller.config.fetch_max_bytes)


def _distinct(
    topics: list[dict[str, Any]], version: int
) -> list[tuple[str | None, Any, list[dict[str, Any]]]]:
    """The partitions a Fetch names, each once (as Kafka's ``FetchRequest.fetchData`` keeps them in a map:
    at the place first named, with what it was named with last), partitions of the same topic next to
    each other grouped as one topic (``FetchResponse.of``)."""
    by_id = version >= _TOPIC_IDS
    named: dict[tuple[Any, int], tuple[str | None, Any, dict[str, Any]]] = {}
    repeated = False
    for fetch_topic in topics:
        name, topic_id = fetch_topic.get("Topic"), fetch_topic.get("TopicId")
        key = topic_id if by_id else name
        for fetch_partition in fetch_topic["Partitions"]:
            index = (key, fetch_partition["Partition"])
            if index in named:
                repeated = True
            named[index] = (name, topic_id, fetch_partition)
    if not repeated:
        return [(t.get("Topic"), t.get("TopicId"), t["Partitions"]) for t in topics]
    out: list[tuple[str | None, Any, list[dict[str, Any]]]] = []
    for name, topic_id, fetch_partition in named.values():
        if out and out[-1][0] == name and out[-1][1] == topic_id:
            out[-1][2].append(fetch_partition)
        else:
            out.append((name, topic_id, [fetch_partition]))
    return out


def _run(steps: Generator[None, None, _Answer]) -> _Answer:
    """A generator's result, all at once (a Fetch naming few partitions)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


async def _in_turns_of(steps: Generator[None, None, _Answer]) -> _Answer:
    """A generator's result, in turns of the event loop (a Fetch naming many partitions), the cyclic
    garbage collector paused meanwhile (:func:`controller.offload.gc_paused`)."""
    turns = Turns()
    with gc_paused():
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value
            if turns.due():
                await asyncio.sleep(0)


async def _in_turns(ctx: RequestContext, request: dict[str, Any], named: int, version: int) -> bytes | Sized:
    fetches = await off_loop(named * 4, _distinct, request["Topics"], version)
    denied = _denied_topics(ctx, fetches, version) if ctx.authorizer is not None else None
    response, size, done, watched = await _in_turns_of(_answer(ctx, request, fetches, version, denied))
    max_wait = request["MaxWaitMs"]
    if done or max_wait <= 0 or size >= _min_bytes(ctx, request) or not watched:
        return await _encoded(response, version)
    return await _long_poll(ctx, request, fetches, version, max_wait, watched, denied)


def _sized(response: dict[str, Any], version: int) -> Any:
    """The answer encoded in pieces, the records as the logs hold them (:mod:`protocol.fetch_response`);
    else (an answer the codec must encode) with each partition's records joined, and one naming many
    partitions encoded off the event loop (:class:`Sized`). An answer naming more than :data:`IN_TURNS`
    partitions is encoded in a worker thread (:func:`_encoded`)."""
    partitions = sum(len(t["Partitions"]) for t in response["Responses"])
    if partitions > IN_TURNS:
        return _encoded(response, version)
    pieces = fetch_response.encode(response, version)
    if pieces is not None:
        return Pieces(pieces)
    return _joined(response, partitions)


async def _encoded(response: dict[str, Any], version: int) -> bytes | Sized:
    """A big answer's body, encoded and joined off the event loop."""
    partitions = sum(len(t["Partitions"]) for t in response["Responses"])
    body = await off_loop(partitions * 16, _joined_body, response, version)
    return body if body is not None else _joined(response, partitions)


def _joined_body(response: dict[str, Any], version: int) -> bytes | None:
    pieces = fetch_response.encode(response, version)
    return None if pieces is None else b"".join(pieces)


def _joined(response: dict[str, Any], partitions: int) -> Sized:
    for topic in response["Responses"]:
        for entry in topic["Partitions"]:
            records = entry["Records"]
            if isinstance(records, tuple):
                entry["Records"] = records[0] if len(records) == 1 else b"".join(records)
    return Sized(response, partitions)


async def _long_poll(
    ctx: RequestContext,
    request: dict[str, Any],
    fetches: list[Any],
    version: int,
    max_wait: int,
    watched: list[PartitionState],
    denied: set[str] | None,
) -> Pieces | Sized | bytes:
    data_path = ctx.controller.data_path
    clock = ctx.controller.clock
    loop = asyncio.get_running_loop()
    expired: asyncio.Future[None] = loop.create_future()

    def expire() -> None:
        if not expired.done():
            expired.set_result(None)

    timer = clock.call_later(max_wait, expire, "fetch wait")
    real = loop.call_later(max_wait / 1000, expire) if isinstance(clock, VirtualClock) else None
    many = sum(len(partitions) for _, _, partitions in fetches) > IN_TURNS
    try:
        while True:
            changed = [data_path.watch(p) for p in watched]
            try:
                await asyncio.wait({expired, *changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for p, future in zip(watched, changed, strict=True):
                    future.cancel()
                    data_path.unwatch(p, future)
            steps = _answer(ctx, request, fetches, version, denied)
            response, size, done, watched = await _in_turns_of(steps) if many else _run(steps)
            if expired.done() or done or size >= _min_bytes(ctx, request) or not watched:
                return await _encoded(response, version) if many else _sized(response, version)
    finally:
        timer.cancel()
        if real is not None:
            real.cancel()


#: What :func:`_answer` makes: the answer as of now, the bytes of records in it, whether it must go now
#: (an error a wait would not change), and the partitions to watch while it waits.
_Answer = tuple[dict[str, Any], int, bool, list[PartitionState]]


def _answer(
    ctx: RequestContext,
    request: dict[str, Any],
    fetches: list[Any],
    version: int,
    denied: set[str] | None = None,
) -> Generator[None, None, _Answer]:
    """The answer as of now (see :data:`_Answer`), a step per partition (a generator, so that a Fetch
    naming many partitions shares the event loop: :func:`_in_turns_of`).

    The records' bytes are bounded by the request's MaxBytes and the broker's ``fetch.max.bytes``
    (``ReplicaManager.fetchMessages``), the first batch whole even past them (KIP-74); while the server
    holds more than ``simulator.unsent.answers.max.bytes`` of answers its clients have not read, an
    answer carries at most that first batch. ``denied``: topics the client may not READ."""
    by_id = version >= _TOPIC_IDS
    data_path = ctx.controller.data_path
    config = ctx.controller.config
    read_committed = request.get("IsolationLevel", 0) == _READ_COMMITTED
    remaining = min(request.get("MaxBytes", 0x7FFFFFFF), config.fetch_max_bytes)
    if data_path.unsent_answer_bytes >= config.unsent_answers_max_bytes:
        remaining = 0
    # Kafka answers read_committed fetches with their aborted transactions (an empty list for none),
    # read_uncommitted ones without (null).
    aborted: list[Any] | None = [] if read_committed else None
    size = 0
    done = False
    watched: list[PartitionState] = []
    leaders: set[int] = set()
    responses = []
    for name, topic_id, fetch_partitions in fetches:
        topic = find_topic(ctx, name, topic_id, by_id)
        partitions = []
        refused = denied is not None and (topic.name if topic is not None else name) in denied
        for fetch_partition in fetch_partitions:
            yield
            index = fetch_partition["Partition"]
            entry: dict[str, Any] = {"PartitionIndex": index}
            partitions.append(entry)
            if refused:
                _fail(entry, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                done = True
                continue
            p = partition_of(topic, index) if topic is not None else None
            if p is None:
                # KafkaApis' own refusal: its answer carries an empty AbortedTransactions list.
                _fail(
                    entry, unknown_topic(by_id) if topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []
                )
                done = True
                continue
            reader = p.leader if leads(ctx, p) else _follower(ctx, p, version)
            if reader is None:
                _fail(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                if version >= _CURRENT_LEADER:
                    entry["CurrentLeader"] = current_leader(p)
                    if p.leader >= 0:
                        leaders.add(p.leader)
                done = True
                continue
            if version >= _LEADER_EPOCH:
                code = epoch_error(p, fetch_partition.get("CurrentLeaderEpoch", -1))
                if code is not None:
                    _fail(entry, code)
                    # Kafka names the leader for a fenced epoch only, not for an epoch it does not know yet.
                    if version >= _CURRENT_LEADER and code == ErrorCode.FENCED_LEADER_EPOCH:
                        entry["CurrentLeader"] = current_leader(p)
                    done = True
                    continue
            # The leader's log; before any record, the empty one whose epoch cache holds the leader's epoch
            # (a LastFetchedEpoch of it is no divergence, as Kafka answers).
            leader_log = leader_of(ctx, p) if reader == p.leader else data_path.log_of(p, reader)
            hw = p.high_watermark if reader == p.leader else min(p.high_watermark, leader_log.log_end_offset)
            lso = min(data_path.last_stable_offset(p), hw)
            offset = fetch_partition["FetchOffset"]
            last_fetched = fetch_partition.get("LastFetchedEpoch", -1) if version >= _CURRENT_LEADER else -1
            if last_fetched >= 0:
                end = leader_log.end_offset_for_epoch(last_fetched)
                if end is None or end[0] < 0 or end[1] < 0:
                    # Partition.readRecords: "Could not determine the end offset of the last fetched
                    # epoch" (an epoch past the leader's latest): OFFSET_OUT_OF_RANGE, as Kafka 4.4 answers.
                    _fail(entry, ErrorCode.OFFSET_OUT_OF_RANGE)
                    done = True
                    continue
                end_epoch, end_offset = end
                if offset < leader_log.log_start_offset:
                    # Partition.readRecords: below the log start, out of range whether or not it diverges.
                    _fail(entry, ErrorCode.OFFSET_OUT_OF_RANGE)
                    done = True
                    continue
                if end_epoch < last_fetched or end_offset < offset:
                    # An empty read (Kafka's FetchDataInfo.empty): no AbortedTransactions, even read_committed.
                    _ok(entry, hw, lso, leader_log.log_start_offset, b"", None)
                    entry["DivergingEpoch"] = {"Epoch": end_epoch, "EndOffset": end_offset}
                    done = True
                    continue
            if not leader_log.log_start_offset <= offset <= leader_log.log_end_offset:
                _fail(entry, ErrorCode.OFFSET_OUT_OF_RANGE)
                done = True
                continue
            budget = min(fetch_partition["PartitionMaxBytes"], remaining)
            bound = lso if read_committed else hw
            batches = (
                leader_log.read(offset, bound, budget, min_one=size == 0) if budget > 0 or size == 0 else []
            )
            # The batches' bytes as the log holds them, in pieces (joined only if the codec encodes them).
            records = tuple(piece for batch in batches for piece in batch.pieces())
            read = sum(batch.size for batch in batches)
            size += read
            remaining -= read
            _ok(entry, hw, lso, leader_log.log_start_offset, records, aborted)
            if read_committed:
                end = batches[-1].last_offset + 1 if batches else offset
                entry["AbortedTransactions"] = [
                    {"ProducerId": txn.producer_id, "FirstOffset": txn.first_offset}
                    for txn in data_path.aborted_transactions(p, offset, end)
                ]
            watched.append(p)
        responses.append({"Topic": name, "TopicId": topic_id, "Partitions": partitions})
    response: dict[str, Any] = {
        "ThrottleTimeMs": 0,
        "ErrorCode": ErrorCode.NONE,
        "SessionId": 0,
        "Responses": responses,
    }
    if leaders and version >= _NODE_ENDPOINTS:
        response["NodeEndpoints"] = node_endpoints(ctx, leaders)
    return response, size, done, watched


def _follower(ctx: RequestContext, p: PartitionState, version: int) -> int | None:
    """The follower whose own listener a consumer's Fetch v11+ reached, when it holds a replica of ``p``
    and the partition has a leader (KIP-392); else None."""
    broker = ctx.listener_broker
    if version < _CLIENT_METADATA or broker is None or p.leader < 0 or broker not in p.replicas:
        return None
    state = ctx.controller.cluster.broker_state(broker)
    return broker if state is not None and state.serving else None


def _ok(
    entry: dict[str, Any],
    hw: int,
    lso: int,
    log_start: int,
    records: bytes | tuple[bytes | memoryview, ...],
    aborted: list[Any] | None,
) -> None:
    entry.update(
        ErrorCode=ErrorCode.NONE,
        HighWatermark=hw,
        LastStableOffset=lso,
        LogStartOffset=log_start,
        AbortedTransactions=aborted,
        PreferredReadReplica=-1,
        Records=records,
    )


def _fail(entry: dict[str, Any], code: ErrorCode, aborted: list[Any] | None = None) -> None:
    """A partition's error; ``aborted`` as Kafka answers it: null from the replica manager (leadership,
    epochs, offsets), an empty list from KafkaApis (an unknown topic or partition)."""
    entry.update(
        ErrorCode=code,
        HighWatermark=-1,
        LastStableOffset=-1,
        LogStartOffset=-1,
        AbortedTransactions=aborted,
        PreferredReadReplica=-1,
        Records=b"",
    )


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    responses = []
    for fetch_topic in request.get("Topics") or []:
        partitions = []
        for fetch_partition in fetch_topic.get("Partitions") or []:
            entry: dict[str, Any] = {"PartitionIndex": fetch_partition["Partition"]}
            _fail(entry, ErrorCode(error_code))
            partitions.append(entry)
        responses.append(
            {
                "Topic": fetch_topic.get("Topic"),
                "TopicId": fetch_topic.get("TopicId"),
                "Partitions": partitions,
            }
        )
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "SessionId": 0, "Responses": responses}
