"""ElectLeaders (43): preferred and unclean leader elections, with Kafka's answers.

Per partition: UNKNOWN_TOPIC_OR_PARTITION for one that does not exist; ELECTION_NOT_NEEDED when the
preferred replica already leads (preferred) or a leader exists (unclean); otherwise the election runs,
and answers NONE when it elected a leader, PREFERRED_LEADER_NOT_AVAILABLE (preferred) or
ELIGIBLE_LEADERS_NOT_AVAILABLE (unclean) when nothing changed. A request for every partition (null
TopicPartitions) leaves out the partitions that need no election (their topics stay listed). v0 knows
only preferred elections; an ElectionType other than 0 or 1 is INVALID_REQUEST.

A request for every partition of a big cluster is worked through in turns of the event loop, and its
answer encoded off it (:class:`controller.answers.Sized`): other clients are served meanwhile.

With an authorizer, a client that may not ALTER the cluster is answered CLUSTER_AUTHORIZATION_FAILED
(Kafka's ``authorizeClusterOperation``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation
from controller.answers import Sized
from controller.election.change import ElectionKind
from controller.handlers import Cap, RequestContext, SaidOnce
from controller.offload import Turns, gc_paused
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.ELECT_LEADERS
VERSIONS = (0, 2)

_KINDS = {0: ElectionKind.PREFERRED, 1: ElectionKind.UNCLEAN}


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """No cluster holds more topics, nor a topic more partitions, than the cluster's partition limit."""
    limit = config.placement_limits().max_partitions
    cap = Cap(limit.value, ErrorCode.INVALID_REQUEST, limit.setting)
    return {("TopicPartitions",): cap, ("TopicPartitions", "Partitions"): cap}


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Sized:
    refused = ctx.refused_on_cluster(Operation.ALTER)
    if refused is not None:
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused)
    kind = _KINDS.get(request.get("ElectionType", 0) if version >= 1 else 0)
    wanted = request.get("TopicPartitions")
    if kind is None:
        return _whole_request_error(
            version, ErrorCode.INVALID_REQUEST, wanted, f"Unknown election type {request['ElectionType']}"
        )
    partitions = None if wanted is None else [(t["Topic"], p) for t in wanted for p in t["Partitions"]]
    # Many partitions make many objects that outlive a collection or two: none run meanwhile (a full
    # one would hold the loop), and what survives is frozen after (controller.offload).
    many = partitions is None or len(partitions) > _MANY
    with gc_paused() if many else contextlib.nullcontext():
        outcomes = await ctx.controller.dynamics.elect_leaders(kind, partitions)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        if wanted is None:
            for name in ctx.controller.cluster.topics:
                by_topic[name] = []
        turns = Turns()
        once = SaidOnce()  # a message repeated for every partition would make the answer unbounded
        for outcome in outcomes:
            await turns.yield_if_due()
            code = ErrorCode.NONE if outcome.error is None else outcome.error
            # Kafka's ApiError(code) without a message of its own carries the error's default one.
            message = outcome.message if outcome.message is not None or not code else ErrorCode(code).message
            by_topic.setdefault(outcome.topic, []).append(
                {
                    "PartitionId": outcome.partition,
                    "ErrorCode": code,
                    "ErrorMessage": once(code, message),
                }
            )
    response: dict[str, Any] = {
        "ThrottleTimeMs": 0,
        "ReplicaElectionResults": [{"Topic": t, "PartitionResult": r} for t, r in by_topic.items()],
    }
    if version >= 1:
        response["ErrorCode"] = 0
    return Sized(response, len(outcomes) + len(by_topic))


#: Requests naming more partitions than this run with the garbage collector paused.
_MANY = 1000


def _whole_request_error(
    version: int, code: ErrorCode, wanted: list[dict[str, Any]] | None, message: str
) -> dict[str, Any]:
    once = SaidOnce()
    results = [
        {
            "Topic": t["Topic"],
            "PartitionResult": [
                {"PartitionId": p, "ErrorCode": code, "ErrorMessage": once(code, message)}
                for p in t["Partitions"]
            ],
        }
        for t in wanted or []
    ]
    response: dict[str, Any] = {"ThrottleTimeMs": 0, "ReplicaElectionResults": results}
    if version >= 1:
        response["ErrorCode"] = code
    return response


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return _whole_request_error(version, ErrorCode(code), request.get("TopicPartitions"), message)
