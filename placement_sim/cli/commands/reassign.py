"""``placement-sim reassign``: partition reassignments as ``kafka-reassign-partitions.sh`` runs them, with its
JSON format and its messages (Kafka's ``ReassignPartitionsCommand``).

- ``--generate --topics T[,T] --broker-ids 1,2,3``: the server's placer proposes where the topics' partitions
  go (CreateReplicaPlacement, apiKey 68, on those brokers, with each topic's partition count and
  replication factor); prints the current assignment and the proposal;
- ``--execute FILE``: submits the file's reassignment (AlterPartitionReassignments) after printing the
  current assignment to roll back to; refused while another reassignment runs, unless ``--additional``;
  ``--throttle B/s`` limits how fast the brokers gaining replicas copy (the simulator's replication rate,
  SimulatorReplication: ``--throttle`` / ``--record-size`` records per second per partition);
- ``--verify FILE``: whether each partition's reassignment is done (ListPartitionReassignments, then
  Metadata); when none is in progress the replication rates are lifted again, as Kafka clears throttles;
- ``--cancel FILE``: cancels the file's partitions that are being reassigned;
- ``--list``: every reassignment in progress.

Exit 1 when the server refused something, the file is not a reassignment, or a broker is unknown.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from placement_sim.cli.connection import (
    add_connection_options,
    describe_cluster,
    describe_error,
    run_with_client,
)
from protocol.client import ErrorResponse, KafkaClient
from protocol.codes import ApiKey

__all__ = ["ReassignmentFileError", "format_reassignment", "parse_reassignment", "register"]

#: What ``--throttle`` divides by: the size of one record, as the replication model counts records.
DEFAULT_RECORD_SIZE = 1024

_CANNOT_EXECUTE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this "
    "and create a new partition assignment in addition to the existing one. The --additional flag can also "
    "be used to change the throttle by resubmitting the current reassignment."
)
_VERIFY_PERIODICALLY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle "
    "is removed."
)

Partition = tuple[str, int]


class ReassignmentFileError(ValueError):
    """A reassignment file that is not one; the message is Kafka's where its tool has one."""


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    reassign = subparsers.add_parser(
        "reassign",
        parents=[common],
        description="Partition reassignments as kafka-reassign-partitions.sh runs them.",
    )
    action = reassign.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--generate", action="store_true", help="propose an assignment with the server's placer"
    )
    action.add_argument("--execute", metavar="FILE", help="start the reassignment in FILE")
    action.add_argument("--verify", metavar="FILE", help="whether the reassignment in FILE is done")
    action.add_argument("--cancel", metavar="FILE", help="cancel the reassignment in FILE")
    action.add_argument("--list", action="store_true", help="every reassignment in progress")
    topics = reassign.add_mutually_exclusive_group()
    topics.add_argument("--topics", metavar="T[,T]", help="--generate: the topics to move")
    topics.add_argument(
        "--topics-to-move-json-file",
        metavar="FILE",
        help='--generate: {"topics": [{"topic": "T"}], "version": 1}',
    )
    reassign.add_argument(
        "--broker-ids",
        "--broker-list",
        dest="broker_ids",
        metavar="1,2,3",
        help="--generate: the brokers to use",
    )
    reassign.add_argument(
        "--additional", action="store_true", help="--execute: even while another reassignment is in progress"
    )
    reassign.add_argument(
        "--throttle",
        type=int,
        default=-1,
        metavar="B/s",
        help="--execute: limit how fast the brokers gaining replicas copy (the simulator's replication rate)",
    )
    reassign.add_argument(
        "--record-size",
        type=int,
        default=DEFAULT_RECORD_SIZE,
        metavar="BYTES",
        help=f"the size of a record for --throttle (default {DEFAULT_RECORD_SIZE})",
    )
    reassign.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="--verify, --cancel: leave the replication rates as set",
    )
    add_connection_options(reassign)
    reassign.set_defaults(func=reassign_command)


# ------------------------------------------------------------------------------------- the JSON format


def format_reassignment(assignment: dict[Partition, list[int]]) -> str:
    """Kafka's ``formatAsReassignmentJson``: partitions in topic and partition order, every log dir ``any``,
    no spaces."""
    partitions = [
        {"topic": topic, "partition": index, "replicas": replicas, "log_dirs": ["any"] * len(replicas)}
        for (topic, index), replicas in sorted(assignment.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def parse_reassignment(text: str, source: str) -> list[tuple[Partition, list[int]]]:
    """The (partition, replicas) of a reassignment file, in file order (log dirs must be ``any``)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReassignmentFileError(f"{source}: not JSON: {exc}") from None
    entries = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ReassignmentFileError(f'{source}: expected {{"version": 1, "partitions": [...]}}')
    found = []
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ReassignmentFileError(f"{source}: partitions[{n}] is not an object")
        topic, index, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not _is_int(index):
            raise ReassignmentFileError(f"{source}: partitions[{n}] needs a topic and a partition")
        if not isinstance(replicas, list) or not all(_is_int(r) for r in replicas):
            raise ReassignmentFileError(f"{source}: partitions[{n}]: replicas must be a list of broker ids")
        dirs = entry.get("log_dirs", ["any"] * len(replicas))
        if not isinstance(dirs, list) or len(dirs) != len(replicas):
            raise ReassignmentFileError(f"{source}: partitions[{n}]: log_dirs must name one dir per replica")
        if any(d != "any" for d in dirs):
            raise ReassignmentFileError(
                f"{source}: partitions[{n}]: log dirs other than 'any' are not simulated"
            )
        found.append(((topic, index), list(replicas)))
    return found


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_for_execute(entries: list[tuple[Partition, list[int]]]) -> None:
    """Kafka's checks before it submits a reassignment, with its messages."""
    if not entries:
        raise ReassignmentFileError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in entries):
        raise ReassignmentFileError("Partition replica list cannot be empty")
    twice = sorted(p for p, n in Counter(p for p, _ in entries).items() if n > 1)
    if twice:
        raise ReassignmentFileError(
            f"Partition reassignment contains duplicate topic partitions: {','.join(_name(p) for p in twice)}"
        )
    repeated = [(p, sorted({r for r in rs if rs.count(r) > 1})) for p, rs in entries]
    repeated = [(p, rs) for p, rs in repeated if rs]
    if repeated:
        said = ". ".join(f"{_name(p)} contains multiple entries for {_ids(rs)}" for p, rs in repeated)
        raise ReassignmentFileError(f"Partition replica lists may not contain duplicate entries: {said}")


def _name(partition: Partition) -> str:
    return f"{partition[0]}-{partition[1]}"


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def _names(partitions: Iterable[Partition]) -> str:
    return ",".join(_name(p) for p in sorted(partitions))


# ------------------------------------------------------------------------------------- the server


class _Failed(Exception):
    """A message for stderr; the command exits 1."""


async def _current(client: KafkaClient, topics: Iterable[str]) -> dict[Partition, list[int]]:
    """Each partition's replicas (Metadata), for every partition of ``topics``; an unknown topic fails."""
    names = sorted(set(topics))
    response = await client.send(
        "MetadataRequest", {"Topics": [{"Name": n} for n in names], "AllowAutoTopicCreation": False}
    )
    current: dict[Partition, list[int]] = {}
    for topic in response["Topics"]:
        if topic["ErrorCode"] != 0:
            raise _Failed(f"topic {topic['Name']}: {describe_error(topic['ErrorCode'], None)}")
        for p in topic["Partitions"]:
            current[(topic["Name"], p["PartitionIndex"])] = list(p["ReplicaNodes"])
    return current


async def _ongoing(
    client: KafkaClient, partitions: Iterable[Partition] | None = None
) -> dict[Partition, dict[str, list[int]]]:
    """ListPartitionReassignments: the partitions being reassigned (of ``partitions``; None: all)."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        topics = [{"Name": t, "PartitionIndexes": ps} for t, ps in by_topic.items()]
    response = await client.send("ListPartitionReassignmentsRequest", {"TimeoutMs": 30000, "Topics": topics})
    if response["ErrorCode"] != 0:
        raise _Failed(describe_error(response["ErrorCode"], response["ErrorMessage"]))
    return {
        (t["Name"], p["PartitionIndex"]): {
            "replicas": p["Replicas"],
            "adding": p["AddingReplicas"],
            "removing": p["RemovingReplicas"],
        }
        for t in response["Topics"]
        for p in t["Partitions"]
    }


async def _alter(
    client: KafkaClient, targets: dict[Partition, list[int] | None], timeout_ms: int
) -> dict[Partition, str]:
    """AlterPartitionReassignments: the partitions that failed, with ``NAME (code): message``."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), replicas in targets.items():
        by_topic.setdefault(topic, []).append({"PartitionIndex": index, "Replicas": replicas})
    request = {
        "TimeoutMs": timeout_ms,
        "AllowReplicationFactorChange": True,
        "Topics": [{"Name": t, "Partitions": ps} for t, ps in by_topic.items()],
    }
    response = await client.send("AlterPartitionReassignmentsRequest", request)
    if response["ErrorCode"] != 0:
        raise _Failed(describe_error(response["ErrorCode"], response["ErrorMessage"]))
    return {
        (t["Name"], p["PartitionIndex"]): describe_error(p["ErrorCode"], p["ErrorMessage"])
        for t in response["Responses"]
        for p in t["Partitions"]
        if p["ErrorCode"] != 0
    }


def _controls(client: KafkaClient) -> bool:
    """Whether the server takes the simulator's replication control (``simulator.control.enable``)."""
    return ApiKey.SIMULATOR_REPLICATION in client.api_versions


async def _set_rates(client: KafkaClient, brokers: Iterable[int], records_per_s: float | None) -> None:
    for broker in sorted(set(brokers)):
        await client.set_replication(broker, records_per_s=records_per_s)


async def _clear_throttles(client: KafkaClient, entries: list[tuple[Partition, list[int]]]) -> None:
    """Kafka clears the throttles of every broker (the cluster's and the file's): here their replication
    rates are lifted."""
    if not _controls(client):
        return
    brokers = {b["BrokerId"] for b in (await describe_cluster(client))["Brokers"]}
    brokers.update(r for _, replicas in entries for r in replicas)
    print(
        f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} {_ids(sorted(brokers))}"
    )
    await _set_rates(client, brokers, None)


# ------------------------------------------------------------------------------------- the actions


async def _generate(client: KafkaClient, args: argparse.Namespace) -> int:
    if args.topics_to_move_json_file:
        topics = _topics_file(args.topics_to_move_json_file)
    elif args.topics:
        topics = [t for t in args.topics.split(",") if t]
    else:
        raise _Failed("--generate needs --topics (or --topics-to-move-json-file)")
    if not args.broker_ids:
        raise _Failed("--generate needs --broker-ids")
    try:
        brokers = [int(b) for b in args.broker_ids.split(",")]
    except ValueError:
        raise _Failed(f"--broker-ids: not a list of broker ids: {args.broker_ids}") from None
    if len(set(brokers)) != len(brokers):
        raise _Failed(
            f"Broker list contains duplicate entries: {_ids(sorted({b for b in brokers if brokers.count(b) > 1}))}"
        )
    if len(set(topics)) != len(topics):
        raise _Failed(
            f"List of topics to reassign contains duplicate entries: {','.join(sorted({t for t in topics if topics.count(t) > 1}))}"
        )
    current = await _current(client, topics)
    proposed: dict[Partition, list[int]] = {}
    for topic in sorted(set(topics)):
        mine = sorted((index, rs) for (t, index), rs in current.items() if t == topic)
        try:
            placed = await client.create_replica_placement(
                len(mine),
                len(mine[0][1]) if mine else 0,
                node_ids=brokers,
                topic=topic,
                timeout_ms=int(args.timeout * 1000),
            )
        except ErrorResponse as failure:
            raise _Failed(f"topic {topic}: {describe_error(failure.code, failure.message)}") from None
        for (index, _), replicas in zip(mine, placed, strict=True):
            proposed[(topic, index)] = replicas
    print(f"Current partition replica assignment\n{format_reassignment(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_reassignment(proposed)}")
    return 0


def _topics_file(path: str) -> list[str]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise _Failed(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
        return [entry["topic"] for entry in data["topics"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise _Failed(f'{path}: expected {{"topics": [{{"topic": "T"}}], "version": 1}} ({exc})') from None


async def _execute(
    client: KafkaClient, args: argparse.Namespace, entries: list[tuple[Partition, list[int]]]
) -> int:
    _check_for_execute(entries)
    if not args.additional and await _ongoing(client):
        raise _Failed(_CANNOT_EXECUTE)
    known = {b["BrokerId"] for b in (await describe_cluster(client))["Brokers"]}
    unknown = next((r for _, replicas in entries for r in replicas if r not in known), None)
    if unknown is not None:
        raise _Failed(f"Unknown broker id {unknown}")
    proposed = dict(entries)
    current = await _current(client, {topic for topic, _ in proposed})
    before = {p: rs for p, rs in current.items() if p in proposed}
    print(
        f"Current partition replica assignment\n\n{format_reassignment(before)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )
    if args.throttle >= 0:
        if not _controls(client):
            raise _Failed(
                "--throttle needs the simulator's SimulatorReplication control (simulator.control.enable)"
            )
        print(_VERIFY_PERIODICALLY)
        gaining = {r for p, rs in proposed.items() for r in rs if r not in current.get(p, rs)}
        await _set_rates(client, gaining, args.throttle / args.record_size)
        print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
    failed = await _alter(client, dict(proposed), int(args.timeout * 1000))
    if failed:
        lines = "\n".join(f"{_name(p)}: {failed[p]}" for p in sorted(failed))
        raise _Failed(f"Error reassigning partition(s):\n{lines}")
    plural = "" if len(proposed) == 1 else "s"
    print(f"Successfully started partition reassignment{plural} for {_names(proposed)}")
    return 0


async def _verify(
    client: KafkaClient, args: argparse.Namespace, entries: list[tuple[Partition, list[int]]]
) -> int:
    targets = dict(entries)
    ongoing = await _ongoing(client, targets)
    current = await _current(client, {topic for topic, _ in targets})
    lines = ["Status of partition reassignment:"]
    for p in sorted(targets):
        if p in ongoing:
            lines.append(f"Reassignment of partition {_name(p)} is still in progress.")
        elif current.get(p) == targets[p]:
            lines.append(f"Reassignment of partition {_name(p)} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {_name(p)}, but replica set is "
                f"{_ids(current.get(p, []))} rather than {_ids(targets[p])}."
            )
    print("\n".join(lines))
    print()  # Kafka's list of log dir moves: none are simulated
    if not ongoing and not args.preserve_throttles:
        await _clear_throttles(client, entries)
    return 0


async def _cancel(
    client: KafkaClient, args: argparse.Namespace, entries: list[tuple[Partition, list[int]]]
) -> int:
    ongoing = await _ongoing(client, dict(entries))
    if ongoing:
        failed = await _alter(client, dict.fromkeys(ongoing), int(args.timeout * 1000))
        if failed:
            plural = "" if len(failed) == 1 else "s"
            lines = "\n".join(f"{_name(p)}: {failed[p]}" for p in sorted(failed))
            raise _Failed(f"Error cancelling partition reassignment{plural} for:\n{lines}")
        plural = "" if len(ongoing) == 1 else "s"
        print(f"Successfully cancelled partition reassignment{plural} for: {_names(ongoing)}")
    else:
        print("None of the specified partition reassignments are active.")
    print("None of the specified partition moves are active.")
    if not args.preserve_throttles:
        await _clear_throttles(client, entries)
    return 0


async def _list(client: KafkaClient) -> int:
    ongoing = await _ongoing(client)
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for p in sorted(ongoing):
        state = ongoing[p]
        adding = f" adding: {_ids(state['adding'])}." if state["adding"] else ""
        removing = f" removing: {_ids(state['removing'])}." if state["removing"] else ""
        print(f"{_name(p)}: replicas: {_ids(state['replicas'])}.{adding}{removing}")
    return 0


def reassign_command(args: argparse.Namespace) -> int:
    entries: list[tuple[Partition, list[int]]] = []
    path = args.execute or args.verify or args.cancel
    if path is not None:
        try:
            entries = parse_reassignment(Path(path).read_text(), path)
        except OSError as exc:
            print(f"placement-sim: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        except ReassignmentFileError as exc:
            print(f"placement-sim: {exc}", file=sys.stderr)
            return 1
    if args.throttle >= 0 and args.execute is None:
        print("placement-sim: --throttle goes with --execute", file=sys.stderr)
        return 2
    if args.record_size <= 0:
        print("placement-sim: --record-size must be positive", file=sys.stderr)
        return 2

    async def action(client: KafkaClient) -> int:
        try:
            if args.generate:
                return await _generate(client, args)
            if args.execute is not None:
                return await _execute(client, args, entries)
            if args.verify is not None:
                return await _verify(client, args, entries)
            if args.cancel is not None:
                return await _cancel(client, args, entries)
            return await _list(client)
        except (_Failed, ReassignmentFileError) as failure:
            print(f"placement-sim: {failure}", file=sys.stderr)
            return 1

    return run_with_client(args, action)
