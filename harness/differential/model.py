"""What a differential sequence knows of the cluster (from the real Kafka's answers: the oracle), and the
placeholders a generated request holds for what each cluster names its own way.

A generated request is a template: :class:`Topic` becomes the sequence's prefixed topic name,
:class:`TopicId` each cluster's own id of that topic, :class:`Pid` and :class:`Member` each cluster's own
producer and member id for a label, :class:`Group` the prefixed group id, :class:`Now` a wall-clock time
chosen once for both clusters.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from harness.differential.batches import BatchSpec, build
from harness.differential.normalize import Names

__all__ = [
    "Group",
    "GroupModel",
    "Member",
    "Model",
    "Now",
    "Pid",
    "ProducerModel",
    "Topic",
    "TopicId",
    "Records",
    "TopicModel",
    "resolve",
]

UNKNOWN_TOPIC_ID = uuid.UUID("00000000-0000-4000-8000-00000000dead")


@dataclass(frozen=True)
class Topic:
    name: str


@dataclass(frozen=True)
class TopicId:
    name: str


@dataclass(frozen=True)
class Pid:
    label: str


@dataclass(frozen=True)
class Member:
    label: str


@dataclass(frozen=True)
class Group:
    name: str


@dataclass(frozen=True)
class Now:
    """A wall-clock time ``delta_ms`` from the moment the step is sent (the same for both clusters)."""

    delta_ms: int = 0


@dataclass(frozen=True)
class Records:
    """A Produce request's records: batches whose producer id (:class:`Pid`) and base timestamp
    (:class:`Now`) may be placeholders."""

    batches: tuple[BatchSpec, ...]


@dataclass
class TopicModel:
    name: str
    partitions: int
    replicas: list[list[int]]
    configs: dict[str, str] = field(default_factory=dict)


@dataclass
class ProducerModel:
    label: str
    epoch: int = 0
    sequences: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass
class GroupModel:
    name: str
    members: dict[str, int] = field(default_factory=dict)  # label -> generation
    protocol_type: str = "consumer"


@dataclass
class Model:
    """The state a sequence's generators draw from; learned from Kafka's answers."""

    cluster: str
    brokers: list[int]
    topics: dict[str, TopicModel] = field(default_factory=dict)
    #: Records acknowledged per partition (the next offset a producer's batch gets, as far as known).
    log_end: dict[tuple[str, int], int] = field(default_factory=dict)
    log_start: dict[tuple[str, int], int] = field(default_factory=dict)
    producers: dict[str, ProducerModel] = field(default_factory=dict)
    groups: dict[str, GroupModel] = field(default_factory=dict)
    #: Transactional producers by transactional id (the sequence's own, unprefixed), once Kafka gave one
    #: an id; the partitions a transaction has added are in :attr:`in_transaction`.
    transactional: dict[str, ProducerModel] = field(default_factory=dict)
    in_transaction: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    #: Brokers stopped on purpose, by mode.
    failed: dict[int, str] = field(default_factory=dict)
    #: Leaders and epochs as Kafka last told them at a settled point.
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    next_label: int = 0

    def label(self, kind: str) -> str:
        self.next_label += 1
        return f"<{kind}:{self.next_label}>"

    def leader(self, topic: str, partition: int) -> int:
        if (topic, partition) in self.leaders:
            return self.leaders[(topic, partition)]
        replicas = self.topics[topic].replicas
        return (
            replicas[partition][0] if partition < len(replicas) and replicas[partition] else self.brokers[0]
        )

    def live_brokers(self) -> list[int]:
        return [b for b in self.brokers if b not in self.failed]


def resolve(template: Any, names: Names, side_ids: dict[str, Any], now_ms: int) -> Any:
    """``template`` with its placeholders made one cluster's values (``side_ids``: that cluster's
    ``topic ids by name``, ``producer ids by label``, ``member ids by label``)."""
    if isinstance(template, dict):
        return {k: resolve(v, names, side_ids, now_ms) for k, v in template.items()}
    if isinstance(template, list | tuple):
        return [resolve(v, names, side_ids, now_ms) for v in template]
    if isinstance(template, Topic):
        return names.prefix + template.name
    if isinstance(template, Group):
        return names.prefix + template.name
    if isinstance(template, TopicId):
        return side_ids["topics"].get(template.name, UNKNOWN_TOPIC_ID)
    if isinstance(template, Pid):
        return side_ids["producers"].get(template.label, 987654)
    if isinstance(template, Member):
        return side_ids["members"].get(template.label, "unknown-member")
    if isinstance(template, Now):
        return now_ms + template.delta_ms
    if isinstance(template, Records):
        out = []
        for spec in template.batches:
            fields = {
                "producer_id": resolve(spec.producer_id, names, side_ids, now_ms),
                "base_timestamp": resolve(spec.base_timestamp, names, side_ids, now_ms),
            }
            if spec.max_timestamp is not None:
                fields["max_timestamp"] = resolve(spec.max_timestamp, names, side_ids, now_ms)
            concrete = spec.with_(**fields)
            names.client_times.add(concrete.base_timestamp)
            names.client_times.update(concrete.base_timestamp + r.timestamp_delta for r in concrete.records)
            if concrete.max_timestamp is not None:
                names.client_times.add(concrete.max_timestamp)
            out.append(build(concrete))
        return b"".join(out)
    if callable(template):
        return template(names, side_ids, now_ms)
    return template


def wall_ms() -> int:
    return int(time.time() * 1000)
