"""The election policy conformance kit: ``from controller.election.testing import check_policy``."""

from controller.election import conformance as _conformance
from controller.election.conformance import *  # noqa: F403 - this module is the kit's documented name

__all__ = _conformance.__all__
