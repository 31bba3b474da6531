"""The conformance kit for election policies (documented entry point: ``controller.election.testing``).

:func:`check_policy` generates partitions in every situation the controller asks about and holds a
policy's answers to the rules every policy must keep: it never elects a dead broker, nor one outside
the set the controller allows (the in-sync set, unless the election is unclean); it answers one list per
partition, without repeats, raises only ``ElectionError`` and answers alike for the same seed.
"""

from controller.election.conformance.kit import PolicyCheckError, PolicyReport, check_policy
from controller.election.conformance.strategies import partition_views, view_batches

__all__ = ["PolicyCheckError", "PolicyReport", "check_policy", "partition_views", "view_batches"]
