"""decode(encode(x)) == x for every message and version: the project's specs and Kafka's own 108 (as
shipped by kafka-python). The compiled code and the interpreted constructs must agree byte for byte."""

from __future__ import annotations

from pathlib import Path

import kafka.protocol.schemas
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import load_schemas

KAFKA_SPEC_DIR = Path(kafka.protocol.schemas.__file__).parent / "resources"
FAST = settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def every_version(folder: Path | None) -> list[object]:
    return [
        pytest.param(message.name, version, id=f"{message.name}-v{version}")
        for message in load_schemas(folder)
        for version in range(message.valid_versions[0], message.valid_versions[1] + 1)
    ]


PROJECT_VERSIONS = every_version(None)
KAFKA_VERSIONS = every_version(KAFKA_SPEC_DIR)


# kafka-python 3.0.12 (the pinned test dependency) ships 108 of Kafka's spec files in its resources
# folder (the folder's other entries are __init__.py and __pycache__), and one more,
# StickyAssignorUserData.json, beside its sticky assignor (see test_kafka_python_compat).
KAFKA_PYTHON_SPEC_FILES = 108


def test_all_kafka_spec_files_are_loaded(kafka_specs):
    files = sorted(p.stem for p in KAFKA_SPEC_DIR.glob("*.json"))
    assert len(files) == KAFKA_PYTHON_SPEC_FILES
    assert sorted(m.name for m in kafka_specs) == files
    assert len(KAFKA_VERSIONS) == sum(m.valid_versions[1] - m.valid_versions[0] + 1 for m in kafka_specs)


def check_round_trip(codec, value, expected) -> None:
    encoded = codec.encode(value)
    assert codec.encode_compiled(value) == encoded
    assert codec.encode_interpreted(value) == encoded
    assert codec.decode_compiled(encoded) == (expected, len(encoded))  # no fallback on valid input
    assert codec.decode(encoded) == expected
    assert codec.decode_interpreted(encoded) == (expected, len(encoded))
    assert codec.encode(codec.decode(encoded)) == encoded


@pytest.mark.parametrize(("name", "version"), PROJECT_VERSIONS)
@FAST
@given(data=st.data())
def test_project_messages_round_trip(project_schemas, message_values, name, version, data):
    codec = project_schemas.message(name).codec(version)
    value = data.draw(message_values(codec))
    check_round_trip(codec, value, value)


@pytest.mark.parametrize(("name", "version"), PROJECT_VERSIONS)
@FAST
@given(data=st.data())
def test_project_messages_fill_absent_fields_with_defaults(
    project_schemas, message_values, filled, name, version, data
):
    codec = project_schemas.message(name).codec(version)
    value = data.draw(message_values(codec, partial=True))
    check_round_trip(codec, value, filled(codec, value))


@pytest.mark.parametrize(("name", "version"), KAFKA_VERSIONS)
@FAST
@given(data=st.data())
def test_kafka_messages_round_trip(kafka_specs, message_values, name, version, data):
    codec = kafka_specs.message(name).codec(version)
    value = data.draw(message_values(codec))
    check_round_trip(codec, value, value)


@pytest.mark.parametrize(("name", "version"), KAFKA_VERSIONS)
@settings(FAST, max_examples=3)
@given(data=st.data())
def test_kafka_messages_fill_absent_fields_with_defaults(
    kafka_specs, message_values, filled, name, version, data
):
    codec = kafka_specs.message(name).codec(version)
    value = data.draw(message_values(codec, partial=True))
    check_round_trip(codec, value, filled(codec, value))
