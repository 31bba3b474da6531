"""Replica assignment files (the format of Fluvio's Replica Assignment documentation): a JSON list of ``{"id": N, "replicas": [broker ids]}``.

::

    [{"id": 0, "replicas": [0, 1, 2]},
     {"id": 1, "replicas": [1, 2, 0]}]

This module only reads the file's shape; the rules on ids and replicas (start at 0, in sequence, same
count, no repeats, registered brokers) are the server's, so that the client sees the server's messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["AssignmentFileError", "parse_replica_assignment", "read_replica_assignment"]


class AssignmentFileError(ValueError):
    """The file cannot be read or is not a replica map; the message names the file and the entry."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_replica_assignment(text: str, source: str = "<assignment>") -> list[tuple[int, list[int]]]:
    """(partition id, replicas) pairs in file order."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AssignmentFileError(f"{source}: not JSON: {exc}") from None
    if not isinstance(data, list):
        raise AssignmentFileError(f'{source}: expected a list like [{{"id": 0, "replicas": [0, 1]}}]')
    if not data:
        raise AssignmentFileError(f"{source}: no assigned partitions found")
    result: list[tuple[int, list[int]]] = []
    for index, entry in enumerate(data):
        where = f"{source}: entry {index}"
        if not isinstance(entry, dict) or set(entry) != {"id", "replicas"}:
            raise AssignmentFileError(f'{where}: expected {{"id": N, "replicas": [...]}}, got {entry!r}')
        partition_id, replicas = entry["id"], entry["replicas"]
        if not _is_int(partition_id):
            raise AssignmentFileError(f'{where}: "id" must be an integer, got {partition_id!r}')
        if not isinstance(replicas, list) or not all(_is_int(r) for r in replicas):
            raise AssignmentFileError(f'{where}: "replicas" must be a list of broker ids, got {replicas!r}')
        result.append((partition_id, replicas))
    return result


def read_replica_assignment(path: str | Path) -> list[tuple[int, list[int]]]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AssignmentFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise AssignmentFileError(f"{path} is not UTF-8 text: {exc}") from None
    return parse_replica_assignment(text, str(path))
