"""Config administration as Kafka's brokers and controller perform it: describe, replace (AlterConfigs)
and change one by one (IncrementalAlterConfigs) the configs of topics and brokers.

The wire handlers (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) translate requests into these
calls and the results back. Checks follow Kafka's ``ConfigAdminManager`` (the broker's checks before it
forwards a change), ``ConfigurationControlManager`` and ``ControllerConfigurationValidator`` (the
controller's), and ``ConfigHelper`` (DescribeConfigs), in their order and wording; one resource's failure
never affects another in the same call.

Topics take every topic config (:mod:`controller.config.topic_configs`). Brokers (a broker id, or the
empty name for every broker) take the broker keys of topic configs, which Kafka changes without a restart
(``log.retention.ms``, ``min.insync.replicas``, ``unclean.leader.election.enable``, ...); every other key
is refused as Kafka refuses a key it cannot update dynamically. DescribeConfigs of a broker lists the
server's settings (read-only) and those keys. Groups (any group id, existing or not) take Kafka's group
configs (:mod:`controller.config.group_configs`).

With eligible leader replicas on (KIP-966), ``min.insync.replicas`` is a cluster-level config (the
controller writes it at start, as Kafka 4.1 does when ELR is enabled): a broker's own value of it is
refused, and so is removing the cluster's, with Kafka's messages (INVALID_CONFIG).
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.cluster import Cluster
from controller.config import SASL_USERS, SSL_KEYSTORE_KEY
from controller.config.kafka_keys import (
    KAFKA_BROKER_KEYS,
    KAFKA_CLUSTER_LEVEL_LISTENER_KEYS,
    KAFKA_DYNAMIC_BROKER_KEYS,
    KAFKA_DYNAMIC_LOG_KEYS,
    KAFKA_LISTENER_ONLY_SECURITY_KEYS,
    KAFKA_PER_BROKER_KEYS,
)
from controller.config.settings import AUTHORIZER_CLASS, settings
from controller.config.topic_configs import (
    BROKER_SYNONYMS,
    MIN_INSYNC_REPLICAS,
    ConfigEntry,
    ConfigSource,
    ConfigType,
    InvalidConfig,
    broker_key_def,
    parse_broker_value,
    parse_value,
    topic_config_def,
    validate_topic_configs,
)
from controller.config.values import secret
from controller.offload import Turns
from controller.topic_names import topic_name_problem
from protocol.codes import ErrorCode
from protocol.errors import Refusal

__all__ = [
    "BROKER",
    "GROUP",
    "TOPIC",
    "AlterOp",
    "ConfigAdmin",
    "ConfigChange",
    "Described",
    "ResourceResult",
]

#: Kafka's ``ConfigResource.Type`` ids the simulator serves.
TOPIC = 2
BROKER = 4
GROUP = 32


class AlterOp:
    """IncrementalAlterConfigs' operations (Kafka's ``AlterConfigOp.OpType``)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3
    NAMES = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}


@dataclass(frozen=True)
class ConfigChange:
    """One change of IncrementalAlterConfigs (or one key of AlterConfigs, with ``op`` SET)."""

    name: str
    value: str | None
    op: int = AlterOp.SET


@dataclass
class ResourceResult:
    """The outcome for one resource: ``error`` None on success."""

    resource_type: int
    resource_name: str
    error: ErrorCode | None = None
    message: str | None = None


@dataclass
class Described:
    """DescribeConfigs' answer for one resource."""

    resource_type: int
    resource_name: str
    error: ErrorCode | None = None
    message: str | None = None
    configs: list[ConfigEntry] = field(default_factory=list)


# ------------------------------------------------------------------------------------ broker keys


@dataclass(frozen=True)
class _BrokerKey:
    key: str
    kind: ConfigType
    default: str | None
    doc: str
    dynamic: bool
    sensitive: bool


def _kind_of(default: str) -> ConfigType:
    if default in ("true", "false"):
        return ConfigType.BOOLEAN
    if re.fullmatch(r"-?[0-9]+", default):
        return ConfigType.INT if -(2**31) <= int(default) < 2**31 else ConfigType.LONG
    return ConfigType.STRING


#: Settings whose empty default Kafka describes as the empty string, not null (``authorizer.class.name``).
_EMPTY_DEFAULTS = frozenset({AUTHORIZER_CLASS})


@functools.cache
def _broker_keys() -> dict[str, _BrokerKey]:
    """The server's settings (read-only, but the topic configs' synonyms among them), then the broker
    keys of topic configs the table does not have."""
    keys: dict[str, _BrokerKey] = {}
    for s in settings():
        synonym = broker_key_def(s.key)
        sensitive = s.parse is secret or s.key in (SASL_USERS, SSL_KEYSTORE_KEY)
        kind = ConfigType.PASSWORD if sensitive else _kind_of(s.default)
        if synonym is not None:
            kind = synonym[0].kind
        dynamic = synonym is not None and s.key in KAFKA_DYNAMIC_LOG_KEYS
        default = s.default if s.key in _EMPTY_DEFAULTS else s.default or None
        keys[s.key] = _BrokerKey(s.key, kind, default, s.meaning, dynamic, sensitive)
    for key in BROKER_SYNONYMS:
        if key not in keys:
            synonym, definition = broker_key_def(key)  # type: ignore[misc]
            doc = f"server default of topic config {definition.name}: {definition.doc}"
            dynamic = key in KAFKA_DYNAMIC_LOG_KEYS  # log.retention.hours is read-only, as in Kafka
            keys[key] = _BrokerKey(key, synonym.kind, synonym.default, doc, dynamic, False)
    return keys


def _java_list(names: Sequence[str]) -> str:
    """Names as Kafka 4's (Java) broker writes a list in a message: ``[listeners, no.such.key]``."""
    return "[" + ", ".join(names) + "]"


def _java_set(names: Sequence[str]) -> str:
    """Names as Kafka 4's (Java) broker writes a ``java.util.HashSet`` of them in a message: in the set's
    order, ``[listeners, num.partitions]``."""
    return _java_list(java_hash_order(names, key=lambda name: name))


# ------------------------------------------------------------------------------------ the admin


class ConfigAdmin:
    """Describes and changes the configs of one cluster's topics and brokers."""

    def __init__(
        self,
        cluster: Cluster,
        lock: asyncio.Lock | None = None,
        changed: Callable[[str | None], Awaitable[None]] | None = None,
        elr: bool = False,
    ) -> None:
        """``lock`` is the controller's event lock: a change never lands in the middle of another event.
        ``changed`` is told of every change made, under the lock: the topic's name, or None for brokers."""
        self.cluster = cluster
        self._lock = lock if lock is not None else asyncio.Lock()
        self._changed = changed
        #: Eligible leader replicas on (``simulator.eligible.leader.replicas.version``).
        self._elr = elr

    # ----------------------------------------------------------------------------- describe

    async def describe(
        self,
        resources: Sequence[tuple[int, str, Sequence[str] | None]],
        answering_broker: int | None = None,
    ) -> list[Described]:
        """One answer per ``(type, name, keys)``; ``keys`` None or empty means every config. Topic configs
        are resolved as ``answering_broker`` has them (None: the bootstrap listener, no per-broker values).
        A request for thousands of topics is answered in turns of the event loop."""
        turns = Turns()
        described = []
        for kind, name, keys in resources:
            described.append(self._describe_one(kind, name, keys, answering_broker))
            await turns.yield_if_due()
        return described

    def _describe_one(
        self, kind: int, name: str, keys: Sequence[str] | None, answering_broker: int | None
    ) -> Described:
        try:
            if kind == TOPIC:
                entries = self._describe_topic(name, answering_broker)
            elif kind == BROKER:
                entries = self._describe_broker(name, answering_broker)
            elif kind == GROUP:
                if not name:
                    raise Refusal(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
                entries = self.cluster.group_config_entries(name)
            else:
                raise Refusal(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {_type_name(kind)}")
        except Refusal as refused:
            return Described(kind, name, refused.code, refused.message)
        if keys:
            wanted = set(keys)
            entries = [e for e in entries if e.name in wanted]
        return Described(kind, name, configs=entries)

    def _describe_topic(self, name: str, broker: int | None) -> list[ConfigEntry]:
        problem = topic_name_problem(name)
        if problem is not None:
            raise Refusal(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if name not in self.cluster.topics:
            raise Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        return self.cluster.topic_config_entries(name, broker=broker)

    def _describe_broker(self, name: str, answering_broker: int | None) -> list[ConfigEntry]:
        if not name:
            # The configs set for every broker, as only that level shows them.
            dynamic = self.cluster.broker_configs(None)
            keys = _broker_keys()
            return [
                self._broker_entry(keys[k], None, only_default=True) for k in sorted(dynamic) if k in keys
            ]
        broker = self._broker_id(name, answering_broker)
        return [self._broker_entry(k, broker) for k in _broker_keys().values()]

    def _broker_id(self, name: str, answering_broker: int | None) -> int:
        try:
            broker = int(name)
        except ValueError:
            raise Refusal(
                ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
            ) from None
        registered = sorted(b.id for b in self.cluster.brokers)
        if answering_broker is not None and broker != answering_broker:
            expected = str(answering_broker)
        elif broker not in registered:
            expected = "one of " + ", ".join(map(str, registered))
        else:
            return broker
        raise Refusal(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {expected} or empty string, but received {name}",
        )

    def _broker_entry(self, key: _BrokerKey, broker: int | None, only_default: bool = False) -> ConfigEntry:
        found: list[tuple[str, str | None, ConfigSource]] = []
        levels = [(self.cluster.broker_configs(None), ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
        if not only_default:
            levels.insert(0, (self.cluster.broker_configs(broker), ConfigSource.DYNAMIC_BROKER_CONFIG))
            levels.append((self.cluster.static_configs, ConfigSource.STATIC_BROKER_CONFIG))
        for values, source in levels:
            if key.key in values:
                found.append((key.key, None if key.sensitive else values[key.key], source))
        if not only_default and key.default is not None:
            found.append((key.key, None if key.sensitive else key.default, ConfigSource.DEFAULT_CONFIG))
        value, source = (found[0][1], found[0][2]) if found else (None, ConfigSource.DEFAULT_CONFIG)
        return ConfigEntry(
            key.key, value, source, tuple(found), key.kind, key.doc, not key.dynamic, key.sensitive
        )

    # ----------------------------------------------------------------------------- alter

    async def alter(
        self,
        resources: Sequence[tuple[int, str, Sequence[ConfigChange]]],
        validate_only: bool = False,
        incremental: bool = False,
        answering_broker: int | None = None,
    ) -> list[ResourceResult]:
        """AlterConfigs (``incremental`` False: each resource's configs become the ones given) or
        IncrementalAlterConfigs; one result per resource, in request order. A broker's listener
        (``answering_broker``) changes only that broker's configs and the cluster default, as in Kafka;
        the bootstrap listener (None) any registered broker's."""
        async with self._lock:
            seen: dict[tuple[int, str], int] = {}
            for kind, name, _ in resources:
                seen[(kind, name)] = seen.get((kind, name), 0) + 1
            early = (
                _preprocessed(
                    resources,
                    answering_broker,
                    lambda name, changes: self._broker_change(name, changes, True, answering_broker),
                )
                if incremental
                else {}
            )
            results = []
            for i, (kind, name, changes) in enumerate(resources):
                result = ResourceResult(kind, name)
                if i in early:
                    result.error, result.message = early[i].code, early[i].message
                    results.append(result)
                    continue
                try:
                    if seen[(kind, name)] > 1:
                        raise Refusal(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
                    self._alter_one(kind, name, changes, validate_only, incremental, answering_broker)
                except Refusal as refused:
                    result.error, result.message = refused.code, refused.message
                else:
                    if not validate_only and self._changed is not None and kind != GROUP:
                        await self._changed(name if kind == TOPIC else None)
                results.append(result)
            return results

    def _alter_one(
        self,
        kind: int,
        name: str,
        changes: Sequence[ConfigChange],
        validate_only: bool,
        incremental: bool,
        answering_broker: int | None,
    ) -> None:
        names = [c.name for c in changes]
        if len(set(names)) != len(names):
            raise Refusal(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        nulls = [c.name for c in changes if c.value is None and (not incremental or c.op != AlterOp.DELETE)]
        if nulls:
            raise Refusal(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
        if kind == TOPIC:
            self._alter_topic(name, changes, validate_only, incremental)
        elif kind == BROKER:
            self._alter_broker(name, changes, validate_only, incremental, answering_broker)
        elif kind == GROUP:
            self._alter_group(name, changes, validate_only, incremental)
        else:
            raise Refusal(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")

    def _alter_topic(
        self, name: str, changes: Sequence[ConfigChange], validate_only: bool, incremental: bool
    ) -> None:
        if not name:
            raise Refusal(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        problem = topic_name_problem(name)
        if problem is not None:
            raise Refusal(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        topic = self.cluster.topics.get(name)
        current = dict(topic.configs) if topic is not None else {}
        if incremental:
            new = dict(current)
            for change in changes:
                if change.op in (AlterOp.APPEND, AlterOp.SUBTRACT):
                    definition = topic_config_def(change.name)
                    if definition is None or definition.kind is not ConfigType.LIST:
                        raise Refusal(
                            ErrorCode.INVALID_CONFIG,
                            f"Can't {AlterOp.NAMES[change.op]} to key {change.name} because its type is not LIST.",
                        )
                    if change.op == AlterOp.APPEND and not (change.value or "").strip():
                        # As Kafka 4.4 answers an APPEND of nothing (its SET of nothing is taken).
                        raise Refusal(
                            ErrorCode.INVALID_CONFIG,
                            f"Configuration '{change.name}' values must not be empty.",
                        )
                    base = new.get(change.name, definition.default)
                    new[change.name] = _list_op(base, change)
                else:
                    _apply(new, change)
        else:
            new = {c.name: c.value or "" for c in changes}
        try:
            validate_topic_configs(new)
        except InvalidConfig as invalid:
            raise Refusal(ErrorCode.INVALID_CONFIG, str(invalid)) from None
        if topic is None:
            raise Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if not validate_only:
            verb = "IncrementalAlterConfigs" if incremental else "AlterConfigs"
            self.cluster.set_topic_configs(name, new, verb)

    def _alter_broker(
        self,
        name: str,
        changes: Sequence[ConfigChange],
        validate_only: bool,
        incremental: bool,
        answering_broker: int | None,
    ) -> None:
        broker, new = self._broker_change(name, changes, incremental, answering_broker)
        if self._elr:
            # The controller's rules (not the broker's preprocessing): min.insync.replicas is cluster-level.
            # Kafka's controller writes a record for every key a broker change names, changed or not (and,
            # for AlterConfigs, a removal of every key it leaves out): any such record of the key is refused
            # for one broker, and a removal of it for the cluster.
            current = self.cluster.broker_configs(broker)
            named = {c.name for c in changes}
            removed = (
                {c.name for c in changes if c.op == AlterOp.DELETE} if incremental else current.keys() - named
            )
            if broker is not None and (MIN_INSYNC_REPLICAS in named or MIN_INSYNC_REPLICAS in removed):
                raise Refusal(
                    ErrorCode.INVALID_CONFIG,
                    "Broker-level min.insync.replicas cannot be altered while ELR is enabled.",
                )
            if broker is None and MIN_INSYNC_REPLICAS in removed:
                raise Refusal(
                    ErrorCode.INVALID_CONFIG,
                    "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
                )
        if not validate_only:
            verb = "IncrementalAlterConfigs" if incremental else "AlterConfigs"
            self.cluster.set_broker_configs(broker, new, verb)

    def _broker_change(
        self, name: str, changes: Sequence[ConfigChange], incremental: bool, answering_broker: int | None
    ) -> tuple[int | None, dict[str, str]]:
        """A broker resource's configs after ``changes`` (the broker, None for the cluster default), checked
        as Kafka's brokers check them, or the Refusal."""
        broker = _broker_of(name, answering_broker)
        if broker is not None:
            if broker not in {b.id for b in self.cluster.brokers}:
                raise Refusal(ErrorCode.BROKER_ID_NOT_REGISTERED, f"No node with id {broker} found.")
        current = dict(self.cluster.broker_configs(broker))
        if incremental:
            new = dict(current)
            for change in changes:
                if change.op in (AlterOp.APPEND, AlterOp.SUBTRACT):
                    key = _broker_keys().get(change.name)
                    if key is None:
                        raise Refusal(ErrorCode.INVALID_CONFIG, f"Unknown config name: {change.name}")
                    if key.kind is not ConfigType.LIST:
                        verb = "append" if change.op == AlterOp.APPEND else "subtract"
                        raise Refusal(
                            ErrorCode.INVALID_CONFIG,
                            f"Config value {verb} is not allowed for config key: {change.name}",
                        )
                    new[change.name] = _list_op(new.get(change.name, key.default or ""), change)
                else:
                    _apply(new, change)
        else:
            new = {c.name: c.value or "" for c in changes}
        _check_broker_configs(new, per_broker=broker is not None)
        return broker, new

    def _alter_group(
        self, name: str, changes: Sequence[ConfigChange], validate_only: bool, incremental: bool
    ) -> None:
        """A group's configs (:mod:`controller.config.group_configs`): any group id, whether or not the
        group exists, as in Kafka; APPEND and SUBTRACT are refused (no group config is a list to Kafka's
        controller)."""
        from controller.config.group_configs import validate_group_configs

        if not name:
            raise Refusal(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        if incremental:
            new = dict(self.cluster.group_configs(name))
            for change in changes:
                if change.op in (AlterOp.APPEND, AlterOp.SUBTRACT):
                    raise Refusal(
                        ErrorCode.INVALID_CONFIG,
                        f"Can't {AlterOp.NAMES[change.op]} to key {change.name} because its type is not LIST.",
                    )
                _apply(new, change)
        else:
            new = {c.name: c.value or "" for c in changes}
        try:
            validate_group_configs(new, self.cluster.static_configs)
        except InvalidConfig as invalid:
            raise Refusal(ErrorCode.INVALID_CONFIG, str(invalid)) from None
        if not validate_only:
            verb = "IncrementalAlterConfigs" if incremental else "AlterConfigs"
            self.cluster.set_group_configs(name, new, verb)


def _broker_of(name: str, answering_broker: int | None) -> int | None:
    """The broker a broker resource names (None: every broker, the empty name), or Kafka's refusal of a
    name that is not a number or, on a broker's own listener, not that broker."""
    if not name:
        return None
    try:
        broker = int(name)
    except ValueError:
        raise Refusal(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if answering_broker is not None and broker != answering_broker:
        raise Refusal(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {answering_broker}, but received {name}",
        )
    return broker


def _preprocessed(
    resources: Sequence[tuple[int, str, Sequence[ConfigChange]]],
    answering_broker: int | None,
    check_broker: Callable[[str, Sequence[ConfigChange]], object],
) -> dict[int, Refusal]:
    """IncrementalAlterConfigs' first refusals, as Kafka 4 makes them (by position in the request).

    The broker refuses a resource that names a config twice, a broker resource whose id it will not take,
    with an operation it does not know (``Unknown operations type 7``) or whose change its own checks refuse
    (``check_broker``: static keys, value types, ...), and forwards the rest to its
    controller. The controller goes
    through each topic resource's configs in Java ``HashMap`` order of their names: an APPEND or SUBTRACT
    of a config that is not a list refuses that resource (``Can't SUBTRACT to key max.message.bytes
    because its type is not LIST.``, before its name is looked at); an operation it does not know, met
    first, fails the whole forwarded request, every forwarded resource UNKNOWN_SERVER_ERROR."""
    refused: dict[int, Refusal] = {}
    forwarded: list[int] = []
    unreadable = False
    occurrences: dict[tuple[int, str], int] = {}
    for kind, name, _ in resources:
        occurrences[(kind, name)] = occurrences.get((kind, name), 0) + 1
    for i, (kind, name, changes) in enumerate(resources):
        if occurrences[(kind, name)] > 1:  # the broker's first check
            refused[i] = Refusal(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            continue
        names = [c.name for c in changes]
        if len(set(names)) != len(names):  # the broker's check, before anything else
            refused[i] = Refusal(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
            continue
        if kind == BROKER:
            try:
                _broker_of(name, answering_broker)
            except Refusal as refusal:
                refused[i] = refusal
                continue
            unknown = next((c.op for c in changes if c.op not in AlterOp.NAMES), None)
            if unknown is not None:
                refused[i] = Refusal(ErrorCode.INVALID_REQUEST, f"Unknown operations type {unknown}")
                continue
            try:  # the broker checks the change itself (DynamicBrokerConfig) before it forwards it
                check_broker(name, changes)
            except Refusal as refusal:
                refused[i] = refusal
                continue
        forwarded.append(i)
        if kind != TOPIC:
            continue
        for change in java_hash_order(changes, key=lambda c: c.name):
            if change.op not in AlterOp.NAMES:
                unreadable = True
                break
            if change.op in (AlterOp.APPEND, AlterOp.SUBTRACT):
                definition = topic_config_def(change.name)
                if definition is None or definition.kind is not ConfigType.LIST:
                    refused[i] = Refusal(
                        ErrorCode.INVALID_CONFIG,
                        f"Can't {AlterOp.NAMES[change.op]} to key {change.name} because its type is not LIST.",
                    )
                    break
    if unreadable:
        for i in forwarded:
            refused[i] = Refusal(ErrorCode.UNKNOWN_SERVER_ERROR)
    return refused


def java_hash_order(items: Sequence[Any], key: Callable[[Any], str]) -> list[Any]:
    """``items`` in the order a Java ``HashMap`` (default capacity, filled one by one) keyed by ``key``
    iterates them: by bucket of the spread ``String.hashCode``, then in insertion order. Later duplicates of
    a key are left out, as a map keeps one entry per key."""
    unique: dict[str, Any] = {}
    for item in items:
        unique.setdefault(key(item), item)
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = 0
        for ch in name:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    names = list(unique)
    return [unique[n] for n in sorted(names, key=lambda n: (bucket(n), names.index(n)))]


def _check_broker_configs(new: Mapping[str, str], per_broker: bool) -> None:
    """A broker's (or the cluster default's) dynamic configs after a change, checked in the order of
    Kafka's ``DynamicBrokerConfig.validateConfigs``: static keys, TLS keys without a listener prefix, the
    values' types, keys only a broker of its own takes. A key Kafka does not know passes and is kept.
    Besides Kafka's static keys, the keys the simulator reads at start only are refused as static."""
    static = [key for key in new if _static_broker_key(key)]
    if static:
        raise Refusal(
            ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: {_java_set(static)}"
        )
    bare = [key for key in new if key in KAFKA_LISTENER_ONLY_SECURITY_KEYS]
    if bare:
        raise Refusal(
            ErrorCode.INVALID_REQUEST,
            "These security configs can be dynamically updated only per-listener using the listener "
            f"prefix: {_java_set(bare)}",
        )
    startup_only = [key for key in new if key in _startup_only_keys()]
    if startup_only:
        raise Refusal(
            ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: {_java_set(startup_only)}"
        )
    for key, raw in new.items():
        base = _listener_base(key) or key
        try:
            if broker_key_def(base) is not None:
                parse_broker_value(base, raw)
            elif base in KAFKA_DYNAMIC_BROKER_KEYS:
                parse_value(base, ConfigType[KAFKA_DYNAMIC_BROKER_KEYS[base]], raw)
        except InvalidConfig as invalid:  # Kafka answers a broker value it cannot apply so (KAFKA-13609)
            raise Refusal(ErrorCode.INVALID_REQUEST, str(invalid)) from None
    if not per_broker:
        own = [key for key in new if _per_broker_key(key)]
        if own:
            raise Refusal(
                ErrorCode.INVALID_REQUEST,
                "Cannot update these configs at default cluster level, broker id must be specified: "
                f"{_java_set(own)}",
            )


_LISTENER_KEY = re.compile(r"listener\.name\.[^.]*\.(.*)")


def _listener_base(key: str) -> str | None:
    """``ssl.keystore.location`` of ``listener.name.SSL.ssl.keystore.location`` (None: not a listener key)."""
    match = _LISTENER_KEY.fullmatch(key)
    return match.group(1) if match else None


def _per_broker_key(key: str) -> bool:
    """A key only a broker of its own takes: TLS, SASL and listener keys, bare or for one listener, but the
    connection limits and network threads."""
    base = _listener_base(key)
    if base is not None:
        return base not in KAFKA_CLUSTER_LEVEL_LISTENER_KEYS
    return key in KAFKA_PER_BROKER_KEYS


def _static_broker_key(key: str) -> bool:
    """One of Kafka's broker keys that Kafka changes only at a restart."""
    return (
        key in KAFKA_BROKER_KEYS
        and key not in KAFKA_DYNAMIC_LOG_KEYS
        and key not in KAFKA_DYNAMIC_BROKER_KEYS
    )


@functools.cache
def _startup_only_keys() -> frozenset[str]:
    """The server's settings it reads at start only: its own (``simulator.*``) and Kafka's dynamic keys it
    does not change at run time (``listeners``, ``max.connections``, TLS and SASL, ...). The broker
    defaults of topic configs it does apply at run time."""
    return frozenset(s.key for s in settings() if broker_key_def(s.key) is None)


def _apply(configs: dict[str, str], change: ConfigChange) -> None:
    if change.op == AlterOp.SET:
        configs[change.name] = change.value or ""
    elif change.op == AlterOp.DELETE:
        configs.pop(change.name, None)
    else:
        raise Refusal(ErrorCode.INVALID_REQUEST, f"Unknown operations type {change.op}")


def _list_op(base: str, change: ConfigChange) -> str:
    """APPEND adds the values not there yet; SUBTRACT removes them (Kafka's ``ConfigurationControlManager``)."""
    items = [x for x in base.split(",") if x] if base else []
    # The values as Java's String.split reads them: trailing empty strings dropped ("," is none).
    values = [v.strip() for v in (change.value or "").strip().split(",")]
    while values and not values[-1]:
        values.pop()
    if change.op == AlterOp.APPEND:
        items += [v for v in values if v not in items]
    else:
        items = [x for x in items if x not in values]
    return ",".join(items)


def _type_name(kind: int) -> str:
    """Kafka's ``ConfigResource.Type`` name of an id."""
    return _TYPE_NAMES.get(kind, "UNKNOWN")


_TYPE_NAMES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
