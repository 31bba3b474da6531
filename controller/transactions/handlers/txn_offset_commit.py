"""TxnOffsetCommit (28) v0-5: a consumer group's offsets committed inside a transaction, as Kafka's
``handleTxnOffsetCommitRequest`` and its group coordinator's ``commitTransactionalOffsets``.

Per partition of an unknown topic UNKNOWN_TOPIC_OR_PARTITION; the rest goes to the group's coordinator
(NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as for OffsetCommit), which
first makes sure the group's ``__consumer_offsets`` partition is in the transaction: asked of the
transaction coordinator (KIP-890 part 1; not in it: INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from v4;
a fenced producer: INVALID_PRODUCER_EPOCH), or added to it by a v5 request (KIP-890 part 2, no
AddOffsetsToTxn). Then the group and member are checked (v3+: generation, member id, instance id) and the
offsets kept pending until the transaction's marker reaches the partition
(:meth:`controller.groups.coordinator.GroupCoordinator.txn_commit`); answered once they are replicated.

With an authorizer, first: a transactional id the client may not WRITE is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a group it may not READ GROUP_AUTHORIZATION_FAILED (every
partition), a topic it may not READ TOPIC_AUTHORIZATION_FAILED for its partitions.
"""

from __future__ import annotations

import asyncio
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.groups.coordinator import OffsetCommit
from controller.handlers import RequestContext
from controller.transactions.handlers._respond import Answer
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.TXN_OFFSET_COMMIT
VERSIONS = (0, 5)

_ABORTABLE = 4
_ADDS_OFFSETS = 5
#: The transaction coordinator's transient errors, as the group coordinator answers them.
_UNAVAILABLE = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
    }
)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    cluster = ctx.controller.cluster
    commits: list[OffsetCommit] = []
    errors: dict[tuple[str, int], ErrorCode] = {}
    allowed = None
    if ctx.authorizer is not None:
        if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request["TransactionalId"]):
            return _answer(request, errors, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not ctx.allowed(Operation.READ, ResourceType.GROUP, request["GroupId"]):
            return _answer(request, errors, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        allowed = ctx.allowed_names(
            Operation.READ, ResourceType.TOPIC, (t["Name"] for t in request["Topics"])
        )
    for topic in request["Topics"]:
        t = cluster.topics.get(topic["Name"])
        for p in topic["Partitions"]:
            index = p["PartitionIndex"]
            if allowed is not None and topic["Name"] not in allowed:
                errors[(topic["Name"], index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if t is None or not 0 <= index < len(t.partitions):
                errors[(topic["Name"], index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            commits.append(
                OffsetCommit(
                    topic["Name"],
                    index,
                    p["CommittedOffset"],
                    p.get("CommittedLeaderEpoch", -1),
                    p.get("CommittedMetadata"),
                )
            )
    if not commits:
        return _answer(request, errors, ErrorCode.NONE)
    groups = ctx.controller.groups
    group_id = request["GroupId"]
    error = groups.check(group_id, ctx.listener_broker)
    if error:
        return _answer(request, errors, error)
    transactions = ctx.controller.transactions
    partition = transactions.coordinator.offsets_partition(group_id)
    transactional_id, producer_id, epoch = (
        request["TransactionalId"],
        request["ProducerId"],
        request["ProducerEpoch"],
    )
    if version >= _ADDS_OFFSETS:
        return _after_adding(ctx, request, version, commits, errors, partition)
    if ctx.controller.config.txn_verification:
        found = transactions.coordinator.verify(transactional_id, producer_id, epoch, [partition])[partition]
        if found:
            return _answer(request, errors, _verification_error(found, version))
    return _commit(ctx, request, version, commits, errors)


async def _after_adding(
    ctx: RequestContext,
    request: dict[str, Any],
    version: int,
    commits: list[OffsetCommit],
    errors: dict[tuple[str, int], ErrorCode],
    partition: tuple[str, int],
) -> dict[str, Any]:
    added: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
    ctx.controller.transactions.coordinator.add_partitions(
        request["TransactionalId"],
        request["ProducerId"],
        request["ProducerEpoch"],
        [partition],
        None,
        lambda error: added.done() or added.set_result(error),
        transaction_version=2,
    )
    error = await added
    if error:
        return _answer(request, errors, _verification_error(error, version))
    answer = _commit(ctx, request, version, commits, errors)
    return await answer if isinstance(answer, asyncio.Future) else answer


def _verification_error(error: ErrorCode, version: int) -> ErrorCode:
    if error is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error is ErrorCode.TRANSACTION_ABORTABLE and version < _ABORTABLE:
        return ErrorCode.INVALID_TXN_STATE
    if error in _UNAVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return error


def _commit(
    ctx: RequestContext,
    request: dict[str, Any],
    version: int,
    commits: list[OffsetCommit],
    errors: dict[tuple[str, int], ErrorCode],
) -> Any:
    def build(codes: list[ErrorCode]) -> dict[str, Any]:
        found = dict(errors)
        for commit, code in zip(commits, codes, strict=True):
            found[(commit.topic, commit.partition)] = code
        return _answer(request, found, ErrorCode.NONE)

    answer: Answer[list[ErrorCode]] = Answer(build)
    ctx.controller.groups.coordinator.txn_commit(
        request["GroupId"],
        request["ProducerId"],
        request.get("GenerationIdOrMemberEpoch", -1),
        request.get("MemberId", ""),
        request.get("GroupInstanceId"),
        commits,
        version,
        answer.respond,
    )
    return answer.result()


def _answer(
    request: dict[str, Any], errors: dict[tuple[str, int], ErrorCode], every: ErrorCode
) -> dict[str, Any]:
    """Each asked partition with its error (``every`` for those without one of their own)."""
    return {
        "ThrottleTimeMs": 0,
        "Topics": [
            {
                "Name": t["Name"],
                "Partitions": [
                    {
                        "PartitionIndex": p["PartitionIndex"],
                        "ErrorCode": errors.get((t["Name"], p["PartitionIndex"]), every),
                    }
                    for p in t["Partitions"]
                ],
            }
            for t in request["Topics"]
        ],
    }


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return _answer(request, {}, ErrorCode(error_code))
