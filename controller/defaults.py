"""The embedded default cluster: what the simulator runs with no configuration at all."""

from __future__ import annotations

from controller.placement.api import UsableBroker
from controller.placement.loader import DEFAULT_PLACER

__all__ = ["DEFAULT_BROKERS", "DEFAULT_LISTENER", "DEFAULT_PLACER"]

DEFAULT_LISTENER = "127.0.0.1:9092"

#: 6 brokers in 3 racks, ids 0..5, broker i in rack ``rack-{i % 3 + 1}`` (so ids alternate racks).
DEFAULT_BROKERS: tuple[UsableBroker, ...] = tuple(
    UsableBroker(id=i, rack=f"rack-{i % 3 + 1}", fenced=False) for i in range(6)
)
