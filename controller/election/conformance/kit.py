"""``check_policy``: runs an election policy on generated partitions and judges every answer.

The checks, for any policy:

- **shape**: one candidate list per partition of the batch, each a sequence of broker ids;
- **eligible only**: every candidate is a replica, alive, and in the eligible set the controller's rules
  give (so a policy never elects a dead broker, nor one outside the in-sync set unless unclean);
- **distinct**: no candidate twice;
- **exceptions**: only :class:`~controller.election.api.ElectionError`;
- **determinism**: two fresh policies configured with the same ``simulator.seed`` answer alike.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed

from controller.config import SEED
from controller.election.api import ElectionError, ElectionStyle, PartitionView
from controller.election.conformance.strategies import view_batches
from controller.election.loader import ELECTION_POLICIES, resolve_policy_class
from controller.election.rules import candidates_problem
from controller.plugins.loader import class_label
from controller.plugins.properties import PropertyValue, property_texts

__all__ = ["PolicyCheckError", "PolicyReport", "check_policy"]


@dataclass
class PolicyReport:
    policy: str
    passed: bool
    examples: int = 0
    stats: Counter[str] = field(default_factory=Counter)
    check: str | None = None
    message: str | None = None
    example: Sequence[PartitionView] = ()

    def describe(self) -> str:
        head = f"{self.policy}: {'passed' if self.passed else 'FAILED'} ({self.examples} batch(es) passed every check)"
        lines = [head, f"  partitions: {self.stats['partitions']}, with candidates: {self.stats['elected']}"]
        if not self.passed:
            lines.append(f"failed the {self.check!r} check: {self.message}")
            lines.append("smallest failing batch:")
            lines.extend(f"  {view!r}" for view in self.example)
        return "\n".join(lines)


class PolicyCheckError(AssertionError):
    def __init__(self, report: PolicyReport) -> None:
        super().__init__(report.describe())
        self.report = report


class _Violation(AssertionError):
    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check


def _factory(policy: Any) -> tuple[Callable[[], Any], str]:
    if isinstance(policy, str):
        cls = resolve_policy_class(policy)
        label = class_label(cls)
        return cls, policy if label == policy else f"{policy} ({label})"
    if isinstance(policy, type):
        return policy, class_label(policy)
    template = copy.deepcopy(policy)
    return (lambda: copy.deepcopy(template)), class_label(type(policy))


def _answer(policy: Any, views: list[PartitionView]) -> Any:
    result = policy.elect(views)
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        result = asyncio.run(wait())
    return result


def check_policy(
    policy: Any,
    *,
    max_examples: int = 100,
    seed: int | None = None,
    configs: Mapping[str, PropertyValue] | None = None,
    raise_on_failure: bool = True,
) -> PolicyReport:
    """Runs the checks above on ``policy`` (a class, an instance, or a name as ``simulator.election.policy``
    takes it); raises :class:`PolicyCheckError` on failure unless ``raise_on_failure=False``."""
    factory, label = _factory(policy)
    texts = property_texts(configs or {})  # numbers and booleans as a properties file holds them
    style = getattr(factory(), "style", ElectionStyle.KAFKA)
    stats: Counter[str] = Counter()
    failure: list[tuple[str, str, list[PartitionView]]] = []

    def fresh(case_seed: int) -> Any:
        p = factory()
        configure = getattr(p, "configure", None)
        if callable(configure):
            try:
                configure({**texts, SEED: str(case_seed)})
            except Exception as exc:  # a property it refuses: a failed check, not a crash of the kit
                raise _Violation("configure", f"configure() raised {type(exc).__name__}: {exc}") from exc
        return p

    def judge(views: list[PartitionView]) -> None:
        first = fresh(0)
        try:
            answers = _answer(first, views)
        except ElectionError:
            return
        except Exception as exc:  # the kit judges every exception a policy raises
            raise _Violation(
                "exceptions", f"raised {type(exc).__name__}: {exc}; only ElectionError is allowed"
            ) from exc
        try:
            answers = ELECTION_POLICIES.normalize(answers, False)
        except Exception as exc:
            raise _Violation("shape", str(exc)) from exc
        if len(answers) != len(views):
            raise _Violation("shape", f"returned {len(answers)} answer(s) for {len(views)} partition(s)")
        for view, candidates in zip(views, answers, strict=True):
            stats["partitions"] += 1
            problem = candidates_problem(view, candidates)
            if problem is not None:
                check = (
                    "distinct"
                    if "twice" in problem
                    else "shape"
                    if "not a broker id" in problem or "not a sequence" in problem
                    else "eligible only"
                )
                raise _Violation(check, f"{view.topic}-{view.partition}: {problem}")
            if candidates:
                stats["elected"] += 1
        again = ELECTION_POLICIES.normalize(_answer(fresh(0), views), False)
        if list(again) != list(answers):
            raise _Violation(
                "determinism", f"a second policy configured alike answered {again}, not {answers}"
            )
        stats["examples"] += 1

    def run() -> None:
        @settings(
            max_examples=max_examples,
            deadline=None,
            database=None,
            derandomize=seed is None,
            print_blob=False,
            verbosity=Verbosity.quiet,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
        )
        @given(views=view_batches(style))
        def test(views: list[PartitionView]) -> None:
            try:
                judge(views)
            except _Violation as violation:
                failure[:] = [(violation.check, str(violation), views)]
                raise

        if seed is not None:
            test = hypothesis_seed(seed)(test)
        try:
            test()
        except _Violation:
            pass

    run()
    passed = not failure
    report = PolicyReport(label, passed, stats["examples"], stats)
    if failure:
        report.check, report.message, report.example = failure[0][0], failure[0][1], tuple(failure[0][2])
    if not passed and raise_on_failure:
        raise PolicyCheckError(report)
    return report
