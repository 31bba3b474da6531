"""What placing gave, shared by ``place``, ``compare`` and the rendering: a placement that failed
(:class:`PlacementError`) and one placer's outcome in a comparison (:class:`Comparison`).

A leaf module: the commands and :mod:`placement_sim.cli.render` import it, it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.placement.metrics import PlacementMetrics
from protocol.errors import error_by_code

__all__ = ["Comparison", "PlacementError"]


class PlacementError(Exception):
    """A placement that gave no replicas.

    ``kind`` names what went wrong (the class of the exception the placer raised, ``Deferred``,
    ``MalformedPlacement``, ``TimedOut``, or the error name itself when the request was refused before
    any placer ran); ``code`` is the error code the server would answer with, ``error`` its name.
    ``not_applicable``: why the placer does not apply to the cluster (PlacerNotApplicableError), or None.
    """

    def __init__(self, kind: str, code: int, message: str, not_applicable: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.code = code
        self.error = error_by_code(code).name
        self.message = message
        self.not_applicable = not_applicable

    def __str__(self) -> str:
        if self.kind == self.error:
            return f"{self.error}: {self.message}"
        return f"{self.kind} ({self.error}): {self.message}"


@dataclass(frozen=True)
class Comparison:
    """One placer's outcome: its metrics, or the error it gave (which may say it does not apply)."""

    placer: str
    metrics: PlacementMetrics | None = None
    error: PlacementError | None = None

    @property
    def not_applicable(self) -> str | None:
        """Why the placer does not apply to the cluster, or None."""
        return self.error.not_applicable if self.error is not None else None
