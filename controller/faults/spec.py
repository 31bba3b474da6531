"""What a request fault is: what it matches, what it does, when it fires; its compact text and wire form.

The compact syntax (``simulator.faults``, ``placement-sim faults add``) is a list of faults separated by
``;``, each a few words separated by spaces, the action first::

    error=NOT_CONTROLLER api=CreateTopics once; delay=5000 api=Metadata client=slow; blackhole client=bad

Actions: ``error=NAME|CODE`` (answer that error), ``delay=MS`` (handle the request, answer MS ms
later on the server's clock), ``drop`` (never answer), ``close=before`` / ``close=after`` (close the connection before the
request is handled, or after it was handled, unanswered), ``blackhole`` (never answer; with
``client=``). Matches, all optional: ``api=NAME|KEY`` with an optional ``@MIN-MAX`` version range
(``api=Metadata@0-8``), ``broker=ID`` (requests its listener took) or ``broker=bootstrap``,
``client=TEXT`` (client ids containing it), ``topic=NAME``, ``partition=N``, ``group=NAME``,
``txn=ID`` (requests naming them: ``txn`` a transactional id, as InitProducerId, AddPartitionsToTxn,
EndTxn, TxnOffsetCommit and transactional Produce requests do). Triggers, one at most: ``once``, ``call=N`` (the n-th matching call), ``times=N``,
``always`` (the default), ``p=P`` (with probability P, drawn from the server's seed).

The same faults as Kafka's wire fault proxy (KAFKA-21074: injectError, disconnectOn, delayOn,
blackholeClient, armed once / onCall / times / everyTime / withProbability).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from protocol.codes import ApiKey, ErrorCode

__all__ = [
    "ACTIONS",
    "BOOTSTRAP",
    "TRIGGERS",
    "FaultSpec",
    "FaultSyntaxError",
    "api_key_of",
    "format_faults",
    "parse_faults",
]

#: What a fault does (the wire's Action).
ACTIONS = ("error", "delay", "drop", "close-before", "close-after", "blackhole")
#: When it fires (the wire's Trigger).
TRIGGERS = ("once", "on-call", "times", "always", "probability")
#: ``broker=bootstrap``: requests taken by the bootstrap listener (the wire's BrokerId -2).
BOOTSTRAP = -2
_ANY = -1


class FaultSyntaxError(ValueError):
    """A fault that cannot be understood: the message says which word and why."""


def api_key_of(text: str | int) -> ApiKey:
    """``CreateTopics``, ``CREATE_TOPICS``, ``create-topics`` or ``19`` -> ApiKey.CREATE_TOPICS."""
    if isinstance(text, int) or str(text).strip().isdigit():
        try:
            return ApiKey(int(text))
        except ValueError:
            raise FaultSyntaxError(f"no API with key {text}") from None
    wanted = str(text).replace("_", "").replace("-", "").lower()
    for key in ApiKey:
        if key.name.replace("_", "").lower() == wanted:
            return key
    raise FaultSyntaxError(f"no API named {text!r}")


def _api_name(key: int) -> str:
    return "".join(word.capitalize() for word in ApiKey(key).name.split("_"))


def _error_of(text: str | int) -> ErrorCode:
    try:
        if isinstance(text, int) or text.lstrip("-").isdigit():
            return ErrorCode(int(text))
        return ErrorCode[text.strip().upper()]
    except (KeyError, ValueError):
        raise FaultSyntaxError(f"no error code {text!r}") from None


@dataclass(frozen=True)
class FaultSpec:
    """One fault, checked. -1 and None mean "any" for the matches."""

    action: str
    error: int = 0
    delay_ms: int = 0
    api_key: int = _ANY
    min_version: int = _ANY
    max_version: int = _ANY
    #: -1 any listener, :data:`BOOTSTRAP` the bootstrap listener, else that broker's.
    broker: int = _ANY
    client: str | None = None
    topic: str | None = None
    partition: int = _ANY
    group: str | None = None
    transactional_id: str | None = None
    trigger: str = "always"
    count: int = 0
    probability: float = 0.0

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise FaultSyntaxError(f"unknown action {self.action!r} (one of {', '.join(ACTIONS)})")
        if self.trigger not in TRIGGERS:
            raise FaultSyntaxError(f"unknown trigger {self.trigger!r} (one of {', '.join(TRIGGERS)})")
        if self.action == "error":
            _error_of(self.error)
            if self.error == ErrorCode.NONE:
                raise FaultSyntaxError("an error fault needs an error code other than NONE")
        if self.action == "delay" and self.delay_ms <= 0:
            raise FaultSyntaxError(f"a delay must be a positive number of ms, not {self.delay_ms}")
        if self.action == "blackhole" and not self.client:
            raise FaultSyntaxError("blackhole needs the client id to black-hole (client=...)")
        if self.api_key != _ANY:
            api_key_of(self.api_key)
        elif self.min_version != _ANY or self.max_version != _ANY:
            raise FaultSyntaxError("a version range needs an API (api=NAME@MIN-MAX)")
        if self.min_version < _ANY or self.max_version < _ANY:
            raise FaultSyntaxError("versions are not negative")
        if _ANY not in (self.min_version, self.max_version) and self.min_version > self.max_version:
            raise FaultSyntaxError(f"version range {self.min_version}-{self.max_version} is empty")
        if self.broker < BOOTSTRAP:
            raise FaultSyntaxError(f"broker {self.broker} is not a broker id")
        if self.partition < _ANY:
            raise FaultSyntaxError(f"partition {self.partition} is not a partition")
        if self.trigger in ("on-call", "times") and self.count < 1:
            raise FaultSyntaxError(f"{self.trigger} needs a count of at least 1, not {self.count}")
        if self.trigger == "probability" and not (
            math.isfinite(self.probability) and 0.0 <= self.probability <= 1.0
        ):
            raise FaultSyntaxError(f"a probability is between 0 and 1, not {self.probability}")

    # ------------------------------------------------------------------------------------- matching

    @property
    def needs_body(self) -> bool:
        """Whether matching looks into the request (a topic, partition, group or transactional id)."""
        return (
            self.topic is not None
            or self.partition != _ANY
            or self.group is not None
            or self.transactional_id is not None
        )

    def matches_header(self, api_key: int, version: int, broker: int | None, client_id: str | None) -> bool:
        if self.api_key != _ANY and api_key != self.api_key:
            return False
        if self.min_version != _ANY and version < self.min_version:
            return False
        if self.max_version != _ANY and version > self.max_version:
            return False
        if self.broker != _ANY and (BOOTSTRAP if broker is None else broker) != self.broker:
            return False
        return self.client is None or (client_id is not None and self.client in client_id)

    # ------------------------------------------------------------------------------------- text

    def __str__(self) -> str:
        words = [
            {
                "error": f"error={_error_name(self.error)}",
                "delay": f"delay={self.delay_ms}",
                "drop": "drop",
                "close-before": "close=before",
                "close-after": "close=after",
                "blackhole": "blackhole",
            }[self.action]
        ]
        if self.api_key != _ANY:
            api = f"api={_api_name(self.api_key)}"
            if self.min_version != _ANY or self.max_version != _ANY:
                low = "" if self.min_version == _ANY else str(self.min_version)
                high = "" if self.max_version == _ANY else str(self.max_version)
                api += f"@{low}-{high}"
            words.append(api)
        if self.broker != _ANY:
            words.append(f"broker={'bootstrap' if self.broker == BOOTSTRAP else self.broker}")
        for name, value in (("client", self.client), ("topic", self.topic)):
            if value is not None:
                words.append(f"{name}={value}")
        if self.partition != _ANY:
            words.append(f"partition={self.partition}")
        if self.group is not None:
            words.append(f"group={self.group}")
        if self.transactional_id is not None:
            words.append(f"txn={self.transactional_id}")
        trigger = {
            "once": "once",
            "on-call": f"call={self.count}",
            "times": f"times={self.count}",
            "always": "",
            "probability": f"p={self.probability:g}",
        }[self.trigger]
        if trigger:
            words.append(trigger)
        return " ".join(words)

    # ------------------------------------------------------------------------------------- wire

    def to_wire(self) -> dict[str, Any]:
        """The SimulatorFaultsAdd entry (apiKey 1009)."""
        return {
            "ApiKey": self.api_key,
            "MinVersion": self.min_version,
            "MaxVersion": self.max_version,
            "BrokerId": self.broker,
            "ClientId": self.client,
            "Topic": self.topic,
            "Partition": self.partition,
            "Group": self.group,
            "TransactionalId": self.transactional_id,
            "Action": self.action,
            "Error": self.error,
            "DelayMs": self.delay_ms,
            "Trigger": self.trigger,
            "Count": self.count,
            "Probability": self.probability,
        }

    @classmethod
    def from_wire(cls, entry: Mapping[str, Any]) -> FaultSpec:
        """From a SimulatorFaultsAdd entry; FaultSyntaxError when it is not a valid fault."""
        return cls(
            action=entry["Action"],
            error=entry["Error"],
            delay_ms=entry["DelayMs"],
            api_key=entry["ApiKey"],
            min_version=entry["MinVersion"],
            max_version=entry["MaxVersion"],
            broker=entry["BrokerId"],
            client=entry["ClientId"],
            topic=entry["Topic"],
            partition=entry["Partition"],
            group=entry["Group"],
            transactional_id=entry.get("TransactionalId"),
            trigger=entry["Trigger"],
            count=entry["Count"],
            probability=entry["Probability"],
        )

    def with_trigger(self, trigger: str, count: int = 0, probability: float = 0.0) -> FaultSpec:
        return replace(self, trigger=trigger, count=count, probability=probability)


def _error_name(code: int) -> str:
    return ErrorCode(code).name


def _integer(word: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise FaultSyntaxError(f"{word}: {value!r} is not a whole number") from None


def _parse_one(text: str) -> FaultSpec:
    words = text.split()
    fields: dict[str, Any] = {}
    seen: set[str] = set()
    for word in words:
        name, sep, value = word.partition("=")
        if sep and not value:
            raise FaultSyntaxError(f"{word}: no value after =")
        where = "action" if name in ("error", "delay", "drop", "close", "blackhole") else name
        where = "trigger" if name in ("once", "call", "times", "always", "p") else where
        if where in seen:
            raise FaultSyntaxError(f"{word}: a fault has one {where}")
        seen.add(where)
        if name == "error" and sep:
            fields["action"] = "error"
            fields["error"] = int(_error_of(value))
        elif name == "delay" and sep:
            fields["action"] = "delay"
            fields["delay_ms"] = _integer(word, value)
        elif name == "close" and value in ("before", "after"):
            fields["action"] = f"close-{value}"
        elif name in ("drop", "blackhole") and not sep:
            fields["action"] = name
        elif name == "api" and sep:
            api, at, versions = value.partition("@")
            fields["api_key"] = int(api_key_of(api))
            if at:
                low, dash, high = versions.partition("-")
                if not dash:
                    low = high = versions
                fields["min_version"] = _integer(word, low) if low else _ANY
                fields["max_version"] = _integer(word, high) if high else _ANY
        elif name == "broker" and sep:
            fields["broker"] = BOOTSTRAP if value == "bootstrap" else _integer(word, value)
        elif name in ("client", "topic", "group") and sep:
            fields[name] = value
        elif name == "txn" and sep:
            fields["transactional_id"] = value
        elif name == "partition" and sep:
            fields["partition"] = _integer(word, value)
        elif name == "once" and not sep:
            fields["trigger"] = "once"
        elif name == "always" and not sep:
            fields["trigger"] = "always"
        elif name in ("call", "times") and sep:
            fields["trigger"] = "on-call" if name == "call" else "times"
            fields["count"] = _integer(word, value)
        elif name == "p" and sep:
            fields["trigger"] = "probability"
            try:
                fields["probability"] = float(value)
            except ValueError:
                raise FaultSyntaxError(f"{word}: {value!r} is not a number") from None
        else:
            raise FaultSyntaxError(f"{word!r} is not a fault word (see docs/control.md)")
    if "action" not in fields:
        raise FaultSyntaxError(
            f"{text.strip()!r} has no action (error=, delay=, drop, close=before|after, blackhole)"
        )
    return FaultSpec(**fields)


def parse_faults(text: str) -> list[FaultSpec]:
    """Faults in the compact syntax (see the module docstring), separated by ``;``; empty text: none."""
    faults = []
    for index, part in enumerate(text.split(";"), 1):
        if not part.strip():
            continue
        try:
            faults.append(_parse_one(part))
        except FaultSyntaxError as exc:
            raise FaultSyntaxError(f"fault {index}: {exc}") from None
    return faults


def format_faults(faults: list[FaultSpec]) -> str:
    """The compact text of several faults (what :func:`parse_faults` reads back)."""
    return "; ".join(str(f) for f in faults)
