"""Answers made comparable: what differs between any two clusters (ids, addresses, clock times, the run's
name prefix) replaced by what it stands for, then flattened into ``path -> value``.

A list of structs is keyed by its identifying field (``Topics[orders]``, ``Partitions[0]``,
``ApiKeys[18]``) so that order does not matter where Kafka gives it no meaning; other lists keep their
positions (``Replicas[0]``). Paths are what the fidelity table's patterns match.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.differential.batches import parse_batches

__all__ = ["ABSENT", "Names", "flatten", "normalize"]

ABSENT = "<absent>"
ZERO_UUID = uuid.UUID(int=0)

#: Fields that identify a struct in a list, in order of preference.
KEY_FIELDS = (
    "Name",
    "ResourceName",
    "ApiKey",
    "PartitionIndex",
    "Index",
    "Partition",
    "PartitionId",
    "NodeId",
    "BrokerId",
    "GroupId",
    "Topic",
    "TopicName",
    "Path",
    "LogDir",
)
#: Fields whose values depend on timing or load alone.
DROPPED = frozenset({"ThrottleTimeMs"})
#: Fields naming a broker in a place where Kafka's KRaft answers any live broker.
ANY_BROKER = frozenset({"ControllerId"})
_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_BASE64_ID = re.compile(r"[A-Za-z0-9_-]{22}")


@dataclass
class Names:
    """What one cluster's own values stand for: learned from its answers, applied to them."""

    prefix: str = ""
    cluster_id: str | None = None
    topic_ids: dict[uuid.UUID, str] = field(default_factory=dict)  # id -> base name
    producer_ids: dict[int, str] = field(default_factory=dict)  # id -> label
    member_ids: dict[str, str] = field(default_factory=dict)  # member id -> label
    ports: dict[int, int] = field(default_factory=dict)  # port -> broker id
    brokers: frozenset[int] = frozenset()
    #: Timestamps the harness wrote into records: kept as they are; other times near now are "<now>".
    client_times: set[int] = field(default_factory=set)

    def begin(self, prefix: str) -> None:
        """A new sequence: its prefix, and nothing learned in the ones before (their topics, producers and
        members are gone with them; kept, they made each answer's stripping slower as a run went on)."""
        self.prefix = prefix
        self.topic_ids.clear()
        self.producer_ids.clear()
        self.member_ids.clear()
        self.client_times.clear()

    def strip(self, text: str) -> str:
        for member, label in self.member_ids.items():  # first: a member id holds a UUID of its own
            text = text.replace(member, label)
        if self.prefix:
            text = text.replace(self.prefix, "")
        for topic_id, name in self.topic_ids.items():
            text = text.replace(str(topic_id), f"<id:{name}>")
            text = text.replace(_base64(topic_id), f"<id:{name}>")
        for port, broker in self.ports.items():
            text = text.replace(f":{port}", f":<port:{broker}>")
        if self.cluster_id:
            text = text.replace(self.cluster_id, "<cluster>")
        return text


def _base64(value: uuid.UUID) -> str:
    import base64

    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


#: Answer fields that can hold a timestamp the harness wrote into a record (ListOffsets' Timestamp,
#: DescribeProducers' LastTimestamp): such a time is kept as it is; a broker's own times (a transaction's
#: start, LogAppendTime) are "<now>" even when they fall on the same millisecond as a record's.
ECHOED_TIMES = frozenset({"Timestamp", "MaxTimestamp", "LastTimestamp"})


def _near_now(value: int) -> bool:
    return abs(value - int(time.time() * 1000)) < 6 * 3600 * 1000


def normalize(value: Any, names: Names, key: str = "") -> Any:
    """``value`` (a decoded answer or part of it) with every cluster-specific value replaced."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if k in DROPPED:
                continue
            out[k] = normalize(v, names, k)
        return out
    if isinstance(value, list | tuple):
        return [normalize(v, names, key) for v in value]
    if isinstance(value, uuid.UUID):
        if value == ZERO_UUID:
            return "<zero-id>"
        return f"<id:{names.topic_ids[value]}>" if value in names.topic_ids else "<unknown-id>"
    if isinstance(value, bytes | bytearray | memoryview):
        if key == "Records":
            return _records(parse_batches(bytes(value)), names)
        return bytes(value)
    if isinstance(value, str):
        if key == "ClusterId":
            return "<cluster>"
        if key == "LogDir":
            return "<log-dir>"
        return names.strip(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    if key == "Port" and value in names.ports:
        return f"<port:{names.ports[value]}>"
    if key in ANY_BROKER and value in names.brokers:
        return "<a broker>"
    if key == "ProducerId" and value in names.producer_ids:
        return names.producer_ids[value]
    if ("Timestamp" in key or key.endswith("TimeMs") or key.endswith("Time")) and value > 10**12:
        if not (key in ECHOED_TIMES and value in names.client_times) and _near_now(value):
            return "<now>"
    return value


def _records(batches: Any, names: Names) -> Any:
    if not isinstance(batches, list):
        return batches
    for batch in batches:
        if batch.get("LogAppendTime"):
            for k in ("BaseTimestamp", "MaxTimestamp"):
                if isinstance(batch.get(k), int) and _near_now(batch[k]):
                    batch[k] = "<now>"
            if isinstance(batch.get("Records"), list):
                for record in batch["Records"]:
                    record["TimestampDelta"] = "<any>"
    return normalize(batches, names)


def _key_of(items: list[Any]) -> str | None:
    """The identifying field of a list of structs (its values may repeat: see :func:`_labels`)."""
    if not items or not all(isinstance(i, Mapping) for i in items):
        return None
    if all("ResourceName" in i and "ResourceType" in i for i in items):
        return "ResourceName"
    if all("Key" in i and "Host" in i for i in items):  # FindCoordinator's coordinators, by key
        return "Key"
    for k in KEY_FIELDS:
        if all(k in i for i in items):
            return k
    return None


def _labels(items: list[Mapping[str, Any]], key: str) -> list[str]:
    """Each item's label: its key's value (a resource's type and name), and ``~2``, ``~3`` ... on the
    second and later items with the same value (a request that names one thing twice)."""
    seen: dict[str, int] = {}
    labels = []
    for item in items:
        label = _key_text(item[key])
        if key == "ResourceName" and "ResourceType" in item:
            label = f"{item['ResourceType']}:{label}"
        seen[label] = seen.get(label, 0) + 1
        labels.append(label if seen[label] == 1 else f"{label}~{seen[label]}")
    return labels


def _key_text(value: Any) -> str:
    return "null" if value is None else str(value)


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """``path -> leaf`` for a normalized answer: ``Topics[orders].Partitions[0].LeaderId``."""
    out: dict[str, Any] = {}
    if isinstance(value, Mapping):
        if not value:
            out[path or "."] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(value, list):
        if not value:
            out[path] = []
            return out
        key = _key_of(value)
        if key is not None:
            for item, label in zip(value, _labels(value, key), strict=True):
                out.update(flatten(item, f"{path}[{label}]"))
        elif all(not isinstance(i, Mapping | list) for i in value):
            out[path] = list(value)
        else:
            for index, item in enumerate(value):
                out.update(flatten(item, f"{path}[#{index}]"))
        return out
    out[path] = value
    return out


def differences(kafka: Mapping[str, Any], sim: Mapping[str, Any]) -> Iterable[tuple[str, Any, Any]]:
    """``(path, kafka's value, the simulator's value)`` for every path where they differ."""
    for path in sorted(set(kafka) | set(sim)):
        a, b = kafka.get(path, ABSENT), sim.get(path, ABSENT)
        if a != b:
            yield path, a, b
