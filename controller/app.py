"""The controller: the state every connection shares (configuration, clock, cluster, placement, dynamics,
handlers, codecs).

Built before the server (:meth:`Controller.start`), released after it (:meth:`Controller.close`). The
server owns what belongs to the network: listeners, broker endpoints and connection counters. Every
change of cluster state runs under one lock, the controller's event queue: topic administration and
the dynamics (failures, elections, replication) take turns, as in KRaft's controller.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from controller.clock import Clock, make_clock
from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.dynamics import Dynamics
from controller.events import EventLog
from controller.handlers import Handler, load_handlers
from controller.image import ImageBuilder, MetadataImage
from controller.placement.service import PlacementService
from controller.topic_admin import TopicAdmin
from protocol import Schemas, load_schemas

log = logging.getLogger(__name__)

__all__ = ["Controller"]


class Controller:
    """Everything a request handler may touch besides the request itself."""

    def __init__(
        self,
        config: ServerConfig,
        schemas: Schemas,
        clock: Clock,
        cluster: Cluster,
        placements: PlacementService,
        dynamics: Dynamics,
    ) -> None:
        self.config = config
        self.schemas = schemas
        self.clock = clock
        self.cluster = cluster
        self.placements = placements
        self.dynamics = dynamics
        self.topic_admin = TopicAdmin(
            config, cluster, placements, dynamics.lock, clock.now, dynamics.topic_deleted
        )
        self._images = ImageBuilder(cluster)
        self.handlers: dict[int, Handler] = load_handlers()
        self._api_versions = self._build_api_versions()
        self._api_versions_bodies: dict[int, bytes] = {}

    @classmethod
    async def start(cls, config: ServerConfig, schemas: Schemas | None = None) -> Controller:
        """Builds the cluster and loads the placer and the election policy; raises PluginLoadError for a
        plugin that cannot be loaded."""
        schemas = schemas or load_schemas()
        clock = make_clock(config.clock)
        cluster = Cluster(config.brokers, seed=config.seed, events=EventLog(clock.now, config.max_events))
        placements = await PlacementService.start(config, cluster)
        try:
            dynamics = await Dynamics.start(config, cluster, clock, asyncio.Lock())
        except BaseException:
            await placements.close()
            raise
        return cls(config, schemas, clock, cluster, placements, dynamics)

    async def close(self) -> None:
        await self.dynamics.close()
        await self.placements.close()
        await self.clock.close()

    def _build_api_versions(self) -> dict[str, Any]:
        keys = []
        for api_key in sorted(self.handlers):
            handler = self.handlers[api_key]
            low, high = self.schemas.request(api_key).valid_versions
            if not (low <= handler.min_version <= handler.max_version <= high):
                raise RuntimeError(
                    f"handler for apiKey {api_key} answers {handler.min_version}-{handler.max_version}, "
                    f"outside the spec's {low}-{high}"
                )
            keys.append(
                {"ApiKey": api_key, "MinVersion": handler.min_version, "MaxVersion": handler.max_version}
            )
        return {"ErrorCode": 0, "ApiKeys": keys, "ThrottleTimeMs": 0}

    def image(self) -> MetadataImage:
        """The current metadata image (rebuilt only for what changed)."""
        return self._images.image()

    def current_image(self) -> MetadataImage | None:
        """The current metadata image if it is up to date, else None (without making it)."""
        return self._images.current()

    def image_is_stale(self) -> int:
        """How many topics the next image must rebuild."""
        return self._images.stale()

    async def image_in_turns(self) -> MetadataImage:
        """The current image, rebuilt in turns of the event loop when much changed."""
        return await self._images.image_in_turns()

    def api_versions_response(self) -> dict[str, Any]:
        return self._api_versions

    def api_versions_body(self, version: int) -> bytes:
        """The encoded ApiVersions answer for ``version`` (made once: it never changes)."""
        body = self._api_versions_bodies.get(version)
        if body is None:
            body = self.schemas.response(18).encode(self._api_versions, version)
            self._api_versions_bodies[version] = body
        return body
