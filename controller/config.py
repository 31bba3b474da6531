"""Server configuration in Kafka's ``server.properties`` format.

Kafka's own key names where Kafka has one; the simulator's own keys start with ``simulator.``. Every
key the server reads is a :class:`Setting` in :data:`SETTINGS`: its name, default, parser and meaning,
the one place each is defined (the README's table is checked against it). Every property, known or
not, reaches the placer's ``configure()``; an unknown ``simulator.*`` key is an error naming the
nearest known key, and a malformed value stops startup with a :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from controller.defaults import DEFAULT_BROKERS, DEFAULT_LISTENER, DEFAULT_PLACER
from controller.placement.api import UsableBroker

__all__ = [
    "SETTINGS",
    "ConfigError",
    "Listener",
    "ServerConfig",
    "Setting",
    "parse_properties",
    "read_properties",
]


class ConfigError(ValueError):
    """A configuration file or value is malformed; the message names the key."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


# ------------------------------------------------------------------------------------ properties syntax

_LINE_CONTINUATION = re.compile(r"(?<!\\)(\\\\)*\\$")


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parses Java properties text: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuations."""
    props: dict[str, str] = {}
    pending = ""
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if _LINE_CONTINUATION.search(line):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        match = re.match(r"((?:[^=:\s\\]|\\.)+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            if re.fullmatch(r"(?:[^=:\s\\]|\\.)+", line):
                props[_unescape(line)] = ""
                continue
            raise ConfigError(f"{source}:{lineno}: cannot parse line {raw!r} (expected key=value)")
        props[_unescape(match.group(1))] = _unescape(match.group(2).rstrip())
    if pending:
        raise ConfigError(f"{source}: file ends inside a line continuation")
    return props


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), s)


def read_properties(path: str | Path) -> dict[str, str]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not UTF-8 text: {exc}") from exc
    return parse_properties(text, str(path))


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as a pair (command-line ``--set``); ValueError when it is not that."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


# ------------------------------------------------------------------------------------ value parsers


def integer(minimum: int | None = None, maximum: int = 2**63 - 1) -> Callable[[str, str], int]:
    def parse(key: str, raw: str) -> int:
        try:
            value = int(raw.strip().replace("_", ""))
        except ValueError:
            raise ConfigError(f"{key}: {raw!r} is not an integer", key) from None
        if minimum is not None and value < minimum:
            raise ConfigError(f"{key}: {value} is below the minimum {minimum}", key)
        if value > maximum:
            raise ConfigError(f"{key}: {value} is above the maximum {maximum}", key)
        return value

    return parse


def optional_integer(key: str, raw: str) -> int | None:
    return None if not raw.strip() else integer()(key, raw)


def boolean(key: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}: {raw!r} is not true or false", key)
    return value == "true"


def one_of(*choices: str) -> Callable[[str, str], str]:
    def parse(key: str, raw: str) -> str:
        value = raw.strip()
        if value not in choices:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(choices)}", key)
        return value

    return parse


def text(nonempty: bool = True) -> Callable[[str, str], str]:
    def parse(key: str, raw: str) -> str:
        value = raw.strip()
        if nonempty and not value:
            raise ConfigError(f"{key}: must not be empty", key)
        return value

    return parse


def id_list(key: str, raw: str) -> frozenset[int]:
    try:
        return frozenset(int(x) for x in raw.replace(" ", "").split(",") if x)
    except ValueError:
        raise ConfigError(f"{key}: {raw!r} is not a comma-separated list of broker ids", key) from None


# ------------------------------------------------------------------------------------ listeners


@dataclass(frozen=True)
class Listener:
    host: str
    port: int
    name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


#: The security protocols Kafka knows, and the ones this server serves.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SERVED_PROTOCOLS = SECURITY_PROTOCOLS  # TLS and SASL: controller.security


def parse_listener(
    spec_text: str, key: str = "listeners", protocol_map: Mapping[str, str] | None = None
) -> Listener:
    """``HOST:PORT`` or Kafka's ``NAME://HOST:PORT``; ``[::1]:PORT`` for IPv6.

    The listener's security protocol is its name's entry in ``listener.security.protocol.map``, or the
    name itself when it is one of Kafka's protocols.
    """
    spec = spec_text.strip()
    name = "PLAINTEXT"
    if "://" in spec:
        name, _, spec = spec.partition("://")
        name = name.strip().upper()
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            raise ConfigError(f"{key}: bad listener name in {spec_text!r}", key)
    protocol = (protocol_map or {}).get(name, name if name in SECURITY_PROTOCOLS else "")
    if not protocol:
        raise ConfigError(
            f"{key}: listener {name} has no security protocol: map it in listener.security.protocol.map "
            f"(e.g. {name}:PLAINTEXT)",
            key,
        )
    if protocol not in SERVED_PROTOCOLS:
        raise ConfigError(
            f"{key}: listener {name} uses {protocol}, which this server does not serve "
            f"(served: {', '.join(SERVED_PROTOCOLS)})",
            key,
        )
    match = re.fullmatch(r"\[([0-9a-fA-F:.]+)\]:(\d+)|([^:\[\]]*):(\d+)", spec)
    if match is None:
        raise ConfigError(f"{key}: {spec_text!r} is not HOST:PORT", key)
    host = match.group(1) or match.group(3) or "0.0.0.0"
    port = int(match.group(2) or match.group(4))
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port {port} is out of range", key)
    return Listener(host, port, name, protocol)


def _protocol_map(key: str, raw: str) -> dict[str, str]:
    mapping = {p: p for p in SECURITY_PROTOCOLS}
    for item in raw.split(","):
        if not item.strip():
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"{key}: {item.strip()!r} is not NAME:PROTOCOL with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}",
                key,
            )
        mapping[name] = protocol
    return mapping


# ------------------------------------------------------------------------------------ brokers


def parse_brokers(key: str, raw: str) -> tuple[UsableBroker, ...]:
    """``simulator.brokers=0:rack-a,1:rack-b,2``: ids with an optional rack each (fencing applied later)."""
    if not raw.strip():
        raise ConfigError(f"{key}: no brokers given (leave the key out for the default cluster)", key)
    entries = []
    seen: set[int] = set()
    for item in raw.split(","):
        item = item.strip()
        if not item:
            raise ConfigError(f"{key}: empty entry in {raw!r}", key)
        id_text, sep, rack = item.partition(":")
        try:
            broker_id = int(id_text)
        except ValueError:
            raise ConfigError(f"{key}: {id_text!r} in {item!r} is not a broker id", key) from None
        if not 0 <= broker_id <= 2**31 - 1:
            raise ConfigError(f"{key}: broker id {broker_id} is out of range", key)
        if broker_id in seen:
            raise ConfigError(f"{key}: broker id {broker_id} appears twice", key)
        if sep and not rack.strip():
            raise ConfigError(f"{key}: empty rack for broker {broker_id}", key)
        seen.add(broker_id)
        entries.append(UsableBroker(broker_id, rack.strip() or None, False))
    return tuple(entries)


# ------------------------------------------------------------------------------------ security values


def mechanism_list(key: str, raw: str) -> tuple[str, ...]:
    """``sasl.enabled.mechanisms``: a comma-separated list of the mechanisms the simulator serves."""
    names = tuple(dict.fromkeys(x.strip().upper() for x in raw.split(",") if x.strip()))
    if not names:
        raise ConfigError(f"{key}: no mechanism given", key)
    for name in names:
        if name not in SASL_MECHANISM_NAMES:
            raise ConfigError(f"{key}: {name!r} is not one of {', '.join(SASL_MECHANISM_NAMES)}", key)
    return names


def user_list(key: str, raw: str) -> tuple[tuple[str, str], ...]:
    """``user:password,...``; messages name the entry by user, never show a password."""
    users: dict[str, str] = {}
    for index, item in enumerate(raw.split(","), 1):
        user, sep, password = item.strip().partition(":")
        user = user.strip()
        if not item.strip():
            raise ConfigError(f"{key}: entry {index} is empty", key)
        if not sep or not user or not password:
            who = f"user {user!r}" if user else f"entry {index}"
            raise ConfigError(f"{key}: {who} is not user:password", key)
        if user in users:
            raise ConfigError(f"{key}: user {user!r} appears twice", key)
        users[user] = password
    return tuple(users.items())


def pem_store(key: str, raw: str) -> str:
    value = raw.strip().upper()
    if value != "PEM":
        raise ConfigError(
            f"{key}: {raw.strip()!r} stores are not read; the simulator reads PEM files (PEM)", key
        )
    return value


def secret(key: str, raw: str) -> str:
    return raw.strip()


# ------------------------------------------------------------------------------------ the settings


@dataclass(frozen=True)
class Setting:
    """One configuration key: where it lands in :class:`ServerConfig`, its default (as written in a
    properties file, shown in the README) and what it means."""

    key: str
    #: The ServerConfig attribute it sets; None for keys only the built-in placers read.
    attr: str | None
    default: str
    parse: Callable[[str, str], Any]
    meaning: str


LISTENERS = "listeners"
PROTOCOL_MAP = "listener.security.protocol.map"
PLACER = "replica.placer.class.name"
MAX_REQUEST_BYTES = "socket.request.max.bytes"
IDLE_MS = "connections.max.idle.ms"
DEFAULT_RF = "default.replication.factor"
NUM_PARTITIONS = "num.partitions"
CLUSTER_ID = "cluster.id"
AUTO_CREATE = "auto.create.topics.enable"
BROKERS = "simulator.brokers"
FENCED = "simulator.brokers.fenced"
BROKER_PORT_BASE = "simulator.broker.port.base"
SEED = "simulator.seed"
MAX_REPLICAS = "simulator.placement.max.replicas"
ISOLATION = "simulator.placer.isolation"
PLACER_START_MS = "simulator.placer.start.timeout.ms"
PLACER_MAX_MEMORY_MB = "simulator.placer.worker.max.memory.mb"
MAX_CONNECTIONS = "max.connections"
MAX_CONNECTIONS_PER_IP = "max.connections.per.ip"
QUEUED_MAX_REQUESTS = "queued.max.requests"
QUEUED_MAX_REQUEST_BYTES = "queued.max.request.bytes"
MAX_PARTITIONS = "simulator.max.partitions"
REQUEST_MAX_TIMEOUT_MS = "simulator.request.max.timeout.ms"
EVENT_LOOP = "simulator.event.loop"
CLOCK = "simulator.clock"
SESSION_TIMEOUT_MS = "broker.session.timeout.ms"
HEARTBEAT_INTERVAL_MS = "broker.heartbeat.interval.ms"
REPLICA_LAG_MS = "replica.lag.time.max.ms"
MIN_INSYNC = "min.insync.replicas"
UNCLEAN_ELECTION = "unclean.leader.election.enable"
AUTO_REBALANCE = "auto.leader.rebalance.enable"
IMBALANCE_CHECK_SECONDS = "leader.imbalance.check.interval.seconds"
ELECTION_POLICY = "simulator.election.policy"
ELECTION_ISOLATION = "simulator.election.isolation"
FLUVIO_PROMOTION_TIMEOUT_MS = "simulator.election.fluvio.promotion.timeout.ms"
FLUVIO_HEALTH_TIMEOUT_MS = "simulator.election.fluvio.health.timeout.ms"
REPLICATION_TICK_MS = "simulator.replication.tick.ms"
MAX_EVENTS = "simulator.events.max"
# Read by the built-in plugins (through configure()), not by the server.
FLUVIO_MAX_LAG = "simulator.election.fluvio.max.lag"
STRIPED_CONTINUE_OFFSETS = "simulator.placer.striped.continue.offsets"
LEGACY_FIXED_START_INDEX = "simulator.placer.legacy.fixed.start.index"
FLUVIO_START_INDEX = "simulator.placer.fluvio.start.index"
FLUVIO_IGNORE_RACK = "simulator.placer.fluvio.ignore.rack"
# Security (TLS and SASL, controller.security): Kafka's names, and the simulator's users.
SASL_MECHANISMS = "sasl.enabled.mechanisms"
SASL_USERS = "simulator.sasl.users"
SCRAM_ITERATIONS = "simulator.sasl.scram.iterations"
SCRAM_NONCE_CHECK = "simulator.sasl.scram.nonce.check"
FAILED_AUTH_DELAY_MS = "connection.failed.authentication.delay.ms"
SSL_KEYSTORE_TYPE = "ssl.keystore.type"
SSL_KEYSTORE_LOCATION = "ssl.keystore.location"
SSL_KEYSTORE_PASSWORD = "ssl.keystore.password"
SSL_KEYSTORE_CHAIN = "ssl.keystore.certificate.chain"
SSL_KEYSTORE_KEY = "ssl.keystore.key"
SSL_KEY_PASSWORD = "ssl.key.password"
SSL_TRUSTSTORE_TYPE = "ssl.truststore.type"
SSL_TRUSTSTORE_LOCATION = "ssl.truststore.location"
SSL_TRUSTSTORE_PASSWORD = "ssl.truststore.password"
SSL_TRUSTSTORE_CERTIFICATES = "ssl.truststore.certificates"
SSL_CLIENT_AUTH = "ssl.client.auth"

#: The SASL mechanisms the simulator serves.
SASL_MECHANISM_NAMES = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

ISOLATION_MODES = ("auto", "inline", "process")

SETTINGS: tuple[Setting, ...] = (
    Setting(
        LISTENERS,
        "listener_text",
        DEFAULT_LISTENER,
        text(),
        "the bootstrap listener, `HOST:PORT` or `NAME://HOST:PORT` (the first of a list)",
    ),
    Setting(
        PROTOCOL_MAP,
        "protocol_map",
        "",
        _protocol_map,
        "listener names to security protocols, `NAME:PROTOCOL,...`, added to Kafka's four",
    ),
    Setting(
        PLACER,
        "placer",
        DEFAULT_PLACER,
        text(),
        "short name, `package.module.Class`, `package.module:Class`, `file.py[:Class]` or entry point",
    ),
    Setting(
        MAX_REQUEST_BYTES,
        "max_request_bytes",
        "104857600",
        integer(minimum=1, maximum=2**31 - 1),
        "larger frames close the connection before their body is read",
    ),
    Setting(
        IDLE_MS,
        "idle_ms",
        "600000",
        integer(minimum=1),
        "a connection with no complete request for this long is closed",
    ),
    Setting(
        NUM_PARTITIONS, "num_partitions", "1", integer(minimum=1), "what CreateTopics' `-1` partitions means"
    ),
    Setting(
        DEFAULT_RF,
        "default_replication_factor",
        "1",
        integer(minimum=1, maximum=2**15 - 1),
        "what CreateTopics' `-1` replication factor means",
    ),
    Setting(
        CLUSTER_ID, "cluster_id", "placement-sim", text(), "the cluster id of Metadata and DescribeCluster"
    ),
    Setting(
        AUTO_CREATE,
        "auto_create_topics",
        "false",
        boolean,
        "Metadata creates the unknown topics a client asks for",
    ),
    Setting(
        BROKERS,
        "broker_list",
        "",
        parse_brokers,
        "`id[:rack],...`, e.g. `0:/dc1/r1,1:/dc1/r2,2` (no rack for 2); default: 6 brokers in 3 racks",
    ),
    Setting(FENCED, "fenced_ids", "", id_list, "fenced broker ids, e.g. `2,5`"),
    Setting(
        BROKER_PORT_BASE,
        "broker_port_base",
        "0",
        integer(minimum=0, maximum=65535),
        "broker `id` listens on `base + id`; 0: ephemeral ports",
    ),
    Setting(
        SEED,
        "seed",
        "",
        optional_integer,
        "seeds every placer and the topic ids: the same requests give the same bytes (default: random)",
    ),
    Setting(
        MAX_REPLICAS,
        "max_replicas",
        "1000000",
        integer(minimum=1),
        "partitions x replication factor of one placement above this is POLICY_VIOLATION",
    ),
    Setting(
        ISOLATION,
        "isolation",
        "auto",
        one_of(*ISOLATION_MODES),
        "`auto` (built-ins inline, plugins in a worker process), `inline`, `process`",
    ),
    Setting(
        PLACER_START_MS,
        "placer_start_ms",
        "30000",
        integer(minimum=1),
        "how long a plugin's worker may take to load it",
    ),
    Setting(
        PLACER_MAX_MEMORY_MB,
        "placer_max_memory_mb",
        "2048",
        integer(minimum=0),
        "address space a plugin's worker process may use, in MB (0: no limit); past it the call fails",
    ),
    Setting(
        MAX_CONNECTIONS,
        "max_connections",
        "4096",
        integer(minimum=1),
        "connections served at once; past it the listeners stop accepting until one closes",
    ),
    Setting(
        MAX_CONNECTIONS_PER_IP,
        "max_connections_per_ip",
        "1024",
        integer(minimum=1),
        "connections from one address; past it a new one is closed at once",
    ),
    Setting(
        QUEUED_MAX_REQUESTS,
        "queued_max_requests",
        "500",
        integer(minimum=1),
        "unanswered requests one connection may queue before it stops being read",
    ),
    Setting(
        QUEUED_MAX_REQUEST_BYTES,
        "queued_max_request_bytes",
        "209715200",
        integer(minimum=1),
        "bytes of request frames the server holds in all; past it connections stop being read",
    ),
    Setting(
        MAX_PARTITIONS,
        "max_partitions",
        "500000",
        integer(minimum=1),
        "partitions the cluster may hold in all; a request that would pass it is POLICY_VIOLATION",
    ),
    Setting(
        REQUEST_MAX_TIMEOUT_MS,
        "request_max_timeout_ms",
        "120000",
        integer(minimum=1),
        "the most a request's `timeoutMs` is honoured for (larger values are cut to it)",
    ),
    Setting(
        EVENT_LOOP,
        "event_loop",
        "auto",
        one_of("auto", "uvloop", "asyncio"),
        "`auto` (uvloop where it is installed), `uvloop` or `asyncio`",
    ),
    Setting(
        CLOCK,
        "clock",
        "real",
        one_of("real", "virtual"),
        "`real`, or `virtual`: the dynamics' clock moves only when told (`advance(ms)`), so a seed and the same "
        "events give the same bytes",
    ),
    Setting(
        SESSION_TIMEOUT_MS,
        "session_timeout_ms",
        "9000",
        integer(minimum=1),
        "a broker the controller has not heard from for this long is fenced and its leaders move",
    ),
    Setting(
        HEARTBEAT_INTERVAL_MS,
        "heartbeat_interval_ms",
        "2000",
        integer(minimum=1),
        "how often brokers heartbeat: a restarted broker is unfenced at its first heartbeat",
    ),
    Setting(
        REPLICA_LAG_MS,
        "replica_lag_ms",
        "30000",
        integer(minimum=1),
        "a follower that has not caught up for this long leaves the ISR (checked every half of it)",
    ),
    Setting(
        MIN_INSYNC,
        "min_insync_replicas",
        "1",
        integer(minimum=1),
        "the high watermark does not advance while the ISR is smaller (topic config overrides)",
    ),
    Setting(
        UNCLEAN_ELECTION,
        "unclean_election",
        "false",
        boolean,
        "elect a replica outside the ISR when no ISR member can lead (topic config overrides)",
    ),
    Setting(
        AUTO_REBALANCE,
        "auto_rebalance",
        "true",
        boolean,
        "periodic preferred-leader elections for partitions not led by their first replica",
    ),
    Setting(
        IMBALANCE_CHECK_SECONDS,
        "imbalance_check_seconds",
        "300",
        integer(minimum=1),
        "how often the automatic rebalance runs",
    ),
    Setting(
        ELECTION_POLICY,
        "election_policy",
        "kafka",
        text(),
        "`kafka`, `fluvio`, `package.module.Class`, `package.module:Class`, `file.py[:Class]` or entry point",
    ),
    Setting(
        ELECTION_ISOLATION,
        "election_isolation",
        "auto",
        one_of(*ISOLATION_MODES),
        "like `simulator.placer.isolation`, for the election policy",
    ),
    Setting(
        FLUVIO_MAX_LAG,
        None,
        "4",
        integer(minimum=1),
        "`fluvio` policy: a candidate must lag the previous leader's log end offset by less than this",
    ),
    Setting(
        FLUVIO_PROMOTION_TIMEOUT_MS,
        "fluvio_promotion_timeout_ms",
        "5000",
        integer(minimum=1),
        "`fluvio` policy: how long the SC waits for a candidate to confirm before it asks the next",
    ),
    Setting(
        FLUVIO_HEALTH_TIMEOUT_MS,
        "fluvio_health_timeout_ms",
        "90000",
        integer(minimum=1),
        "`fluvio` policy: an SPU silent for this long (hung, isolated) is offline (a crash is noticed at once)",
    ),
    Setting(
        REPLICATION_TICK_MS,
        "replication_tick_ms",
        "100",
        integer(minimum=1),
        "the step of the replication model: records arrive and followers copy every tick",
    ),
    Setting(
        MAX_EVENTS,
        "max_events",
        "1000000",
        integer(minimum=1),
        "how many events the event log keeps (older ones are dropped)",
    ),
    Setting(
        STRIPED_CONTINUE_OFFSETS,
        None,
        "false",
        boolean,
        "`striped` placer: partitions added to a topic continue its rack and broker offsets, as proposed "
        "in KAFKA-14437 (never merged into Kafka); false: fresh random offsets, as Kafka does",
    ),
    Setting(
        LEGACY_FIXED_START_INDEX,
        None,
        "-1",
        integer(minimum=-1),
        "`legacy` placer: a fixed start index instead of random ones (-1: random)",
    ),
    Setting(
        FLUVIO_START_INDEX,
        None,
        "0",
        integer(minimum=0),
        "`fluvio` and `fluvio-fair` placers: the index of the first run",
    ),
    Setting(
        FLUVIO_IGNORE_RACK,
        None,
        "false",
        boolean,
        "`fluvio` and `fluvio-fair` placers: ignore racks",
    ),
    # Security: TLS on SSL and SASL_SSL listeners, SASL on SASL_PLAINTEXT and SASL_SSL (controller.security).
    Setting(
        SASL_MECHANISMS,
        "sasl_mechanisms",
        ",".join(SASL_MECHANISM_NAMES),
        mechanism_list,
        "what a `SASL_*` listener offers, of `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512` (Kafka's default, "
        "`GSSAPI`, is not served)",
    ),
    Setting(
        SASL_USERS,
        "sasl_users",
        "",
        user_list,
        "`user:password,...`: who may authenticate on a `SASL_*` listener, with every enabled mechanism",
    ),
    Setting(
        SCRAM_ITERATIONS,
        "scram_iterations",
        "4096",
        integer(minimum=4096, maximum=16384),
        "the iteration count of the users' SCRAM credentials (Kafka's bounds); salts are random at startup",
    ),
    Setting(
        SCRAM_NONCE_CHECK,
        "scram_nonce_check",
        "exact",
        one_of("exact", "suffix"),
        "`exact`: a SCRAM client's final nonce must be the server's (Kafka 4); `suffix`: it may repeat the "
        "client nonce before it, as librdkafka before 2.6.1 does (Kafka 3.8.1 to 3.9 accept that)",
    ),
    Setting(
        FAILED_AUTH_DELAY_MS,
        "failed_auth_delay_ms",
        "100",
        integer(minimum=0),
        "a failed authentication is answered, and the connection closed, after this delay",
    ),
    Setting(
        SSL_KEYSTORE_TYPE,
        "ssl_keystore_type",
        "PEM",
        pem_store,
        "only `PEM` is read (Kafka's default, `JKS`, is not)",
    ),
    Setting(
        SSL_KEYSTORE_LOCATION,
        "ssl_keystore_location",
        "",
        text(nonempty=False),
        "PEM file with the listener's private key and certificate chain (`SSL`, `SASL_SSL`)",
    ),
    Setting(
        SSL_KEYSTORE_CHAIN,
        "ssl_keystore_chain",
        "",
        text(nonempty=False),
        "instead of a file: the certificate chain as PEM text (with `ssl.keystore.key`)",
    ),
    Setting(
        SSL_KEYSTORE_KEY,
        "ssl_keystore_key",
        "",
        text(nonempty=False),
        "instead of a file: the private key as PEM text",
    ),
    Setting(
        SSL_KEY_PASSWORD,
        "ssl_key_password",
        "",
        secret,
        "the password of an encrypted private key",
    ),
    Setting(
        SSL_KEYSTORE_PASSWORD,
        "ssl_keystore_password",
        "",
        secret,
        "refused with a PEM keystore, as Kafka does (use `ssl.key.password`)",
    ),
    Setting(
        SSL_TRUSTSTORE_TYPE,
        "ssl_truststore_type",
        "PEM",
        pem_store,
        "only `PEM` is read",
    ),
    Setting(
        SSL_TRUSTSTORE_LOCATION,
        "ssl_truststore_location",
        "",
        text(nonempty=False),
        "PEM file of the CA certificates that client certificates are checked against",
    ),
    Setting(
        SSL_TRUSTSTORE_CERTIFICATES,
        "ssl_truststore_certificates",
        "",
        text(nonempty=False),
        "instead of a file: those CA certificates as PEM text",
    ),
    Setting(
        SSL_TRUSTSTORE_PASSWORD,
        "ssl_truststore_password",
        "",
        secret,
        "refused with a PEM truststore, as Kafka does",
    ),
    Setting(
        SSL_CLIENT_AUTH,
        "ssl_client_auth",
        "none",
        one_of("none", "requested", "required"),
        "client certificates on `SSL` listeners: `none`, `requested` or `required` (a `SASL_SSL` listener "
        "only takes `listener.name.<name>.ssl.client.auth`, as Kafka)",
    ),
)

SETTINGS_BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}

_SIMULATOR_PREFIX = "simulator."


def _check_simulator_keys(props: Mapping[str, str]) -> None:
    for key in props:
        if key.startswith(_SIMULATOR_PREFIX) and key not in SETTINGS_BY_KEY:
            known = [s.key for s in SETTINGS if s.key.startswith(_SIMULATOR_PREFIX)]
            # Compared without the shared prefix, which would make every key look alike.
            tails = {k[len(_SIMULATOR_PREFIX) :]: k for k in known}
            near = difflib.get_close_matches(key[len(_SIMULATOR_PREFIX) :], list(tails), n=1, cutoff=0.6)
            hint = f"; did you mean {tails[near[0]]}?" if near else f" (known: {', '.join(sorted(known))})"
            raise ConfigError(f"{key}: unknown simulator setting{hint}", key)


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
    auto_rebalance: bool = True
    imbalance_check_seconds: int = 300
    election_policy: str = "kafka"
    election_isolation: str = "auto"
    fluvio_promotion_timeout_ms: int = 5000
    fluvio_health_timeout_ms: int = 90000
    replication_tick_ms: int = 100
    max_events: int = 1_000_000
    # Security (controller.security); an empty key is None; secrets stay out of repr().
    sasl_mechanisms: tuple[str, ...] = SASL_MECHANISM_NAMES
    sasl_users: tuple[tuple[str, str], ...] | None = field(default=None, repr=False)
    scram_iterations: int = 4096
    scram_nonce_check: str = "exact"
    failed_auth_delay_ms: int = 100
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
    def from_properties(cls, props: Mapping[str, str]) -> ServerConfig:
        props = {k.strip(): v for k, v in props.items()}
        _check_simulator_keys(props)
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            raw = props.get(setting.key)
            if setting.attr is None:
                continue  # the placer reads it, and says when it is malformed
            if raw is not None and (raw.strip() or setting.key == BROKERS):
                values[setting.attr] = setting.parse(setting.key, raw)
            elif setting.default:
                values[setting.attr] = setting.parse(setting.key, setting.default)
            else:
                values[setting.attr] = None
        listeners = [x for x in values.pop("listener_text").split(",") if x.strip()]
        if not listeners:
            raise ConfigError(f"{LISTENERS}: no listener given", LISTENERS)
        protocol_map = values.pop("protocol_map") or _protocol_map(PROTOCOL_MAP, "")
        listener = parse_listener(listeners[0], LISTENERS, protocol_map)
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
    def load(cls, path: str | Path | None = None, overrides: Mapping[str, str] | None = None) -> ServerConfig:
        """Reads ``path`` (if any), applies ``overrides`` (command-line options) and validates."""
        props = read_properties(path) if path is not None else {}
        props.update(overrides or {})
        return cls.from_properties(props)

    def capped_timeout_ms(self, timeout_ms: int) -> int:
        """A request's ``timeoutMs`` as honoured: at most ``simulator.request.max.timeout.ms``."""
        return min(timeout_ms, self.request_max_timeout_ms)

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
