"""The rules of placement, with Kafka's messages: one home for each.

- the replication-factor checks of Kafka's KRaft placers (:func:`require_positive`,
  :func:`require_enough_brokers`, :func:`require_some_unfenced`) and the server's own, for placers
  that return a result the request could never have had (:func:`replication_factor_problem`);
- the request-level checks of the error table, before any placer runs (:func:`request_refusal`), and
  the limits every request that creates partitions is held to, placed or assigned by hand
  (:func:`replica_limit_refusal`, :func:`partition_limit_refusal`);
- what a placer's result must be: replica lists (:func:`replica_lists`) that satisfy every check
  (:func:`placement_problems`, each problem named by the check it fails). The server answers with the
  first (:func:`first_problem`, which also has a fast path for the common valid case); the conformance
  kit reports them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.placement.api import ClusterView, InvalidReplicationFactorError, PlacementSpec, UsableBroker
from controller.placement.settings import Limit
from controller.plugins.loader import MalformedResult, Opaque
from protocol.codes import ErrorCode
from protocol.errors import Refusal

__all__ = [
    "CHECKS",
    "Problem",
    "first_problem",
    "partition_limit_refusal",
    "placement_problems",
    "replica_limit_refusal",
    "replica_lists",
    "replication_factor_problem",
    "request_refusal",
    "require_enough_brokers",
    "require_positive",
    "require_some_unfenced",
    "unable_to_replicate",
]

# ------------------------------------------------------------------------------ replication factor


def _not_positive(rf: int) -> str:
    return f"Invalid replication factor {rf}: the replication factor must be positive."


# Kafka 4.x's words (since brokers may cordon log directories, KIP-1066, its placer says so too).
def _not_enough(rf: int, registered: int) -> str:
    return (
        f"The target replication factor of {rf} cannot be reached because only {registered} "
        "broker(s) are registered or some brokers have all their log directories cordoned."
    )


ALL_FENCED = "All brokers are currently fenced, or have all their log directories cordoned."


def require_positive(rf: int) -> None:
    """Kafka's check that the replication factor is positive (InvalidReplicationFactorError)."""
    if rf <= 0:
        raise InvalidReplicationFactorError(_not_positive(rf))


def require_enough_brokers(rf: int, registered: int) -> None:
    """Kafka's check that there are at least ``rf`` registered brokers to place on."""
    if rf > registered:
        raise InvalidReplicationFactorError(_not_enough(rf, registered))


def require_some_unfenced(unfenced: int) -> None:
    """Kafka's check that some broker can lead."""
    if unfenced == 0:
        raise InvalidReplicationFactorError(ALL_FENCED)


def replication_factor_problem(rf: int, usable: int) -> str | None:
    """Why no placement can have this replication factor on ``usable`` brokers (Kafka's words), or None."""
    if rf <= 0:
        return _not_positive(rf)
    if rf > usable:
        return _not_enough(rf, usable)
    return None


def unable_to_replicate(rf: int, reason: str) -> str:
    """How Kafka's CreateTopics words a replication factor its placer cannot meet."""
    return f"Unable to replicate the partition {rf} time(s): {reason}"


# ------------------------------------------------------------------------------ requests

#: The largest partition id (an int32 on the wire).
MAX_PARTITION_ID = 2**31 - 1


def request_refusal(
    spec: PlacementSpec, timeout_ms: int, registered: Iterable[int], max_replicas: Limit
) -> Refusal | None:
    """The request-level checks of the error table, in order; None when the request may be placed."""
    num_partitions, start_partition = spec.num_partitions, spec.start_partition
    if num_partitions <= 0:
        return Refusal(
            ErrorCode.INVALID_PARTITIONS,
            f"Number of partitions was set to an invalid non-positive value: {num_partitions}.",
        )
    if start_partition < 0:
        return Refusal(ErrorCode.INVALID_REQUEST, f"StartPartition must not be negative: {start_partition}.")
    if start_partition + num_partitions - 1 > MAX_PARTITION_ID:
        return Refusal(
            ErrorCode.INVALID_REQUEST,
            f"StartPartition {start_partition} + NumPartitions {num_partitions} would number partitions "
            f"past {MAX_PARTITION_ID}, the largest partition id.",
        )
    if timeout_ms <= 0:
        return Refusal(ErrorCode.INVALID_REQUEST, f"timeoutMs must be positive: {timeout_ms}.")
    node_ids = spec.broker_ids or ()
    if node_ids:
        repeated = sorted(b for b, n in Counter(node_ids).items() if n > 1)
        if repeated:
            return Refusal(ErrorCode.INVALID_REQUEST, f"NodeId repeats broker id(s) {_ids(repeated)}.")
        known = set(registered)
        unknown = sorted(b for b in node_ids if b not in known)
        if unknown:
            return Refusal(
                ErrorCode.INVALID_REQUEST, f"NodeId names unregistered broker id(s) {_ids(unknown)}."
            )
    return replica_limit_refusal(num_partitions, spec.num_replicas, max_replicas)


def replica_limit_refusal(num_partitions: int, replication_factor: int, limit: Limit) -> Refusal | None:
    """POLICY_VIOLATION when ``num_partitions`` x ``replication_factor`` replicas pass the limit of one
    request; None within it."""
    total = num_partitions * max(replication_factor, 0)
    if total <= limit.value:
        return None
    return Refusal(
        ErrorCode.POLICY_VIOLATION,
        f"{num_partitions} partition(s) x replication factor {replication_factor} = "
        f"{total} replicas exceeds the limit of {limit.value} ({limit.setting}).",
    )


def partition_limit_refusal(adding: int, existing: int, limit: Limit) -> Refusal | None:
    """POLICY_VIOLATION when ``adding`` partitions to the cluster's ``existing`` ones pass the limit of the
    cluster; None within it."""
    total = existing + adding
    if total <= limit.value:
        return None
    return Refusal(
        ErrorCode.POLICY_VIOLATION,
        f"{adding} more partition(s) would make {total} in the cluster, above the limit of "
        f"{limit.value} ({limit.setting}).",
    )


def _ids(ids: Sequence[int], most: int = 20) -> str:
    """A list of ids for a message, cut after ``most`` entries so that the message stays short."""
    if len(ids) <= most:
        return str(list(ids))
    return f"[{', '.join(map(str, ids[:most]))}, ... {len(ids) - most} more]"


# ------------------------------------------------------------------------------ results

_PLAIN = {list, tuple}


def replica_lists(result: Any, portable: bool) -> list[list[Any]] | None:
    """A placer's result as fresh plain lists (their contents are checked by :func:`first_problem`), or
    None; MalformedResult when it is not a list of lists.

    With ``portable`` an entry that is not an int is replaced by an :class:`Opaque` description, so
    that the lists always pickle and the server can still say what the entry was.
    """
    if result is None:
        return None
    if isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
        raise MalformedResult(f"returned {type(result).__name__}, not a list of replica lists")
    if type(result) in _PLAIN and set(map(type, result)) <= _PLAIN:
        lists = [list(replicas) for replicas in result]  # the usual shape, copied in one pass
        if not portable or all(set(map(type, rs)) <= {int} for rs in lists):
            return lists
    out: list[list[Any]] = []
    append = out.append
    for replicas in result:
        if type(replicas) not in _PLAIN and (
            isinstance(replicas, (str, bytes)) or not hasattr(replicas, "__iter__")
        ):
            raise MalformedResult(
                f"partition entry {len(out)} is {type(replicas).__name__} {replicas!r:.60}, "
                "not a list of broker ids"
            )
        entries = list(replicas)
        if portable:
            for i, r in enumerate(entries):
                if type(r) is not int:
                    entries[i] = Opaque(f"{type(r).__name__} {r!r:.40}")
        append(entries)
    return out


#: The checks a result must pass, in the order they are applied to each partition.
CHECKS = ("shape", "distinct replicas", "known brokers", "unfenced leader")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a placer's result: the check it fails, and what exactly (a full sentence)."""

    check: str
    message: str
    partition: int | None = None


def _show(replicas: Sequence[Any]) -> str:
    shown = list(replicas[:20])
    return str(shown) if len(replicas) <= 20 else f"{str(shown)[:-1]}, ... {len(replicas) - 20} more]"


def _partition_problems(
    partition: int,
    rs: Sequence[Any],
    spec: PlacementSpec,
    by_id: Mapping[int, UsableBroker],
    allowed: set[int] | None,
) -> list[Problem]:
    if len(rs) != spec.num_replicas:
        return [
            Problem(
                "shape",
                f"partition {partition} has {len(rs)} replica(s), expected {spec.num_replicas}: {_show(rs)}",
                partition,
            )
        ]
    for r in rs:
        if type(r) is not int:
            return [
                Problem(
                    "shape", f"partition {partition} has a replica that is not a broker id: {r!r}", partition
                )
            ]
    found: list[Problem] = []
    dupes = sorted(b for b, n in Counter(rs).items() if n > 1)
    if dupes:
        found.append(
            Problem(
                "distinct replicas",
                f"partition {partition} repeats broker(s) {dupes}: {_show(rs)}",
                partition,
            )
        )
    unknown = [r for r in rs if r not in by_id]
    if unknown:
        found.append(
            Problem(
                "known brokers",
                f"partition {partition} names unknown broker(s) {unknown}: {_show(rs)}",
                partition,
            )
        )
    if allowed is not None:
        outside = [r for r in rs if r in by_id and r not in allowed]
        if outside:
            found.append(
                Problem(
                    "known brokers",
                    f"partition {partition} uses broker(s) {outside} outside NodeId {_ids(sorted(allowed))}",
                    partition,
                )
            )
    if rs and rs[0] in by_id and by_id[rs[0]].fenced:
        found.append(
            Problem(
                "unfenced leader",
                f"partition {partition} has fenced broker {rs[0]} as its leader: {_show(rs)}",
                partition,
            )
        )
    return found


def placement_problems(spec: PlacementSpec, cluster: ClusterView, result: object) -> list[Problem]:
    """Everything the server would find wrong with what a placer returned as a placement of ``spec`` on
    ``cluster`` (the checks of :data:`CHECKS`: shape, distinct replicas, known brokers within
    ``broker_ids`` and an unfenced leader); empty when valid."""
    try:
        replicas = replica_lists(result, portable=False)
    except MalformedResult as exc:
        return [Problem("shape", str(exc))]
    if replicas is None:
        return [Problem("shape", "returned None, which defers to the default placer")]
    if len(replicas) != spec.num_partitions:
        return [Problem("shape", f"returned {len(replicas)} partition(s), expected {spec.num_partitions}")]
    by_id = {b.id: b for b in cluster.brokers}
    allowed = set(spec.broker_ids) if spec.broker_ids is not None else None
    found: list[Problem] = []
    for offset, rs in enumerate(replicas):
        found.extend(_partition_problems(spec.start_partition + offset, rs, spec, by_id, allowed))
    return found


def first_problem(
    spec: PlacementSpec, cluster: ClusterView, replicas: Sequence[Sequence[Any]]
) -> Problem | None:
    """The first of :func:`placement_problems` for replica lists (as :func:`replica_lists` gives them), or
    None; valid results are recognised with set operations."""
    brokers = cluster.brokers
    if len(replicas) != spec.num_partitions:
        return Problem("shape", f"returned {len(replicas)} partition(s), expected {spec.num_partitions}")
    rf = spec.num_replicas
    allowed = {b.id for b in brokers}
    if spec.broker_ids is not None:
        allowed.intersection_update(spec.broker_ids)
    leaders = {b.id for b in brokers if not b.fenced}
    kinds: set[type] = set()
    for rs in replicas:
        kinds.update(map(type, rs))
        try:
            valid = len(rs) == rf and rs[0] in leaders and allowed.issuperset(rs) and len(set(rs)) == rf
        except (TypeError, IndexError):  # unhashable entries, no replicas at all
            valid = False
        if not valid:
            break
    else:
        if kinds <= {int}:
            return None
    # Something is wrong (a value such as True or 1.0 passes the set operations as a broker id, hence
    # the check of the types): the detailed checks name the first partition at fault.
    by_id = {b.id: b for b in brokers}
    wanted = set(spec.broker_ids) if spec.broker_ids is not None else None
    for offset, rs in enumerate(replicas):
        problems = _partition_problems(spec.start_partition + offset, rs, spec, by_id, wanted)
        if problems:
            return problems[0]
    return None
