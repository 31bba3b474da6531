"""The controller: the state every connection shares (configuration, cluster, placement, handlers, codecs).

Built before the server (:meth:`Controller.start`), released after it (:meth:`Controller.close`). The
server owns what belongs to the network: listeners, broker endpoints and connection counters.
"""

from __future__ import annotations

import logging
from typing import Any

from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.handlers import Handler, load_handlers
from controller.placement.service import PlacementService
from controller.topic_admin import TopicAdmin
from protocol import Schemas, load_schemas

log = logging.getLogger(__name__)

__all__ = ["Controller"]


class Controller:
    """Everything a request handler may touch besides the request itself."""

    def __init__(
        self, config: ServerConfig, schemas: Schemas, cluster: Cluster, placements: PlacementService
    ) -> None:
        self.config = config
        self.schemas = schemas
        self.cluster = cluster
        self.placements = placements
        self.topic_admin = TopicAdmin(config, cluster, placements)
        self.handlers: dict[int, Handler] = load_handlers()
        self._api_versions = self._build_api_versions()

    @classmethod
    async def start(cls, config: ServerConfig, schemas: Schemas | None = None) -> Controller:
        """Builds the cluster and loads the placer; raises PlacerLoadError for a placer that cannot load."""
        schemas = schemas or load_schemas()
        cluster = Cluster(config.brokers, seed=config.seed)
        placements = await PlacementService.start(config, cluster)
        return cls(config, schemas, cluster, placements)

    async def close(self) -> None:
        await self.placements.close()

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

    def api_versions_response(self) -> dict[str, Any]:
        return self._api_versions
