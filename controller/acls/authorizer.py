"""The authorizer: whether a principal from a host may perform an operation on a resource, by the ACLs of
:class:`~controller.acls.store.AclStore`, as Kafka 4's ``StandardAuthorizer`` decides
(``StandardAuthorizerData.authorize``):

- a super user (``super.users``, ``User:alice;User:bob``) may do anything;
- otherwise the ACLs whose pattern applies to the resource are those on its literal name, on the
  literal wildcard ``*``, and on every prefix of its name (PREFIXED); of those whose principal is the
  client's or ``User:*`` and whose host is the client's address (or ``*``, or a CIDR network holding it):
  a DENY for the operation (or ALL) denies; else an ALLOW for it (or ALL, or, for DESCRIBE, an ALLOW of
  READ, WRITE, DELETE or ALTER; for DESCRIBE_CONFIGS, an ALLOW of ALTER_CONFIGS) allows;
- a resource that has ACLs but none that allows is denied; one with no ACL at all gets the default
  result: allowed when ``allow.everyone.if.no.acl.found=true``, denied otherwise.

Denials are logged at info on the ``kafka.authorizer.logger`` logger as Kafka's audit log words them;
checks made only to compute authorized operations are not logged.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable

from controller.acls.codes import (
    Operation,
    PatternType,
    Permission,
    ResourceType,
    operations_bitfield,
    supported_operations,
)
from controller.acls.model import WILDCARD, WILDCARD_PRINCIPAL, Acl, AclFilter, host_network
from controller.acls.store import AclStore

__all__ = ["ANONYMOUS", "Authorizer", "kafka_principal"]

audit = logging.getLogger("kafka.authorizer.logger")

#: The principal of a client that has not authenticated (Kafka's ``KafkaPrincipal.ANONYMOUS``).
ANONYMOUS = "User:ANONYMOUS"

_IMPLIES_DESCRIBE = frozenset(
    {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
)
_IMPLIES_DESCRIBE_CONFIGS = frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS})


def kafka_principal(user: str | None) -> str:
    """The principal of a connection's user (``User:alice``), ``User:ANONYMOUS`` without one."""
    return ANONYMOUS if user is None else f"User:{user}"


def _host_matches(pattern: str, host: str) -> bool:
    if pattern == WILDCARD or pattern == host:
        return True
    if "/" not in pattern:
        return False
    try:
        return ipaddress.ip_address(host) in host_network(pattern)  # type: ignore[operator]
    except ValueError:
        return False


def _applies(acl: Acl, operation: int) -> bool:
    """Whether ``acl`` speaks of ``operation`` (Kafka's ``findResult`` once principal and host match)."""
    if acl.operation == Operation.ALL or acl.operation == operation:
        return True
    if acl.permission != Permission.ALLOW:
        return False
    if operation == Operation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if operation == Operation.DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


class Authorizer:
    """Kafka's ``StandardAuthorizer`` over an :class:`AclStore` (see the module docstring)."""

    def __init__(self, store: AclStore, super_users: Iterable[str], allow_if_no_acl: bool) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl

    # ------------------------------------------------------------------------------------- decisions

    def authorize(
        self, principal: str, host: str, operation: int, resource_type: int, name: str, log: bool = True
    ) -> bool:
        """Whether ``principal`` from ``host`` may perform ``operation`` on the resource."""
        if principal in self.super_users:
            return True
        allowed, rule = self._decide(principal, host, operation, resource_type, name)
        if not allowed and log and audit.isEnabledFor(logging.INFO):
            audit.info(
                "Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s "
                "based on rule %s",
                principal,
                Operation(operation).name,
                host,
                ResourceType(resource_type).name.title().replace("_", ""),
                name,
                rule,
            )
        return allowed

    def _decide(
        self, principal: str, host: str, operation: int, resource_type: int, name: str
    ) -> tuple[bool, str]:
        found_acls = False
        allow: Acl | None = None
        for acl in self.store.applying(resource_type, name):
            found_acls = True
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if not _host_matches(acl.host, host) or not _applies(acl, operation):
                continue
            if acl.permission == Permission.DENY:
                return False, f"MatchingAcl(acl={acl})"
            allow = acl
        if allow is not None:
            return True, f"MatchingAcl(acl={allow})"
        if found_acls:
            return False, "DefaultDeny"
        return self.allow_if_no_acl, "DefaultAllow" if self.allow_if_no_acl else "DefaultDeny"

    def allowed_names(
        self, principal: str, host: str, operation: int, resource_type: int, names: Iterable[str]
    ) -> set[str]:
        """The names of ``names`` the principal may perform ``operation`` on (each decided once)."""
        return {n for n in set(names) if self.authorize(principal, host, operation, resource_type, n)}

    def operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """The authorized operations on a resource as the wire's bitfield (Kafka's
        ``AuthHelper.authorizedOperations``): each supported operation decided without logging."""
        kind = ResourceType(resource_type)
        return operations_bitfield(
            op
            for op in supported_operations(kind)
            if self.authorize(principal, host, op, resource_type, name, log=False)
        )

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> bool:
        """Whether the principal may perform ``operation`` on some resource of the type (Kafka's
        ``Authorizer.authorizeByResourceType``: an ALLOW not dominated by a DENY of the same literal name
        or of a prefix of it; a wildcard DENY denies; a wildcard ALLOW allows)."""
        if self.authorize(principal, host, operation, resource_type, "hardcode", log=False):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow_literal: set[str] = set()
        allow_prefixed: set[str] = set()
        any_filter = AclFilter(
            resource_type, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY
        )
        wildcard_allow = False
        for acl in self.store.matching(any_filter):
            if acl.host != WILDCARD and acl.host != host:
                continue
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.operation != operation and acl.operation != Operation.ALL:
                continue
            literal = acl.pattern_type == PatternType.LITERAL
            if acl.permission == Permission.DENY:
                if literal and acl.resource_name == WILDCARD:
                    return False
                (deny_literal if literal else deny_prefixed).add(acl.resource_name)
            elif acl.permission == Permission.ALLOW:
                if literal and acl.resource_name == WILDCARD:
                    wildcard_allow = True
                else:
                    (allow_literal if literal else allow_prefixed).add(acl.resource_name)
        if wildcard_allow:
            return True
        for names, literal in ((allow_literal, True), (allow_prefixed, False)):
            for name in names:
                if literal and name in deny_literal:
                    continue
                if not any(name[:i] in deny_prefixed for i in range(1, len(name) + 1)):
                    return True
        return False
