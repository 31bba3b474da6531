"""``placement-sim consumer-groups``: consumer groups as ``kafka-consumer-groups.sh`` shows and changes them.

- ``--list`` (``--state [STATES]`` for a table with each group's state), from every broker (ListGroups);
- ``--describe --group G`` (or ``--all-groups``): by default each partition's committed offset, log end
  offset and lag with the member that has it (DescribeGroups, OffsetFetch, ListOffsets); ``--members``:
  each member, its partition count and assignment; ``--state``: coordinator, strategy, state, members;
- ``--reset-offsets --group G --topic T[:P,...] | --all-topics`` with ``--to-earliest``, ``--to-latest``,
  ``--to-offset N`` or ``--shift-by N``: the new offsets, committed with ``--execute`` (without it, a dry
  run); an offset past either end is set to that end, as Kafka's tool does; the group must be inactive;
- ``--delete --group G`` (or ``--all-groups``): DeleteGroups.

The tables have Kafka's columns and widths (trailing blanks left out); the work is
:mod:`placement_sim.cli.group_admin`'s.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from placement_sim.cli.connection import add_connection_options, run_with_session

if TYPE_CHECKING:
    from placement_sim.cli.kafka_session import Session

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "consumer-groups",
        parents=[common],
        description="Consumer groups as kafka-consumer-groups.sh shows and changes them.",
    )
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list the groups")
    action.add_argument(
        "--describe", action="store_true", help="describe groups (offsets, --members, --state)"
    )
    action.add_argument("--reset-offsets", action="store_true", help="reset a group's committed offsets")
    action.add_argument("--delete", action="store_true", help="delete groups (they must be empty)")
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="a group (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="every group")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="with --describe: the members and assignments")
    view.add_argument("--offsets", action="store_true", help="with --describe: offsets and lag (the default)")
    view.add_argument(
        "--state",
        nargs="?",
        const="",
        metavar="STATES",
        help="with --describe: the group's state; with --list: each group's state (only STATES, comma-separated)",
    )
    p.add_argument(
        "--topic", action="append", default=[], metavar="TOPIC[:P,...]", help="with --reset-offsets"
    )
    p.add_argument("--all-topics", action="store_true", help="with --reset-offsets: every topic of the group")
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="reset to the log start")
    to.add_argument("--to-latest", action="store_true", help="reset to the log end")
    to.add_argument("--to-offset", type=int, metavar="N", help="reset to offset N")
    to.add_argument("--shift-by", type=int, metavar="N", help="move the committed offsets by N (+ or -)")
    run = p.add_mutually_exclusive_group()
    run.add_argument("--execute", action="store_true", help="with --reset-offsets: commit the new offsets")
    run.add_argument(
        "--dry-run", action="store_true", help="with --reset-offsets: only show them (the default)"
    )
    add_connection_options(p)
    p.set_defaults(func=consumer_groups_command)


class _Refused(Exception):
    """A mistake in the options, with kafka-consumer-groups.sh's words: exit 2."""


def _check(args: argparse.Namespace) -> None:
    if (args.describe or args.delete or args.reset_offsets) and not args.group and not args.all_groups:
        raise _Refused("Option --group or --all-groups is required with this action")
    if args.group and args.all_groups:
        raise _Refused("Option --group cannot be used with --all-groups")
    if args.reset_offsets:
        if not (
            args.to_earliest or args.to_latest or args.to_offset is not None or args.shift_by is not None
        ):
            raise _Refused(
                "Option --reset-offsets requires one of the following scenarios: --to-earliest, --to-latest, "
                "--to-offset, --shift-by"
            )
        if bool(args.topic) == bool(args.all_topics):
            raise _Refused("Option --reset-offsets takes one of --topic or --all-topics")
    elif args.topic or args.all_topics or args.execute or args.dry_run:
        raise _Refused("Options --topic, --all-topics, --execute and --dry-run go with --reset-offsets")
    if args.state and not args.list:
        raise _Refused("Option --state takes a list of states only with --list")


def consumer_groups_command(args: argparse.Namespace) -> int:
    try:
        _check(args)
    except _Refused as refused:
        print(f"placement-sim consumer-groups: {refused}", file=sys.stderr)
        return 2

    from placement_sim.cli.group_admin import GroupAdmin  # what the command does, loaded when it runs

    async def action(session: Session, interrupted: object) -> int:
        tool = GroupAdmin(session, time.monotonic() + args.timeout)
        if args.list:
            return await tool.list(args.state)
        groups = args.group or await tool.group_ids()
        if args.delete:
            return await tool.delete(groups)
        if args.reset_offsets:
            return await tool.reset(groups, args)
        return await tool.describe(
            groups, "members" if args.members else "state" if args.state == "" else "offsets"
        )

    return run_with_session(args, action)
