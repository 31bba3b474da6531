"""The server's own kinds of values: listeners, broker lists, security values.

Plain integers, booleans, choices and text are the value types plugins read their properties with too
(:mod:`controller.plugins.properties`); every parser takes ``(key, text)`` and raises
:class:`~controller.plugins.properties.ConfigError` naming the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.placement.api import UsableBroker
from controller.plugins.properties import ConfigError

__all__ = [
    "SASL_MECHANISM_NAMES",
    "SECURITY_PROTOCOLS",
    "Listener",
    "fault_list",
    "id_list",
    "mechanism_list",
    "name_list",
    "parse_brokers",
    "parse_listener",
    "pem_store",
    "protocol_map",
    "secret",
    "user_list",
]


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
    spec_text: str, key: str = "listeners", protocols: Mapping[str, str] | None = None
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
    protocol = (protocols or {}).get(name, name if name in SECURITY_PROTOCOLS else "")
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
        hint = f" (a port alone? 127.0.0.1:{spec}, or :{spec} for every address)" if spec.isdigit() else ""
        raise ConfigError(f"{key}: {spec_text!r} is not HOST:PORT{hint}", key)
    host = match.group(1) or match.group(3) or "0.0.0.0"
    port = int(match.group(2) or match.group(4))
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port {port} is out of range", key)
    return Listener(host, port, name, protocol)


def protocol_map(key: str, raw: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL,...``, added to Kafka's four."""
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
            what = f"{id_text!r}" if id_text == item else f"{id_text!r} (of {item!r})"
            raise ConfigError(
                f"{key}: {what} is not a broker id; the brokers are ID or ID:RACK, comma-separated, "
                f"as 0:rack-a,1:rack-b (got {raw!r})",
                key,
            ) from None
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

#: The SASL mechanisms the simulator serves.
SASL_MECHANISM_NAMES = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def mechanism_list(key: str, raw: str) -> tuple[str, ...]:
    """``sasl.enabled.mechanisms``: a comma-separated list of the mechanisms the simulator serves."""
    names = tuple(dict.fromkeys(x.strip().upper() for x in raw.split(",") if x.strip()))
    if not names:
        raise ConfigError(f"{key}: no mechanism given", key)
    for name in names:
        if name not in SASL_MECHANISM_NAMES:
            raise ConfigError(f"{key}: {name!r} is not one of {', '.join(SASL_MECHANISM_NAMES)}", key)
    return names


def user_list(key: str, raw: str) -> tuple[tuple[str, str | None, str], ...]:
    """``user:password,...``, where an entry ``user:MECHANISM:password`` (``alice:SCRAM-SHA-512:secret``)
    gives the password of one mechanism (a user's other entries give the others'): (user, mechanism or
    None for every mechanism, password) per entry. Messages name the entry by user, never show a
    password."""
    users: dict[tuple[str, str | None], str] = {}
    for index, item in enumerate(raw.split(","), 1):
        user, sep, password = item.strip().partition(":")
        user = user.strip()
        if not item.strip():
            raise ConfigError(f"{key}: entry {index} is empty", key)
        mechanism: str | None = None
        named, sep2, rest = password.partition(":")
        if sep2 and named.upper() in SASL_MECHANISM_NAMES:
            mechanism, password = named.upper(), rest
        if not sep or not user or not password:
            who = f"user {user!r}" if user else f"entry {index}"
            raise ConfigError(f"{key}: {who} is not user:password (or user:MECHANISM:password)", key)
        if (user, mechanism) in users:
            what = f" for {mechanism}" if mechanism else ""
            raise ConfigError(f"{key}: user {user!r} appears twice{what}", key)
        users[(user, mechanism)] = password
    return tuple((user, mechanism, password) for (user, mechanism), password in users.items())


#: The authorizer ``authorizer.class.name`` may name: Kafka 4's.
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def authorizer_class(key: str, raw: str) -> str | None:
    """``authorizer.class.name``: Kafka's StandardAuthorizer (or empty: none)."""
    value = raw.strip()
    if not value:
        return None
    if value == STANDARD_AUTHORIZER:
        return value
    if value.endswith("AclAuthorizer"):
        raise ConfigError(
            f"{key}: {value} kept its ACLs in ZooKeeper and is gone from Kafka 4; name {STANDARD_AUTHORIZER}",
            key,
        )
    raise ConfigError(f"{key}: {value!r} is not simulated; the simulator runs {STANDARD_AUTHORIZER}", key)


def principal_list(key: str, raw: str) -> tuple[str, ...]:
    """``super.users``: principals separated by ``;``, each ``type:name`` (Kafka's ``StandardAuthorizer``)."""
    principals = []
    for item in raw.split(";"):
        principal = item.strip()
        if not principal:
            continue
        if ":" not in principal:
            raise ConfigError(
                f"{key}: expected a string in format principalType:principalName but got {principal}", key
            )
        principals.append(principal)
    return tuple(dict.fromkeys(principals))


def name_list(key: str, raw: str) -> tuple[str, ...]:
    """``alice,bob``: names, each once."""
    names = [item.strip() for item in raw.split(",")]
    if any(not name for name in names):
        raise ConfigError(f"{key}: an empty name in {raw.strip()!r}", key)
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}: a name appears twice in {raw.strip()!r}", key)
    return tuple(names)


def fault_list(key: str, raw: str) -> tuple[Any, ...]:
    """Request faults in the compact syntax of :mod:`controller.faults.spec`."""
    from controller.faults.spec import FaultSyntaxError, parse_faults

    try:
        return tuple(parse_faults(raw))
    except FaultSyntaxError as exc:
        raise ConfigError(f"{key}: {exc}", key) from None


def pem_store(key: str, raw: str) -> str:
    value = raw.strip().upper()
    if value != "PEM":
        raise ConfigError(
            f"{key}: {raw.strip()!r} stores are not read; the simulator reads PEM files (PEM)", key
        )
    return value


def secret(key: str, raw: str) -> str:
    return raw.strip()


#: The server-side assignors of the consumer group protocol, by short name and by Kafka's class name.
CONSUMER_ASSIGNOR_NAMES = {
    "uniform": "uniform",
    "range": "range",
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def consumer_assignor_list(key: str, raw: str) -> tuple[str, ...]:
    """``uniform,range``: the built-in assignors of the consumer group protocol (or Kafka's class names of
    them), the first the default."""
    names = name_list(key, raw)
    for name in names:
        if name not in CONSUMER_ASSIGNOR_NAMES:
            raise ConfigError(f"{key}: unknown assignor {name!r}; the simulator has uniform and range", key)
    return tuple(CONSUMER_ASSIGNOR_NAMES[name] for name in names)
