"""``placement-sim check-policy NAME_OR_PATH``: runs the election policy conformance kit on one policy.

The policy is resolved as ``simulator.election.policy`` is (``kafka``, ``fluvio``, entry point, dotted
path, ``module:Class``, ``file.py[:Class]``). The command prints what the generated batches exercised
and, on failure, the rule that was broken with the smallest failing batch; the exit code is 0 when the
policy passes, 1 when it breaks a rule and 2 when it cannot be loaded (as ``check-placer``).
"""

from __future__ import annotations

import argparse
import tempfile

from controller.election.loader import resolve_policy_class
from placement_sim.cli.options import add_property_option, positive_int

__all__ = ["register", "run"]

DEFAULT_MAX_EXAMPLES = 200


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "check-policy",
        parents=[common],
        help="run the conformance kit on an election policy",
        description="Generate batches of partitions in every situation the controller asks a policy about "
        "(hypothesis) and check the answers: live, allowed replicas only, one list per partition without "
        "repeats, only ElectionError raised, the same answers for the same seed.",
    )
    p.add_argument(
        "policy", metavar="NAME_OR_PATH", help="kafka, fluvio, dotted path, module:Class or file.py[:Class]"
    )
    p.add_argument(
        "--max-examples",
        type=positive_int,
        default=DEFAULT_MAX_EXAMPLES,
        metavar="N",
        help=f"how many generated batches to run (default {DEFAULT_MAX_EXAMPLES})",
    )
    p.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="explore another set of examples (default: the same set every run)",
    )
    add_property_option(
        p, "a property for the policy's configure() (repeatable); simulator.seed is set per example"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    resolve_policy_class(args.policy)  # a policy that cannot be loaded: exit 2 with one line
    # The kit needs hypothesis, a test dependency: import it only when the command runs.
    from hypothesis.configuration import set_hypothesis_home_dir

    from controller.election.testing import check_policy

    # Hypothesis keeps its files in ./.hypothesis by default: the command leaves the user's folder alone.
    with tempfile.TemporaryDirectory(prefix="check-policy-") as home:
        set_hypothesis_home_dir(home)
        try:
            report = check_policy(
                args.policy,
                max_examples=args.max_examples,
                seed=args.seed,
                configs=dict(args.set),
                raise_on_failure=False,
            )
        finally:
            set_hypothesis_home_dir(None)
    print(report.describe())
    return 0 if report.passed else 1
