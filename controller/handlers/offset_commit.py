"""OffsetCommit (8): a group's offsets, checked against its generation and member; answered once the
records are durable (the high watermark of the group's ``__consumer_offsets`` partition covers them).

With an authorizer, as Kafka's ``handleOffsetCommitRequest``: a group the client may not READ is
GROUP_AUTHORIZATION_FAILED for every partition; a topic it may not READ is TOPIC_AUTHORIZATION_FAILED for
its partitions, and the others are committed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.answers import Sized
from controller.groups.coordinator import OffsetCommit
from controller.handlers import RequestContext
from controller.offload import Turns, gc_paused
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.OFFSET_COMMIT
VERSIONS = (2, 9)
#: An OffsetCommit naming more partitions than this has its commits read in turns of the event loop.
IN_TURNS = 256
#: What a partition of the answer costs to encode, in :data:`controller.offload.BIG`'s units.
_ENCODE_WEIGHT = 16


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    """The answer now when the coordinator gives it at once (an error; commits durable already: no task),
    else a future of it (commits wait for the high watermark); a request committing more than
    :data:`IN_TURNS` partitions has its commits read in turns of the event loop and its answer encoded
    off the loop."""
    denied: set[str] = set()
    if ctx.authorizer is not None:
        if not ctx.allowed(Operation.READ, ResourceType.GROUP, request["GroupId"]):
            return error_response(request, version, ErrorCode.GROUP_AUTHORIZATION_FAILED, "")
        names = [t["Name"] for t in request["Topics"]]
        allowed = ctx.allowed_names(Operation.READ, ResourceType.TOPIC, names)
        denied = {name for name in names if name not in allowed}
    if sum(len(t["Partitions"]) for t in request["Topics"]) > IN_TURNS:
        return _many(ctx, request, version, denied)
    return _commit(ctx, request, version, _commits(request, denied), denied)


def _commits(request: dict[str, Any], denied: set[str]) -> Iterator[OffsetCommit]:
    """The commits of the request, but those of topics the client may not READ (``denied``)."""
    for t in request["Topics"]:
        if t["Name"] in denied:
            continue
        for p in t["Partitions"]:
            yield OffsetCommit(
                t["Name"],
                p["PartitionIndex"],
                p["CommittedOffset"],
                p.get("CommittedLeaderEpoch", -1),
                p.get("CommittedMetadata"),
            )


async def _many(ctx: RequestContext, request: dict[str, Any], version: int, denied: set[str]) -> Sized:
    turns = Turns()
    commits = []
    with gc_paused():
        for commit in _commits(request, denied):
            commits.append(commit)
            if turns.due():
                await asyncio.sleep(0)
    answer = _commit(ctx, request, version, commits, denied)
    if not isinstance(answer, dict):
        answer = await answer
    count = sum(len(t["Partitions"]) for t in request["Topics"])
    return Sized(answer, count * _ENCODE_WEIGHT)


def _commit(
    ctx: RequestContext,
    request: dict[str, Any],
    version: int,
    commits: Iterable[OffsetCommit],
    denied: set[str],
) -> dict[str, Any] | asyncio.Future[dict[str, Any]]:
    service = ctx.controller.groups
    topics = ctx.controller.cluster.topics
    commits = list(commits)
    # As Kafka's KafkaApis: a partition of a topic the broker does not know is UNKNOWN_TOPIC_OR_PARTITION,
    # and only the others go to the coordinator (none: the answer is given without it). The commits of
    # topics the client may not READ (``denied``) are not among them.
    codes: list[ErrorCode] = []
    known: list[int] = []
    for i, commit in enumerate(commits):
        topic = topics.get(commit.topic)
        if topic is None or not 0 <= commit.partition < len(topic.partitions):
            codes.append(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            codes.append(ErrorCode.NONE)
            known.append(i)
    if not known:
        return _answer(request, codes, version, denied)

    def merged(given: list[ErrorCode]) -> list[ErrorCode]:
        out = list(codes)
        for i, code in zip(known, given, strict=True):
            out[i] = code
        return out

    error = service.check(request["GroupId"], ctx.listener_broker)
    if error:
        return _answer(request, merged([error] * len(known)), version, denied)
    given: list[list[ErrorCode]] = []
    answered: asyncio.Future[dict[str, Any]] | None = None

    def respond(result: list[ErrorCode]) -> None:
        if answered is None:
            given.append(result)
        elif not answered.done():
            answered.set_result(_answer(request, merged(result), version, denied))

    service.coordinator.commit(
        request["GroupId"],
        request.get("GenerationIdOrMemberEpoch", -1),
        request.get("MemberId", ""),
        request.get("GroupInstanceId"),
        [commits[i] for i in known],
        version,
        respond,
    )
    if given:
        return _answer(request, merged(given[0]), version, denied)
    answered = asyncio.get_running_loop().create_future()
    return answered


def _answer(
    request: dict[str, Any],
    codes: list[ErrorCode] | list[int],
    version: int,
    denied: set[str] | frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The answer: ``codes`` in order for the partitions of the topics not ``denied`` (those are
    TOPIC_AUTHORIZATION_FAILED)."""
    results = iter(codes)
    answer: dict[str, Any] = {
        "Topics": [
            {
                "Name": t["Name"],
                "Partitions": [
                    {
                        "PartitionIndex": p["PartitionIndex"],
                        "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED
                        if t["Name"] in denied
                        else next(results),
                    }
                    for p in t["Partitions"]
                ],
            }
            for t in request["Topics"]
        ]
    }
    if version >= 3:
        answer["ThrottleTimeMs"] = 0
    return answer


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    count = sum(len(t["Partitions"]) for t in request["Topics"])
    return _answer(request, [code] * count, version)
