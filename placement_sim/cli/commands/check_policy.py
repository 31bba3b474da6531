"""``placement-sim check-policy NAME_OR_PATH``: runs the election policy conformance kit on one policy.

The policy is resolved as ``simulator.election.policy`` is (``kafka``, ``fluvio``, entry point, dotted
path, ``module:Class``, ``file.py[:Class]``). The command prints what the generated batches exercised
and, on failure, the rule that was broken with the smallest failing batch; the exit code is 0 when the
policy passes, 1 when it breaks a rule and 2 when it cannot be loaded (as ``check-placer``).
"""

from __future__ import annotations

import argparse

from controller.election.loader import resolve_policy_class
from placement_sim.cli.conformance import add_kit_options, run_kit

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "check-policy",
        parents=[common],
        description="Generate batches of partitions in every situation the controller asks a policy about "
        "(hypothesis) and check the answers: live, allowed replicas only, one list per partition without "
        "repeats, only ElectionError raised, the same answers for the same seed.",
    )
    p.add_argument(
        "policy", metavar="NAME_OR_PATH", help="kafka, fluvio, dotted path, module:Class or file.py[:Class]"
    )
    add_kit_options(p, "batches", "policy")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    resolve_policy_class(args.policy)  # a policy that cannot be loaded: exit 2 with one line
    # The kit needs hypothesis, a test dependency: imported only when the command runs.
    from controller.election.testing import check_policy

    return run_kit("check-policy", check_policy, args.policy, args)
