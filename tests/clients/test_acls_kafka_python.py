"""kafka-python against the authorizer: an admin (a super user) creates, describes and deletes ACLs; a user
they allow produces and consumes (what the consumer reads back is what was sent), a user they do not is
refused with Kafka's authorization errors; SCRAM credentials are created, described, used to log in with
each mechanism, changed and deleted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.errors import (
    GroupAuthorizationFailedError,
    KafkaTimeoutError,
    TopicAuthorizationFailedError,
)

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog

CLIENT = "kafka-python (ACLs)"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
TIMEOUTS = {"request_timeout_ms": 5000}


def _secured(factory: Callable[..., ServerThread], mechanism: str, **properties: str) -> ServerThread:
    return factory(
        security="SASL_PLAINTEXT",
        mechanism=mechanism,
        users=USERS,
        properties={"authorizer.class.name": AUTHORIZER, "super.users": "User:admin", **properties},
    )


def _as(server: ServerThread, user: str, password: str | None = None, mechanism: str | None = None) -> dict:
    return server.client_settings.as_user(user, password or USERS[user], mechanism).kafka_python()


def _admin(
    server: ServerThread, user: str = "admin", bootstrap_ms: int = 5000, **settings: Any
) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=server.bootstrap,
        bootstrap_timeout_ms=bootstrap_ms,
        **TIMEOUTS,
        **(settings or _as(server, user)),
    )


def _acl(
    principal: str, op: ACLOperation, kind: ResourceType, name: str, pattern=ACLResourcePatternType.LITERAL
):
    return ACL(principal, "*", op, ACLPermissionType.ALLOW, ResourcePattern(kind, name, pattern))


def test_admin_creates_describes_and_deletes_acls(placement_sim_factory, wire_log: WireLog):
    server = _secured(placement_sim_factory, "SCRAM-SHA-256")
    admin = _admin(server)
    try:
        prefixed = _acl(
            "User:alice", ACLOperation.READ, ResourceType.TOPIC, "orders", ACLResourcePatternType.PREFIXED
        )
        group = _acl("User:alice", ACLOperation.READ, ResourceType.GROUP, "billing")
        result = admin.create_acls([prefixed, group])
        assert (len(result["succeeded"]), result["failed"]) == (2, [])
        match = ACLFilter(
            principal=None,
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                ResourceType.TOPIC, "orders-eu", ACLResourcePatternType.MATCH
            ),
        )
        found, error = admin.describe_acls(match)
        assert error.__name__ == "NoError"
        assert [(a.principal, a.resource_pattern.resource_name) for a in found] == [("User:alice", "orders")]
        everything = ACLFilter(
            principal="User:alice",
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        [(_, deleted, error)] = admin.delete_acls([everything])
        assert error.__name__ == "NoError"
        assert sorted(a.resource_pattern.resource_name for a in deleted) == ["billing", "orders"]
        assert admin.describe_acls(everything)[0] == []
    finally:
        admin.close()
    wire_log.assert_clean(server)


def test_an_authorized_and_an_unauthorized_client(placement_sim_factory, wire_log: WireLog):
    server = _secured(placement_sim_factory, "SCRAM-SHA-512")
    admin = _admin(server)
    try:
        admin.create_topics([NewTopic("orders", 2, 2)])
        admin.create_acls(
            [
                _acl(
                    "User:alice",
                    ACLOperation.WRITE,
                    ResourceType.TOPIC,
                    "ord",
                    ACLResourcePatternType.PREFIXED,
                ),
                _acl(
                    "User:alice",
                    ACLOperation.READ,
                    ResourceType.TOPIC,
                    "ord",
                    ACLResourcePatternType.PREFIXED,
                ),
                _acl("User:alice", ACLOperation.READ, ResourceType.GROUP, "billing"),
                _acl("User:alice", ACLOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, "kafka-cluster"),
            ]
        )
        sent = [f"order-{i}".encode() for i in range(6)]
        producer = KafkaProducer(
            bootstrap_servers=server.bootstrap, max_block_ms=10_000, **TIMEOUTS, **_as(server, "alice")
        )
        try:
            for value in sent:
                producer.send("orders", value).get(timeout=10)
        finally:
            producer.close()
        consumer = KafkaConsumer(
            "orders",
            bootstrap_servers=server.bootstrap,
            group_id="billing",
            auto_offset_reset="earliest",
            consumer_timeout_ms=8000,
            **TIMEOUTS,
            **_as(server, "alice"),
        )
        try:
            got = []
            for record in consumer:
                got.append(record.value)
                if len(got) == len(sent):
                    break
            consumer.commit()
        finally:
            consumer.close()
        assert sorted(got) == sorted(sent)

        # bob: no ACL allows him anything.
        refused = KafkaProducer(
            bootstrap_servers=server.bootstrap,
            max_block_ms=5000,
            enable_idempotence=False,
            **TIMEOUTS,
            **_as(server, "bob"),
        )
        try:
            with pytest.raises(TopicAuthorizationFailedError):
                refused.send("orders", b"not bob's").get(timeout=10)
        finally:
            refused.close(timeout=5)
        consumer = KafkaConsumer(
            bootstrap_servers=server.bootstrap,
            group_id="billing",
            consumer_timeout_ms=3000,
            **TIMEOUTS,
            **_as(server, "bob"),
        )
        try:
            consumer.subscribe(["orders"])
            with pytest.raises((GroupAuthorizationFailedError, TopicAuthorizationFailedError)):
                consumer.poll(timeout_ms=5000)
        finally:
            consumer.close()
        # The admin's view of the group: alice's commit is there, under the group bob was refused.
        offsets = admin.list_group_offsets({"billing": None})["billing"]
        assert sum(o.offset for o in offsets.values()) == len(sent)
    finally:
        admin.close()
    wire_log.assert_clean(server)


def test_scram_credentials_created_described_used_and_deleted(placement_sim_factory, wire_log: WireLog):
    server = _secured(
        placement_sim_factory,
        "SCRAM-SHA-256",
        **{"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512"},
    )
    admin = _admin(server)
    try:
        errors = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    "carol", ScramMechanism.SCRAM_SHA_256, "carol-256", iterations=8192
                )
            ]
        )
        assert errors == {"carol": None}
        errors = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_512, "carol-512")]
        )
        assert errors == {"carol": None}
        described = admin.describe_user_scram_credentials(["carol", "nobody"])
        assert described["carol"]["error"] is None
        assert sorted((c["mechanism"], c["iterations"]) for c in described["carol"]["credential_infos"]) == [
            (ScramMechanism.SCRAM_SHA_256, 8192),
            (ScramMechanism.SCRAM_SHA_512, 4096),
        ]
        assert (
            described["nobody"]["error"]
            == "Attempt to describe a user credential that does not exist: nobody"
        )

        def logs_in(mechanism: str, password: str) -> bool:
            try:
                client = _admin(server, bootstrap_ms=2000, **_as(server, "carol", password, mechanism))
            except KafkaTimeoutError:  # kafka-python gives up bootstrapping after the failed login
                return False
            client.close()
            return True

        assert logs_in("SCRAM-SHA-256", "carol-256") and logs_in("SCRAM-SHA-512", "carol-512")
        assert not logs_in("SCRAM-SHA-256", "carol-512")
        # A deleted credential: the next login with it fails, the other mechanism's still works.
        errors = admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)]
        )
        assert errors == {"carol": None}
        assert not logs_in("SCRAM-SHA-256", "carol-256")
        assert logs_in("SCRAM-SHA-512", "carol-512")
        assert [
            c["mechanism"]
            for c in admin.describe_user_scram_credentials(["carol"])["carol"]["credential_infos"]
        ] == [ScramMechanism.SCRAM_SHA_512]
    finally:
        admin.close()
    # Only the two logins meant to fail failed (each tried again by kafka-python until it gave up).
    assert server.stats["authentication failed"] >= 2
    assert server.stats["authenticated:SCRAM-SHA-512"] >= 2
