"""The ACLs as cluster metadata: each with its id (Kafka's ``AccessControlEntryRecord``), added and removed by
the controller (``AclControlManager``), every change an event of the cluster's event log (kind ``acl``).

They live with the rest of the controller's metadata (topics, configs), not on any broker: a broker that
crashes, hangs or is cut off takes none of them with it, and every broker authorizes with the same ones,
as every Kafka broker replays the same metadata log. Ids are drawn from a generator seeded by
``simulator.seed`` (the same requests give the same ids)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Iterator

from controller.acls.codes import PatternType
from controller.acls.model import WILDCARD, Acl, AclFilter
from controller.events import EventLog

__all__ = ["AclStore"]


class AclStore:
    """Every ACL of the cluster, indexed for the authorizer: by resource type, literal name and prefix."""

    def __init__(self, events: EventLog, seed: int | None = None) -> None:
        self._events = events
        self._random = random.Random(seed) if seed is not None else None
        #: id -> ACL, in the order they were added.
        self._by_id: dict[uuid.UUID, Acl] = {}
        self._ids: dict[Acl, uuid.UUID] = {}
        #: resource type -> name -> ACLs on that literal name (the wildcard ``*`` among them).
        self._literal: dict[int, dict[str, list[Acl]]] = {}
        #: resource type -> prefix -> ACLs on that prefix.
        self._prefixed: dict[int, dict[str, list[Acl]]] = {}
        #: The longest prefix per resource type (a name is looked up at its prefixes up to it).
        self._longest: dict[int, int] = {}
        #: Bumped on every change.
        self.generation = 0

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Acl]:
        return iter(self._by_id.values())

    def _new_id(self) -> uuid.UUID:
        while True:
            new = (
                uuid.uuid4()
                if self._random is None
                else uuid.UUID(int=self._random.getrandbits(128), version=4)
            )
            if new not in self._by_id:
                return new

    # ------------------------------------------------------------------------------------- reading

    def applying(self, resource_type: int, name: str) -> Iterator[Acl]:
        """The ACLs whose pattern applies to the resource: on its literal name, on ``*``, on its prefixes."""
        literal = self._literal.get(resource_type)
        if literal:
            yield from literal.get(name, ())
            if name != WILDCARD:
                yield from literal.get(WILDCARD, ())
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            for end in range(1, min(len(name), self._longest[resource_type]) + 1):
                acls = prefixed.get(name[:end])
                if acls:
                    yield from acls

    def matching(self, acl_filter: AclFilter) -> list[Acl]:
        """The ACLs a filter matches, in the order they were added."""
        return [acl for acl in self._by_id.values() if acl_filter.matches(acl)]

    def id_of(self, acl: Acl) -> uuid.UUID | None:
        return self._ids.get(acl)

    # ------------------------------------------------------------------------------------- changes

    def add(self, acls: Iterable[Acl], cause: str) -> None:
        """Adds valid ACLs (checked by the caller); one already there is left as it is (Kafka's
        ``existingAcls``)."""
        for acl in acls:
            if acl in self._ids:
                continue
            acl_id = self._new_id()
            self._by_id[acl_id] = acl
            self._ids[acl] = acl_id
            index = self._literal if acl.pattern_type == PatternType.LITERAL else self._prefixed
            index.setdefault(acl.resource_type, {}).setdefault(acl.resource_name, []).append(acl)
            if acl.pattern_type == PatternType.PREFIXED:
                longest = self._longest.get(acl.resource_type, 0)
                self._longest[acl.resource_type] = max(longest, len(acl.resource_name))
            self.generation += 1
            self._events.record("acl", str(acl_id), [("acl", None, str(acl))], cause)

    def remove(self, acls: Iterable[Acl], cause: str) -> None:
        for acl in acls:
            acl_id = self._ids.pop(acl, None)
            if acl_id is None:
                continue
            del self._by_id[acl_id]
            index = self._literal if acl.pattern_type == PatternType.LITERAL else self._prefixed
            by_name = index[acl.resource_type]
            entries = by_name[acl.resource_name]
            entries.remove(acl)
            if not entries:
                del by_name[acl.resource_name]
                if acl.pattern_type == PatternType.PREFIXED:
                    self._longest[acl.resource_type] = max(map(len, by_name), default=0)
            self.generation += 1
            self._events.record("acl", str(acl_id), [("acl", str(acl), None)], cause)
