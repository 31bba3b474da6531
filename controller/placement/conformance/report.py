"""What the conformance kit reports: the failure with its smallest example, and what the examples exercised."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.placement.conformance.strategies import PlacementCase

__all__ = ["CheckReport", "Failure", "PlacerCheckError"]


@dataclass(frozen=True)
class Failure:
    """The first check that failed, on the smallest example hypothesis found."""

    placer: str
    check: str
    message: str
    case: PlacementCase
    outcomes: tuple[str, ...] = ()
    configs: Mapping[str, str] = field(default_factory=dict)
    #: False for the hand-picked layouts the kit ends with: hypothesis shrinks only what it generates.
    shrunk: bool = True
    note: str = ""

    def describe(self) -> str:
        lines = [
            f"placer {self.placer} failed the {self.check!r} check: {self.message}",
            "smallest failing example:" if self.shrunk else "failing example (a hand-picked layout):",
            f"  configs: {dict(self.configs)!r}",
            "  brokers:",
        ]
        for b in self.case.cluster.brokers:
            lines.append(f"    id={b.id:<11} rack={b.rack!r}{'  fenced' if b.fenced else ''}")
        if self.case.cluster.assignments:
            lines.append(f"  existing assignments: {dict(self.case.cluster.assignments)!r}")
        for n, spec in enumerate(self.case.specs, 1):
            lines.append(f"  call {n}: place({spec!r}, cluster)")
            if n <= len(self.outcomes):
                lines.append(f"          -> {self.outcomes[n - 1]}")
        lines.append(f"  cluster = {self.case.cluster!r}")
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)


@dataclass
class CheckReport:
    """What ``check_placer`` found: pass or the failure, and what the examples exercised."""

    placer: str
    failure: Failure | None
    examples: int = 0
    stats: Counter[str] = field(default_factory=Counter)

    @property
    def passed(self) -> bool:
        return self.failure is None

    def describe(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        head = f"{self.placer}: {verdict} ({self.examples} example(s) passed every check)"
        s = self.stats
        lines = [
            head,
            f"  calls: {s['calls']}, placements checked: {s['placed']}, deferred: {s['deferred']}, "
            f"refused: {s['refused']} (of which for declared preconditions: {s['refused_precondition']})",
            f"  rack spread checked on {s['rack_spread']} placement(s)"
            if s["rack_aware"]
            else "  rack spread not checked (the placer does not declare rack_aware = True)",
        ]
        if self.failure is not None:
            lines.append(self.failure.describe())
        return "\n".join(lines)


class PlacerCheckError(AssertionError):
    """A placer failed the conformance kit; the message shows the smallest failing example."""

    def __init__(self, report: CheckReport) -> None:
        super().__init__(report.describe())
        self.report = report
