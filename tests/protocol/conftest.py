"""Shared fixtures for the wire-layer tests: spec sets, and Hypothesis strategies for message data.

Strategies are built from a codec's construct tree (one message at one version), so every field gets
values of its exact wire type. ``restrict`` lets a test narrow a field's values (by field name) where
a peer implementation maps the wire value into a narrower Python type.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

with warnings.catch_warnings():  # kafka-python reads its spec files with a deprecated importlib API
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.protocol.schemas

from protocol import UNKNOWN_TAGGED_FIELDS, Schemas, load_schemas
from protocol.structs import Array, KafkaStruct, NullableStruct, TaggedFields
from protocol.types import Boolean, Bytes, Float64, Integer, KafkaType, String, Uuid

KAFKA_SPEC_DIR = Path(kafka.protocol.schemas.__file__).parent / "resources"

Restrict = Callable[[str, KafkaType], st.SearchStrategy[Any] | None]


@pytest.fixture(scope="session")
def kafka_specs() -> Schemas:
    """Kafka's own spec files, as shipped inside the kafka-python package."""
    return load_schemas(KAFKA_SPEC_DIR)


@pytest.fixture(scope="session")
def project_schemas() -> Schemas:
    return load_schemas()


def _text() -> st.SearchStrategy[str]:
    return st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def values(
    kind: KafkaType,
    *,
    unknown_tags: bool = True,
    partial: bool = False,
    restrict: Restrict | None = None,
    name: str = "",
) -> st.SearchStrategy[Any]:
    """Values of ``kind``. ``unknown_tags`` adds kept unknown tagged fields to flexible structs;
    ``partial`` leaves struct fields out (the encoder then uses their defaults)."""

    def sub(child: KafkaType, child_name: str = "") -> st.SearchStrategy[Any]:
        return values(child, unknown_tags=unknown_tags, partial=partial, restrict=restrict, name=child_name)

    if restrict is not None and (narrowed := restrict(name, kind)) is not None:
        return narrowed
    if isinstance(kind, Integer):
        return st.integers(kind.low, kind.high)
    if isinstance(kind, Boolean):
        return st.booleans()
    if isinstance(kind, Float64):
        return st.floats(allow_nan=False)
    if isinstance(kind, Uuid):
        return st.integers(0, 2**128 - 1).map(lambda i: uuid.UUID(int=i))
    if isinstance(kind, String):
        return st.none() | _text() if kind.nullable else _text()
    if isinstance(kind, Bytes):
        return st.none() | st.binary(max_size=16) if kind.nullable else st.binary(max_size=16)
    if isinstance(kind, Array):
        items = st.lists(sub(kind.element, name), max_size=3)
        return st.none() | items if kind.nullable else items
    if isinstance(kind, NullableStruct):
        return st.none() | sub(kind.struct, name)
    if isinstance(kind, KafkaStruct):
        fields = {f.name: sub(f.type, f.name) for f in (*kind.fields, *kind.tagged)}
        required, optional = ({}, fields) if partial else (fields, {})
        if unknown_tags and kind.tags is not None:
            known = kind.tags.known_tags
            tags = st.dictionaries(
                st.integers(0, 40).filter(lambda tag: tag not in known),
                st.binary(max_size=6),
                min_size=1,
                max_size=2,
            )
            optional = {**optional, UNKNOWN_TAGGED_FIELDS: tags}
        return st.fixed_dictionaries(required, optional=optional)
    raise TypeError(f"no strategy for {kind!r}")


def with_defaults(kind: KafkaType, value: Any) -> Any:
    """What decoding gives for ``value`` encoded as ``kind``: absent struct fields at their defaults."""
    if isinstance(kind, NullableStruct):
        return None if value is None else with_defaults(kind.struct, value)
    if isinstance(kind, KafkaStruct):
        assert isinstance(value, Mapping)
        full = kind.default_value()
        for spec in (*kind.fields, *kind.tagged):
            if spec.name in value:
                full[spec.name] = with_defaults(spec.type, value[spec.name])
        if value.get(UNKNOWN_TAGGED_FIELDS):
            full[UNKNOWN_TAGGED_FIELDS] = dict(value[UNKNOWN_TAGGED_FIELDS])
        return full
    if isinstance(kind, Array) and value is not None:
        return [with_defaults(kind.element, item) for item in value]
    if isinstance(kind, TaggedFields):  # pragma: no cover - sections are not values on their own
        raise TypeError("a tag section has no value of its own")
    return value


@pytest.fixture(scope="session")
def message_values() -> Callable[..., st.SearchStrategy[Any]]:
    """``message_values(codec, **options)``: a strategy for whole message bodies of that codec."""

    def build(codec: Any, **options: Any) -> st.SearchStrategy[Any]:
        return values(codec.construct.root, **options)

    return build


@pytest.fixture(scope="session")
def filled() -> Callable[[Any, Any], Any]:
    """``filled(codec, value)``: ``value`` with absent fields at their defaults, as decoding returns it."""
    return lambda codec, value: with_defaults(codec.construct.root, value)
