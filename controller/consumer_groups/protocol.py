"""The embedded consumer protocol of classic members (the ``consumer`` protocol type): the
``ConsumerProtocolSubscription`` a member sends as its JoinGroup metadata and the
``ConsumerProtocolAssignment`` its SyncGroup answer carries, each an int16 version then the message of
that version (``schemas/ConsumerProtocol*.json``). A version newer than the newest known is read as the
newest known, as Kafka's clients and coordinator read it (versions only add fields at the end)."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from protocol import DecodeError, load_schemas

__all__ = ["read_assignment", "read_subscription", "write_assignment", "write_subscription"]

_NEWEST = 3
_VERSION = struct.Struct(">h")


def _read(name: str, data: bytes) -> dict[str, Any]:
    if len(data) < 2:
        raise ValueError(f"{name}: {len(data)} bytes is too short")
    (version,) = _VERSION.unpack_from(data)
    if version < 0:
        raise ValueError(f"{name}: version {version}")
    try:
        decoded, _ = load_schemas().message(name).decode_from(data, 2, min(version, _NEWEST))
    except (DecodeError, ValueError) as exc:
        raise ValueError(f"{name}: {exc}") from None
    return decoded


def read_subscription(data: bytes) -> dict[str, Any]:
    """``Topics``, ``UserData``, ``OwnedPartitions`` (``[{Topic, Partitions}]``, empty before v1),
    ``GenerationId``, ``RackId``; ValueError when it does not read."""
    decoded = _read("ConsumerProtocolSubscription", data)
    decoded.setdefault("OwnedPartitions", [])
    return decoded


def read_assignment(data: bytes) -> dict[str, list[int]]:
    """Topic -> assigned partitions; ValueError when it does not read."""
    decoded = _read("ConsumerProtocolAssignment", data)
    return {t["Topic"]: list(t["Partitions"]) for t in decoded["AssignedPartitions"]}


def write_assignment(assignment: Mapping[str, Sequence[int]], version: int = 0) -> bytes:
    """A ``ConsumerProtocolAssignment`` of ``version`` (the member's subscription's)."""
    version = max(0, min(version, _NEWEST))
    body = (
        load_schemas()
        .message("ConsumerProtocolAssignment")
        .encode(
            {
                "AssignedPartitions": [
                    {"Topic": topic, "Partitions": list(partitions)}
                    for topic, partitions in sorted(assignment.items())
                ],
                "UserData": None,
            },
            version,
        )
    )
    return _VERSION.pack(version) + body


def write_subscription(
    topics: Sequence[str], owned: Mapping[str, Sequence[int]] | None = None, version: int = 1
) -> bytes:
    """A ``ConsumerProtocolSubscription`` (tests and tools play classic members with it)."""
    data: dict[str, Any] = {"Topics": list(topics), "UserData": None}
    if version >= 1:
        data["OwnedPartitions"] = [
            {"Topic": t, "Partitions": list(p)} for t, p in sorted((owned or {}).items())
        ]
    return _VERSION.pack(version) + load_schemas().message("ConsumerProtocolSubscription").encode(
        data, version
    )
