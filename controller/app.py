"""The controller: the state every connection shares (configuration, clock, cluster, placement, dynamics,
codecs).

Built before the server (:meth:`Controller.start`), released after it (:meth:`Controller.close`); the two
are assembled in :mod:`controller.assembly`. The server owns what belongs to the network: listeners,
broker endpoints and connection counters. Every
change of cluster state runs under one lock, the controller's event queue: topic administration and
the dynamics (failures, elections, replication) take turns, as in KRaft's controller.
"""

from __future__ import annotations

import asyncio
import logging

from controller.clock import Clock, make_clock
from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.config_admin import ConfigAdmin
from controller.data_path import DataPath
from controller.dynamics import Dynamics
from controller.events import EventLog
from controller.faults import Faults
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
        self.config_admin = ConfigAdmin(cluster, dynamics.lock, dynamics.configs_changed)
        self._images = ImageBuilder(cluster)
        #: Request faults (controller.faults), those of ``simulator.faults`` active from start.
        self.faults = Faults(clock, schemas, config.seed, config.faults or ())
        #: The replicas' logs, kept in step with the replication model (Produce, Fetch and the rest).
        self.data_path = DataPath(config, cluster, clock, dynamics)

    @classmethod
    async def start(cls, config: ServerConfig, schemas: Schemas | None = None) -> Controller:
        """Builds the cluster and loads the placer and the election policy; raises PluginLoadError for a
        plugin that cannot be loaded."""
        schemas = schemas or load_schemas()
        clock = make_clock(config.clock)
        cluster = Cluster(
            config.brokers,
            seed=config.seed,
            events=EventLog(clock.now, config.max_events),
            static_configs=config.properties,
        )
        placements = await PlacementService.start(
            config.placer_setup(), config.placement_limits(), cluster.view
        )
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
