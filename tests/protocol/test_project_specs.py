"""The project's own spec files say exactly what the design fixes (other tools depend on apiKey 68)."""

from __future__ import annotations

import uuid

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


# -- the data path's specs against Kafka 4.x's own (as kafka-python bundles them) ----------------------

#: The data path's APIs and the versions the project's specs carry (Kafka 4.x's ranges, but InitProducerId
#: stops at 5: Kafka marks its v6 (KIP-939, two-phase commit) unstable).
DATA_PATH_VERSIONS = {
    "Produce": (3, 13),
    "Fetch": (4, 18),
    "ListOffsets": (1, 11),
    "OffsetForLeaderEpoch": (2, 4),
    "InitProducerId": (0, 5),
    "DeleteRecords": (0, 2),
}
DATA_PATH_MESSAGES = [f"{api}{kind}" for api in DATA_PATH_VERSIONS for kind in ("Request", "Response")]


def fields_at(spec_fields, version, flexible):
    """What a reader of ``version`` sees of these fields: every property but the prose, for the fields
    that exist in that version, in order, nested structs included."""
    out = []
    for f in spec_fields:
        if version not in f.versions:
            continue
        tagged = flexible and f.tag is not None and version in f.tagged_versions
        out.append(
            (
                f.name,
                str(f.type),
                version in f.nullable_versions,
                f.tag if tagged else None,
                f.default if not f.fields else None,
                f.ignorable,
                f.entity_type,
                f.map_key,
                None if f.flexible_versions is None else version in f.flexible_versions,
                tuple(fields_at(f.fields, version, flexible)),
            )
        )
    return out


@pytest.mark.parametrize("name", DATA_PATH_MESSAGES)
def test_data_path_specs_match_kafka_field_by_field(project_schemas, kafka_specs, name):
    ours, kafkas = project_schemas.message(name).spec, kafka_specs.message(name).spec
    api = name.removesuffix("Request").removesuffix("Response")
    assert (ours.valid_versions.lowest, ours.valid_versions.highest) == DATA_PATH_VERSIONS[api]
    assert ours.api_key == kafkas.api_key and ours.type == kafkas.type
    assert ours.flexible_versions == kafkas.flexible_versions
    assert ours.listeners == kafkas.listeners
    for version in range(ours.valid_versions.lowest, ours.valid_versions.highest + 1):
        assert version in kafkas.valid_versions
        flexible = version in ours.flexible_versions
        assert fields_at(ours.fields, version, flexible) == fields_at(kafkas.fields, version, flexible), (
            version
        )


@pytest.mark.parametrize("name", DATA_PATH_MESSAGES)
def test_data_path_specs_are_the_projects_own_text(name):
    text = project_folder().joinpath(f"{name}.json").read_text()
    assert text.startswith(f"// placement-sim: the {name.removesuffix('Request').removesuffix('Response')}")
    assert "Licensed to the Apache Software Foundation" not in text


def test_records_fields_carry_record_batches_as_bytes(project_schemas):
    """Produce's and Fetch's ``records`` fields decode to the bytes of the batches, untouched."""
    batch = bytes(range(70))
    request = project_schemas.request(0)
    value = {
        "TransactionalId": None,
        "Acks": -1,
        "TimeoutMs": 30000,
        "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": batch}]}],
    }
    for version in (3, 9, 12):
        decoded = request.decode(request.encode(value, version), version)
        assert decoded["TopicData"][0]["PartitionData"][0]["Records"] == batch
    response = project_schemas.response(1)
    answer = {
        "Responses": [
            {
                "TopicId": uuid.UUID(int=1),
                "Partitions": [{"PartitionIndex": 0, "HighWatermark": 5, "Records": batch}],
            }
        ]
    }
    decoded = response.decode(response.encode(answer, 16), 16)
    assert decoded["Responses"][0]["Partitions"][0]["Records"] == batch
    assert decoded["Responses"][0]["Partitions"][0]["PreferredReadReplica"] == -1
