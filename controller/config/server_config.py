"""The validated configuration: :class:`ServerConfig`, made from server properties.

Every key the server reads is a setting of the table (:mod:`controller.config.settings`). Every
property, known or not, reaches the placer's ``configure()``. An unknown ``simulator.*`` key is an
error naming the nearest known key; an unknown key of another name is accepted, as Kafka accepts it,
and one that looks like a known key mistyped (a setting, or any key of Kafka's broker configuration:
:mod:`controller.config.kafka_keys`) is logged once as a warning naming that key. A malformed
value stops startup with a :class:`~controller.plugins.properties.ConfigError` naming the key.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from controller.config.kafka_keys import KAFKA_BROKER_KEYS
from controller.config.parsing import read_properties
from controller.config.settings import (
    BROKERS,
    ELECTION_POLICY,
    ELR_VERSION_DEFAULT,
    FENCED,
    LISTENERS,
    MAX_PARTITIONS,
    MAX_REPLICAS,
    PLACER,
    PROTOCOL_MAP,
    REQUEST_MAX_TIMEOUT_MS,
    SEED,
    SERVER_FIELDS,
    SERVER_KEYS,
    settings_by_key,
)
from controller.config.topic_configs import check_static_synonyms
from controller.config.values import SASL_MECHANISM_NAMES, Listener, parse_listener, protocol_map
from controller.defaults import DEFAULT_BROKERS, DEFAULT_LISTENER, DEFAULT_PLACER
from controller.placement.api import UsableBroker
from controller.placement.settings import Limit, PlacementLimits, PlacerSetup
from controller.plugins.properties import ConfigError, PropertyValue, property_texts

log = logging.getLogger(__name__)

__all__ = ["ServerConfig"]

_SIMULATOR_PREFIX = "simulator."

#: The unknown keys already warned about (one warning per key in a process).
_warned: set[str] = set()


def _check_keys(props: Mapping[str, str]) -> None:
    """Refuses an unknown ``simulator.*`` key; warns once about a key that looks like a known one mistyped."""
    unknown = [key for key in props if key not in SERVER_KEYS]
    if not unknown:
        return
    import difflib  # for a key the server does not know: most starts have none

    known = settings_by_key()
    for key in unknown:
        if key in known or key in KAFKA_BROKER_KEYS:
            continue
        if key.startswith(_SIMULATOR_PREFIX):
            simulator_keys = [k for k in known if k.startswith(_SIMULATOR_PREFIX)]
            # Compared without the shared prefix, which would make every key look alike.
            tails = {k[len(_SIMULATOR_PREFIX) :]: k for k in simulator_keys}
            near = difflib.get_close_matches(key[len(_SIMULATOR_PREFIX) :], list(tails), n=1, cutoff=0.6)
            hint = (
                f"; did you mean {tails[near[0]]}?"
                if near
                else f" (known: {', '.join(sorted(simulator_keys))})"
            )
            raise ConfigError(f"{key}: unknown simulator setting{hint}", key)
        if key not in _warned:
            near = difflib.get_close_matches(key, [*known, *KAFKA_BROKER_KEYS], n=1, cutoff=0.85)
            if near:
                _warned.add(key)
                log.warning(
                    "unknown setting %s is passed to the plugins as it is; did you mean %s?", key, near[0]
                )


@dataclass(frozen=True)
class ServerConfig:
    """The validated configuration; ``properties`` holds every key as given (for the placer)."""

    properties: Mapping[str, str] = field(default_factory=dict)
    listener: Listener = field(default_factory=lambda: parse_listener(DEFAULT_LISTENER))
    placer: str = DEFAULT_PLACER
    brokers: tuple[UsableBroker, ...] = DEFAULT_BROKERS
    max_request_bytes: int = 104857600
    idle_ms: int = 600000
    default_replication_factor: int = 1
    num_partitions: int = 1
    cluster_id: str = "placement-sim"
    auto_create_topics: bool = False
    broker_port_base: int = 0
    broker_port_step: int = 1
    seed: int | None = None
    max_replicas: int = 1_000_000
    isolation: str = "auto"
    placer_start_ms: int = 30000
    placer_max_memory_mb: int = 2048
    max_connections: int = 4096
    max_connections_per_ip: int = 1024
    queued_max_requests: int = 500
    queued_max_request_bytes: int = 209_715_200
    max_partitions: int = 500_000
    request_max_timeout_ms: int = 120_000
    event_loop: str = "auto"
    clock: str = "real"
    session_timeout_ms: int = 9000
    heartbeat_interval_ms: int = 2000
    replica_lag_ms: int = 30000
    min_insync_replicas: int = 1
    unclean_election: bool = False
    #: Kafka's ``eligible.leader.replicas.version`` feature level (KIP-966).
    elr_version: int = ELR_VERSION_DEFAULT
    auto_rebalance: bool = True
    imbalance_check_seconds: int = 300
    offsets_partitions: int = 50
    offsets_replication_factor: int = 3
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 2**31 - 1
    consumer_max_size: int = 2**31 - 1
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_migration_policy: str = "bidirectional"
    consumer_regex_refresh_interval_ms: int = 600_000
    api_key_68: str = "auto"
    txn_partitions: int = 50
    txn_replication_factor: int = 3
    txn_min_isr: int = 2
    txn_max_timeout_ms: int = 900_000
    txn_abort_interval_ms: int = 10_000
    txn_verification: bool = True
    txn_id_expiration_ms: int = 604_800_000
    txn_expiration_interval_ms: int = 3_600_000
    transaction_version: int = 2
    election_policy: str = "kafka"
    election_isolation: str = "auto"
    fluvio_promotion_timeout_ms: int = 5000
    fluvio_health_timeout_ms: int = 90000
    fluvio_lrs_max_lag_records: int | None = None
    replication_tick_ms: int = 100
    replication_fetch_at_once: str = "false"
    max_events: int = 1_000_000
    control_enable: str = "auto"
    control_users: tuple[str, ...] | None = None
    #: Request faults active from start (:class:`controller.faults.FaultSpec`).
    faults: tuple[Any, ...] | None = None
    log_max_bytes: int = 67_108_864
    records_max_decompressed_bytes: int = 67_108_864
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000
    max_producers_per_partition: int = 10_000
    max_groups: int = 100_000
    max_pending_members: int = 50_000
    fetch_max_bytes: int = 57_671_680
    unsent_answers_max_bytes: int = 104_857_600
    # Security (controller.security); an empty key is None; secrets stay out of repr().
    sasl_mechanisms: tuple[str, ...] = SASL_MECHANISM_NAMES
    #: (user, mechanism or None for every mechanism, password)
    sasl_users: tuple[tuple[str, str | None, str], ...] | None = field(default=None, repr=False)
    scram_iterations: int = 4096
    scram_nonce_check: str = "exact"
    # Authorization (controller.acls).
    authorizer_class: str | None = None
    super_users: tuple[str, ...] | None = None
    allow_if_no_acl: bool = False
    failed_auth_delay_ms: int = 100
    sasl_max_receive_size: int = 524288
    ssl_handshake_timeout_ms: int = 10000
    ssl_keystore_type: str = "PEM"
    ssl_keystore_location: str | None = None
    ssl_keystore_chain: str | None = None
    ssl_keystore_key: str | None = field(default=None, repr=False)
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_keystore_password: str | None = field(default=None, repr=False)
    ssl_truststore_type: str = "PEM"
    ssl_truststore_location: str | None = None
    ssl_truststore_certificates: str | None = None
    ssl_truststore_password: str | None = field(default=None, repr=False)
    ssl_client_auth: str = "none"

    @classmethod
    def from_properties(cls, props: Mapping[str, PropertyValue]) -> ServerConfig:
        """Validates ``props`` (values may be text, numbers or booleans); ConfigError naming a bad key."""
        props = {k.strip(): v for k, v in property_texts(props).items()}
        _check_keys(props)
        check_static_synonyms(props)  # the broker keys of topic configs, with Kafka's messages
        values: dict[str, Any] = {}
        for setting in SERVER_FIELDS:  # what only a plugin reads, the plugin reads (and says when malformed)
            assert setting.attr is not None
            raw = props.get(setting.key)
            if raw is not None and (raw.strip() or setting.key == BROKERS):
                values[setting.attr] = setting.parse(setting.key, raw)
            elif setting.default:
                values[setting.attr] = setting.parse(setting.key, setting.default)
            else:
                values[setting.attr] = None
        listeners = [x for x in values.pop("listener_text").split(",") if x.strip()]
        if not listeners:
            raise ConfigError(f"{LISTENERS}: no listener given", LISTENERS)
        protocols = values.pop("protocol_map") or protocol_map(PROTOCOL_MAP, "")
        listener = parse_listener(listeners[0], LISTENERS, protocols)
        brokers = values.pop("broker_list") or DEFAULT_BROKERS
        fenced = values.pop("fenced_ids") or frozenset()
        unknown = fenced - {b.id for b in brokers}
        if unknown:
            raise ConfigError(f"{FENCED}: unknown broker id(s) {sorted(unknown)}", FENCED)
        names = {f.name for f in fields(cls)}
        return cls(
            properties=dict(props),
            listener=listener,
            brokers=tuple(UsableBroker(b.id, b.rack, b.id in fenced) for b in brokers),
            **{k: v for k, v in values.items() if k in names},
        )

    @classmethod
    def load(
        cls, path: str | Path | None = None, overrides: Mapping[str, PropertyValue] | None = None
    ) -> ServerConfig:
        """Reads ``path`` (if any), applies ``overrides`` (command-line options) and validates."""
        props: dict[str, PropertyValue] = dict(read_properties(path)) if path is not None else {}
        props.update(overrides or {})
        return cls.from_properties(props)

    @property
    def control_enabled(self) -> bool:
        """Whether the control APIs are served: ``simulator.control.enable``, ``auto`` meaning when the
        listener (and so every broker's, on the same host) is on a loopback address."""
        if self.control_enable != "auto":
            return self.control_enable == "true"
        host = self.listener.host
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host.strip("[]")).is_loopback
        except ValueError:
            return False

    def plugin_properties(self) -> dict[str, str]:
        """What an election policy's ``configure()`` receives: every property, with the effective policy and seed."""
        props = dict(self.properties)
        props[ELECTION_POLICY] = self.election_policy
        if self.seed is not None:
            props[SEED] = str(self.seed)
        return props

    def placer_properties(self) -> dict[str, str]:
        """What the placer's ``configure()`` receives: every property, with the effective placer and seed."""
        props = dict(self.properties)
        props[PLACER] = self.placer
        if self.seed is not None:
            props[SEED] = str(self.seed)
        return props

    def placer_setup(self) -> PlacerSetup:
        """The configured placer, as the placement service loads it."""
        return PlacerSetup(
            self.placer,
            self.placer_properties(),
            self.isolation,
            self.placer_start_ms,
            self.placer_max_memory_mb,
        )

    def placement_limits(self) -> PlacementLimits:
        """The limits requests that create partitions are held to, each with the setting it comes from."""
        return PlacementLimits(
            max_replicas=Limit(self.max_replicas, MAX_REPLICAS),
            max_partitions=Limit(self.max_partitions, MAX_PARTITIONS),
            request_max_timeout_ms=Limit(self.request_max_timeout_ms, REQUEST_MAX_TIMEOUT_MS),
        )
