"""The generated enums (protocol/codes.py) agree with schemas/ and are up to date."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import load_schemas
from protocol.codegen import api_key_name, generate
from protocol.codes import ApiKey, ErrorCode
from protocol.errors import Refusal, all_errors, error_by_code


def test_the_generated_module_is_what_the_schemas_give() -> None:
    from protocol.codegen import CODES_FILE

    assert CODES_FILE.read_text(encoding="utf-8") == generate(), "run: python -m protocol.codegen"


def test_the_spec_index_is_what_the_schemas_give() -> None:
    from protocol.codegen import INDEX_FILE, generate_index

    assert INDEX_FILE.read_text(encoding="utf-8") == generate_index(), "run: python -m protocol.codegen"


def test_the_project_set_from_the_index_is_the_set_read_from_the_files() -> None:
    from protocol.registry import Schemas
    from protocol.resources import project_schemas

    indexed = load_schemas()
    read = Schemas.from_files(project_schemas().iterdir())
    shown = [(m.name, m.type, m.api_key, m.valid_versions, m.source) for m in indexed]
    assert shown == [(m.name, m.type, m.api_key, m.valid_versions, m.source) for m in read]
    for message in indexed:  # each file parses to the spec the files give
        assert message.spec == read.message(message.name).spec
        # its framing, known from the index without the spec, is the spec's (versions and one past them)
        low, high = message.valid_versions
        versions = range(max(low - 1, 0), high + 2)
        assert [message.is_flexible(v) for v in versions] == [message.spec.is_flexible(v) for v in versions]
        assert message._header.flexible == message.spec.flexible_versions


def test_a_stale_index_row_is_told_when_its_file_is_read(tmp_path) -> None:
    from protocol.codec import Message
    from protocol.exceptions import SpecError
    from protocol.spec import SpecHeader, Versions

    path = tmp_path / "ApiVersionsRequest.json"
    path.write_text(Path(load_schemas().request(18).source).read_text(encoding="utf-8"), encoding="utf-8")
    header = SpecHeader("ApiVersionsRequest", "request", 18, Versions(0, 2), str(path), None, path.read_text)
    with pytest.raises(SpecError, match="stale"):
        Message(header).codec(0)


def test_every_error_of_the_table_is_a_member_with_its_code_retriability_and_message() -> None:
    table = all_errors()
    assert [(e.name, e.code) for e in table] == [(c.name, c.value) for c in ErrorCode]
    for entry in table:
        member = ErrorCode[entry.name]
        assert (member.retriable, member.message) == (entry.retriable, entry.message)
    assert ErrorCode.NOT_ENOUGH_REPLICAS == 19 and ErrorCode.NOT_ENOUGH_REPLICAS.retriable
    assert ErrorCode.REPLICA_PLACEMENT_FAILED == 1001 and not ErrorCode.REPLICA_PLACEMENT_FAILED.retriable


def test_api_keys_are_the_specs_requests() -> None:
    requests = {m.api_key: api_key_name(m.name) for m in load_schemas().requests()}
    assert {k.value: k.name for k in ApiKey} == requests
    assert ApiKey.CREATE_REPLICA_PLACEMENT == 68 and ApiKey.API_VERSIONS == 18


@pytest.mark.parametrize(
    ("message", "name"),
    [
        ("ApiVersionsRequest", "API_VERSIONS"),
        ("CreateReplicaPlacementRequest", "CREATE_REPLICA_PLACEMENT"),
        ("OffsetForLeaderEpochRequest", "OFFSET_FOR_LEADER_EPOCH"),
        ("DescribeAclsRequest", "DESCRIBE_ACLS"),
        ("Metadata", "METADATA"),
    ],
)
def test_api_key_names_are_kafkas(message: str, name: str) -> None:
    assert api_key_name(message) == name


def test_a_code_the_table_does_not_know_is_kept() -> None:
    unknown = error_by_code(4242)
    assert (unknown.code, unknown.name, unknown.retriable) == (4242, "UNKNOWN_ERROR_4242", False)
    assert error_by_code(19).name == "NOT_ENOUGH_REPLICAS"


def test_a_refusal_carries_its_code_and_message() -> None:
    refusal = Refusal(
        ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
    )
    assert refusal.code is ErrorCode.INVALID_PARTITIONS
    assert str(refusal) == refusal.message
    bare = Refusal(ErrorCode.NOT_CONTROLLER)
    assert bare.message is None and str(bare) == ErrorCode.NOT_CONTROLLER.message
