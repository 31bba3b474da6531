"""What the ACL and SCRAM administration handlers share: the refusals Kafka gives before looking at a
request (no authorizer; a client without the cluster permission)."""

from __future__ import annotations

from controller.acls.model import AclFilter
from controller.answers import Close

__all__ = ["NO_AUTHORIZER", "read_filter"]

#: SECURITY_DISABLED's message when no authorizer is configured (Kafka's ``AclApis``).
NO_AUTHORIZER = "No Authorizer is configured."


def read_filter(data: dict[str, object], what: str) -> AclFilter:
    """A filter of the request; an UNKNOWN (or undefined) code closes the connection, as Kafka fails to
    read such a request and closes it."""
    acl_filter = AclFilter.from_wire(data)
    unknown = acl_filter.unknown()
    if unknown is not None:
        raise Close("malformed request body", f"{what}: a filter that {unknown}")
    return acl_filter
