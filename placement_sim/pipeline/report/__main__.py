"""``python -m placement_sim.pipeline.report OUT``: see :mod:`placement_sim.pipeline.report.command`."""

import sys

from placement_sim.pipeline.report.command import main

sys.exit(main())
