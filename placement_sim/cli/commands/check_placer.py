"""``placement-sim check-placer NAME_OR_PATH``: runs the placer conformance kit on one placer.

The placer is resolved as ``replica.placer.class.name`` is (short name, entry point, dotted path,
``module:Class``, ``file.py[:Class]``). The command prints what the examples exercised and, on
failure, the check that failed with the smallest failing example; the exit code is 0 when the
placer passes, 1 when it fails a check and 2 when it cannot be loaded.
"""

from __future__ import annotations

import argparse

from controller.placement.loader import resolve_placer_class
from placement_sim.cli.conformance import add_kit_options, run_kit

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "check-placer",
        parents=[common],
        description="Generate clusters and placement specs with hypothesis and check a placer's results: "
        "shape, distinct replicas, known brokers within broker_ids, unfenced leaders, justified exceptions "
        "only, determinism for a seed, and rack spread when it declares rack_aware.",
    )
    p.add_argument(
        "placer", metavar="NAME_OR_PATH", help="short name, dotted path, module:Class or file.py[:Class]"
    )
    add_kit_options(p, "examples", "placer")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    resolve_placer_class(args.placer)  # a placer that cannot be loaded: exit 2 with one line
    # The kit needs hypothesis, a test dependency: imported only when the command runs.
    from controller.placement.testing import check_placer

    return run_kit("check-placer", check_placer, args.placer, args)
