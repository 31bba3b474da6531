"""Cluster files for ``--cluster FILE``: the brokers (and optionally existing assignments) as JSON.

Either an object::

    {
      "brokers": [
        {"id": 0, "rack": "/dc1/r1"},
        {"id": 1, "rack": "/dc1/r2", "fenced": true},
        {"id": 2}
      ],
      "assignments": {
        "orders": [[0, 1], [1, 2]],
        "events": {"0": [2, 0], "3": [0, 1]}
      }
    }

or just the list of brokers. A broker has an ``id`` (a non-negative integer), an optional ``rack``
(a string, or null for none) and an optional ``fenced`` flag (default false). ``assignments`` maps a
topic to its partitions' replicas, leader first: a list (partition ``i`` is entry ``i``) or an
object keyed by partition number. Replicas must name listed brokers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.placement.api import ClusterView, UsableBroker

__all__ = ["ClusterFileError", "load_cluster_file", "parse_cluster"]

_BROKER_KEYS = {"id", "rack", "fenced"}
_TOP_KEYS = {"brokers", "assignments"}


class ClusterFileError(ValueError):
    """The cluster file cannot be read or does not describe a cluster; the message says where."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _broker(entry: Any, where: str) -> UsableBroker:
    if _is_int(entry):
        entry = {"id": entry}
    if not isinstance(entry, dict):
        raise ClusterFileError(f'{where}: expected an object like {{"id": 0, "rack": "r1"}}, got {entry!r}')
    unknown = sorted(set(entry) - _BROKER_KEYS)
    if unknown:
        raise ClusterFileError(f"{where}: unknown key(s) {unknown}; a broker has id, rack and fenced")
    if "id" not in entry:
        raise ClusterFileError(f'{where}: missing "id"')
    broker_id = entry["id"]
    if not _is_int(broker_id) or not 0 <= broker_id <= 2**31 - 1:
        raise ClusterFileError(f'{where}: "id" must be a non-negative integer, got {broker_id!r}')
    rack = entry.get("rack")
    if rack is not None and (not isinstance(rack, str) or not rack):
        raise ClusterFileError(f'{where}: "rack" must be a non-empty string or null, got {rack!r}')
    fenced = entry.get("fenced", False)
    if not isinstance(fenced, bool):
        raise ClusterFileError(f'{where}: "fenced" must be true or false, got {fenced!r}')
    return UsableBroker(broker_id, rack, fenced)


def _replicas(value: Any, where: str, known: set[int]) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or not all(_is_int(r) for r in value):
        raise ClusterFileError(f"{where}: expected a non-empty list of broker ids, got {value!r}")
    unknown = [r for r in value if r not in known]
    if unknown:
        raise ClusterFileError(f"{where}: unknown broker id(s) {unknown}")
    if len(set(value)) != len(value):
        raise ClusterFileError(f"{where}: a broker appears twice in {value}")
    return tuple(value)


def _assignments(value: Any, where: str, known: set[int]) -> dict[tuple[str, int], tuple[int, ...]]:
    if not isinstance(value, dict):
        raise ClusterFileError(f"{where}: expected an object mapping topics to partitions, got {value!r}")
    result: dict[tuple[str, int], tuple[int, ...]] = {}
    for topic, partitions in value.items():
        at = f"{where}[{topic!r}]"
        if isinstance(partitions, list):
            items = list(enumerate(partitions))
        elif isinstance(partitions, dict):
            items = []
            for key, replicas in partitions.items():
                try:
                    partition = int(key)
                except ValueError:
                    raise ClusterFileError(f"{at}: partition {key!r} is not a number") from None
                if partition < 0:
                    raise ClusterFileError(f"{at}: partition {partition} is negative")
                items.append((partition, replicas))
        else:
            raise ClusterFileError(
                f"{at}: expected a list of replica lists or an object keyed by partition, got {partitions!r}"
            )
        for partition, replicas in items:
            result[(topic, partition)] = _replicas(replicas, f"{at}[{partition}]", known)
    return result


def parse_cluster(data: Any, source: str = "<cluster>") -> ClusterView:
    """The cluster described by already-decoded JSON ``data``; errors start with ``source``."""
    if isinstance(data, list):
        data = {"brokers": data}
    if not isinstance(data, dict):
        raise ClusterFileError(f'{source}: expected an object with "brokers" or a list of brokers')
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ClusterFileError(f'{source}: unknown key(s) {unknown}; expected "brokers" and "assignments"')
    entries = data.get("brokers")
    if not isinstance(entries, list) or not entries:
        raise ClusterFileError(f'{source}: "brokers" must be a non-empty list')
    brokers: list[UsableBroker] = []
    seen: set[int] = set()
    for index, entry in enumerate(entries):
        broker = _broker(entry, f"{source}: brokers[{index}]")
        if broker.id in seen:
            raise ClusterFileError(f"{source}: brokers[{index}]: broker id {broker.id} appears twice")
        seen.add(broker.id)
        brokers.append(broker)
    assignments = _assignments(data.get("assignments", {}), f"{source}: assignments", seen)
    return ClusterView(tuple(brokers), assignments)


def load_cluster_file(path: str | Path) -> ClusterView:
    """Reads a cluster file (JSON, see the module's documentation); ClusterFileError names what is wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClusterFileError(f"cannot read cluster file {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClusterFileError(
            f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    return parse_cluster(data, str(path))
