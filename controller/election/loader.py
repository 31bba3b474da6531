"""Election policies as plugins: the names ``simulator.election.policy`` takes.

A name is a built-in short name (``kafka``, ``fluvio``), a name registered under the entry-point group
``placement_sim.election_policies``, a dotted path ``package.module.ClassName`` or
``package.module:ClassName``, or a file ``path/to/file.py[:ClassName]`` (see
:mod:`controller.plugins.loader`); policies are loaded and isolated like placers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.election.api import ElectionError, ElectionPolicy
from controller.plugins.loader import MalformedResult, Opaque, PluginKind, load_plugin, resolve_plugin_class

__all__ = ["BUILTIN_POLICIES", "DEFAULT_POLICY", "ELECTION_POLICIES", "load_policy", "resolve_policy_class"]

ENTRY_POINT_GROUP = "placement_sim.election_policies"

BUILTIN_POLICIES: dict[str, str] = {
    "kafka": "controller.election.builtin.kafka:KafkaElectionPolicy",
    "fluvio": "controller.election.builtin.fluvio:FluvioElectionPolicy",
}

DEFAULT_POLICY = "kafka"


def candidate_lists(result: Any, portable: bool) -> list[tuple[Any, ...]]:
    """A policy's answer as a list of tuples (their contents are checked by the rules)."""
    if result is None or isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
        raise MalformedResult(f"returned {type(result).__name__}, not a list of candidate lists")
    out = []
    for entry in result:
        if isinstance(entry, (str, bytes)) or not hasattr(entry, "__iter__"):
            raise MalformedResult(
                f"entry {len(out)} is {type(entry).__name__} {entry!r:.60}, not a list of broker ids"
            )
        candidates = tuple(entry)
        if portable and any(type(c) is not int for c in candidates):
            candidates = tuple(
                c if type(c) is int else Opaque(f"{type(c).__name__} {c!r:.40}") for c in candidates
            )
        out.append(candidates)
    return out


ELECTION_POLICIES = PluginKind(
    noun="election policy",
    ref="controller.election.loader:ELECTION_POLICIES",
    entry_point_group=ENTRY_POINT_GROUP,
    builtins=BUILTIN_POLICIES,
    method="elect",
    normalize=candidate_lists,
    declared=(ElectionError,),
    attributes=("style",),
)


def resolve_policy_class(name: str) -> type:
    return resolve_plugin_class(ELECTION_POLICIES, name)


def load_policy(name: str, configs: Mapping[str, str] | None = None) -> ElectionPolicy:
    policy: ElectionPolicy = load_plugin(ELECTION_POLICIES, name, configs)
    return policy
