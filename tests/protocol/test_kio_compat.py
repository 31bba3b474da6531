"""Byte compatibility with kio, an independent implementation of Kafka's protocol.

For every message and version that kio also has (Kafka's specs, and the project's own): bytes from our
encoder decode with kio's reader, kio's writer reproduces them exactly, and kio's bytes decode with our
codec and re-encode to the same bytes. ApiVersions is also checked from kio objects built directly.
"""

from __future__ import annotations

import io
import pkgutil
import re
from pathlib import Path
from typing import Any

import kafka.protocol.schemas
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.index import schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64

from protocol import Message, load_schemas
from protocol.types import Integer, KafkaType

KAFKA_SPEC_DIR = Path(kafka.protocol.schemas.__file__).parent / "resources"
KIO_KINDS = {
    "request": EntityType.request,
    "response": EntityType.response,
    "header": EntityType.header,
    "data": EntityType.data,
}
ERROR_CODES = sorted(code.value for code in ErrorCode)


def kio_entity(message: Message, version: int) -> type | None:
    """kio's class for this message at this version, if kio has it."""
    base = message.name
    if message.type in ("request", "response"):
        base = base.removesuffix(message.type.capitalize())
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", base).lower()
    path = schema_name_map.get(snake, {}).get(version, {}).get(KIO_KINDS.get(message.type))
    return pkgutil.resolve_name(path) if path else None


def shared_versions(folder: Path | None) -> list[Any]:
    schemas = load_schemas(folder)
    return [
        pytest.param(message.name, version, id=f"{message.name}-v{version}")
        for message in schemas
        for version in range(message.valid_versions[0], message.valid_versions[1] + 1)
        if kio_entity(message, version) is not None
    ]


KAFKA_SHARED = shared_versions(KAFKA_SPEC_DIR)
PROJECT_SHARED = shared_versions(None)


def kio_domain(name: str, kind: KafkaType) -> st.SearchStrategy[Any] | None:
    """kio turns error codes into an enum and some int64 times into datetimes: stay in their domains."""
    if isinstance(kind, Integer) and kind.kafka_name == "int16" and name.endswith("ErrorCode"):
        return st.sampled_from(ERROR_CODES)
    if isinstance(kind, Integer) and kind.kafka_name == "int64" and re.search("Time|Lifetime|Period", name):
        return st.integers(0, 2**40)
    return None


def kio_encode(entity_type: type, entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(entity_type)(buffer, entity)
    return buffer.getvalue()


def check_against_kio(message: Message, version: int, value: dict[str, Any]) -> None:
    codec = message.codec(version)
    entity_type = kio_entity(message, version)
    assert entity_type is not None
    ours = codec.encode(value)
    entity, size = entity_reader(entity_type)(ours, 0)
    assert size == len(ours), "kio did not read the whole message"
    theirs = kio_encode(entity_type, entity)
    assert theirs == ours
    assert codec.decode_compiled(theirs) == (value, len(theirs))
    assert codec.decode(theirs) == value
    assert codec.encode(codec.decode(theirs)) == theirs


PEER = settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def test_kio_shares_most_of_kafkas_messages():
    assert len(KAFKA_SHARED) > 300
    assert any(param.values[0] == "ApiVersionsResponse" for param in PROJECT_SHARED)


@pytest.mark.parametrize(("name", "version"), KAFKA_SHARED)
@PEER
@given(data=st.data())
def test_kafka_specs_match_kio(kafka_specs, message_values, name, version, data):
    message = kafka_specs.message(name)
    value = data.draw(message_values(message.codec(version), unknown_tags=False, restrict=kio_domain))
    check_against_kio(message, version, value)


@pytest.mark.parametrize(("name", "version"), PROJECT_SHARED)
@PEER
@given(data=st.data())
def test_project_specs_match_kio(project_schemas, message_values, name, version, data):
    message = project_schemas.message(name)
    value = data.draw(message_values(message.codec(version), unknown_tags=False, restrict=kio_domain))
    check_against_kio(message, version, value)


def kio_api_versions_response(version: int) -> Any:
    """An ApiVersions response built with kio's own classes (not decoded from our bytes)."""
    module = pkgutil.resolve_name(f"kio.schema.api_versions.v{version}.response")
    keys = (
        module.ApiVersion(api_key=i16(18), min_version=i16(0), max_version=i16(4)),
        module.ApiVersion(api_key=i16(68), min_version=i16(0), max_version=i16(0)),
    )
    fields: dict[str, Any] = {"error_code": ErrorCode.none, "api_keys": keys}
    if version >= 1:
        fields["throttle_time"] = i32Timedelta.parse(__import__("datetime").timedelta(milliseconds=25))
    if version >= 3:
        fields["supported_features"] = (
            module.SupportedFeatureKey(name="metadata.version", min_version=i16(1), max_version=i16(20)),
        )
        fields["finalized_features_epoch"] = i64(7)
        fields["finalized_features"] = (
            module.FinalizedFeatureKey(
                name="metadata.version", max_version_level=i16(20), min_version_level=i16(1)
            ),
        )
    return module.ApiVersionsResponse(**fields)


@pytest.mark.parametrize("version", range(5))
def test_api_versions_response_from_kio_objects(project_schemas, version):
    entity = kio_api_versions_response(version)
    theirs = kio_encode(type(entity), entity)
    message = project_schemas.response(18)
    decoded = message.decode(theirs, version)
    assert decoded["ErrorCode"] == 0
    assert decoded["ApiKeys"] == [
        {"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4},
        {"ApiKey": 68, "MinVersion": 0, "MaxVersion": 0},
    ]
    if version >= 1:
        assert decoded["ThrottleTimeMs"] == 25
    if version >= 3:
        assert decoded["SupportedFeatures"] == [
            {"Name": "metadata.version", "MinVersion": 1, "MaxVersion": 20}
        ]
        assert decoded["FinalizedFeaturesEpoch"] == 7
        assert decoded["FinalizedFeatures"][0]["MaxVersionLevel"] == 20
        assert decoded["ZkMigrationReady"] is False
    assert message.encode(decoded, version) == theirs


@pytest.mark.parametrize("version", range(5))
def test_api_versions_request_from_kio_objects(project_schemas, version):
    module = pkgutil.resolve_name(f"kio.schema.api_versions.v{version}.request")
    fields = {"client_software_name": "kio", "client_software_version": "0.6.5"} if version >= 3 else {}
    entity = module.ApiVersionsRequest(**fields)
    theirs = kio_encode(type(entity), entity)
    message = project_schemas.request(18)
    decoded = message.decode(theirs, version)
    expected = {"ClientSoftwareName": "kio", "ClientSoftwareVersion": "0.6.5"} if version >= 3 else {}
    assert decoded == expected
    assert message.encode(decoded, version) == theirs


def test_request_header_v2_from_kio_objects(project_schemas):
    module = pkgutil.resolve_name("kio.schema.request_header.v2.header")
    entity = module.RequestHeader(
        request_api_key=i16(18), request_api_version=i16(3), correlation_id=i32(42), client_id="kio-client"
    )
    theirs = kio_encode(type(entity), entity)
    header = project_schemas.message("RequestHeader")
    assert header.decode(theirs, 2) == {
        "RequestApiKey": 18,
        "RequestApiVersion": 3,
        "CorrelationId": 42,
        "ClientId": "kio-client",
    }
    assert header.encode(header.decode(theirs, 2), 2) == theirs
