"""Byte compatibility with kafka-python's encoder, an independent implementation of Kafka's protocol.

For every message and version that kafka-python has a class for: bytes from our encoder decode with
kafka-python, its encoder reproduces them exactly, and its bytes decode with our codec and re-encode
to the same bytes. ApiVersions and the headers are also checked from kafka-python objects built directly.
"""

from __future__ import annotations

import importlib
import io
import pkgutil
import warnings
from pathlib import Path
from typing import Any

import kafka.coordinator.assignors.sticky
import kafka.protocol
import kafka.protocol.schemas
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.api_data import ApiData
from kafka.protocol.api_header import RequestHeader, ResponseHeader
from kafka.protocol.api_message import ApiMessage

from protocol import Message, load_schemas
from protocol.spec import load_spec
from protocol.types import KafkaType

KAFKA_SPEC_DIR = Path(kafka.protocol.schemas.__file__).parent / "resources"
# The one Kafka spec file that kafka-python ships outside its resources folder.
STICKY_SPEC = Path(kafka.coordinator.assignors.sticky.__file__).parent / "StickyAssignorUserData.json"
PEER = settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def _kafka_python_classes() -> dict[str, type]:
    """kafka-python's message classes by spec name (importing its protocol modules registers them)."""
    with warnings.catch_warnings():  # kafka-python reads its spec files with a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        for module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
            if ".old" not in module.name and not module.name.endswith("generate_stubs"):
                importlib.import_module(module.name)
    found: dict[str, type] = {"RequestHeader": RequestHeader, "ResponseHeader": ResponseHeader}
    pending = [ApiMessage, ApiData]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if "_json" in cls.__dict__ and getattr(cls, "_class_version", None) is None:
            found[cls.__name__] = cls
    return found


CLASSES = _kafka_python_classes()


class KafkaPythonCodec:
    """kafka-python's decode and encode for one message at one version."""

    def __init__(self, cls: type, version: int) -> None:
        self.cls, self.version = cls, version

    def decode(self, data: bytes) -> Any:
        if issubclass(self.cls, RequestHeader | ResponseHeader):
            return self.cls.decode(io.BytesIO(data), flexible=self.flexible)
        if issubclass(self.cls, ApiData):
            return self.cls.decode(data, version=self.version, header=False)
        value = self.cls.decode(data, version=self.version)
        value._header = None  # its decoder skips __init__, which sets this; encode() reads it
        return value

    def encode(self, value: Any) -> bytes:
        if issubclass(self.cls, RequestHeader | ResponseHeader):
            return bytes(value.encode(flexible=self.flexible))
        if issubclass(self.cls, ApiData):
            return bytes(value.encode(version=self.version, header=False))
        return bytes(value.encode(version=self.version))

    @property
    def flexible(self) -> bool:
        return self.version == (2 if self.cls is RequestHeader else 1)


def peer_for(message: Message, version: int) -> KafkaPythonCodec | None:
    cls = CLASSES.get(message.name)
    if cls is None:
        return None
    if cls is RequestHeader and version == 0:  # kafka-python's request header starts at version 1
        return None
    known = getattr(cls, "valid_versions", None)
    if isinstance(known, tuple) and not known[0] <= version <= known[1]:
        return None  # a version newer (or older) than kafka-python knows: nothing to compare with
    return KafkaPythonCodec(cls, version)


def shared_versions(folder: Path | None) -> list[Any]:
    return [
        pytest.param(message.name, version, id=f"{message.name}-v{version}")
        for message in load_schemas(folder)
        for version in range(message.valid_versions[0], message.valid_versions[1] + 1)
        if peer_for(message, version) is not None
    ]


KAFKA_SHARED = shared_versions(KAFKA_SPEC_DIR)
PROJECT_SHARED = shared_versions(None)


def kafka_python_domain(message: Message) -> Any:
    """kafka-python reads an ApiVersions response with a non-zero ErrorCode as version 0 (Kafka's rule for
    answers to unsupported versions), so that message keeps ErrorCode 0 here."""

    def restrict(name: str, kind: KafkaType) -> st.SearchStrategy[Any] | None:
        if message.name == "ApiVersionsResponse" and name == "ErrorCode":
            return st.just(0)
        return None

    return restrict


def check_against_kafka_python(message: Message, version: int, value: dict[str, Any]) -> None:
    codec = message.codec(version)
    peer = peer_for(message, version)
    assert peer is not None
    ours = codec.encode(value)
    theirs = peer.encode(peer.decode(ours))
    assert theirs == ours
    assert codec.decode_compiled(theirs) == (value, len(theirs))
    assert codec.decode(theirs) == value
    assert codec.encode(codec.decode(theirs)) == theirs


def test_kafka_python_has_a_class_for_most_specs(kafka_specs):
    assert len(CLASSES) > 100
    assert len(KAFKA_SHARED) > 400


@pytest.mark.parametrize(("name", "version"), KAFKA_SHARED)
@PEER
@given(data=st.data())
def test_kafka_specs_match_kafka_python(kafka_specs, message_values, name, version, data):
    message = kafka_specs.message(name)
    strategy = message_values(
        message.codec(version), unknown_tags=False, restrict=kafka_python_domain(message)
    )
    check_against_kafka_python(message, version, data.draw(strategy))


@pytest.mark.parametrize(("name", "version"), PROJECT_SHARED)
@PEER
@given(data=st.data())
def test_project_specs_match_kafka_python(project_schemas, message_values, name, version, data):
    message = project_schemas.message(name)
    strategy = message_values(
        message.codec(version), unknown_tags=False, restrict=kafka_python_domain(message)
    )
    check_against_kafka_python(message, version, data.draw(strategy))


@pytest.mark.parametrize("version", range(5))
def test_api_versions_response_from_kafka_python_objects(project_schemas, version):
    cls = CLASSES["ApiVersionsResponse"][version]
    fields: dict[str, Any] = {
        "error_code": 0,
        "api_keys": [cls.ApiVersion(api_key=18, min_version=0, max_version=4)],
    }
    if version >= 1:
        fields["throttle_time_ms"] = 10
    if version >= 3:
        fields["finalized_features_epoch"] = 3
        fields["zk_migration_ready"] = True
    theirs = bytes(cls(**fields).encode(version=version))
    message = project_schemas.response(18)
    decoded = message.decode(theirs, version)
    assert decoded["ApiKeys"] == [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}]
    assert decoded.get("ThrottleTimeMs", 10) == 10
    if version >= 3:
        assert decoded["FinalizedFeaturesEpoch"] == 3
        assert decoded["ZkMigrationReady"] is True
    assert message.encode(decoded, version) == theirs


@pytest.mark.parametrize("version", range(5))
def test_api_versions_request_from_kafka_python_objects(project_schemas, version):
    cls = CLASSES["ApiVersionsRequest"][version]
    fields = (
        {"client_software_name": "kafka-python", "client_software_version": "3.0.12"} if version >= 3 else {}
    )
    theirs = bytes(cls(**fields).encode(version=version))
    message = project_schemas.request(18)
    decoded = message.decode(theirs, version)
    assert decoded == (
        {"ClientSoftwareName": "kafka-python", "ClientSoftwareVersion": "3.0.12"} if version >= 3 else {}
    )
    assert message.encode(decoded, version) == theirs


@pytest.mark.parametrize("flexible", [False, True])
def test_request_header_from_kafka_python_objects(project_schemas, flexible):
    header = RequestHeader(request_api_key=3, request_api_version=12, correlation_id=99, client_id="kp")
    theirs = bytes(header.encode(flexible=flexible))
    version = 2 if flexible else 1
    spec = project_schemas.message("RequestHeader")
    decoded = spec.decode(theirs, version)
    assert decoded == {"RequestApiKey": 3, "RequestApiVersion": 12, "CorrelationId": 99, "ClientId": "kp"}
    assert spec.encode(decoded, version) == theirs


@pytest.mark.parametrize("version", [0, 1])
@PEER
@given(data=st.data())
def test_sticky_assignor_user_data_matches_kafka_python(message_values, version, data):
    message = Message(load_spec(STICKY_SPEC))
    assert message.valid_versions == (0, 1)
    codec = message.codec(version)
    value = data.draw(message_values(codec, unknown_tags=False))
    assert codec.decode_interpreted(codec.encode(value))[0] == value
    check_against_kafka_python(message, version, value)
