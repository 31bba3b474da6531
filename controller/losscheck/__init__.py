"""The seeded loss checker: no acknowledged record lost without a report.

Runs a cluster through a seeded schedule of failures while producers write records with unique values,
reads every partition back from its beginning, and checks the promise of ``docs/data-path.md`` ("The
promise") rule by rule. For a test of one's own::

    from controller.losscheck import run_seed

    async def test_no_unreported_loss():
        for seed in range(20):
            result = await run_seed(seed)
            assert result.ok, result.describe()

- :mod:`.schedule`: the configurations (policy x unclean x acks x idempotence) and the seeded steps;
- :mod:`.runner`: one run on a server in this process, on a virtual clock, with the project's client;
- :mod:`.share`: share groups' runs (:func:`~controller.losscheck.share.run_share_seed`: share consumers
  through the same failures) and their checks;
- :mod:`.checks`: what a run records and the checks (extend :class:`Check` for new rules; a transactional
  configuration, :data:`TRANSACTIONAL_CONFIGURATIONS`, adds :data:`TRANSACTION_CHECKS`).
"""

from controller.losscheck.checks import (
    DEFAULT_CHECKS,
    TRANSACTION_CHECKS,
    Acknowledged,
    Check,
    Loss,
    Observation,
    ReadRecord,
    RunRecord,
    TransactionsRecord,
    Violation,
    check_run,
    summarize,
)
from controller.losscheck.runner import HighWatermarkWatch, SeedResult, Setup, run_seed
from controller.losscheck.schedule import (
    CONFIGURATIONS,
    TRANSACTIONAL_CONFIGURATIONS,
    Configuration,
    Step,
    make_schedule,
)

__all__ = [
    "CONFIGURATIONS",
    "DEFAULT_CHECKS",
    "TRANSACTIONAL_CONFIGURATIONS",
    "TRANSACTION_CHECKS",
    "Acknowledged",
    "Check",
    "Configuration",
    "HighWatermarkWatch",
    "Loss",
    "Observation",
    "ReadRecord",
    "RunRecord",
    "SeedResult",
    "Setup",
    "Step",
    "TransactionsRecord",
    "Violation",
    "check_run",
    "make_schedule",
    "run_seed",
    "summarize",
]
