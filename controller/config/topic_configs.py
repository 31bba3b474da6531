"""Kafka's topic configs: every per-topic key of Kafka 4 with its type, default, validator, broker synonyms
and a line of documentation, and how a value is resolved from where it is set.

The table follows Kafka's ``LogConfig`` (the ``ConfigDef`` of topic configs) and ``TopicConfig`` (the
names), as of Kafka 4.0: ``message.format.version``, ``message.timestamp.difference.max.ms`` and
``message.downconversion.enable`` are gone (KIP-724, KIP-937), ``segment.bytes`` is at least 1 MiB and
``message.timestamp.after.max.ms`` defaults to one hour (KIP-1030). The broker keys that give a topic
config its server default are Kafka's ``ServerTopicConfigSynonyms`` (``retention.ms`` <- ``log.retention.ms``,
``log.retention.minutes``, ``log.retention.hours``, ...), in Kafka's order of precedence.

Values are checked as Kafka's ``ConfigDef`` checks them, with its messages (``Invalid value abc for
configuration retention.ms: Not a number of type LONG``; ``Unknown topic config name: foo.bar``):
:class:`InvalidConfig` carries the message. Where a value comes from is a :class:`ConfigSource`, the wire
ids of DescribeConfigs: a topic's own value (``TOPIC_CONFIG``, the admin client's ``DYNAMIC_TOPIC_CONFIG``),
then its broker synonyms set dynamically for one broker, set dynamically for every broker, set in
``server.properties``, and last Kafka's default (:func:`resolve`). The cluster holds the values that are
set (:meth:`controller.cluster.Cluster.topic_config`); this module only knows the rules.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.plugins.properties import ConfigError

__all__ = [
    "BROKER_SYNONYMS",
    "MIN_INSYNC_REPLICAS",
    "UNCLEAN_LEADER_ELECTION_ENABLE",
    "TOPIC_CONFIGS",
    "ConfigEntry",
    "ConfigSource",
    "ConfigType",
    "InvalidConfig",
    "Synonym",
    "TopicConfigDef",
    "broker_key_def",
    "check_static_synonyms",
    "parse_value",
    "resolve",
    "topic_config_def",
    "validate_topic_configs",
]

#: The topic configs the controller acts on (Kafka's ``TopicConfig`` names).
MIN_INSYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class ConfigType(enum.IntEnum):
    """A config's data type, with the ids of DescribeConfigs' ``ConfigType`` (Kafka's ``ConfigDef.Type``)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """Where a value comes from, with the wire ids of DescribeConfigs' ``ConfigSource``."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1  # the admin clients' DYNAMIC_TOPIC_CONFIG
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8  # a group's own value (the GROUP resource, controller.config.group_configs)


class InvalidConfig(ConfigError):
    """A config name or value Kafka refuses; the message is Kafka's (INVALID_CONFIG on the wire)."""


# ------------------------------------------------------------------------------------ values


def _invalid(name: str, shown: object, reason: str) -> InvalidConfig:
    """Kafka's ``ConfigException(name, value, message)`` wording."""
    return InvalidConfig(f"Invalid value {shown} for configuration {name}: {reason}", name)


_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?")


def parse_value(name: str, kind: ConfigType, raw: str) -> Any:
    """``raw`` as ``ConfigDef.parseType`` reads it: trimmed; booleans ``true``/``false`` in any case,
    integers in range of their Java type, lists split at commas."""
    text = raw.strip()
    if kind is ConfigType.BOOLEAN:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise _invalid(name, raw, "Expected value to be either true or false")
    if kind in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        low, high = {
            ConfigType.INT: (_INT_MIN, _INT_MAX),
            ConfigType.SHORT: (-(2**15), 2**15 - 1),
            ConfigType.LONG: (_LONG_MIN, _LONG_MAX),
        }[kind]
        if _JAVA_INTEGER.fullmatch(text) and low <= int(text) <= high:
            return int(text)
        raise _invalid(name, raw, f"Not a number of type {kind.name}")
    if kind is ConfigType.DOUBLE:
        if _JAVA_DOUBLE.fullmatch(text):
            return float(text.rstrip("fFdD").replace("Infinity", "inf"))
        raise _invalid(name, raw, "Not a number of type DOUBLE")
    if kind is ConfigType.LIST:
        return [] if not text else [part.strip() for part in text.split(",")]
    return text


def shown_value(kind: ConfigType, value: Any) -> str:
    """A parsed value as Kafka shows it (``ConfigDef.convertToString``): ``true``, ``a,b``, ``0.5``."""
    if kind is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if kind is ConfigType.LIST:
        return ",".join(value)
    if kind is ConfigType.DOUBLE:
        return repr(float(value))
    return str(value)


def _java_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(values) + "]"


# ------------------------------------------------------------------------------------ validators

Validator = Callable[[str, Any], None]


def at_least(minimum: int) -> Validator:
    """``ConfigDef.Range.atLeast``."""

    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise _invalid(name, value, f"Value must be at least {minimum}")

    return check


def between(minimum: float, maximum: float) -> Validator:
    """``ConfigDef.Range.between``."""

    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise _invalid(name, _number(value), f"Value must be at least {minimum}")
        if value > maximum:
            raise _invalid(name, _number(value), f"Value must be no more than {maximum}")

    return check


def _number(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def one_of(*choices: str) -> Validator:
    """``ConfigDef.ValidString.in``."""

    def check(name: str, value: Any) -> None:
        if value not in choices:
            raise _invalid(name, value, "String must be one of: " + ", ".join(choices))

    return check


def each_of(*choices: str) -> Validator:
    """``ConfigDef.ValidList.in``: every element one of ``choices``."""
    element = one_of(*choices)

    def check(name: str, value: Any) -> None:
        for item in value:
            element(name, item)

    return check


def gzip_level(name: str, value: Any) -> None:
    """``GzipCompression``'s level validator: 1 to 9, or -1 (zlib's default)."""
    if value > 9 or (value < 1 and value != -1):
        raise _invalid(name, value, "Value must be between 1 and 9 or equal to -1")


def throttled_replicas(name: str, value: Any) -> None:
    """``ThrottledReplicaListValidator``: ``*``, or ``partition:broker`` entries."""
    items = [item.strip() for item in value]
    if not (all(re.fullmatch(r"([0-9]+:[0-9]+)?", item) for item in items) or "".join(items) == "*"):
        raise _invalid(
            name,
            _java_list(items),
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
        )


# ------------------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Synonym:
    """A broker key that gives a topic config its server default; ``factor`` converts its unit to the
    topic config's (hours to milliseconds: 3600000)."""

    key: str
    kind: ConfigType
    #: Kafka's default for the broker key, as text; None when the key has none (``log.retention.ms``).
    default: str | None
    validator: Validator | None = None
    factor: int = 1
    doc: str = ""


@dataclass(frozen=True)
class TopicConfigDef:
    """One topic config: its type, Kafka's default (as DescribeConfigs shows it), validator, broker
    synonyms in order of precedence, and what it does."""

    name: str
    kind: ConfigType
    default: str
    validator: Validator | None
    synonyms: tuple[Synonym, ...]
    doc: str
    #: Whether the simulation acts on it (the others are kept and described only).
    simulated: bool = False

    def parse(self, raw: str) -> Any:
        """The value, checked; InvalidConfig with Kafka's message otherwise."""
        value = parse_value(self.name, self.kind, raw)
        if self.validator is not None:
            self.validator(self.name, value)
        return value

    @property
    def default_value(self) -> Any:
        return parse_value(self.name, self.kind, self.default)


def _same(
    name: str, kind: ConfigType, default: str | None, validator: Validator | None, prefix: str = ""
) -> tuple[Synonym, ...]:
    return (Synonym(prefix + name, kind, default, validator),)


_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000
_WEEK_MS = 7 * 24 * _HOUR_MS
_MIB = 1024 * 1024

_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _def(
    name: str,
    kind: ConfigType,
    default: str,
    validator: Validator | None,
    doc: str,
    synonyms: tuple[Synonym, ...] | str | None = "log.",
    simulated: bool = False,
) -> TopicConfigDef:
    """A config whose broker synonym is ``log.<name>`` (the default), ``<name>`` (``""``), given, or none."""
    if isinstance(synonyms, str):
        synonyms = _same(name, kind, default, validator, synonyms)
    return TopicConfigDef(name, kind, default, validator, synonyms or (), doc, simulated)


_B, _S, _I, _L, _D, _LIST = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)

#: Every topic config of Kafka 4, in ``LogConfig``'s order (the order values are checked in).
TOPIC_CONFIGS: tuple[TopicConfigDef, ...] = (
    _def("segment.bytes", _I, str(1024 * _MIB), at_least(_MIB), "size of one log segment file, in bytes"),
    _def(
        "segment.ms",
        _L,
        str(_WEEK_MS),
        at_least(1),
        "a segment is rolled after this long even when it is not full",
        (
            Synonym("log.roll.ms", _L, None, at_least(1)),
            Synonym("log.roll.hours", _I, "168", at_least(1), _HOUR_MS),
        ),
    ),
    _def(
        "segment.jitter.ms",
        _L,
        "0",
        at_least(0),
        "a random amount up to this is taken off the roll time, so that segments do not roll together",
        (
            Synonym("log.roll.jitter.ms", _L, None, at_least(0)),
            Synonym("log.roll.jitter.hours", _I, "0", at_least(0), _HOUR_MS),
        ),
    ),
    _def(
        "segment.index.bytes",
        _I,
        str(10 * _MIB),
        at_least(4),
        "size of a segment's offset index, in bytes",
        (Synonym("log.index.size.max.bytes", _I, str(10 * _MIB), at_least(4)),),
    ),
    _def(
        "flush.messages",
        _L,
        str(_LONG_MAX),
        at_least(1),
        "force an fsync after this many records (the default leaves flushing to the OS)",
        (Synonym("log.flush.interval.messages", _L, str(_LONG_MAX), at_least(1)),),
    ),
    _def(
        "flush.ms",
        _L,
        str(_LONG_MAX),
        at_least(0),
        "force an fsync after this long (the default leaves flushing to the OS)",
        (
            Synonym("log.flush.interval.ms", _L, None),
            Synonym("log.flush.scheduler.interval.ms", _L, str(_LONG_MAX)),
        ),
    ),
    _def(
        "retention.bytes",
        _L,
        "-1",
        None,
        "a partition's log is trimmed to this size, oldest segments first (-1: no size limit)",
    ),
    _def(
        "retention.ms",
        _L,
        str(_WEEK_MS),
        at_least(-1),
        "segments older than this are deleted (-1: kept forever)",
        (
            Synonym("log.retention.ms", _L, None),
            Synonym("log.retention.minutes", _I, None, None, _MINUTE_MS),
            Synonym("log.retention.hours", _I, "168", None, _HOUR_MS),
        ),
    ),
    _def(
        "max.message.bytes",
        _I,
        "1048588",
        at_least(0),
        "largest record batch the topic accepts, in bytes (after compression)",
        (Synonym("message.max.bytes", _I, "1048588", at_least(0)),),
        simulated=True,
    ),
    _def("index.interval.bytes", _I, "4096", at_least(0), "bytes of log between two offset index entries"),
    _def(
        "delete.retention.ms",
        _L,
        "86400000",
        at_least(0),
        "how long tombstones stay in a compacted log",
        "log.cleaner.",
    ),
    _def(
        "min.compaction.lag.ms",
        _L,
        "0",
        at_least(0),
        "a record stays uncompacted at least this long",
        "log.cleaner.",
    ),
    _def(
        "max.compaction.lag.ms",
        _L,
        str(_LONG_MAX),
        at_least(1),
        "a record is eligible for compaction at most this long after it is written",
        "log.cleaner.",
    ),
    _def(
        "file.delete.delay.ms",
        _L,
        "60000",
        at_least(0),
        "how long a deleted segment's files wait before they are removed from disk",
        (Synonym("log.segment.delete.delay.ms", _L, "60000", at_least(0)),),
    ),
    _def(
        "min.cleanable.dirty.ratio",
        _D,
        "0.5",
        between(0, 1),
        "the share of a log that must be uncompacted before the cleaner compacts it",
        (Synonym("log.cleaner.min.cleanable.ratio", _D, "0.5", between(0, 1)),),
    ),
    _def(
        "cleanup.policy",
        _LIST,
        "delete",
        each_of("compact", "delete"),
        "`delete` (old segments are dropped), `compact` (the last value per key is kept), or both",
    ),
    _def(
        UNCLEAN_LEADER_ELECTION_ENABLE,
        _B,
        "false",
        None,
        "a replica outside the ISR may become leader when no ISR member can (records may be lost)",
        "",
        simulated=True,
    ),
    _def(
        MIN_INSYNC_REPLICAS,
        _I,
        "1",
        at_least(1),
        "the high watermark does not advance (acks=all produces fail) while the ISR is smaller",
        "",
        simulated=True,
    ),
    _def(
        "compression.type",
        _S,
        "producer",
        one_of(*_COMPRESSION_TYPES),
        "the codec batches are stored with; `producer` keeps the producer's",
        "",
    ),
    _def(
        "compression.gzip.level",
        _I,
        "-1",
        gzip_level,
        "gzip level when compression.type is gzip",
        "",
    ),
    _def(
        "compression.lz4.level",
        _I,
        "9",
        between(1, 17),
        "lz4 level when compression.type is lz4",
        "",
    ),
    _def(
        "compression.zstd.level",
        _I,
        "3",
        between(-131072, 22),
        "zstd level when compression.type is zstd",
        "",
    ),
    _def("preallocate", _B, "false", None, "preallocate a new segment's file on disk"),
    _def(
        "message.timestamp.type",
        _S,
        "CreateTime",
        one_of(*_TIMESTAMP_TYPES),
        "`CreateTime` keeps the producer's timestamps, `LogAppendTime` stamps the leader's clock",
        simulated=True,
    ),
    _def(
        "message.timestamp.before.max.ms",
        _L,
        str(_LONG_MAX),
        at_least(0),
        "a CreateTime timestamp may be at most this far behind the broker's clock",
        simulated=True,
    ),
    _def(
        "message.timestamp.after.max.ms",
        _L,
        "3600000",
        at_least(0),
        "a CreateTime timestamp may be at most this far ahead of the broker's clock",
        simulated=True,
    ),
    _def(
        "leader.replication.throttled.replicas",
        _LIST,
        "",
        throttled_replicas,
        "`partition:broker` replicas whose leader-side replication is throttled, or `*`",
        None,
    ),
    _def(
        "follower.replication.throttled.replicas",
        _LIST,
        "",
        throttled_replicas,
        "`partition:broker` replicas whose follower-side replication is throttled, or `*`",
        None,
    ),
    _def(
        "remote.storage.enable",
        _B,
        "false",
        None,
        "tiered storage for the topic (the simulator has none: true is refused)",
        None,
    ),
    _def(
        "local.retention.ms",
        _L,
        "-2",
        at_least(-2),
        "with tiered storage, how long segments stay on the broker (-2: retention.ms)",
    ),
    _def(
        "local.retention.bytes",
        _L,
        "-2",
        at_least(-2),
        "with tiered storage, how much log stays on the broker (-2: retention.bytes)",
    ),
    _def(
        "remote.log.copy.disable",
        _B,
        "false",
        None,
        "with tiered storage, stop copying segments to remote storage",
        None,
    ),
    _def(
        "remote.log.delete.on.disable",
        _B,
        "false",
        None,
        "with tiered storage, delete remote data when it is turned off",
        None,
    ),
)


@functools.cache
def _by_name() -> dict[str, TopicConfigDef]:
    return {d.name: d for d in TOPIC_CONFIGS}


def topic_config_def(name: str) -> TopicConfigDef | None:
    return _by_name().get(name)


@functools.cache
def _broker_keys() -> dict[str, tuple[Synonym, TopicConfigDef]]:
    return {s.key: (s, d) for d in TOPIC_CONFIGS for s in d.synonyms}


#: Every broker key that is a synonym of a topic config: Kafka updates them without a restart
#: (``DynamicLogConfig``), so DescribeConfigs shows them as not read-only and AlterConfigs takes them.
BROKER_SYNONYMS: tuple[str, ...] = tuple(s.key for d in TOPIC_CONFIGS for s in d.synonyms)


def broker_key_def(key: str) -> tuple[Synonym, TopicConfigDef] | None:
    """The synonym ``key`` is, and the topic config it gives a default to."""
    return _broker_keys().get(key)


def parse_broker_value(key: str, raw: str) -> Any:
    """A broker synonym's value, checked with its own type and validator (messages name ``key``)."""
    synonym, _ = _broker_keys()[key]
    value = parse_value(key, synonym.kind, raw)
    if synonym.validator is not None:
        synonym.validator(key, value)
    return value


# ------------------------------------------------------------------------------------ checking


def validate_topic_configs(configs: Mapping[str, str]) -> dict[str, Any]:
    """The parsed values of a topic's configs, checked as Kafka's ``LogConfig.validate`` checks them:
    names first, then every value in the table's order, then the checks across values."""
    for name in configs:
        if name not in _by_name():
            raise InvalidConfig(f"Unknown topic config name: {name}", name)
    values = {d.name: d.parse(configs[d.name]) for d in TOPIC_CONFIGS if d.name in configs}
    low = values.get("min.compaction.lag.ms", 0)
    high = values.get("max.compaction.lag.ms", _LONG_MAX)
    if low > high:
        raise InvalidConfig(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
        )
    if values.get("remote.storage.enable"):
        raise InvalidConfig(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote "
            "log storage."
        )
    return values


def check_static_synonyms(props: Mapping[str, str]) -> None:
    """The topic configs' broker keys given in ``server.properties`` must be valid, as Kafka refuses to
    start otherwise; ConfigError (Kafka's message) naming the first bad one."""
    for key, raw in props.items():
        if broker_key_def(key) is not None:
            parse_broker_value(key, raw)


# ------------------------------------------------------------------------------------ resolving


@dataclass(frozen=True)
class ConfigEntry:
    """A config as DescribeConfigs shows it: the value in effect, where it comes from, and every place it
    is set (``synonyms``, highest precedence first: the first one is the value in effect)."""

    name: str
    value: str | None
    source: ConfigSource
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...]
    kind: ConfigType
    doc: str
    read_only: bool = False
    sensitive: bool = False


def resolve(
    definition: TopicConfigDef,
    topic: Mapping[str, str],
    dynamic_broker: Mapping[str, str],
    dynamic_default: Mapping[str, str],
    static: Mapping[str, str],
) -> ConfigEntry:
    """Where a topic config's value comes from: the topic's own, then each of its broker synonyms set
    for the broker, then for every broker, then in ``server.properties``, then the synonyms' defaults
    (Kafka's ``ConfigHelper.configSynonyms`` order); Kafka's default when none is set."""
    found: list[tuple[str, str | None, ConfigSource]] = []
    if definition.name in topic:
        found.append((definition.name, topic[definition.name], ConfigSource.TOPIC_CONFIG))
    for values, source in (
        (dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (static, ConfigSource.STATIC_BROKER_CONFIG),
    ):
        found += [(s.key, values[s.key], source) for s in definition.synonyms if s.key in values]
    found += [
        (s.key, s.default, ConfigSource.DEFAULT_CONFIG) for s in definition.synonyms if s.default is not None
    ]
    if not found:
        return ConfigEntry(
            definition.name,
            definition.default,
            ConfigSource.DEFAULT_CONFIG,
            (),
            definition.kind,
            definition.doc,
        )
    key, raw, source = found[0]
    if source is ConfigSource.TOPIC_CONFIG:
        value = shown_value(definition.kind, definition.parse(raw or ""))
    else:
        synonym, _ = _broker_keys()[key]
        parsed = parse_broker_value(key, raw or "")
        value = shown_value(definition.kind, parsed * synonym.factor if synonym.factor != 1 else parsed)
    return ConfigEntry(definition.name, value, source, tuple(found), definition.kind, definition.doc)
