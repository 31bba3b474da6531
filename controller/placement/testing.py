"""The placer conformance kit, for plugin authors: ``from controller.placement.testing import check_placer``.

This is the kit's documented entry point; see :mod:`controller.placement.conformance` for what it checks.
"""

from controller.placement.conformance.kit import PlacerSource, check_placer
from controller.placement.conformance.report import CheckReport, Failure, PlacerCheckError
from controller.placement.conformance.rules import (
    Precondition,
    every_broker_has_a_rack,
    placement_problems,
    rack_spread_applies,
    racks_are_paths,
)
from controller.placement.conformance.strategies import (
    PlacementCase,
    clusters,
    placement_cases,
    placement_specs,
)

__all__ = [
    "CheckReport",
    "Failure",
    "PlacementCase",
    "PlacerCheckError",
    "PlacerSource",
    "Precondition",
    "check_placer",
    "clusters",
    "every_broker_has_a_rack",
    "placement_cases",
    "placement_problems",
    "placement_specs",
    "rack_spread_applies",
    "racks_are_paths",
]
