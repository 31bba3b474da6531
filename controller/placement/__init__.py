"""Replica placement, end to end: the plugin API, the rules, the service, the built-ins, the conformance kit.

Everything a placer plugin needs is importable from here::

    from controller.placement import (
        ClusterView, PlacementSpec, ReplicaPlacer, UsableBroker,
        InvalidReplicationFactorError, PlacerNotApplicableError, ReplicaPlacementError,
    )

- :mod:`.api`: the plugin types (KIP-660 / KIP-879);
- :mod:`.rules`: the replication-factor checks, the request checks and the checks of a placer's result;
- :mod:`.manual`: the checks of replica assignments given by hand;
- :mod:`.service`: :class:`~controller.placement.service.PlacementService`, what every caller places with,
  given what :mod:`.settings` describes (the placer to load, the limits) and a view of the cluster;
- :mod:`.assignments`: every partition's replicas as placers see them, cheap to take again after a change;
- :mod:`.loader`: the names ``replica.placer.class.name`` takes;
- :mod:`.builtin`: Kafka's and Fluvio's placers;
- :mod:`.conformance` (documented entry point :mod:`.testing`): the kit for plugin authors;
- :mod:`.metrics`: balance and rack-failure metrics of a placement.

Like Kafka's ``metadata/placement`` package, it imports nothing of the controller around it but the
plugin machinery (:mod:`controller.plugins`).
"""

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementResult,
    PlacementSpec,
    PlacerNotApplicableError,
    ReplicaPlacementError,
    ReplicaPlacer,
    UsableBroker,
)
from controller.placement.loader import (
    BUILTIN_PLACERS,
    DEFAULT_PLACER,
    PlacerLoadError,
    load_placer,
    placer_label,
    resolve_placer_class,
)

__all__ = [
    "BUILTIN_PLACERS",
    "DEFAULT_PLACER",
    "ClusterView",
    "InvalidReplicationFactorError",
    "PlacementResult",
    "PlacementSpec",
    "PlacerLoadError",
    "PlacerNotApplicableError",
    "ReplicaPlacementError",
    "ReplicaPlacer",
    "UsableBroker",
    "load_placer",
    "placer_label",
    "resolve_placer_class",
]
