"""A plugin's worker process: ``python -m controller.plugins.isolation`` (see :mod:`.worker`).

A module of its own, so that the worker module is imported once, by its real name, whose message
classes both sides pickle. A worker whose server went away (it stopped, or gave up on the worker's
start) finds its channel closed: it ends without a word, as a server does for a client that left.
"""

import os
import sys

from controller.plugins.isolation.worker import main

try:
    status = main()
except BrokenPipeError:
    sys.stderr.flush()
    os._exit(0)  # what the closed channel still buffers is not written at exit (another BrokenPipeError)
sys.exit(status)
