"""What the placement service is given by the server: the placer to load and the limits requests are held to.

The server's configuration makes both (``ServerConfig.placer_setup()``, ``ServerConfig.placement_limits()``);
placement itself reads no configuration. Each limit carries the name of the setting it comes from, which
the refusals it causes name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Limit", "PlacementLimits", "PlacerSetup"]


@dataclass(frozen=True)
class Limit:
    """A limit and the setting it comes from (a refusal names both)."""

    value: int
    setting: str


@dataclass(frozen=True)
class PlacementLimits:
    """The limits a request that creates partitions is held to."""

    #: Partitions x replication factor of one request.
    max_replicas: Limit
    #: Partitions in the whole cluster.
    max_partitions: Limit
    #: The most a request's ``timeoutMs`` is honoured for.
    request_max_timeout_ms: Limit

    def capped_timeout_ms(self, timeout_ms: int) -> int:
        """A request's ``timeoutMs`` as honoured: at most :attr:`request_max_timeout_ms`."""
        return min(timeout_ms, self.request_max_timeout_ms.value)


@dataclass(frozen=True)
class PlacerSetup:
    """The configured placer: its name (what ``replica.placer.class.name`` takes), what its
    ``configure()`` receives, and how it runs (``auto``, ``inline`` or ``process``; a worker's start
    timeout and memory limit)."""

    name: str
    properties: Mapping[str, str] = field(default_factory=dict)
    isolation: str = "auto"
    start_timeout_ms: int = 30000
    max_memory_mb: int = 0
