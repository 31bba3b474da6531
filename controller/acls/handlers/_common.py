"""What the ACL and SCRAM administration handlers share: the refusals Kafka gives before looking at a
request (no authorizer; a client without the cluster permission)."""

from __future__ import annotations

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.acls.model import AclFilter
from controller.answers import Close
from controller.handlers import RequestContext

__all__ = ["NO_AUTHORIZER", "not_authorized", "read_filter"]

#: SECURITY_DISABLED's message when no authorizer is configured (Kafka's ``AclApis``).
NO_AUTHORIZER = "No Authorizer is configured."


def not_authorized(ctx: RequestContext, operation: int) -> str | None:
    """The refusal's message when the client may not perform ``operation`` on the cluster (Kafka's
    ``authorizeClusterOperation``), None when it may."""
    if ctx.allowed(operation, ResourceType.CLUSTER, CLUSTER_NAME):
        return None
    return f"{ctx.kafka_principal} is not authorized to {_verb(operation)} the cluster."


def _verb(operation: int) -> str:
    return Operation(operation).name.lower().replace("_", " ")


def read_filter(data: dict[str, object], what: str) -> AclFilter:
    """A filter of the request; an UNKNOWN (or undefined) code closes the connection, as Kafka fails to
    read such a request and closes it."""
    acl_filter = AclFilter.from_wire(data)
    unknown = acl_filter.unknown()
    if unknown is not None:
        raise Close("malformed request body", f"{what}: a filter that {unknown}")
    return acl_filter
