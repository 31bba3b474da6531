"""A third-party election policy for the sweep tests: not installed, shipped to the Spark executors as a
file (``--py-files``), named by its dotted path ``thirdparty_policy.LastEligiblePolicy``.

Kafka's controller style; it prefers the last eligible replica in assignment order, so that its
choices differ from ``kafka``'s (the first) wherever more than one replica may lead.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.election import Candidates, ElectionPolicy, PartitionView


class LastEligiblePolicy(ElectionPolicy):
    style = "kafka"

    def elect(self, partitions: Sequence[PartitionView]) -> list[Candidates]:
        return [tuple(reversed(view.eligible)) for view in partitions]
