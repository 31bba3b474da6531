"""docs/groups.md's example runs as printed."""

from __future__ import annotations

from pathlib import Path

from controller.groups.durable import coordinator_partition

DOC = Path(__file__).parents[3] / "docs" / "groups.md"


def example() -> str:
    text = DOC.read_text()
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)]


def test_the_documented_example_runs() -> None:
    exec(compile(example(), str(DOC), "exec"), {})


def test_the_documented_partition_of_the_example_group_is_kafkas() -> None:
    assert "(`shop` lives in partition 12" in DOC.read_text()
    assert coordinator_partition("shop", 50) == 12
