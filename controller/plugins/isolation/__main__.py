"""A plugin's worker process: ``python -m controller.plugins.isolation`` (see :mod:`.worker`).

A module of its own, so that the worker module is imported once, by its real name, whose message
classes both sides pickle.
"""

import sys

from controller.plugins.isolation.worker import main

sys.exit(main())
