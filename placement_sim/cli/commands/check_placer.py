"""``placement-sim check-placer NAME_OR_PATH``: runs the placer conformance kit on one placer.

The placer is resolved as ``replica.placer.class.name`` is (short name, entry point, dotted path,
``module:Class``, ``file.py[:Class]``). The command prints what the examples exercised and, on
failure, the check that failed with the smallest failing example; the exit code is 0 when the
placer passes, 1 when it fails a check and 2 when it cannot be loaded.
"""

from __future__ import annotations

import argparse
import tempfile

from controller.placement.loader import resolve_placer_class
from placement_sim.cli.options import add_property_option, positive_int

__all__ = ["register", "run"]

DEFAULT_MAX_EXAMPLES = 200


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "check-placer",
        parents=[common],
        help="run the conformance kit on a placer",
        description="Generate clusters and placement specs with hypothesis and check a placer's results: "
        "shape, distinct replicas, known brokers within broker_ids, unfenced leaders, justified exceptions "
        "only, determinism for a seed, and rack spread when it declares rack_aware.",
    )
    p.add_argument(
        "placer", metavar="NAME_OR_PATH", help="short name, dotted path, module:Class or file.py[:Class]"
    )
    p.add_argument(
        "--max-examples",
        type=positive_int,
        default=DEFAULT_MAX_EXAMPLES,
        metavar="N",
        help=f"how many generated examples to run (default {DEFAULT_MAX_EXAMPLES})",
    )
    p.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="explore another set of examples (default: the same set every run)",
    )
    add_property_option(
        p, "a property for the placer's configure() (repeatable); simulator.seed is set per example"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    resolve_placer_class(args.placer)  # a placer that cannot be loaded: exit 2 with one line
    # The kit needs hypothesis, a test dependency: import it only when the command runs.
    from hypothesis.configuration import set_hypothesis_home_dir

    from controller.placement.testing import check_placer

    # Hypothesis keeps its files in ./.hypothesis by default: the command leaves the user's folder alone.
    with tempfile.TemporaryDirectory(prefix="check-placer-") as home:
        set_hypothesis_home_dir(home)
        try:
            report = check_placer(
                args.placer,
                max_examples=args.max_examples,
                seed=args.seed,
                configs=dict(args.set),
                raise_on_failure=False,
            )
        finally:
            set_hypothesis_home_dir(None)
    print(report.describe())
    return 0 if report.passed else 1
