"""Entry point for ``spark-submit``: takes the options of ``placement-sim sweep``.

::

    spark-submit --master yarn --archives sweep-env.tar.gz#environment placement_sim/cli/spark_submit.py \\
        --grid grid.toml --out hdfs:///sweeps/1 --report report.html

The Spark master and resources come from ``spark-submit``; the driver and the executors need the
project installed (see docs/sweep.md). Only the sweep command is loaded, not the server's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from placement_sim.cli.commands import sweep
from placement_sim.cli.main import common_options, run_command, setup_logging


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark-submit placement_sim/cli/spark_submit.py")
    sweep.register(parser.add_subparsers(dest="command", required=True), common_options())
    args = parser.parse_args(["sweep", *(sys.argv[1:] if argv is None else argv)])
    setup_logging(args.verbose_after)
    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
