"""The one table of known differences from Apache Kafka (``docs/fidelity.md``), read by the harness.

Each row's *area* cell names what it covers in backticks, one or more patterns of the form
``Api:path`` or ``Api vA-B:path``: the API (its request name without ``Request``), optionally a range of
versions, and a path into the normalized answer (see :mod:`harness.differential.normalize`) where ``*``
stands for any characters. ``Produce:Responses[*].PartitionResponses[*].ErrorMessage`` covers every
partition's error message of every Produce version. A row without a pattern is prose only: a difference
the differential tests cannot observe. A difference no row covers fails the differential tests.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.jvm import ROOT

__all__ = ["FIDELITY_DOC", "Difference", "FidelityTable", "Pattern", "Row"]

FIDELITY_DOC = ROOT / "docs" / "fidelity.md"
COLUMNS = ("area", "what Kafka does", "what the simulator does", "why")

_PATTERN = re.compile(
    r"^(?P<api>[A-Za-z]+)(?: v(?P<low>\d+)(?:-(?P<high>\d+))?)?:(?P<path>\S+)"
    r"(?P<conditions>(?: (?:kafka|sim|note)=\S*)*)$"
)


@dataclass(frozen=True)
class Difference:
    """One field that differs between the two answers to the same request."""

    api: str
    version: int
    path: str
    kafka: object
    sim: object
    #: What the generator meant by the step (``Step.note``): ``note=`` conditions match it.
    note: str = ""

    def __str__(self) -> str:
        return f"{self.api} v{self.version} {self.path}: Kafka {self.kafka!r}, simulator {self.sim!r}"


@dataclass(frozen=True)
class Pattern:
    api: str
    low: int
    high: int
    path: re.Pattern[str]
    text: str
    #: ``kafka=VALUE`` / ``sim=VALUE``: the difference's value on that side, as text (``*`` wildcards).
    kafka: re.Pattern[str] | None = None
    sim: re.Pattern[str] | None = None
    note: re.Pattern[str] | None = None

    def matches(self, difference: Difference) -> bool:
        return (
            self.api == difference.api
            and self.low <= difference.version <= self.high
            and self.path.fullmatch(difference.path) is not None
            and (self.kafka is None or self.kafka.fullmatch(_text(difference.kafka)) is not None)
            and (self.sim is None or self.sim.fullmatch(_text(difference.sim)) is not None)
            and (self.note is None or self.note.fullmatch(difference.note) is not None)
        )


def _text(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


def _glob(text: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in text.split("*")))


def compile_pattern(text: str) -> Pattern:
    found = _PATTERN.match(text)
    if found is None:
        raise ValueError(f"fidelity pattern {text!r} is not `Api:path` or `Api vA-B:path`")
    low = int(found["low"]) if found["low"] is not None else 0
    high = int(found["high"]) if found["high"] is not None else (low if found["low"] is not None else 10**6)
    sides: dict[str, re.Pattern[str]] = {}
    for condition in found["conditions"].split():
        side, _, value = condition.partition("=")
        sides[side] = _glob(value)
    return Pattern(
        found["api"],
        low,
        high,
        _glob(found["path"]),
        text,
        sides.get("kafka"),
        sides.get("sim"),
        sides.get("note"),
    )


@dataclass
class Row:
    area: str
    kafka: str
    simulator: str
    why: str
    patterns: tuple[Pattern, ...]
    line: int


@dataclass
class FidelityTable:
    rows: list[Row]
    #: How many differences each row covered (by line), for the benchmark's report.
    used: Counter[int] = field(default_factory=Counter)

    @classmethod
    def load(cls, path: Path = FIDELITY_DOC) -> FidelityTable:
        """The table of ``path``: exactly one, with :data:`COLUMNS`; every backticked pattern of an area
        cell must parse."""
        lines = path.read_text().splitlines()
        tables = [i for i, line in enumerate(lines) if _cells(line) == list(COLUMNS)]
        if len(tables) != 1:
            raise ValueError(
                f"{path} must hold exactly one table with columns {COLUMNS}, found {len(tables)}"
            )
        rows = []
        for number in range(tables[0] + 2, len(lines)):
            line = lines[number]
            if not line.startswith("|"):
                break
            cells = _cells(line)
            if len(cells) != len(COLUMNS):
                raise ValueError(f"{path}:{number + 1}: {len(cells)} cells, expected {len(COLUMNS)}")
            if not all(cells):
                raise ValueError(f"{path}:{number + 1}: an empty cell (every row says all four things)")
            # Every backticked text of the area with a colon is a pattern, and must read as one.
            try:
                patterns = tuple(compile_pattern(p) for p in re.findall(r"`([^`]+)`", cells[0]) if ":" in p)
            except ValueError as exc:
                raise ValueError(f"{path}:{number + 1}: {exc}") from None
            rows.append(Row(*cells, patterns=patterns, line=number + 1))
        return cls(rows)

    def match(self, difference: Difference) -> Row | None:
        """The first row that covers ``difference`` (and counts it), or None."""
        for row in self.rows:
            if any(p.matches(difference) for p in row.patterns):
                self.used[row.line] += 1
                return row
        return None


def _cells(line: str) -> list[str]:
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|")):
        return []
    # A pipe inside backticks or escaped (\|) belongs to its cell.
    cells, current, quoted, i = [], [], False, 1
    while i < len(line) - 1:
        char = line[i]
        if char == "\\" and line[i + 1] == "|":
            current.append("|")
            i += 2
            continue
        if char == "`":
            quoted = not quoted
        if char == "|" and not quoted:
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        i += 1
    cells.append("".join(current).strip())
    return cells
