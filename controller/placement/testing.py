"""The placer conformance kit, for plugin authors: ``from controller.placement.testing import check_placer``.

This is the kit's documented entry point; see :mod:`controller.placement.conformance` for what it checks.
"""

from controller.placement import conformance as _conformance
from controller.placement.conformance import *  # noqa: F403 - this module is the kit's documented name

__all__ = _conformance.__all__
