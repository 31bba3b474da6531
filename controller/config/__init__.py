"""Server configuration in Kafka's ``server.properties`` format, by job:

- :mod:`.settings`: the settings table, every key the server reads with its default, parser and meaning
  (and the properties the built-in placers declare);
- :mod:`.parsing`: properties files and ``KEY=VALUE`` options;
- :mod:`.values`: the server's own kinds of values (listeners, brokers, security values); the plain
  ones (integers, booleans, choices, text) are :mod:`controller.plugins.properties`', which plugins
  read their own properties with;
- :mod:`.server_config`: validation, and :class:`ServerConfig`, the validated configuration;
- :mod:`.topic_configs`: Kafka's per-topic table (types, defaults, validators with Kafka's messages,
  broker synonyms) and how a topic config's value is resolved; the cluster holds the values set.

Every name is importable from here: ``from controller.config import ServerConfig, PLACER, SETTINGS``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.config.parsing import key_value, parse_properties, read_properties
    from controller.config.server_config import ServerConfig
    from controller.config.settings import (
        AUTO_CREATE,
        AUTO_REBALANCE,
        BROKER_PORT_BASE,
        BROKERS,
        CLOCK,
        CLUSTER_ID,
        DEFAULT_RF,
        ELECTION_ISOLATION,
        ELECTION_POLICY,
        EVENT_LOOP,
        FAILED_AUTH_DELAY_MS,
        FENCED,
        FLUVIO_HEALTH_TIMEOUT_MS,
        FLUVIO_LRS_MAX_LAG_RECORDS,
        FLUVIO_MAX_LAG,
        FLUVIO_PROMOTION_TIMEOUT_MS,
        HEARTBEAT_INTERVAL_MS,
        IDLE_MS,
        IMBALANCE_CHECK_SECONDS,
        ISOLATION,
        ISOLATION_MODES,
        LISTENERS,
        MAX_CONNECTIONS,
        MAX_CONNECTIONS_PER_IP,
        MAX_EVENTS,
        MAX_PARTITIONS,
        MAX_REPLICAS,
        MAX_REQUEST_BYTES,
        MIN_INSYNC,
        NUM_PARTITIONS,
        PLACER,
        PLACER_MAX_MEMORY_MB,
        PLACER_START_MS,
        PROTOCOL_MAP,
        QUEUED_MAX_REQUEST_BYTES,
        QUEUED_MAX_REQUESTS,
        REPLICA_LAG_MS,
        REPLICATION_TICK_MS,
        REQUEST_MAX_TIMEOUT_MS,
        SASL_MAX_RECEIVE_SIZE,
        SASL_MECHANISMS,
        SASL_USERS,
        SCRAM_ITERATIONS,
        SCRAM_NONCE_CHECK,
        SEED,
        SESSION_TIMEOUT_MS,
        SSL_CLIENT_AUTH,
        SSL_HANDSHAKE_TIMEOUT_MS,
        SSL_KEY_PASSWORD,
        SSL_KEYSTORE_CHAIN,
        SSL_KEYSTORE_KEY,
        SSL_KEYSTORE_LOCATION,
        SSL_KEYSTORE_PASSWORD,
        SSL_KEYSTORE_TYPE,
        SSL_TRUSTSTORE_CERTIFICATES,
        SSL_TRUSTSTORE_LOCATION,
        SSL_TRUSTSTORE_PASSWORD,
        SSL_TRUSTSTORE_TYPE,
        UNCLEAN_ELECTION,
        Setting,
        settings_by_key,
    )
    from controller.config.values import SASL_MECHANISM_NAMES, SECURITY_PROTOCOLS, Listener
    from controller.plugins.properties import ConfigError, boolean

#: Where each name of the package lives, imported when first asked for: a module that needs only the
#: properties parser (the command line's ``KEY=VALUE`` options) does not load the settings table, the
#: validation and the placers behind them. (``settings``, the function, is not here: the name is its
#: submodule's, which an import of the submodule binds on the package; import it from ``.settings``.)
_HOMES = {
    **dict.fromkeys(("key_value", "parse_properties", "read_properties"), "controller.config.parsing"),
    "ServerConfig": "controller.config.server_config",
    **dict.fromkeys(
        (
            "AUTO_CREATE",
            "AUTO_REBALANCE",
            "BROKER_PORT_BASE",
            "BROKERS",
            "CLOCK",
            "CLUSTER_ID",
            "DEFAULT_RF",
            "ELECTION_ISOLATION",
            "ELECTION_POLICY",
            "EVENT_LOOP",
            "FAILED_AUTH_DELAY_MS",
            "FENCED",
            "FLUVIO_HEALTH_TIMEOUT_MS",
            "FLUVIO_LRS_MAX_LAG_RECORDS",
            "FLUVIO_MAX_LAG",
            "FLUVIO_PROMOTION_TIMEOUT_MS",
            "HEARTBEAT_INTERVAL_MS",
            "IDLE_MS",
            "IMBALANCE_CHECK_SECONDS",
            "ISOLATION",
            "ISOLATION_MODES",
            "LISTENERS",
            "MAX_CONNECTIONS",
            "MAX_CONNECTIONS_PER_IP",
            "MAX_EVENTS",
            "MAX_PARTITIONS",
            "MAX_REPLICAS",
            "MAX_REQUEST_BYTES",
            "MIN_INSYNC",
            "NUM_PARTITIONS",
            "PLACER",
            "PLACER_MAX_MEMORY_MB",
            "PLACER_START_MS",
            "PROTOCOL_MAP",
            "QUEUED_MAX_REQUEST_BYTES",
            "QUEUED_MAX_REQUESTS",
            "REPLICA_LAG_MS",
            "REPLICATION_TICK_MS",
            "REQUEST_MAX_TIMEOUT_MS",
            "SASL_MAX_RECEIVE_SIZE",
            "SASL_MECHANISMS",
            "SASL_USERS",
            "SCRAM_ITERATIONS",
            "SCRAM_NONCE_CHECK",
            "SEED",
            "SESSION_TIMEOUT_MS",
            "SSL_CLIENT_AUTH",
            "SSL_HANDSHAKE_TIMEOUT_MS",
            "SSL_KEY_PASSWORD",
            "SSL_KEYSTORE_CHAIN",
            "SSL_KEYSTORE_KEY",
            "SSL_KEYSTORE_LOCATION",
            "SSL_KEYSTORE_PASSWORD",
            "SSL_KEYSTORE_TYPE",
            "SSL_TRUSTSTORE_CERTIFICATES",
            "SSL_TRUSTSTORE_LOCATION",
            "SSL_TRUSTSTORE_PASSWORD",
            "SSL_TRUSTSTORE_TYPE",
            "UNCLEAN_ELECTION",
            "Setting",
            "settings_by_key",
        ),
        "controller.config.settings",
    ),
    **dict.fromkeys(("SASL_MECHANISM_NAMES", "SECURITY_PROTOCOLS", "Listener"), "controller.config.values"),
    **dict.fromkeys(("ConfigError", "boolean"), "controller.plugins.properties"),
}

__all__ = [
    "AUTO_CREATE",
    "AUTO_REBALANCE",
    "BROKERS",
    "BROKER_PORT_BASE",
    "CLOCK",
    "CLUSTER_ID",
    "DEFAULT_RF",
    "ELECTION_ISOLATION",
    "ELECTION_POLICY",
    "EVENT_LOOP",
    "FAILED_AUTH_DELAY_MS",
    "FENCED",
    "FLUVIO_HEALTH_TIMEOUT_MS",
    "FLUVIO_IGNORE_RACK",
    "FLUVIO_LRS_MAX_LAG_RECORDS",
    "FLUVIO_MAX_LAG",
    "FLUVIO_PROMOTION_TIMEOUT_MS",
    "FLUVIO_START_INDEX",
    "HEARTBEAT_INTERVAL_MS",
    "IDLE_MS",
    "IMBALANCE_CHECK_SECONDS",
    "ISOLATION",
    "ISOLATION_MODES",
    "LEGACY_FIXED_START_INDEX",
    "LISTENERS",
    "MAX_CONNECTIONS",
    "MAX_CONNECTIONS_PER_IP",
    "MAX_EVENTS",
    "MAX_PARTITIONS",
    "MAX_REPLICAS",
    "MAX_REQUEST_BYTES",
    "MIN_INSYNC",
    "NUM_PARTITIONS",
    "PLACER",
    "PLACER_MAX_MEMORY_MB",
    "PLACER_START_MS",
    "PROTOCOL_MAP",
    "QUEUED_MAX_REQUESTS",
    "QUEUED_MAX_REQUEST_BYTES",
    "REPLICATION_TICK_MS",
    "REPLICA_LAG_MS",
    "REQUEST_MAX_TIMEOUT_MS",
    "SASL_MAX_RECEIVE_SIZE",
    "SASL_MECHANISMS",
    "SASL_MECHANISM_NAMES",
    "SASL_USERS",
    "SCRAM_ITERATIONS",
    "SCRAM_NONCE_CHECK",
    "SECURITY_PROTOCOLS",
    "SEED",
    "SESSION_TIMEOUT_MS",
    "SETTINGS",
    "SETTINGS_BY_KEY",
    "SSL_CLIENT_AUTH",
    "SSL_HANDSHAKE_TIMEOUT_MS",
    "SSL_KEYSTORE_CHAIN",
    "SSL_KEYSTORE_KEY",
    "SSL_KEYSTORE_LOCATION",
    "SSL_KEYSTORE_PASSWORD",
    "SSL_KEYSTORE_TYPE",
    "SSL_KEY_PASSWORD",
    "SSL_TRUSTSTORE_CERTIFICATES",
    "SSL_TRUSTSTORE_LOCATION",
    "SSL_TRUSTSTORE_PASSWORD",
    "SSL_TRUSTSTORE_TYPE",
    "STRIPED_CONTINUE_OFFSETS",
    "UNCLEAN_ELECTION",
    "ConfigError",
    "Listener",
    "ServerConfig",
    "Setting",
    "boolean",
    "key_value",
    "parse_properties",
    "read_properties",
    "settings_by_key",
]

#: The keys the built-in placers declare (:class:`~controller.plugins.properties.Property`), by the names
#: this module gave them before the placers declared their own: module and property constant.
_PLACER_KEYS = {
    "STRIPED_CONTINUE_OFFSETS": ("controller.placement.builtin.striped", "CONTINUE_OFFSETS"),
    "LEGACY_FIXED_START_INDEX": ("controller.placement.builtin.legacy", "FIXED_START_INDEX"),
    "FLUVIO_START_INDEX": ("controller.placement.builtin.fluvio", "START_INDEX"),
    "FLUVIO_IGNORE_RACK": ("controller.placement.builtin.fluvio", "IGNORE_RACK"),
}


def __getattr__(name: str) -> Any:
    """A name of the package from its module (:data:`_HOMES`), the whole settings table (``SETTINGS``,
    ``SETTINGS_BY_KEY``) and the placers' keys, read from the built-in placers when first asked for."""
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value
    if name == "SETTINGS":
        return importlib.import_module("controller.config.settings").settings()
    if name == "SETTINGS_BY_KEY":
        return importlib.import_module("controller.config.settings").settings_by_key()
    if name in _PLACER_KEYS:
        module, attr = _PLACER_KEYS[name]
        return getattr(importlib.import_module(module), attr).key
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
