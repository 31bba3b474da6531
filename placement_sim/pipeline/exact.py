"""Exact means: the same bits from Spark and from the single-process path.

A floating-point sum depends on the order of its terms, and Spark's ``AVG`` adds them in whatever
order its partitions arrive, so its means differed from pandas' in the last bits. Both paths take the
mean as :func:`math.fsum` (the correctly rounded sum of the exact values, whatever their order) over
the count: Spark through a Python UDF over ``collect_list``, pandas per group. Kept apart so that an
executor imports nothing else to run it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["SQL_NAME", "fsum_mean"]

#: The name the Spark SQL aggregates call :func:`fsum_mean` by.
SQL_NAME = "fsum_mean"


def fsum_mean(values: Iterable[float | int] | None) -> float | None:
    """The mean of ``values`` (nulls already left out) from their exact sum; None when there are none."""
    items = [float(v) for v in values or () if v is not None]
    if not items:
        return None
    return math.fsum(items) / len(items)
