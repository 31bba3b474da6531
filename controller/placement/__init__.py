"""Replica placement: the plugin API, the loader and the built-in placers."""

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementResult,
    PlacementSpec,
    ReplicaPlacementError,
    ReplicaPlacer,
    UsableBroker,
)
from controller.placement.loader import BUILTIN_PLACERS, PlacerLoadError, load_placer, resolve_placer_class

__all__ = [
    "BUILTIN_PLACERS",
    "ClusterView",
    "InvalidReplicationFactorError",
    "PlacementResult",
    "PlacementSpec",
    "PlacerLoadError",
    "ReplicaPlacementError",
    "ReplicaPlacer",
    "UsableBroker",
    "load_placer",
    "resolve_placer_class",
]
