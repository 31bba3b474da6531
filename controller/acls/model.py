"""ACLs as Kafka models them: an ACL (a binding of a resource pattern and an access control entry, with the
codes of :mod:`controller.acls.codes`), the filters that DescribeAcls and DeleteAcls match with
(``ResourcePatternFilter``, ``AccessControlEntryFilter``), and the checks a new ACL passes
(``AclControlManager.validateNewAcl`` and the broker's checks before it)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import IntEnum

from controller.acls.codes import CLUSTER_NAME, Operation, PatternType, Permission, ResourceType

__all__ = ["WILDCARD", "WILDCARD_PRINCIPAL", "Acl", "AclFilter", "InvalidAcl", "host_network"]

#: A resource name or host matching every resource or host (a LITERAL pattern).
WILDCARD = "*"
#: The principal matching every principal.
WILDCARD_PRINCIPAL = "User:*"


class InvalidAcl(ValueError):
    """An ACL or filter Kafka refuses: ``message`` is Kafka's (answered with INVALID_REQUEST)."""


def _name(enum: type[IntEnum], code: int) -> str:
    try:
        return enum(code).name
    except ValueError:
        return "UNKNOWN"


def _unknown(resource_type: int, pattern_type: int, operation: int, permission: int) -> str | None:
    for value, enum, what in (
        (resource_type, ResourceType, "resource type"),
        (pattern_type, PatternType, "pattern type"),
        (operation, Operation, "operation"),
        (permission, Permission, "permission type"),
    ):
        if value == 0 or value not in _CODES[enum]:
            return f"its {what} is unknown ({value})"
    return None


_CODES: dict[type[IntEnum], frozenset[int]] = {
    e: frozenset(int(x) for x in e) for e in (ResourceType, PatternType, Operation, Permission)
}


def host_network(host: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network of a CIDR host pattern (``10.0.0.0/8``), None for a host that is not one; raises
    InvalidAcl with Kafka's message for a malformed one."""
    if "/" not in host:
        return None
    try:
        return ipaddress.ip_network(host, strict=False)
    except ValueError as exc:
        raise InvalidAcl(f"Invalid CIDR notation '{host}': {exc}") from None


@dataclass(frozen=True, slots=True, order=True)
class Acl:
    """One ACL: a resource pattern (type, name, pattern type) and an entry (principal, host, operation,
    permission). Codes are kept as the wire gives them (ints)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    @classmethod
    def from_wire(cls, creation: dict[str, object]) -> Acl:
        return cls(
            int(creation["ResourceType"]),  # type: ignore[call-overload]
            str(creation["ResourceName"]),
            int(creation.get("ResourcePatternType", PatternType.LITERAL)),  # type: ignore[call-overload]
            str(creation["Principal"]),
            str(creation["Host"]),
            int(creation["Operation"]),  # type: ignore[call-overload]
            int(creation["PermissionType"]),  # type: ignore[call-overload]
        )

    def unknown(self) -> str | None:
        """What makes the ACL one Kafka refuses to read (an UNKNOWN or undefined code), or None."""
        return _unknown(self.resource_type, self.pattern_type, self.operation, self.permission)

    def validate(self) -> None:
        """Raises InvalidAcl with Kafka's message for an ACL Kafka does not create: the broker's checks
        (``AclApis.handleCreateAcls``), then the controller's (``AclControlManager.validateNewAcl``)."""
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        if not self.resource_name:
            raise InvalidAcl("Invalid empty resource name")
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAcl(f"Invalid resourceType {_name(ResourceType, self.resource_type)}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"Invalid patternType {_name(PatternType, self.pattern_type)}")
        if self.operation in (Operation.UNKNOWN, Operation.ANY):
            raise InvalidAcl(f"Invalid operation {_name(Operation, self.operation)}")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise InvalidAcl(f"Invalid permissionType {_name(Permission, self.permission)}")
        if ":" not in self.principal:
            raise InvalidAcl(
                f"Could not parse principal from `{self.principal}` (no colon is present separating the "
                "principal type from the principal name)"
            )
        if not self.host:
            raise InvalidAcl("Host pattern cannot be null or empty")
        if self.host != WILDCARD:
            host_network(self.host)

    def described(self) -> dict[str, object]:
        """The entry as DescribeAcls lists it under its resource."""
        return {
            "Principal": self.principal,
            "Host": self.host,
            "Operation": self.operation,
            "PermissionType": self.permission,
        }

    def matching(self) -> dict[str, object]:
        """The ACL as DeleteAcls lists what a filter removed."""
        return {
            "ErrorCode": 0,
            "ErrorMessage": None,
            "ResourceType": self.resource_type,
            "ResourceName": self.resource_name,
            "PatternType": self.pattern_type,
            "Principal": self.principal,
            "Host": self.host,
            "Operation": self.operation,
            "PermissionType": self.permission,
        }

    def __str__(self) -> str:
        return (
            f"(pattern=ResourcePattern(resourceType={_name(ResourceType, self.resource_type)}, "
            f"name={self.resource_name}, patternType={_name(PatternType, self.pattern_type)}), "
            f"entry=(principal={self.principal}, host={self.host}, "
            f"operation={_name(Operation, self.operation)}, "
            f"permissionType={_name(Permission, self.permission)}))"
        )


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A filter of DescribeAcls and DeleteAcls (Kafka's ``AclBindingFilter``): ANY matches every value of
    a code, None every name, principal or host; pattern type MATCH matches every ACL that applies to the
    name (literal, the ``*`` wildcard, and prefixes of it)."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    @classmethod
    def from_wire(cls, data: dict[str, object]) -> AclFilter:
        return cls(
            int(data["ResourceTypeFilter"]),  # type: ignore[call-overload]
            data["ResourceNameFilter"],  # type: ignore[arg-type]
            int(data.get("PatternTypeFilter", PatternType.LITERAL)),  # type: ignore[call-overload]
            data["PrincipalFilter"],  # type: ignore[arg-type]
            data["HostFilter"],  # type: ignore[arg-type]
            int(data["Operation"]),  # type: ignore[call-overload]
            int(data["PermissionType"]),  # type: ignore[call-overload]
        )

    def unknown(self) -> str | None:
        """What makes the filter one Kafka refuses to read (an UNKNOWN or undefined code), or None."""
        return _unknown(self.resource_type, self.pattern_type, self.operation, self.permission)

    def matches(self, acl: Acl) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: Acl) -> bool:
        """Kafka's ``ResourcePatternFilter.matches``."""
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        pattern = self.pattern_type
        if pattern not in (PatternType.ANY, PatternType.MATCH) and pattern != acl.pattern_type:
            return False
        name = self.resource_name
        if name is None:
            return True
        if pattern == PatternType.ANY or pattern == acl.pattern_type:
            return name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:
            return name == acl.resource_name or acl.resource_name == WILDCARD
        return name.startswith(acl.resource_name)  # PREFIXED

    def _matches_entry(self, acl: Acl) -> bool:
        """Kafka's ``AccessControlEntryFilter.matches``."""
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != Operation.ANY and self.operation != acl.operation:
            return False
        return self.permission == Permission.ANY or self.permission == acl.permission
