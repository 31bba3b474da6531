"""Kafka's codes of access control, as the wire carries them: resource types, pattern types, operations and
permissions, and the operations each resource type has (what authorized operations are computed over).

Enums only, with nothing else of the server: the request handlers that check access (Metadata among them)
import this, and a bare server answers Metadata."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

__all__ = [
    "ALL_OPERATIONS",
    "CLUSTER_NAME",
    "Operation",
    "PatternType",
    "Permission",
    "ResourceType",
    "operations_bitfield",
    "supported_operations",
]

#: The one name of the CLUSTER resource.
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_T, _G, _C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
_O = Operation

#: The operations each resource type has (Kafka's ``AclEntry.supportedOperations``): what authorized
#: operations are computed over.
_SUPPORTED: dict[ResourceType, tuple[Operation, ...]] = {
    _T: (
        _O.READ,
        _O.WRITE,
        _O.CREATE,
        _O.DESCRIBE,
        _O.DELETE,
        _O.ALTER,
        _O.DESCRIBE_CONFIGS,
        _O.ALTER_CONFIGS,
    ),
    _G: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    _C: (
        _O.CREATE,
        _O.CLUSTER_ACTION,
        _O.DESCRIBE_CONFIGS,
        _O.ALTER_CONFIGS,
        _O.IDEMPOTENT_WRITE,
        _O.ALTER,
        _O.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE, _O.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}


def supported_operations(resource_type: ResourceType) -> tuple[Operation, ...]:
    return _SUPPORTED[resource_type]


def operations_bitfield(operations: Iterable[int]) -> int:
    """Operations as the 32-bit field the wire carries (bit n for operation code n, Kafka's
    ``Utils.to32BitField``), as a signed int32."""
    bits = 0
    for operation in operations:
        bits |= 1 << int(operation)
    return bits - (1 << 32) if bits >= 1 << 31 else bits


#: The bitfield of every supported operation per resource type: what Kafka answers when it has no
#: authorizer and a client asks for authorized operations.
ALL_OPERATIONS = {rt: operations_bitfield(ops) for rt, ops in _SUPPORTED.items()}
