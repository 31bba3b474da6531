"""What ``check-placer`` and ``check-policy`` share: the options of a conformance kit and how it runs
from the command line (hypothesis's files kept out of the user's folder, the report printed, the exit
code: 0 passed, 1 a check failed; a plugin that cannot be loaded has exited 2 before)."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from typing import Any

from placement_sim.cli.options import add_property_option, positive_int

__all__ = ["DEFAULT_MAX_EXAMPLES", "add_kit_options", "run_kit"]

DEFAULT_MAX_EXAMPLES = 200


def add_kit_options(p: argparse.ArgumentParser, examples: str, plugin: str) -> None:
    """``--max-examples``, ``--seed`` and ``--set`` for a kit generating ``examples`` for a ``plugin``."""
    p.add_argument(
        "--max-examples",
        type=positive_int,
        default=DEFAULT_MAX_EXAMPLES,
        metavar="N",
        help=f"how many generated {examples} to run (default {DEFAULT_MAX_EXAMPLES})",
    )
    p.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="explore another set of examples (default: the same set every run)",
    )
    add_property_option(
        p, f"a property for the {plugin}'s configure() (repeatable); simulator.seed is set per example"
    )


def run_kit(command: str, check: Callable[..., Any], plugin: str, args: argparse.Namespace) -> int:
    """Runs ``check`` (a kit's ``check_placer`` or ``check_policy``) on ``plugin``; prints its report."""
    # The kit needs hypothesis, a test dependency: import it only when the command runs.
    from hypothesis.configuration import set_hypothesis_home_dir

    # Hypothesis keeps its files in ./.hypothesis by default: the command leaves the user's folder alone.
    with tempfile.TemporaryDirectory(prefix=f"{command}-") as home:
        set_hypothesis_home_dir(home)
        try:
            report = check(
                plugin,
                max_examples=args.max_examples,
                seed=args.seed,
                configs=dict(args.set),
                raise_on_failure=False,
            )
        finally:
            set_hypothesis_home_dir(None)
    print(report.describe())
    return 0 if report.passed else 1
