"""Fluvio's leader choice, as Fluvio's documentation describes it and its SC implements it.

The candidate is the eligible follower with the smallest lag behind the previous leader's log end
offset (the last offsets the SC heard), suitable only when that lag is below
``simulator.election.fluvio.max.lag`` (4, Fluvio's ``SimplePolicy``); ties go to the first in replica
order. Only log end offsets count, high watermarks do not. A preferred election (not a Fluvio notion)
asks the first replica when it is suitable. Who is eligible (live followers in the live replica set,
or any live follower when an SPU comes back) is the controller's rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.config import FLUVIO_MAX_LAG
from controller.election.api import Candidates, ElectionPolicy, ElectionStyle, PartitionView, Trigger

__all__ = ["FluvioElectionPolicy"]

DEFAULT_MAX_LAG = 4


class FluvioElectionPolicy(ElectionPolicy):
    """Fluvio's SC: the eligible follower with the smallest log-end-offset lag, if that lag is below 4."""

    style = ElectionStyle.FLUVIO

    def __init__(self, max_lag: int = DEFAULT_MAX_LAG) -> None:
        self.max_lag = max_lag

    def configure(self, configs: Mapping[str, str]) -> None:
        raw = configs.get(FLUVIO_MAX_LAG, "").strip()
        if raw:
            value = int(raw)
            if value < 1:
                raise ValueError(f"{FLUVIO_MAX_LAG} must be at least 1, got {value}")
            self.max_lag = value

    def elect(self, partitions: Sequence[PartitionView]) -> list[Candidates]:
        return [self._candidates(view) for view in partitions]

    def _candidates(self, view: PartitionView) -> tuple[int, ...]:
        if not view.eligible:
            return ()
        reference = view.last_leader if view.last_leader in view.replicas else view.leader
        if reference in view.replicas:
            reference_leo = view.log_end_offset(reference)
        else:
            reference_leo = max(view.log_end_offsets)
        lags = {r: reference_leo - view.log_end_offset(r) for r in view.eligible}
        if view.trigger is Trigger.UNCLEAN:
            suitable = list(view.eligible)
        else:
            suitable = [r for r in view.eligible if lags[r] < self.max_lag]
        order = sorted(suitable, key=lambda r: (lags[r], view.replicas.index(r)))
        if view.trigger is Trigger.PREFERRED:
            first = view.replicas[0]
            if first in order:
                order.remove(first)
                order.insert(0, first)
            elif view.leader in view.eligible:
                return (view.leader,)
        return tuple(order)
