"""CreateAcls, DescribeAcls and DeleteAcls over the wire, as Kafka answers them; the authorizer applying
them to other APIs; the ACLs surviving broker failures (they are the cluster's metadata, not a broker's).

The project's own client does not authenticate: it is ``User:ANONYMOUS``. With
``allow.everyone.if.no.acl.found=true`` it may administer ACLs until the cluster resource has ACLs of its
own; principals over SASL are the real clients' tests (tests/clients/test_acls_*.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from protocol.client import BlockingClient, ConnectionClosedError
from protocol.codes import ErrorCode

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
TOPIC, GROUP, CLUSTER, ANY_TYPE = 2, 3, 4, 1
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
READ, WRITE, ALTER, DESCRIBE, ANY_OP = 3, 4, 7, 8, 1
DENY, ALLOW = 2, 3


def creation(kind, name, principal, op, permission=ALLOW, pattern=LITERAL, host="*"):
    return {
        "ResourceType": kind,
        "ResourceName": name,
        "ResourcePatternType": pattern,
        "Principal": principal,
        "Host": host,
        "Operation": op,
        "PermissionType": permission,
    }


def acl_filter(kind=ANY_TYPE, name=None, pattern=ANY, principal=None, host=None, op=ANY_OP, permission=1):
    return {
        "ResourceTypeFilter": kind,
        "ResourceNameFilter": name,
        "PatternTypeFilter": pattern,
        "PrincipalFilter": principal,
        "HostFilter": host,
        "Operation": op,
        "PermissionType": permission,
    }


@pytest.fixture
def open_server() -> Iterator[ServerThread]:
    """An authorizer that lets everyone do what no ACL speaks of."""
    with ServerThread.start(
        properties={**AUTHORIZER, "allow.everyone.if.no.acl.found": "true"}, seed=3
    ) as server:
        yield server


def test_without_an_authorizer_the_acl_apis_answer_security_disabled():
    with (
        ServerThread.start() as server,
        BlockingClient.connect(server.bootstrap, request_timeout=10) as client,
    ):
        described = client.send("DescribeAclsRequest", acl_filter())
        assert (described["ErrorCode"], described["ErrorMessage"]) == (
            ErrorCode.SECURITY_DISABLED,
            "No Authorizer is configured.",
        )
        created = client.send("CreateAclsRequest", {"Creations": [creation(TOPIC, "t", "User:a", READ)] * 2})
        assert [r["ErrorCode"] for r in created["Results"]] == [ErrorCode.SECURITY_DISABLED] * 2
        deleted = client.send("DeleteAclsRequest", {"Filters": [acl_filter()]})
        assert [r["ErrorCode"] for r in deleted["FilterResults"]] == [ErrorCode.SECURITY_DISABLED]


def test_create_describe_and_delete(open_server: ServerThread):
    with BlockingClient.connect(open_server.bootstrap, request_timeout=10) as client:
        created = client.send(
            "CreateAclsRequest",
            {
                "Creations": [
                    creation(TOPIC, "orders", "User:alice", READ),
                    creation(TOPIC, "ord", "User:bob", WRITE, DENY, PREFIXED),
                    creation(GROUP, "*", "User:alice", READ),
                    creation(CLUSTER, "my-cluster", "User:alice", ALTER),
                    creation(TOPIC, "t", "alice", READ),
                ]
            },
        )
        assert [(r["ErrorCode"], r["ErrorMessage"]) for r in created["Results"]] == [
            (0, None),
            (0, None),
            (0, None),
            (ErrorCode.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
            (
                ErrorCode.INVALID_REQUEST,
                "Could not parse principal from `alice` (no colon is present separating the principal type "
                "from the principal name)",
            ),
        ]
        # MATCH: every ACL that applies to the name, grouped by resource pattern.
        matched = client.send("DescribeAclsRequest", acl_filter(TOPIC, "orders", MATCH))
        assert matched["ErrorCode"] == 0
        assert sorted(
            (r["ResourceName"], r["PatternType"], len(r["Acls"])) for r in matched["Resources"]
        ) == [
            ("ord", PREFIXED, 1),
            ("orders", LITERAL, 1),
        ]
        by_principal = client.send("DescribeAclsRequest", acl_filter(principal="User:alice"))
        assert sorted((r["ResourceType"], r["ResourceName"]) for r in by_principal["Resources"]) == [
            (TOPIC, "orders"),
            (GROUP, "*"),
        ]
        deleted = client.send(
            "DeleteAclsRequest",
            {"Filters": [acl_filter(TOPIC, None, ANY, "User:bob"), acl_filter(GROUP, "none", LITERAL)]},
        )
        first, second = deleted["FilterResults"]
        assert [(m["ResourceName"], m["PatternType"], m["Principal"]) for m in first["MatchingAcls"]] == [
            ("ord", PREFIXED, "User:bob")
        ]
        assert second["MatchingAcls"] == []
        left = client.send("DescribeAclsRequest", acl_filter())
        assert sorted(r["ResourceName"] for r in left["Resources"]) == ["*", "orders"]


def test_a_filter_with_an_unknown_code_closes_the_connection_as_kafka(open_server: ServerThread):
    with BlockingClient.connect(open_server.bootstrap, request_timeout=10) as client:
        with pytest.raises(ConnectionClosedError):
            client.send("DescribeAclsRequest", acl_filter(op=0))
    with BlockingClient.connect(open_server.bootstrap, request_timeout=10) as client:
        assert client.send("DescribeAclsRequest", acl_filter())["ErrorCode"] == 0  # the server goes on


def test_the_authorizer_applies_the_acls_to_other_apis(open_server: ServerThread):
    with BlockingClient.connect(open_server.bootstrap, request_timeout=10) as client:
        for name in ("public", "secret"):
            topic = {
                "Name": name,
                "NumPartitions": 1,
                "ReplicationFactor": 1,
                "Assignments": [],
                "Configs": [],
            }
            assert (
                client.send("CreateTopicsRequest", {"Topics": [topic], "timeoutMs": 5000})["Topics"][0][
                    "ErrorCode"
                ]
                == 0
            )
        created = client.send(
            "CreateAclsRequest", {"Creations": [creation(TOPIC, "secret", "User:someone", READ)]}
        )
        assert created["Results"][0]["ErrorCode"] == 0
        # Every topic: the one the client may not describe is left out.
        every = client.send("MetadataRequest", {"Topics": None})
        assert sorted(t["Name"] for t in every["Topics"]) == ["public"]
        # Named: refused without telling whether it exists.
        named = client.send(
            "MetadataRequest", {"Topics": [{"Name": "secret"}, {"Name": "nowhere"}]}, version=9
        )
        assert [(t["Name"], t["ErrorCode"]) for t in named["Topics"]] == [
            ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            ("nowhere", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        listed = client.send("ListOffsetsRequest", {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [
            {"Name": "secret", "Partitions": [{"PartitionIndex": 0, "Timestamp": -1, "CurrentLeaderEpoch": -1}]}
        ]})  # fmt: skip
        assert listed["Topics"][0]["Partitions"][0]["ErrorCode"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        # Once the cluster has an ACL, administering ACLs needs ALTER on it.
        created = client.send(
            "CreateAclsRequest", {"Creations": [creation(CLUSTER, "kafka-cluster", "User:root", ALTER)]}
        )
        assert created["Results"][0]["ErrorCode"] == 0
        refused = client.send("CreateAclsRequest", {"Creations": [creation(TOPIC, "x", "User:a", READ)]})
        assert refused["Results"][0]["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        described = client.send("DescribeAclsRequest", acl_filter())
        assert described["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        # DescribeCluster's authorized operations: none to a client that may not describe the cluster.
        cluster = client.send("DescribeClusterRequest", {"IncludeClusterAuthorizedOperations": True})
        assert cluster["ClusterAuthorizedOperations"] == 0


def test_acls_survive_broker_failures():
    """The ACLs are the controller's metadata: with half the brokers crashed, including the lowest (the
    active controller's stand-in), they are described and enforced as before."""
    properties = {**AUTHORIZER, "super.users": "User:ANONYMOUS"}
    with ServerThread.start(properties=properties, seed=5) as server:
        with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
            made = client.send(
                "CreateAclsRequest",
                {"Creations": [creation(TOPIC, "logs-", "User:alice", READ, pattern=PREFIXED)]},
            )
            assert made["Results"][0]["ErrorCode"] == 0
        for broker in (0, 1, 2):
            server.stop_broker(broker)
        with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
            described = client.send("DescribeAclsRequest", acl_filter(TOPIC, "logs-app", MATCH))
            assert [(r["ResourceName"], r["Acls"][0]["Principal"]) for r in described["Resources"]] == [
                ("logs-", "User:alice")
            ]
        authorizer = server.server.controller.acls.authorizer
        assert authorizer is not None
        assert authorizer.authorize("User:alice", "10.1.2.3", READ, TOPIC, "logs-app")
        assert not authorizer.authorize("User:bob", "10.1.2.3", READ, TOPIC, "logs-app")
