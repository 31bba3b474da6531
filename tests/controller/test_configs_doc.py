"""docs/configs.md: its examples run as printed (real clients against an embedded server), and its list
of topic configs is the table's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller.config.topic_configs import TOPIC_CONFIGS

DOC = Path(__file__).parents[2] / "docs" / "configs.md"


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_doc_has_two_examples() -> None:
    assert len(examples()) == 2


@pytest.mark.parametrize("index", [0, 1], ids=["kafka-python", "confluent-kafka-unclean"])
def test_each_example_runs_as_printed(index: int) -> None:
    exec(compile(examples()[index], f"{DOC.name} example {index + 1}", "exec"), {})


def test_the_doc_counts_the_tables_configs() -> None:
    assert f"({len(TOPIC_CONFIGS)} in all)" in DOC.read_text()
