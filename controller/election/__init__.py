"""Replica election, shaped like placement: the policy API, the rules, the service, the built-ins
(``kafka``, ``fluvio``) and the conformance kit.

Every public name a policy needs comes from here::

    from controller.election import ElectionPolicy, PartitionView, Trigger, ElectionError
"""

from controller.election.api import (
    Candidates,
    ElectionError,
    ElectionPolicy,
    ElectionStyle,
    PartitionView,
    Trigger,
)
from controller.election.loader import BUILTIN_POLICIES, DEFAULT_POLICY, load_policy, resolve_policy_class

__all__ = [
    "BUILTIN_POLICIES",
    "DEFAULT_POLICY",
    "Candidates",
    "ElectionError",
    "ElectionPolicy",
    "ElectionStyle",
    "PartitionView",
    "Trigger",
    "load_policy",
    "resolve_policy_class",
]
