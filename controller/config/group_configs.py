"""Kafka's group configs (the GROUP config resource, type 32): every key of Kafka 4.4's ``GroupConfig`` with
its type, default, validator, broker synonym and the broker-level bounds a value must stay within.

A group config is set per group id with IncrementalAlterConfigs (or AlterConfigs) and shown by
DescribeConfigs; a group that sets none takes the broker's value of the key's synonym
(``group.share.record.lock.duration.ms`` for ``share.record.lock.duration.ms``), else Kafka's default.
Checks follow Kafka's ``GroupConfig.validate`` in its order and wording: unknown names (``Unknown group
config name: x``), then the ``ConfigDef`` parse and validator of each value (``Invalid value 500 for
configuration share.record.lock.duration.ms: Value must be at least 1000``), then the broker's bounds of
the values given (``share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.``, the
bounds being broker keys such as ``group.share.min.record.lock.duration.ms``), then a session timeout
above its heartbeat interval, then the dead-letter topic's name.

Keys Kafka marks internal (``consumer.assignor.offload.enable``, ...) are accepted but not described, as
Kafka does. This module knows only the rules; the values set live in the cluster
(:meth:`controller.cluster.Cluster.group_config`), the one place they are read from.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.config.topic_configs import (
    ConfigEntry,
    ConfigSource,
    ConfigType,
    InvalidConfig,
    Validator,
    at_least,
    one_of,
    parse_value,
    shown_value,
)

__all__ = [
    "GROUP_CONFIGS",
    "GroupConfigDef",
    "group_config_def",
    "parse_duration_ms",
    "resolve_group_config",
    "validate_group_configs",
]

# ISO-8601 durations as Java's ``Duration.parse`` reads them (``PnDTnHnMn.nS``), case-insensitive.
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int | None:
    """Milliseconds of an ISO-8601 duration as Java's ``Duration.parse`` reads it, or None when it does not
    parse (``P1DT2H``, ``PT0.5S``; a ``T`` must be followed by at least one part)."""
    m = _DURATION.fullmatch(text)
    if m is None or (m.group(3) is not None and m.group(3).upper() == "T"):
        return None
    sign, days, _, hours, minutes, seconds, fraction = m.groups()
    if days is None and m.group(3) is None:
        return None
    total_ms = (
        int(days or 0) * 86_400_000
        + int(hours or 0) * 3_600_000
        + int(minutes or 0) * 60_000
        + int(seconds or 0) * 1000
    )
    if fraction:
        frac_ms = int((fraction + "000")[:3])
        total_ms += -frac_ms if (seconds or "").startswith("-") else frac_ms
    return -total_ms if sign == "-" else total_ms


def _share_auto_offset_reset(name: str, value: Any) -> None:
    """Kafka's ``ShareGroupAutoOffsetResetStrategy.Validator``: ``earliest``, ``latest`` or
    ``by_duration:<ISO-8601 duration>``, not negative."""
    text = str(value).strip().lower()
    if text in ("earliest", "latest"):
        return
    if text.startswith("by_duration:"):
        duration = parse_duration_ms(text[len("by_duration:") :])
        if duration is not None and duration >= 0:
            return
    raise InvalidConfig(
        f"Invalid value {value} for configuration {name}: Invalid value `{value}` for configuration {name}. "
        "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        name,
    )


@dataclass(frozen=True)
class Bound:
    """A broker key that bounds a group config's value, and that key's default."""

    key: str
    default: int


@dataclass(frozen=True)
class GroupConfigDef:
    """One group config: its type, Kafka's default, validator, broker synonym, bounds and meaning."""

    name: str
    kind: ConfigType
    #: The default as DescribeConfigs shows it (the synonym's default where there is one).
    default: str
    validator: Validator | None
    doc: str
    #: The broker key whose value a group that sets none takes (None: Kafka's default only).
    synonym: str | None = None
    #: Kafka marks it internal: accepted, never described.
    internal: bool = False
    minimum: Bound | None = None
    maximum: Bound | None = None

    def parse(self, raw: str) -> Any:
        value = parse_value(self.name, self.kind, raw)
        if self.validator is not None:
            self.validator(self.name, value)
        return value


_B, _S, _I, _L, _LIST = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.LIST,
)


def _bounded(family: str, what: str, low: int, high: int) -> dict[str, Bound]:
    return {
        "minimum": Bound(f"group.{family}.min.{what}", low),
        "maximum": Bound(f"group.{family}.max.{what}", high),
    }


#: Every group config of Kafka 4.4, in ``GroupConfig.CONFIG_DEF``'s order.
GROUP_CONFIGS: tuple[GroupConfigDef, ...] = (
    GroupConfigDef(
        "consumer.session.timeout.ms",
        _I,
        "45000",
        at_least(1),
        "The timeout to detect client failures when using the consumer group protocol.",
        "group.consumer.session.timeout.ms",
        **_bounded("consumer", "session.timeout.ms", 45000, 60000),
    ),
    GroupConfigDef(
        "consumer.heartbeat.interval.ms",
        _I,
        "5000",
        at_least(1),
        "The heartbeat interval given to the members of a consumer group.",
        "group.consumer.heartbeat.interval.ms",
        **_bounded("consumer", "heartbeat.interval.ms", 5000, 15000),
    ),
    GroupConfigDef(
        "consumer.assignment.interval.ms",
        _I,
        "1000",
        at_least(0),
        "The interval between assignment updates for a consumer group.",
        "group.consumer.assignment.interval.ms",
        **_bounded("consumer", "assignment.interval.ms", 0, 15000),
    ),
    GroupConfigDef(
        "consumer.assignor.offload.enable",
        _B,
        "true",
        None,
        "Whether to offload consumer group assignment to a group coordinator background thread.",
        "group.consumer.assignor.offload.enable",
        internal=True,
    ),
    GroupConfigDef(
        "share.session.timeout.ms",
        _I,
        "45000",
        at_least(1),
        "The timeout to detect client failures when using the share group protocol.",
        "group.share.session.timeout.ms",
        **_bounded("share", "session.timeout.ms", 45000, 60000),
    ),
    GroupConfigDef(
        "share.heartbeat.interval.ms",
        _I,
        "5000",
        at_least(1),
        "The heartbeat interval given to the members of a share group.",
        "group.share.heartbeat.interval.ms",
        **_bounded("share", "heartbeat.interval.ms", 5000, 15000),
    ),
    GroupConfigDef(
        "share.record.lock.duration.ms",
        _I,
        "30000",
        at_least(1000),
        "The record acquisition lock duration in milliseconds for share groups.",
        "group.share.record.lock.duration.ms",
        **_bounded("share", "record.lock.duration.ms", 15000, 60000),
    ),
    GroupConfigDef(
        "share.delivery.count.limit",
        _I,
        "5",
        at_least(2),
        "The maximum number of delivery attempts for a record delivered to a share group.",
        "group.share.delivery.count.limit",
        **_bounded("share", "delivery.count.limit", 2, 10),
    ),
    GroupConfigDef(
        "share.partition.max.record.locks",
        _I,
        "2000",
        at_least(100),
        "Share-group record lock limit per share-partition.",
        "group.share.partition.max.record.locks",
        minimum=Bound("group.share.min.partition.max.record.locks", 100),
        maximum=Bound("group.share.max.partition.max.record.locks", 4000),
    ),
    GroupConfigDef(
        "share.auto.offset.reset",
        _S,
        "latest",
        _share_auto_offset_reset,
        "The strategy to initialize the share-partition start offset. <ul><li>earliest: automatically reset "
        "the offset to the earliest offset</li><li>latest: automatically reset the offset to the latest "
        "offset</li><li>by_duration:&lt;duration&gt;: automatically reset the offset to a configured "
        "duration from the current timestamp. &lt;duration&gt; must be specified in ISO8601 format "
        "(PnDTnHnMn.nS). Negative duration is not allowed.</li><li>anything else: throw exception to the "
        "share consumer.</li></ul>",
    ),
    GroupConfigDef(
        "share.isolation.level",
        _S,
        "read_uncommitted",
        one_of("read_committed", "read_uncommitted"),
        'Controls how to read records written transactionally. If set to "read_committed", the share '
        "group will only deliver transactional records which have been committed. If set to "
        '"read_uncommitted", the share group will return all messages, even transactional messages which '
        "have been aborted. Non-transactional records will be returned unconditionally in either mode.",
    ),
    GroupConfigDef(
        "share.renew.acknowledge.enable",
        _B,
        "true",
        None,
        "Whether the renew acknowledge type is enabled for the share group.",
    ),
    GroupConfigDef(
        "share.assignment.interval.ms",
        _I,
        "1000",
        at_least(0),
        "The interval between assignment updates for a share group.",
        "group.share.assignment.interval.ms",
        **_bounded("share", "assignment.interval.ms", 0, 15000),
    ),
    GroupConfigDef(
        "share.assignor.offload.enable",
        _B,
        "true",
        None,
        "Whether to offload share group assignment to a group coordinator background thread.",
        "group.share.assignor.offload.enable",
        internal=True,
    ),
    GroupConfigDef(
        "streams.session.timeout.ms",
        _I,
        "45000",
        at_least(1),
        "The timeout to detect client failures when using the streams group protocol.",
        "group.streams.session.timeout.ms",
        **_bounded("streams", "session.timeout.ms", 45000, 60000),
    ),
    GroupConfigDef(
        "streams.heartbeat.interval.ms",
        _I,
        "5000",
        at_least(1),
        "The heartbeat interval given to the members.",
        "group.streams.heartbeat.interval.ms",
        **_bounded("streams", "heartbeat.interval.ms", 5000, 15000),
    ),
    GroupConfigDef(
        "streams.num.standby.replicas",
        _I,
        "0",
        at_least(0),
        "The number of standby replicas for each task.",
        "group.streams.num.standby.replicas",
        maximum=Bound("group.streams.max.standby.replicas", 2),
    ),
    GroupConfigDef(
        "streams.initial.rebalance.delay.ms",
        _I,
        "3000",
        at_least(0),
        "The amount of time the group coordinator will wait for more streams clients to join a new group "
        "before performing the first rebalance. A longer delay means potentially fewer rebalances.",
        "group.streams.initial.rebalance.delay.ms",
    ),
    GroupConfigDef(
        "streams.assignment.interval.ms",
        _I,
        "1000",
        at_least(0),
        "The interval between assignment updates for a streams group.",
        "group.streams.assignment.interval.ms",
        **_bounded("streams", "assignment.interval.ms", 0, 15000),
    ),
    GroupConfigDef(
        "streams.assignor.offload.enable",
        _B,
        "true",
        None,
        "Whether to offload streams group assignment to a group coordinator background thread.",
        "group.streams.assignor.offload.enable",
        internal=True,
    ),
    GroupConfigDef(
        "streams.task.offset.interval.ms",
        _I,
        "60000",
        at_least(1),
        "The interval in which the warmup task changelog offsets on a client are updated on the broker.",
        "group.streams.task.offset.interval.ms",
        internal=True,
        minimum=Bound("group.streams.min.task.offset.interval.ms", 15000),
    ),
    GroupConfigDef(
        "streams.num.warmup.replicas",
        _I,
        "2",
        at_least(0),
        "The maximum number of warmup task replicas.",
        "group.streams.num.warmup.replicas",
        internal=True,
        maximum=Bound("group.streams.max.warmup.replicas", 20),
    ),
    GroupConfigDef(
        "streams.rack.aware.assignment.tags",
        _LIST,
        "",
        None,
        "List of client tag keys used to distribute standby replicas across Kafka Streams instances. When "
        "configured, and the used broker-side assignor supports it, it will make a best-effort to "
        "distribute standby tasks over each client tag dimension.",
        "group.streams.rack.aware.assignment.tags",
    ),
    GroupConfigDef(
        "streams.acceptable.recovery.lag",
        _L,
        "10000",
        at_least(0),
        "The maximum acceptable lag (number of offsets to catch up) for a client to be considered caught-up "
        "enough to receive an active task assignment.",
        "group.streams.acceptable.recovery.lag",
        internal=True,
    ),
    GroupConfigDef(
        "streams.assignor.name",
        _S,
        "sticky",
        None,
        "The task assignor to use for this streams group, selected by short name from the assignors "
        "registered via the broker configuration group.streams.assignors. When unset, the group defaults to "
        "the first assignor configured in the broker's group.streams.assignors setting.",
        "group.streams.assignors",
    ),
    GroupConfigDef(
        "errors.deadletterqueue.topic.name",
        _S,
        "",
        None,
        "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. If "
        "blank (the default), the group does not have a DLQ topic.",
    ),
    GroupConfigDef(
        "errors.deadletterqueue.copy.record.enable",
        _B,
        "false",
        None,
        "When writing onto the dead-letter queue topic, whether to copy the original record onto the DLQ "
        "topic, or just write a record containing the context information headers.",
    ),
)

#: Pairs whose session timeout must be above their heartbeat interval (Kafka's cross-field check).
_SESSION_OVER_HEARTBEAT = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)


@functools.cache
def _by_name() -> dict[str, GroupConfigDef]:
    return {d.name: d for d in GROUP_CONFIGS}


def group_config_def(name: str) -> GroupConfigDef | None:
    return _by_name().get(name)


def _broker_int(static: Mapping[str, str], key: str, default: int) -> int:
    raw = static.get(key)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw.strip())
    except ValueError:
        return default


def broker_default(definition: GroupConfigDef, static: Mapping[str, str]) -> tuple[str, ConfigSource] | None:
    """The broker's value of the key's synonym in ``server.properties`` and its source, if set there."""
    if definition.synonym is not None and definition.synonym in static:
        raw = static[definition.synonym]
        if definition.synonym == "group.streams.assignors":  # a list: the first assignor is the default
            raw = raw.split(",")[0].strip()
        return raw, ConfigSource.STATIC_BROKER_CONFIG
    return None


def validate_group_configs(configs: Mapping[str, str], static: Mapping[str, str]) -> None:
    """A group's configs as they would be after a change (only those set): InvalidConfig with Kafka's
    message when one is not allowed (see the module docstring)."""
    for name in configs:
        if name not in _by_name():
            raise InvalidConfig(f"Unknown group config name: {name}", name)
    parsed = {name: _by_name()[name].parse(raw) for name, raw in configs.items()}
    for definition in GROUP_CONFIGS:
        if definition.name not in parsed or definition.kind is not ConfigType.INT:
            continue
        value = parsed[definition.name]
        low = (
            _broker_int(static, definition.minimum.key, definition.minimum.default)
            if definition.minimum
            else None
        )
        high = (
            _broker_int(static, definition.maximum.key, definition.maximum.default)
            if definition.maximum
            else None
        )
        if low is not None and high is not None:
            if value < low or value > high:
                raise InvalidConfig(
                    f"{definition.name} must be in the range {low} to {high} inclusive.", definition.name
                )
        elif high is not None and value > high:
            raise InvalidConfig(f"{definition.name} must be less than or equal to {high}", definition.name)
        elif low is not None and value < low:
            raise InvalidConfig(f"{definition.name} must be greater than or equal to {low}", definition.name)
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if session not in parsed and heartbeat not in parsed:
            continue
        session_ms = parsed[session] if session in parsed else _effective_int(session, static)
        heartbeat_ms = parsed[heartbeat] if heartbeat in parsed else _effective_int(heartbeat, static)
        if session_ms <= heartbeat_ms:
            raise InvalidConfig(f"{session} must be greater than {heartbeat}", session)
    dlq = parsed.get("errors.deadletterqueue.topic.name")
    if dlq and dlq.startswith("__"):
        raise InvalidConfig(
            "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
            "errors.deadletterqueue.topic.name",
        )


def _effective_int(name: str, static: Mapping[str, str]) -> int:
    definition = _by_name()[name]
    found = broker_default(definition, static)
    return int(found[0]) if found is not None else int(definition.default)


def resolve_group_config(
    definition: GroupConfigDef, group: Mapping[str, str], static: Mapping[str, str]
) -> ConfigEntry:
    """A group config as DescribeConfigs shows it: the group's own value (``GROUP_CONFIG``), else its
    synonym in ``server.properties``, else the default; synonyms list each place in that order."""
    found: list[tuple[str, str | None, ConfigSource]] = []
    if definition.name in group:
        raw = shown_value(definition.kind, definition.parse(group[definition.name]))
        found.append((definition.name, raw, ConfigSource.GROUP_CONFIG))
    broker = broker_default(definition, static)
    synonym = definition.synonym or definition.name
    if broker is not None:
        found.append((synonym, broker[0], broker[1]))
    found.append((synonym, definition.default, ConfigSource.DEFAULT_CONFIG))
    _, value, source = found[0]
    return ConfigEntry(definition.name, value, source, tuple(found), definition.kind, definition.doc)
