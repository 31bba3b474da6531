"""Entry point for ``spark-submit``: takes the options of ``placement-sim sweep``.

::

    spark-submit --master yarn --archives sweep-env.tar.gz#environment pipeline/submit.py \\
        --grid grid.toml --out hdfs:///sweeps/1 --report report.html

The Spark master and resources come from ``spark-submit``; the driver and the executors need the
project installed (see the README). Only the sweep command is loaded, not the server's.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from controller.commands import sweep


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark-submit pipeline/submit.py")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)"
    )
    sweep.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sweep", *(sys.argv[1:] if argv is None else argv)])
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
