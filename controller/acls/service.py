"""The ACL subsystem as the Controller builds it on first use (``controller.app.SUBSYSTEMS``): the cluster's
ACLs (:class:`~controller.acls.store.AclStore`) and, when ``authorizer.class.name`` names Kafka's
``StandardAuthorizer``, the authorizer over them; CreateAcls, DescribeAcls and DeleteAcls as Kafka's
``AclApis`` and ``AclControlManager`` answer them."""

from __future__ import annotations

from typing import Any

from controller.acls.authorizer import Authorizer
from controller.acls.model import Acl, AclFilter, InvalidAcl
from controller.acls.store import AclStore
from controller.config import ServerConfig
from controller.events import EventLog
from protocol.codes import ErrorCode

__all__ = ["AclService"]


class AclService:
    """The cluster's ACLs and its authorizer (None when ``authorizer.class.name`` is empty)."""

    def __init__(self, config: ServerConfig, events: EventLog) -> None:
        self.store = AclStore(events, config.seed)
        self.authorizer: Authorizer | None = None
        if config.authorizer_class:
            self.authorizer = Authorizer(self.store, config.super_users or (), config.allow_if_no_acl)

    def create(self, creations: list[dict[str, Any]], cause: str) -> list[dict[str, Any]]:
        """CreateAcls' results, in the request's order: the valid ACLs are added (one already there is
        not added twice), each invalid one is answered INVALID_REQUEST with Kafka's message."""
        results = []
        valid = []
        for creation in creations:
            acl = Acl.from_wire(creation)
            try:
                acl.validate()
            except InvalidAcl as exc:
                results.append({"ErrorCode": ErrorCode.INVALID_REQUEST, "ErrorMessage": str(exc)})
                continue
            valid.append(acl)
            results.append({"ErrorCode": 0, "ErrorMessage": None})
        self.store.add(valid, cause)
        return results

    def describe(self, acl_filter: AclFilter) -> list[dict[str, Any]]:
        """DescribeAcls' resources: the matching ACLs grouped by resource pattern."""
        resources: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
        for acl in self.store.matching(acl_filter):
            key = (acl.resource_type, acl.resource_name, acl.pattern_type)
            resources.setdefault(key, []).append(acl.described())
        return [
            {"ResourceType": kind, "ResourceName": name, "PatternType": pattern, "Acls": acls}
            for (kind, name, pattern), acls in resources.items()
        ]

    def delete(self, filters: list[AclFilter], cause: str) -> list[dict[str, Any]]:
        """DeleteAcls' filter results, in the request's order: what each filter matched, all removed at
        once (an ACL two filters match is removed once, listed by both)."""
        results = []
        removed: dict[Acl, None] = {}
        for acl_filter in filters:
            matched = self.store.matching(acl_filter)
            removed.update(dict.fromkeys(matched))
            results.append(
                {"ErrorCode": 0, "ErrorMessage": None, "MatchingAcls": [acl.matching() for acl in matched]}
            )
        self.store.remove(removed, cause)
        return results
