"""The conformance kit for replica placers, built on hypothesis.

``check_placer(placer)`` generates clusters (no racks, flat racks, multi-level rack paths such as
``/dc1/r2``, brokers with and without racks, fenced brokers, odd and sparse ids, ``broker_ids``
subsets) and placement specs, runs the placer on them and checks what the server relies on:

- **shape**: one replica list per partition, each of ``num_replicas`` broker ids;
- **distinct replicas** within a partition;
- **known brokers**: only brokers of the cluster, and only those in ``broker_ids`` when it is given;
- **unfenced leader**: the first replica of every partition is an unfenced broker;
- **exceptions**: only :class:`InvalidReplicationFactorError` and :class:`ReplicaPlacementError`, and
  only when justified (see below);
- **determinism**: two fresh placers configured with the same ``simulator.seed`` give the same
  results for the same sequence of calls;
- **rack spread**, for placers that declare ``rack_aware = True``: on balanced clusters (every
  usable broker unfenced, every rack the same size, rack paths forming a uniform tree) and without
  ``force_simple``, every partition spans ``min(num_replicas, racks)`` racks.

Returning ``None`` (defer to the default placer) is always accepted. ``place`` may be ``async``.

When an exception is justified:

- ``num_replicas <= 0`` or more than the usable brokers: the placer must raise
  ``InvalidReplicationFactorError`` (or defer), whatever its preconditions: check it first;
- no usable broker is unfenced: it must refuse with either exception (or defer);
- fewer unfenced usable brokers than ``num_replicas``: either exception is accepted, and so is a
  placement that puts followers on fenced brokers;
- otherwise ``InvalidReplicationFactorError`` is a failure, and ``ReplicaPlacementError`` is accepted
  only where the placer has declared a precondition that the call does not meet. A placer declares
  its preconditions with an optional method::

      def unmet_precondition(self, spec: PlacementSpec, cluster: ClusterView) -> str | None:
          '''Why this call falls outside what the placer supports, or None when it must place.'''

  (or ``check_placer(..., preconditions=fn)`` with a function of the same shape). A placer that
  raises ``ReplicaPlacementError`` where its preconditions hold fails the check. Ready-made
  preconditions: :func:`every_broker_has_a_rack` and :func:`racks_are_paths`.

Usable from a plugin's own pytest suite: ``check_placer`` raises :class:`PlacerCheckError` (an
``AssertionError``) describing the smallest failing example hypothesis found; with
``raise_on_failure=False`` it returns a :class:`CheckReport` instead (the CLI prints that). Runs are
derandomized (the same examples every time) unless ``seed`` is given. Do not call it from inside
another ``@given`` test.

The kit is laid out as :mod:`.rules` (what results must satisfy), :mod:`.strategies` (the generated
cases), :mod:`.report` (failures and reports) and :mod:`.kit` (``check_placer``);
``controller.placement.testing`` is its documented entry point.
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
