"""What ``placement-sim consumer-groups`` does (:mod:`placement_sim.cli.commands.consumer_groups`), as
``kafka-consumer-groups.sh`` does it: ListGroups from every broker; ConsumerGroupDescribe (then
DescribeGroups for a group that is not of the consumer group protocol), OffsetFetch,
OffsetCommit (as an admin client: generation -1, no member) and DeleteGroups at each group's
coordinator; ListOffsets at each partition's leader; retried as :mod:`placement_sim.cli.kafka_session`
retries them. Tables have Kafka's columns and widths, without trailing blanks; messages are Kafka's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from placement_sim.cli.kafka_session import Failed, Retriable, Session, check, error_text
from protocol.codes import ErrorCode
from protocol.errors import error_by_code

__all__ = ["STATES", "GroupAdmin"]

LIST_GROUPS_VERSION = 4
DESCRIBE_GROUPS_VERSION = 5
CONSUMER_GROUP_DESCRIBE_VERSION = 0
OFFSET_FETCH_VERSION = 7
OFFSET_COMMIT_VERSION = 7
DELETE_GROUPS_VERSION = 2
MISSING = "-"
#: The states Kafka's tool takes for ``--list --state``, as it spells them.
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
_INACTIVE = ("Empty", "Dead")


@dataclass
class _Member:
    member_id: str
    client_id: str
    host: str
    partitions: dict[str, list[int]]


@dataclass
class _Group:
    group_id: str
    state: str
    protocol: str
    coordinator: int
    members: list[_Member]


def _table(rows: Sequence[Sequence[str]], widths: Sequence[int]) -> list[str]:
    """Rows as Kafka's ``printf`` lays them out (``%-Ns`` columns, the last as it is), without trailing blanks."""
    return [
        " ".join(f"{c:<{w}}" for c, w in zip(row[:-1], widths, strict=True)) + " " + row[-1] for row in rows
    ]


class GroupAdmin:
    """The actions of ``placement-sim consumer-groups`` on one cluster, retried until ``deadline``."""

    def __init__(self, session: Session, deadline: float) -> None:
        self.session = session
        self.deadline = deadline

    async def _retry(self, what: str, attempt: Any) -> Any:
        return await self.session.retry(what, attempt, self.deadline)

    # ------------------------------------------------------------------------------------ reading

    async def group_ids(self) -> list[str]:
        return sorted(group for group, _ in await self._listed(None))

    async def _listed(self, states: Sequence[str] | None) -> list[tuple[str, str]]:
        """(group, state) of every group of every broker (ListGroups, as Kafka's admin client asks)."""
        found: dict[str, str] = {}
        for node in await self._retry("the cluster", self.session.brokers):

            async def ask(node: int = node) -> dict[str, Any]:
                answer = await self.session.send(
                    node, "ListGroupsRequest", {"StatesFilter": list(states or [])}, LIST_GROUPS_VERSION
                )
                check(answer["ErrorCode"], None, f"ListGroups on broker {node}")
                return answer

            answer = await self._retry(f"broker {node}", ask)
            for group in answer["Groups"]:
                if group["ProtocolType"] in ("consumer", ""):
                    found[group["GroupId"]] = group["GroupState"]
        return sorted(found.items())

    async def _group(self, group_id: str) -> _Group:
        """The group as Kafka's admin client describes it: ConsumerGroupDescribe, and DescribeGroups for a
        group that is no group of the consumer group protocol (KIP-848)."""
        found = await self._consumer_group(group_id)
        if found is not None:
            return found
        from placement_sim.cli.group_member import decode_assignment  # the consumer protocol's specs

        async def ask() -> tuple[int, dict[str, Any]]:
            node = await self.session.coordinator(group_id)
            answer = await self.session.send(
                node,
                "DescribeGroupsRequest",
                {"Groups": [group_id], "IncludeAuthorizedOperations": False},
                DESCRIBE_GROUPS_VERSION,
            )
            [described] = answer["Groups"]
            check(described["ErrorCode"], None, f"group {group_id}")
            return node, described

        node, described = await self._retry(f"group {group_id}", ask)
        members = []
        for m in described["Members"]:
            try:
                partitions = decode_assignment(m["MemberAssignment"] or b"")
            except Exception:  # noqa: BLE001 - another client's bytes: shown as no assignment
                partitions = {}
            members.append(_Member(m["MemberId"], m["ClientId"], m["ClientHost"], partitions))
        return _Group(group_id, described["GroupState"], described["ProtocolData"], node, members)

    async def _consumer_group(self, group_id: str) -> _Group | None:
        """A group of the consumer group protocol (ConsumerGroupDescribe), or None for any other id."""

        async def ask() -> tuple[int, dict[str, Any] | None]:
            node = await self.session.coordinator(group_id)
            answer = await self.session.send(
                node,
                "ConsumerGroupDescribeRequest",
                {"GroupIds": [group_id], "IncludeAuthorizedOperations": False},
                CONSUMER_GROUP_DESCRIBE_VERSION,
            )
            [described] = answer["Groups"]
            if described["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND:
                return node, None
            check(described["ErrorCode"], described["ErrorMessage"], f"group {group_id}")
            return node, described

        node, described = await self._retry(f"group {group_id}", ask)
        if described is None:
            return None
        members = []
        for m in described["Members"]:
            partitions: dict[str, list[int]] = {}
            for t in m["Assignment"]["TopicPartitions"]:
                partitions.setdefault(t["TopicName"], []).extend(sorted(t["Partitions"]))
            members.append(_Member(m["MemberId"], m["ClientId"], m["ClientHost"], partitions))
        return _Group(group_id, described["GroupState"], described["AssignorName"], node, members)

    async def _committed(self, group_id: str) -> dict[tuple[str, int], int]:
        async def ask() -> dict[tuple[str, int], int]:
            node = await self.session.coordinator(group_id)
            request = {"GroupId": group_id, "Topics": None, "RequireStable": False}
            answer = await self.session.send(node, "OffsetFetchRequest", request, OFFSET_FETCH_VERSION)
            check(answer["ErrorCode"], None, f"group {group_id}: OffsetFetch")
            return {
                (t["Name"], p["PartitionIndex"]): int(p["CommittedOffset"])
                for t in answer["Topics"]
                for p in t["Partitions"]
                if p["CommittedOffset"] >= 0
            }

        found: dict[tuple[str, int], int] = await self._retry(f"group {group_id}", ask)
        return found

    async def _ends(
        self, partitions: set[tuple[str, int]], timestamp: int = -1
    ) -> dict[tuple[str, int], int]:
        ends = {}
        for topic in sorted({t for t, _ in partitions}):
            mine = sorted(p for t, p in partitions if t == topic)
            for p, offset in (await self.session.offsets(topic, mine, timestamp, self.deadline)).items():
                ends[(topic, p)] = offset
        return ends

    # ------------------------------------------------------------------------------------ --list

    async def list(self, states_text: str | None) -> int:
        if states_text is None:
            for group, _ in await self._listed(None):
                print(group)
            return 0
        states = [s.strip() for s in states_text.split(",") if s.strip()]
        by_name = {s.lower(): s for s in STATES}
        unknown = [s for s in states if s.lower() not in by_name]
        if unknown:
            print(
                f"placement-sim consumer-groups: Invalid state list '{states_text}'. Valid states are: "
                f"{', '.join(STATES)}",
                file=sys.stderr,
            )
            return 2
        listed = await self._listed([by_name[s.lower()] for s in states])
        width = max([15, *(len(g) for g, _ in listed)]) + 10
        print(f"{'GROUP':<{width}} STATE")
        for group, state in listed:
            print(f"{group:<{width}} {state}")
        return 0

    # ------------------------------------------------------------------------------------ --describe

    async def describe(self, groups: Sequence[str], view: str) -> int:
        status = 0
        for group_id in groups:
            group = await self._group(group_id)
            if group.state == "Dead":
                print(f"placement-sim: Consumer group '{group_id}' does not exist.", file=sys.stderr)
                status = 1
                continue
            if group.state == "Empty" and view != "state":
                print(f"\nConsumer group '{group_id}' has no active members.", file=sys.stderr)
            elif group.state in ("PreparingRebalance", "CompletingRebalance") and view != "state":
                print(f"\nWarning: Consumer group '{group_id}' is rebalancing.", file=sys.stderr)
            if view == "state":
                self._print_state(group)
            elif view == "members":
                self._print_members(group)
            else:
                await self._print_offsets(group)
        return status

    def _print_state(self, group: _Group) -> None:
        host, port = self.session.address(group.coordinator)
        coordinator = f"{host}:{port} ({group.coordinator})"
        width = max(len("GROUP"), len(group.group_id))
        rows = [
            ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
            (group.group_id, coordinator, group.protocol, group.state, str(len(group.members))),
        ]
        print()
        print("\n".join(_table(rows, [width, 25, 20, 15])))

    def _print_members(self, group: _Group) -> None:
        rows = [("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")]
        for m in sorted(group.members, key=lambda m: (-sum(map(len, m.partitions.values())), m.member_id)):
            assignment = (
                ",".join(f"{t}({','.join(map(str, p))})" for t, p in sorted(m.partitions.items())) or MISSING
            )
            count = str(sum(map(len, m.partitions.values())))
            rows.append((group.group_id, m.member_id, m.host, m.client_id, count, assignment))
        if len(rows) == 1:
            return
        widths = [max(15, *(len(r[i]) for r in rows)) for i in range(4)] + [15]
        print()
        print("\n".join(_table(rows, widths)))

    async def _print_offsets(self, group: _Group) -> None:
        committed = await self._committed(group.group_id)
        owner: dict[tuple[str, int], _Member] = {}
        for m in group.members:
            for topic, partitions in m.partitions.items():
                for p in partitions:
                    owner[(topic, p)] = m
        ends = await self._ends(set(committed) | set(owner))
        rows = [
            (
                "GROUP",
                "TOPIC",
                "PARTITION",
                "CURRENT-OFFSET",
                "LOG-END-OFFSET",
                "LAG",
                "CONSUMER-ID",
                "HOST",
                "CLIENT-ID",
            )
        ]

        def row(tp: tuple[str, int], m: _Member | None) -> tuple[str, ...]:
            current = committed.get(tp)
            end = ends.get(tp)
            lag = str(end - current) if current is not None and end is not None else MISSING
            return (
                group.group_id,
                tp[0],
                str(tp[1]),
                MISSING if current is None else str(current),
                MISSING if end is None else str(end),
                lag,
                m.member_id if m else MISSING,
                m.host if m else MISSING,
                m.client_id if m else MISSING,
            )

        for m in sorted(group.members, key=lambda m: (-sum(map(len, m.partitions.values())), m.member_id)):
            mine = sorted((t, p) for t, ps in m.partitions.items() for p in ps)
            rows += [row(tp, m) for tp in mine]
            if not mine:
                rows.append(
                    (
                        group.group_id,
                        MISSING,
                        MISSING,
                        MISSING,
                        MISSING,
                        MISSING,
                        m.member_id,
                        m.host,
                        m.client_id,
                    )
                )
        rows += [row(tp, None) for tp in sorted(set(committed) - set(owner))]
        if len(rows) == 1:
            return
        g = max(15, *(len(r[0]) for r in rows))
        t = max(15, *(len(r[1]) for r in rows))
        c = max(15, *(len(r[6]) for r in rows))
        h = max(15, *(len(r[7]) for r in rows))
        print()
        print("\n".join(_table(rows, [g, t, 10, 15, 15, 15, c, h])))

    # ------------------------------------------------------------------------------------ --reset-offsets

    async def reset(self, groups: Sequence[str], args: argparse.Namespace) -> int:
        plans: list[tuple[str, dict[tuple[str, int], int]]] = []
        for group_id in groups:
            group = await self._group(group_id)
            if group.state not in _INACTIVE:
                raise Failed(
                    f"Assignments can only be reset if the group '{group_id}' is inactive, but the current state "
                    f"is {group.state}."
                )
            committed = await self._committed(group_id)
            partitions = await self._partitions(args, committed)
            plans.append((group_id, await self._new_offsets(args, partitions, committed)))
        rows = [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
        rows += [(g, t, str(p), str(o)) for g, plan in plans for (t, p), o in sorted(plan.items())]
        print()
        print("\n".join(_table(rows, [30, 30, 10])))
        if not args.execute:
            if not args.dry_run:
                print(
                    "placement-sim: warning: no offsets were changed: add --execute to commit them (this was a "
                    "dry run, the default; --dry-run says so)",
                    file=sys.stderr,
                )
            return 0
        for group_id, plan in plans:
            await self._commit(group_id, plan)
        return 0

    async def _partitions(
        self, args: argparse.Namespace, committed: dict[tuple[str, int], int]
    ) -> list[tuple[str, int]]:
        if args.all_topics:
            return sorted(committed)
        chosen: list[tuple[str, int]] = []
        for spec in args.topic:
            topic, _, listed = spec.partition(":")
            info = await self._retry(f"topic {topic}", lambda t=topic: self.session.topic(t))
            if listed:
                try:
                    wanted = [int(p) for p in listed.split(",") if p.strip()]
                except ValueError:
                    raise Failed(f"--topic {spec}: partitions are numbers, as TOPIC:0,1") from None
                missing = [p for p in wanted if p not in info.partitions]
                if missing:
                    raise Failed(f"topic {topic} has no partition {missing[0]}")
            else:
                wanted = sorted(info.partitions)
            chosen += [(topic, p) for p in wanted]
        return sorted(set(chosen))

    async def _new_offsets(
        self,
        args: argparse.Namespace,
        partitions: list[tuple[str, int]],
        committed: dict[tuple[str, int], int],
    ) -> dict[tuple[str, int], int]:
        starts = await self._ends(set(partitions), -2)
        ends = await self._ends(set(partitions), -1)
        plan = {}
        for tp in partitions:
            if args.to_earliest:
                target = starts[tp]
            elif args.to_latest:
                target = ends[tp]
            elif args.to_offset is not None:
                target = args.to_offset
            else:
                if tp not in committed:
                    raise Failed(
                        f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no current committed "
                        "offset"
                    )
                target = committed[tp] + args.shift_by
            plan[tp] = self._clamped(tp, target, starts[tp], ends[tp])
        return plan

    @staticmethod
    def _clamped(tp: tuple[str, int], target: int, start: int, end: int) -> int:
        """As Kafka's tool: an offset past either end is set to that end, saying so."""
        name = f"{tp[0]}-{tp[1]}"
        if target > end:
            print(
                f"New offset ({target}) is higher than latest offset for topic partition {name}. Value will be "
                f"set to {end}",
                file=sys.stderr,
            )
            return end
        if target < start:
            print(
                f"New offset ({target}) is lower than earliest offset for topic partition {name}. Value will be "
                f"set to {start}",
                file=sys.stderr,
            )
            return start
        return target

    async def _commit(self, group_id: str, plan: dict[tuple[str, int], int]) -> None:
        """OffsetCommit as an admin client sends it: generation -1, no member."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), offset in sorted(plan.items()):
            topics.setdefault(topic, []).append(
                {
                    "PartitionIndex": p,
                    "CommittedOffset": offset,
                    "CommittedLeaderEpoch": -1,
                    "CommittedMetadata": "",
                }
            )
        request = {
            "GroupId": group_id,
            "GenerationIdOrMemberEpoch": -1,
            "MemberId": "",
            "GroupInstanceId": None,
            "Topics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()],
        }

        async def ask() -> None:
            node = await self.session.coordinator(group_id)
            answer = await self.session.send(node, "OffsetCommitRequest", request, OFFSET_COMMIT_VERSION)
            for topic in answer["Topics"]:
                for p in topic["Partitions"]:
                    check(p["ErrorCode"], None, f"group {group_id}: {topic['Name']}-{p['PartitionIndex']}")

        await self._retry(f"group {group_id}", ask)

    # ------------------------------------------------------------------------------------ --delete

    async def delete(self, groups: Sequence[str]) -> int:
        failed: dict[str, str] = {}
        deleted: list[str] = []
        for group_id in groups:

            async def ask(group_id: str = group_id) -> int:
                node = await self.session.coordinator(group_id)
                answer = await self.session.send(
                    node, "DeleteGroupsRequest", {"GroupsNames": [group_id]}, DELETE_GROUPS_VERSION
                )
                [result] = answer["Results"]
                code = int(result["ErrorCode"])
                if code and error_by_code(code).retriable:
                    raise Retriable(f"group {group_id}: {error_text(code)}")
                return code

            code = await self._retry(f"group {group_id}", ask)
            if code:
                failed[group_id] = error_text(code)
            else:
                deleted.append(group_id)
        if deleted:
            names = ", ".join(f"'{g}'" for g in deleted)
            print(f"Deletion of requested consumer groups ({names}) was successful.")
        if failed:
            print("placement-sim: Deletion of some consumer groups failed:", file=sys.stderr)
            for group_id, error in failed.items():
                print(f"* Group '{group_id}' could not be deleted due to: {error}", file=sys.stderr)
            return 1
        return 0
