"""The controller: the state every connection shares (configuration, clock, cluster, placement, dynamics,
codecs), and the subsystems it builds on first use.

Built before the server (:meth:`Controller.start`), released after it (:meth:`Controller.close`); the two
are assembled in :mod:`controller.assembly`. The server owns what belongs to the network: listeners,
broker endpoints and connection counters. Every
change of cluster state runs under one lock, the controller's event queue: topic administration and
the dynamics (failures, elections, replication) take turns, as in KRaft's controller.

**Loaded on first use.** A bare server builds at start only what answers ApiVersions, Metadata and
topic administration: the cluster, placement, the dynamics. Everything else a client may never touch
(the replicas' logs, consumer groups, request faults, configuration administration, scenarios, and
every protocol family joined later) is a :class:`Subsystem` of :data:`SUBSYSTEMS`: its module is
imported and the subsystem built the first time something asks the Controller for its attribute
(``controller.data_path``); from then on the attribute is a plain one, costing nothing per access.
Request handlers load the same way: the handler modules of :data:`HANDLER_PACKAGES` and of the
subsystems' ``handlers`` packages are listed, with their API keys and versions, in an index made ahead of
time (``controller/handlers/_index.py``, written by ``python -m controller.handlers.index``, checked by
a test), ApiVersions is answered from it, and a module is imported at the first request of its API.

Joining a protocol family to the server is one entry of :data:`SUBSYSTEMS` (its attribute, its module,
how it is built from the Controller, the package of its handlers), then ``python -m
controller.handlers.index``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from controller.clock import Clock, make_clock
from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.dynamics import Dynamics
from controller.events import EventLog
from controller.image import ImageBuilder, MetadataImage
from controller.placement.service import PlacementService
from controller.topic_admin import TopicAdmin
from controller.topic_names import GROUP_METADATA_TOPIC_NAME
from protocol import Schemas, load_schemas

if TYPE_CHECKING:
    from controller.acls.scram import ScramCredentials
    from controller.acls.service import AclService
    from controller.config_admin import ConfigAdmin
    from controller.consumer_groups.service import ConsumerGroupService
    from controller.coordinator_topic import CoordinatorTopic
    from controller.data_path import DataPath
    from controller.faults import Faults
    from controller.groups.durable import GroupService
    from controller.transactions.service import TransactionService

log = logging.getLogger(__name__)

__all__ = ["HANDLER_PACKAGES", "SUBSYSTEMS", "Controller", "Subsystem"]


@dataclass(frozen=True, slots=True)
class Subsystem:
    """A part of the controller built on first use (see the module docstring)."""

    #: The Controller's attribute that holds it.
    attribute: str
    #: The module imported when it is first asked for.
    module: str
    #: Builds it from that module and the Controller.
    build: Callable[[ModuleType, Controller], Any]
    #: What it is (the docs, and the start-time test's messages).
    about: str
    #: The package of its request handlers (modules defining ``API_KEY``), if it brings its own.
    handlers: str | None = None


#: Everything the controller builds on first use.
SUBSYSTEMS: tuple[Subsystem, ...] = (
    Subsystem(
        "data_path",
        "controller.data_path",
        lambda m, c: m.DataPath(c.config, c.cluster, c.clock, c.dynamics),
        "the replicas' logs: Produce, Fetch and the offsets APIs",
    ),
    Subsystem(
        "offsets_topic",
        "controller.coordinator_topic",
        lambda m, c: m.CoordinatorTopic(
            GROUP_METADATA_TOPIC_NAME,
            c.config.offsets_partitions,
            c.config.offsets_replication_factor,
            {},
            c.cluster,
            c.clock,
            c.dynamics.replication,
            c.topic_admin,
            c.config.replication_tick_ms,
        ),
        "__consumer_offsets on the replication model: FindCoordinator's answer for a group, the groups' log",
    ),
    Subsystem(
        "groups",
        "controller.groups.durable",
        lambda m, c: m.GroupService(c.config, c.cluster, c.clock, c.offsets_topic),
        "classic consumer groups, their coordinator on the leaders of __consumer_offsets",
    ),
    Subsystem(
        "consumer_groups",
        "controller.consumer_groups.service",
        lambda m, c: m.ConsumerGroupService(c),
        "the consumer group protocol (KIP-848): consumer groups on the leaders of __consumer_offsets",
        handlers="controller.consumer_groups.handlers",
    ),
    Subsystem(
        "transactions",
        "controller.transactions.service",
        lambda m, c: m.TransactionService(
            c.config,
            c.cluster,
            c.clock,
            c.dynamics,
            c.topic_admin,
            lambda: c.data_path,
            lambda: c.groups,
        ),
        "transactions: the coordinator on the leaders of __transaction_state, markers, the transaction APIs",
        handlers="controller.transactions.handlers",
    ),
    Subsystem(
        "acls",
        "controller.acls.service",
        lambda m, c: m.AclService(c.config, c.cluster.events),
        "ACLs as cluster metadata, the authorizer (authorizer.class.name), the ACL APIs",
        handlers="controller.acls.handlers",
    ),
    Subsystem(
        "scram",
        "controller.acls.scram",
        lambda m, c: m.ScramCredentials(
            c.config.sasl_users or (), c.config.scram_iterations, c.cluster.events
        ),
        "SCRAM credentials as cluster metadata: the SASL logins' and the SCRAM admin APIs'",
    ),
    Subsystem(
        "faults",
        "controller.faults",
        lambda m, c: m.Faults(c.clock, c.schemas, c.config.seed, c.config.faults or ()),
        "request faults: errors, delays, drops and disconnects",
    ),
    Subsystem(
        "config_admin",
        "controller.config_admin",
        lambda m, c: m.ConfigAdmin(
            c.cluster, c.dynamics.lock, c.dynamics.configs_changed, elr=c.config.elr_version >= 1
        ),
        "DescribeConfigs, AlterConfigs and IncrementalAlterConfigs as the controller performs them",
    ),
    Subsystem(
        "share",
        "controller.share.service",
        lambda m, c: m.ShareService(c),
        "share groups (KIP-932): their coordinator, share-partitions, share sessions, __share_group_state",
        handlers="controller.share.handlers",
    ),
    Subsystem(
        "scenarios",
        "controller.scenario.player",
        lambda m, c: m.Scenarios(c),
        "scenario timelines played on the server's clock",
    ),
)

#: Packages of request handlers that belong to no subsystem of their own.
HANDLER_PACKAGES: tuple[str, ...] = ("controller.handlers",)

_SUBSYSTEMS = {s.attribute: s for s in SUBSYSTEMS}


def handler_packages() -> tuple[str, ...]:
    """Every package whose modules are request handlers, in the order the handler index lists them."""
    return HANDLER_PACKAGES + tuple(s.handlers for s in SUBSYSTEMS if s.handlers is not None)


class Controller:
    """Everything a request handler may touch besides the request itself."""

    if TYPE_CHECKING:  # built on first use (SUBSYSTEMS)
        data_path: DataPath
        offsets_topic: CoordinatorTopic
        groups: GroupService
        consumer_groups: ConsumerGroupService
        transactions: TransactionService
        acls: AclService
        scram: ScramCredentials
        faults: Faults
        config_admin: ConfigAdmin
        #: controller.share.service.ShareService
        share: Any
        #: controller.scenario.player.Scenarios (which imports this module)
        scenarios: Any

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
            config, cluster, placements, dynamics.lock, clock.now, self._topic_deleted
        )
        self._images = ImageBuilder(cluster)
        #: Told of each subsystem as it is built: attribute -> callbacks (:meth:`when_built`).
        self._when_built: dict[str, list[Callable[[Any], None]]] = {}
        # The replicas' logs follow the replication model once records exist; a synthetic workload writes
        # records, so it brings the data path with it.
        dynamics.before_workload = lambda: self.data_path
        if config.faults:  # request faults active from start
            self.faults  # noqa: B018

    def __getattr__(self, name: str) -> Any:
        """A subsystem of :data:`SUBSYSTEMS`, built at its first use (a plain attribute from then on)."""
        subsystem = _SUBSYSTEMS.get(name)
        if subsystem is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        log.debug("loading %s (%s)", name, subsystem.about)
        value = subsystem.build(importlib.import_module(subsystem.module), self)
        setattr(self, name, value)
        for callback in self._when_built.pop(name, ()):
            callback(value)
        return value

    def _topic_deleted(self, topic: str) -> None:
        """A topic was deleted: the dynamics forget it, and each subsystem already built that keeps state of
        topics (a ``topic_deleted`` method) drops its own (one not built yet holds none)."""
        self.dynamics.topic_deleted(topic)  # the data path hears of it there (``on_topic_deleted``)
        for attribute in _SUBSYSTEMS:
            forget = getattr(self.__dict__.get(attribute), "topic_deleted", None)
            if forget is not None and forget != self.dynamics.on_topic_deleted:
                forget(topic)

    def built(self, name: str) -> Any | None:
        """The subsystem ``name`` if it has been built, else None (without building it)."""
        if name not in _SUBSYSTEMS:
            raise KeyError(name)
        return self.__dict__.get(name)

    def when_built(self, name: str, callback: Callable[[Any], None]) -> None:
        """Calls ``callback`` with the subsystem ``name`` when it is built (at once if it is)."""
        value = self.built(name)
        if value is not None:
            callback(value)
        else:
            self._when_built.setdefault(name, []).append(callback)

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
            # Kafka 4.1 with ELR on: the controller makes min.insync.replicas a cluster-level config.
            cluster_configs={"min.insync.replicas": str(config.min_insync_replicas)}
            if config.elr_version >= 1
            else None,
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
        consumer_groups = self.built("consumer_groups")
        if consumer_groups is not None:
            consumer_groups.close()
        groups = self.built("groups")
        if groups is not None:
            groups.close()
        offsets_topic = self.built("offsets_topic")
        if offsets_topic is not None:
            offsets_topic.close()
        transactions = self.built("transactions")
        if transactions is not None:
            transactions.close()
        await self.dynamics.close()
        await self.placements.close()
        await self.clock.close()

    def image(self) -> MetadataImage:
        """The current metadata image (rebuilt only for what changed)."""
        return self._images.image()

    def current_image(self) -> MetadataImage | None:
        """The current metadata image if it is up to date, else None (without making it)."""
        return self._images.current()

    def image_unchanged_for(self, names: Iterable[str]) -> MetadataImage | None:
        """The last image, when it holds what a current one would of the topics ``names`` and of the
        brokers; else None (:meth:`controller.image.ImageBuilder.unchanged_for`)."""
        return self._images.unchanged_for(names)

    def image_is_stale(self) -> int:
        """About how many partitions the next image must rebuild."""
        return self._images.stale()

    async def image_in_turns(self) -> MetadataImage:
        """The current image, rebuilt in turns of the event loop when much changed."""
        return await self._images.image_in_turns()
