"""Kafka's rules for topic names, with Kafka's messages (the client sees them as INVALID_TOPIC_EXCEPTION).

A legal name is 1 to 249 characters of ``[a-zA-Z0-9._-]`` and neither ``.`` nor ``..``. Because Kafka's
metric names turn ``.`` into ``_``, two topics whose names differ only there collide: the second one
cannot be created.

Kafka's internal topics (``org.apache.kafka.common.internals.Topic.INTERNAL_TOPICS``) are answered with
IsInternal in Metadata; clients hide them (kafka-python's ``KafkaConsumer.topics()``, pattern
subscriptions) or list them as such.
"""

from __future__ import annotations

import re

__all__ = [
    "GROUP_METADATA_TOPIC_NAME",
    "INTERNAL_TOPICS",
    "MAX_TOPIC_NAME_LENGTH",
    "collision_key",
    "is_internal",
    "topic_name_problem",
]

MAX_TOPIC_NAME_LENGTH = 249
#: Kafka's internal topics: the group coordinator's log, the transaction coordinator's and the share
#: group state's (only the first is made here, by the group coordinator).
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, "__transaction_state", "__share_group_state"})
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_problem(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka 4's wording, ``Topic.validate``), or None when it is
    legal."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_TOPIC_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _LEGAL.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else f"Topic name is invalid: {reason}"


def is_internal(name: str) -> bool:
    """Whether ``name`` is one of Kafka's internal topics (``Topic.isInternal``)."""
    return name in INTERNAL_TOPICS


def collision_key(name: str) -> str:
    """The name with ``.`` and ``_`` unified: two topics with the same key collide."""
    return name.replace(".", "_")
