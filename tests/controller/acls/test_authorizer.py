"""The authorizer decides as Kafka 4's StandardAuthorizer: super users, DENY over ALLOW, the operations an
ALLOW implies, literal, wildcard and prefixed names, hosts (CIDR too), the default when a resource has no
ACL, authorization by resource type, and the authorized-operations bitfield."""

from __future__ import annotations

import pytest

from controller.acls.authorizer import Authorizer
from controller.acls.codes import Operation as Op
from controller.acls.codes import PatternType, Permission, ResourceType
from controller.acls.model import Acl, AclFilter, InvalidAcl
from controller.acls.store import AclStore
from controller.events import EventLog

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
HOST = "127.0.0.1"


def acl(kind, name, principal, op, permission=ALLOW, pattern=LITERAL, host="*") -> Acl:
    return Acl(kind, name, pattern, principal, host, op, permission)


def authorizer(*acls: Acl, super_users=(), allow_if_no_acl=False) -> Authorizer:
    store = AclStore(EventLog(lambda: 0), seed=1)
    store.add(acls, "test")
    return Authorizer(store, super_users, allow_if_no_acl)


def test_an_allow_allows_its_principal_only():
    a = authorizer(acl(TOPIC, "orders", "User:alice", Op.READ))
    assert a.authorize("User:alice", HOST, Op.READ, TOPIC, "orders")
    assert not a.authorize("User:bob", HOST, Op.READ, TOPIC, "orders")
    assert not a.authorize("User:alice", HOST, Op.WRITE, TOPIC, "orders")


def test_a_deny_wins_over_an_allow():
    a = authorizer(
        acl(TOPIC, "orders", "User:*", Op.ALL),
        acl(TOPIC, "ord", "User:bob", Op.WRITE, DENY, PREFIXED),
    )
    assert a.authorize("User:bob", HOST, Op.READ, TOPIC, "orders")
    assert not a.authorize("User:bob", HOST, Op.WRITE, TOPIC, "orders")
    assert a.authorize("User:alice", HOST, Op.WRITE, TOPIC, "orders")


def test_read_write_delete_alter_imply_describe_and_alter_configs_implies_describe_configs():
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert authorizer(acl(TOPIC, "t", "User:a", op)).authorize("User:a", HOST, Op.DESCRIBE, TOPIC, "t")
    assert not authorizer(acl(TOPIC, "t", "User:a", Op.CREATE)).authorize(
        "User:a", HOST, Op.DESCRIBE, TOPIC, "t"
    )
    a = authorizer(acl(TOPIC, "t", "User:a", Op.ALTER_CONFIGS))
    assert a.authorize("User:a", HOST, Op.DESCRIBE_CONFIGS, TOPIC, "t")
    # Only an ALLOW implies: a DENY of READ does not deny DESCRIBE.
    a = authorizer(acl(TOPIC, "t", "User:a", Op.DESCRIBE), acl(TOPIC, "t", "User:a", Op.READ, DENY))
    assert a.authorize("User:a", HOST, Op.DESCRIBE, TOPIC, "t")
    assert not a.authorize("User:a", HOST, Op.READ, TOPIC, "t")


def test_literal_wildcard_and_prefixed_names():
    a = authorizer(
        acl(TOPIC, "*", "User:a", Op.READ),
        acl(GROUP, "team-", "User:a", Op.READ, pattern=PREFIXED),
        acl(GROUP, "team", "User:b", Op.READ),
    )
    assert a.authorize("User:a", HOST, Op.READ, TOPIC, "anything")
    assert a.authorize("User:a", HOST, Op.READ, GROUP, "team-blue")
    assert not a.authorize("User:a", HOST, Op.READ, GROUP, "team")  # the prefix is longer than the name
    assert not a.authorize("User:b", HOST, Op.READ, GROUP, "team-blue")  # a literal is not a prefix


def test_hosts_by_address_and_network():
    a = authorizer(
        acl(TOPIC, "t", "User:a", Op.READ, host="10.0.0.7"),
        acl(TOPIC, "t", "User:b", Op.READ, host="192.168.0.0/16"),
    )
    assert a.authorize("User:a", "10.0.0.7", Op.READ, TOPIC, "t")
    assert not a.authorize("User:a", "10.0.0.8", Op.READ, TOPIC, "t")
    assert a.authorize("User:b", "192.168.4.2", Op.READ, TOPIC, "t")
    assert not a.authorize("User:b", "10.0.0.7", Op.READ, TOPIC, "t")


def test_a_resource_without_acls_gets_the_default_and_super_users_everything():
    a = authorizer(acl(TOPIC, "guarded", "User:a", Op.READ), super_users=["User:root"])
    assert not a.authorize("User:b", HOST, Op.READ, TOPIC, "open")
    assert a.authorize("User:root", HOST, Op.DELETE, TOPIC, "guarded")
    a = authorizer(acl(TOPIC, "guarded", "User:a", Op.READ), allow_if_no_acl=True)
    assert a.authorize("User:b", HOST, Op.READ, TOPIC, "open")
    # A resource that has ACLs is denied to everyone they do not allow, whatever the default.
    assert not a.authorize("User:b", HOST, Op.READ, TOPIC, "guarded")


def test_authorized_operations_are_the_allowed_ones_of_the_resource_type():
    a = authorizer(acl(TOPIC, "t", "User:a", Op.READ), acl(TOPIC, "t", "User:a", Op.ALTER_CONFIGS))
    expected = sum(1 << op for op in (Op.READ, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS))
    assert a.operations("User:a", HOST, TOPIC, "t") == expected
    assert a.operations("User:b", HOST, TOPIC, "t") == 0
    every_cluster_op = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
    assert (
        authorizer(super_users=["User:r"]).operations("User:r", HOST, CLUSTER, "kafka-cluster")
        == every_cluster_op
    )


def test_authorize_by_resource_type_as_kafka():
    assert authorizer(acl(TOPIC, "t", "User:a", Op.WRITE)).authorize_by_resource_type(
        "User:a", HOST, Op.WRITE, TOPIC
    )
    assert not authorizer().authorize_by_resource_type("User:a", HOST, Op.WRITE, TOPIC)
    # An allow dominated by a prefixed deny of itself allows nothing.
    a = authorizer(
        acl(TOPIC, "orders", "User:a", Op.WRITE), acl(TOPIC, "ord", "User:a", Op.WRITE, DENY, PREFIXED)
    )
    assert not a.authorize_by_resource_type("User:a", HOST, Op.WRITE, TOPIC)
    a = authorizer(acl(TOPIC, "*", "User:a", Op.WRITE), acl(TOPIC, "x", "User:a", Op.WRITE, DENY))
    assert a.authorize_by_resource_type("User:a", HOST, Op.WRITE, TOPIC)


def test_filters_match_as_kafkas():
    literal = acl(TOPIC, "orders", "User:a", Op.READ)
    wildcard = acl(TOPIC, "*", "User:a", Op.READ)
    prefixed = acl(TOPIC, "ord", "User:a", Op.READ, pattern=PREFIXED)
    other = acl(GROUP, "orders", "User:b", Op.READ)
    every = (literal, wildcard, prefixed, other)

    def matched(kind, name, pattern, principal=None):
        f = AclFilter(kind, name, pattern, principal, None, Op.ANY, Permission.ANY)
        return [x for x in every if f.matches(x)]

    assert matched(ResourceType.ANY, None, PatternType.ANY) == list(every)
    assert matched(TOPIC, "orders", PatternType.MATCH) == [literal, wildcard, prefixed]
    assert matched(TOPIC, "orders", PatternType.LITERAL) == [literal]
    assert matched(TOPIC, "ord", PatternType.PREFIXED) == [prefixed]
    assert matched(TOPIC, "orders", PatternType.ANY) == [literal]
    assert matched(ResourceType.ANY, None, PatternType.ANY, "User:b") == [other]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            acl(CLUSTER, "c", "User:a", Op.ALTER),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (acl(TOPIC, "", "User:a", Op.READ), "Invalid empty resource name"),
        (acl(ResourceType.ANY, "t", "User:a", Op.READ), "Invalid resourceType ANY"),
        (acl(TOPIC, "t", "User:a", Op.READ, pattern=PatternType.MATCH), "Invalid patternType MATCH"),
        (acl(TOPIC, "t", "User:a", Op.ANY), "Invalid operation ANY"),
        (acl(TOPIC, "t", "User:a", Op.READ, Permission.ANY), "Invalid permissionType ANY"),
        (
            acl(TOPIC, "t", "alice", Op.READ),
            "Could not parse principal from `alice` (no colon is present separating the principal type from "
            "the principal name)",
        ),
        (acl(TOPIC, "t", "User:a", Op.READ, host=""), "Host pattern cannot be null or empty"),
    ],
)
def test_invalid_acls_get_kafkas_messages(bad: Acl, message: str):
    with pytest.raises(InvalidAcl) as raised:
        bad.validate()
    assert str(raised.value) == message


def test_the_store_keeps_each_acl_once_and_records_its_changes():
    events = EventLog(lambda: 0)
    store = AclStore(events, seed=7)
    one = acl(TOPIC, "t", "User:a", Op.READ)
    store.add([one, one], "create")
    assert len(store) == 1
    store.remove([one], "delete")
    assert len(store) == 0
    assert [(e.kind, e.cause) for e in events] == [("acl", "create"), ("acl", "delete")]
    # Seeded: the same ACLs get the same ids.
    again = AclStore(EventLog(lambda: 0), seed=7)
    again.add([one], "create")
    assert again.id_of(one) == AclStore(EventLog(lambda: 0), seed=7)._new_id()
