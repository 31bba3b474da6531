"""The project's own spec files say exactly what the design fixes (other tools depend on apiKey 68)."""

from __future__ import annotations

import pytest

from protocol.resources import project_schemas as project_folder
from protocol.spec import NO_VERSIONS, Versions

ALL = Versions(0, 32767)


def fields(message):
    return [
        (f.name, str(f.type), str(f.versions), f.default, f.tag, f.nullable_versions, f.entity_type)
        for f in message.spec.fields
    ]


def test_create_replica_placement_request(project_schemas):
    request = project_schemas.request(68)
    assert (request.spec.valid_versions, request.spec.flexible_versions) == (Versions(0, 0), ALL)
    assert fields(request) == [
        ("NumPartitions", "int32", "0+", 0, None, NO_VERSIONS, "unknown"),
        ("ReplicationFactor", "int16", "0+", 0, None, NO_VERSIONS, "unknown"),
        ("ForceSimplePlacement", "bool", "0+", False, None, NO_VERSIONS, "unknown"),
        ("NodeId", "[]int32", "0+", (), None, NO_VERSIONS, "brokerId"),
        ("timeoutMs", "int32", "0+", 60000, None, NO_VERSIONS, "unknown"),
        ("TopicName", "string", "0+", None, 0, ALL, "topicName"),
        ("StartPartition", "int32", "0+", 0, 1, NO_VERSIONS, "unknown"),
    ]


def test_create_replica_placement_response(project_schemas):
    response = project_schemas.response(68)
    assert (response.spec.valid_versions, response.spec.flexible_versions) == (Versions(0, 0), ALL)
    assert fields(response) == [
        ("ThrottleTimeMs", "int32", "0+", 0, None, NO_VERSIONS, "unknown"),
        ("ErrorCode", "int16", "0+", 0, None, NO_VERSIONS, "unknown"),
        ("ErrorMessage", "string", "0+", None, None, ALL, "unknown"),
        ("ReplicaPlacement", "[]ReplicaPlacement", "0+", (), None, NO_VERSIONS, "unknown"),
    ]
    partition_id, replicas = response.spec.fields[3].fields
    assert (partition_id.name, str(partition_id.type), partition_id.map_key) == ("PartitionId", "int32", True)
    assert (replicas.name, str(replicas.type), replicas.entity_type) == ("Replicas", "[]int32", "brokerId")


def test_api_versions(project_schemas):
    request, response = project_schemas.request(18), project_schemas.response(18)
    for message in (request, response):
        assert (message.spec.valid_versions, message.spec.flexible_versions) == (
            Versions(0, 4),
            Versions(3, 32767),
        )
    assert [(f.name, str(f.versions)) for f in request.spec.fields] == [
        ("ClientSoftwareName", "3+"),
        ("ClientSoftwareVersion", "3+"),
    ]
    assert [(f.name, f.tag, f.default) for f in response.spec.fields] == [
        ("ErrorCode", None, 0),
        ("ApiKeys", None, ()),
        ("ThrottleTimeMs", None, 0),
        ("SupportedFeatures", 0, ()),
        ("FinalizedFeaturesEpoch", 1, -1),
        ("FinalizedFeatures", 2, ()),
        ("ZkMigrationReady", 3, False),
    ]
    assert response.spec.fields[0].fields == () and response.spec.fields[1].fields[0].map_key


def test_headers(project_schemas):
    request, response = project_schemas.message("RequestHeader"), project_schemas.message("ResponseHeader")
    assert (request.type, request.valid_versions, request.spec.flexible_versions) == (
        "header",
        (0, 2),
        Versions(2, 32767),
    )
    client_id = request.spec.fields[3]
    assert (client_id.name, str(client_id.versions), client_id.flexible_versions) == (
        "ClientId",
        "1+",
        NO_VERSIONS,
    )
    assert (response.type, response.valid_versions, [f.name for f in response.spec.fields]) == (
        "header",
        (0, 1),
        ["CorrelationId"],
    )


@pytest.mark.parametrize(
    "name",
    [
        "RequestHeader",
        "ResponseHeader",
        "ApiVersionsRequest",
        "ApiVersionsResponse",
        "CreateReplicaPlacementRequest",
        "CreateReplicaPlacementResponse",
        "errors",
    ],
)
def test_spec_files_are_in_kafkas_format_with_comments(name):
    text = project_folder().joinpath(f"{name}.json").read_text()
    assert text.startswith("// ")
