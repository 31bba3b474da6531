"""The policy conformance kit: the built-ins pass; each rule catches the policy that breaks it."""

from __future__ import annotations

import random

import pytest

from controller.election import ElectionError, ElectionPolicy
from controller.election.testing import PolicyCheckError, check_policy


@pytest.mark.parametrize("name", ["kafka", "fluvio"])
def test_the_built_in_policies_pass(name: str) -> None:
    report = check_policy(name, max_examples=150)
    assert report.passed and report.examples == 150
    assert report.stats["elected"] > 50  # the examples elect, not only refuse


class FirstReplica(ElectionPolicy):
    """Always the preferred replica, dead or alive."""

    def elect(self, partitions):
        return [(v.replicas[0],) for v in partitions]


class AnyLiveReplica(ElectionPolicy):
    """Any live replica, in-sync or not (an unclean election every time)."""

    def elect(self, partitions):
        return [tuple(r for r in v.replicas if r in v.alive) for v in partitions]


class Twice(ElectionPolicy):
    def elect(self, partitions):
        return [v.eligible[:1] * 2 for v in partitions]


class Raises(ElectionPolicy):
    def elect(self, partitions):
        raise KeyError("oops")


class Refuses(ElectionPolicy):
    def elect(self, partitions):
        raise ElectionError("not today")


class Coin(ElectionPolicy):
    def elect(self, partitions):
        return [tuple(random.sample(list(v.eligible), len(v.eligible))) for v in partitions]


class Short(ElectionPolicy):
    def elect(self, partitions):
        return [v.eligible for v in partitions][:-1]


@pytest.mark.parametrize(
    ("policy", "check", "words"),
    [
        (FirstReplica, "eligible only", "cannot lead now"),
        (AnyLiveReplica, "eligible only", "outside the replicas allowed to lead"),
        (Twice, "distinct", "twice"),
        (Raises, "exceptions", "raised KeyError"),
        (Coin, "determinism", "answered"),
        (Short, "shape", "answer(s) for"),
    ],
)
def test_each_rule_catches_the_policy_that_breaks_it(policy, check: str, words: str) -> None:
    with pytest.raises(PolicyCheckError) as info:
        check_policy(policy, max_examples=200)
    assert info.value.report.check == check
    assert words in (info.value.report.message or "")


def test_a_policy_may_refuse_with_election_error() -> None:
    assert check_policy(Refuses, max_examples=20).passed
