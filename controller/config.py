"""Server configuration in Kafka's ``server.properties`` format.

Kafka's own key names where Kafka has one; the simulator's own keys start with ``simulator.``.
Every property (known or not) is handed to the placer's ``configure()``. A malformed value stops
startup with a :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from controller.defaults import DEFAULT_BROKERS, DEFAULT_LISTENER, DEFAULT_PLACER
from controller.placement.api import UsableBroker

__all__ = ["ConfigError", "Listener", "ServerConfig", "parse_properties", "read_properties"]

# Keys, with what they mean; used for validation and in the README.
LISTENERS = "listeners"
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

ISOLATION_MODES = ("auto", "inline", "process")


class ConfigError(ValueError):
    """A configuration file or value is malformed; the message names the key."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Listener:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


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


def _int(props: Mapping[str, str], key: str, default: int, minimum: int | None = None) -> int:
    raw = props.get(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        raise ConfigError(f"{key}: {raw!r} is not an integer", key) from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{key}: {value} is below the minimum {minimum}", key)
    if value > 2**63 - 1:
        raise ConfigError(f"{key}: {value} is too large", key)
    return value


def _bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    raw = props.get(key)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}: {raw!r} is not true or false", key)
    return value == "true"


def parse_listener(text: str, key: str = LISTENERS) -> Listener:
    """``HOST:PORT`` or Kafka's ``NAME://HOST:PORT``; ``[::1]:PORT`` for IPv6."""
    spec = text.strip()
    if "://" in spec:
        protocol, _, spec = spec.partition("://")
        if (
            protocol.upper() not in ("PLAINTEXT", "CONTROLLER", "INTERNAL", "EXTERNAL")
            and not protocol.isidentifier()
        ):
            raise ConfigError(f"{key}: bad listener name in {text!r}", key)
    match = re.fullmatch(r"\[([0-9a-fA-F:.]+)\]:(\d+)|([^:\[\]]*):(\d+)", spec)
    if match is None:
        raise ConfigError(f"{key}: {text!r} is not HOST:PORT", key)
    host = match.group(1) or match.group(3) or "0.0.0.0"
    port = int(match.group(2) or match.group(4))
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port {port} is out of range", key)
    return Listener(host, port)


def parse_brokers(props: Mapping[str, str]) -> tuple[UsableBroker, ...]:
    """``simulator.brokers=0:rack-a,1:rack-b,2`` (id, optional rack); ``simulator.brokers.fenced=2``."""
    raw = props.get(BROKERS)
    fenced_raw = props.get(FENCED, "")
    try:
        fenced = {int(x) for x in fenced_raw.replace(" ", "").split(",") if x}
    except ValueError:
        raise ConfigError(
            f"{FENCED}: {fenced_raw!r} is not a comma-separated list of broker ids", FENCED
        ) from None
    if raw is None or not raw.strip():
        brokers = DEFAULT_BROKERS
    else:
        entries = []
        seen: set[int] = set()
        for item in raw.split(","):
            item = item.strip()
            if not item:
                raise ConfigError(f"{BROKERS}: empty entry in {raw!r}", BROKERS)
            id_text, sep, rack = item.partition(":")
            try:
                broker_id = int(id_text)
            except ValueError:
                raise ConfigError(f"{BROKERS}: {id_text!r} in {item!r} is not a broker id", BROKERS) from None
            if not 0 <= broker_id <= 2**31 - 1:
                raise ConfigError(f"{BROKERS}: broker id {broker_id} is out of range", BROKERS)
            if broker_id in seen:
                raise ConfigError(f"{BROKERS}: broker id {broker_id} appears twice", BROKERS)
            if sep and not rack.strip():
                raise ConfigError(f"{BROKERS}: empty rack for broker {broker_id}", BROKERS)
            seen.add(broker_id)
            entries.append(UsableBroker(broker_id, rack.strip() or None, False))
        brokers = tuple(entries)
    unknown = fenced - {b.id for b in brokers}
    if unknown:
        raise ConfigError(f"{FENCED}: unknown broker id(s) {sorted(unknown)}", FENCED)
    return tuple(UsableBroker(b.id, b.rack, b.id in fenced) for b in brokers)


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

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ServerConfig:
        props = {k.strip(): v for k, v in props.items()}
        listeners = [x for x in props.get(LISTENERS, DEFAULT_LISTENER).split(",") if x.strip()]
        if not listeners:
            raise ConfigError(f"{LISTENERS}: no listener given", LISTENERS)
        seed_raw = props.get(SEED, "").strip()
        isolation = props.get(ISOLATION, "auto").strip() or "auto"
        if isolation not in ISOLATION_MODES:
            raise ConfigError(
                f"{ISOLATION}: {isolation!r} is not one of {', '.join(ISOLATION_MODES)}", ISOLATION
            )
        placer = props.get(PLACER, DEFAULT_PLACER).strip() or DEFAULT_PLACER
        cluster_id = props.get(CLUSTER_ID, "placement-sim").strip()
        if not cluster_id:
            raise ConfigError(f"{CLUSTER_ID}: must not be empty", CLUSTER_ID)
        return cls(
            properties=dict(props),
            listener=parse_listener(listeners[0]),
            placer=placer,
            brokers=parse_brokers(props),
            max_request_bytes=_int(props, MAX_REQUEST_BYTES, 104857600, minimum=1),
            idle_ms=_int(props, IDLE_MS, 600000, minimum=1),
            default_replication_factor=_int(props, DEFAULT_RF, 1, minimum=1),
            num_partitions=_int(props, NUM_PARTITIONS, 1, minimum=1),
            cluster_id=cluster_id,
            auto_create_topics=_bool(props, AUTO_CREATE, False),
            broker_port_base=_int(props, BROKER_PORT_BASE, 0, minimum=0),
            seed=_int(props, SEED, 0) if seed_raw else None,
            max_replicas=_int(props, MAX_REPLICAS, 1_000_000, minimum=1),
            isolation=isolation,
            placer_start_ms=_int(props, PLACER_START_MS, 30000, minimum=1),
        )

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: Mapping[str, str] | None = None) -> ServerConfig:
        """Reads ``path`` (if any), applies ``overrides`` (command-line options) and validates."""
        props = read_properties(path) if path is not None else {}
        props.update(overrides or {})
        return cls.from_properties(props)

    def placer_properties(self) -> dict[str, str]:
        """What the placer's ``configure()`` receives: every property, with the effective placer and seed."""
        props = dict(self.properties)
        props[PLACER] = self.placer
        if self.seed is not None:
            props[SEED] = str(self.seed)
        return props
