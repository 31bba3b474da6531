"""docs/limits.md: its example runs and prints what the page says."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "limits.md"


def test_the_limits_example_prints_what_the_page_shows() -> None:
    text = DOC.read_text()
    start = text.index("```python\n# limits_example.py\n") + len("```python\n")
    code = text[start : text.index("```", start)]
    shown_start = text.index("prints\n\n```\n", start) + len("prints\n\n```\n")
    shown = text[shown_start : text.index("```", shown_start)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {"__name__": "limits_example"})
    assert out.getvalue() == shown
