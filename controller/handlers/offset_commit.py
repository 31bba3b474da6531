"""OffsetCommit (8): a group's offsets, checked against its generation and member; answered once the
records are durable (the high watermark of the group's ``__consumer_offsets`` partition covers them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

from controller.answers import Sized
from controller.groups.coordinator import OffsetCommit
from controller.handlers import RequestContext
from controller.offload import Turns, gc_paused
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.OFFSET_COMMIT
VERSIONS = (0, 9)
#: An OffsetCommit naming more partitions than this has its commits read in turns of the event loop.
IN_TURNS = 256
#: What a partition of the answer costs to encode, in :data:`controller.offload.BIG`'s units.
_ENCODE_WEIGHT = 16


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    """The answer now when the coordinator gives it at once (an error; commits durable already: no task),
    else a future of it (commits wait for the high watermark); a request committing more than
    :data:`IN_TURNS` partitions has its commits read in turns of the event loop and its answer encoded
    off the loop."""
    if sum(len(t["Partitions"]) for t in request["Topics"]) > IN_TURNS:
        return _many(ctx, request, version)
    return _commit(ctx, request, version, _commits(request))


def _commits(request: dict[str, Any]) -> Iterator[OffsetCommit]:
    for t in request["Topics"]:
        for p in t["Partitions"]:
            yield OffsetCommit(
                t["Name"],
                p["PartitionIndex"],
                p["CommittedOffset"],
                p.get("CommittedLeaderEpoch", -1),
                p.get("CommittedMetadata"),
            )


async def _many(ctx: RequestContext, request: dict[str, Any], version: int) -> Sized:
    turns = Turns()
    commits = []
    with gc_paused():
        for commit in _commits(request):
            commits.append(commit)
            if turns.due():
                await asyncio.sleep(0)
    answer = _commit(ctx, request, version, commits)
    if not isinstance(answer, dict):
        answer = await answer
    return Sized(answer, len(commits) * _ENCODE_WEIGHT)


def _commit(
    ctx: RequestContext, request: dict[str, Any], version: int, commits: Iterable[OffsetCommit]
) -> dict[str, Any] | asyncio.Future[dict[str, Any]]:
    service = ctx.controller.groups
    commits = list(commits)
    error = service.check(request["GroupId"], ctx.listener_broker)
    if error:
        return _answer(request, [error] * len(commits), version)
    given: list[list[ErrorCode]] = []
    answered: asyncio.Future[dict[str, Any]] | None = None

    def respond(codes: list[ErrorCode]) -> None:
        if answered is None:
            given.append(codes)
        elif not answered.done():
            answered.set_result(_answer(request, codes, version))

    service.coordinator.commit(
        request["GroupId"],
        request.get("GenerationIdOrMemberEpoch", -1),
        request.get("MemberId", ""),
        request.get("GroupInstanceId"),
        commits,
        version,
        respond,
    )
    if given:
        return _answer(request, given[0], version)
    answered = asyncio.get_running_loop().create_future()
    return answered


def _answer(request: dict[str, Any], codes: list[ErrorCode] | list[int], version: int) -> dict[str, Any]:
    results = iter(codes)
    answer: dict[str, Any] = {
        "Topics": [
            {
                "Name": t["Name"],
                "Partitions": [
                    {"PartitionIndex": p["PartitionIndex"], "ErrorCode": next(results)}
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
