"""The fenced blocks of README.md and docs/*.md, and how tests/test_docs.py runs each kind.

A block's kind comes from its info string:

- ``python`` with a ``def test_`` in it: a pytest module (the project's pytest plugin loaded);
- other ``python``: a script; when the next block is an ``output`` block, its stdout must read so;
  a first line ``# NAME.py`` makes it a file, written where later blocks of the page find it;
- ``console``: ``$ command`` lines, each followed by what it prints (stdout and stderr);
  ``placement-sim serve ...`` starts a server and compares the lines it prints when ready;
- ``properties``: a server.properties file (first line ``# NAME: ...``), written and loaded;
- ``json``, ``toml``: parsed; ``<!-- file: PATH -->`` above one says it is that file of the project.

Any other block needs ``<!-- not run: why -->`` on the line above its fence; tests/test_docs.py counts
those marks. Every page's runnable blocks run in order in one scratch directory holding ``examples/``;
``127.0.0.1:9092`` in them means the page's server, a fresh ``placement-sim serve --seed 1`` (started
when a block first needs it, or by a ``$ placement-sim serve ... &`` line of the page).

In expected output, ``127.0.0.1:<port>`` matches any port, ``...`` within a line matches anything and
a line that is only ``...`` matches any number of lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[2]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

RUNNABLE = {"python", "console", "properties", "json", "toml"}
_MARK = re.compile(r"<!-- (not run|file): (.+?) -->")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    info: str
    text: str
    not_run: str | None  # the reason, when marked
    file: str | None  # the project file the block shows, when marked

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def kind(self) -> str:
        if self.not_run is not None:
            return "not run"
        if self.info == "python":
            return "pytest" if re.search(r"^def test_", self.text, re.M) else "python"
        return self.info if self.info in RUNNABLE | {"output"} else "unmarked"

    @property
    def file_name(self) -> str | None:
        """``NAME`` of a first line ``# NAME.py`` (python) or ``# NAME: ...`` (properties)."""
        first = self.text.split("\n", 1)[0]
        match = re.fullmatch(r"# ([\w.-]+\.(?:py|properties))(?::.*)?", first)
        return match.group(1) if match else None


def blocks(page: Path) -> list[Block]:
    lines = page.read_text().split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            info = lines[i][3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            mark = _MARK.fullmatch(lines[i - 1].strip()) if i else None
            found.append(
                Block(
                    page=page,
                    line=i + 1,
                    info=info,
                    text="\n".join(lines[i + 1 : end]) + "\n",
                    not_run=mark.group(2) if mark and mark.group(1) == "not run" else None,
                    file=mark.group(2) if mark and mark.group(1) == "file" else None,
                )
            )
            i = end
        i += 1
    return found


def every_block() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


def find_block(first_line: str) -> str:
    """The text of the one block of the docs that starts with ``first_line``."""
    [text] = [b.text for b in every_block() if b.text.startswith(first_line + "\n")]
    return text


def matches(expected: str, actual: str) -> bool:
    """``actual`` reads as ``expected`` says (ports and ``...`` as the module docstring says)."""
    pattern = []
    for line in expected.rstrip("\n").split("\n"):
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
            continue
        parts = [re.escape(part) for part in line.rstrip().split("...")]
        parts = [re.sub(r"127\\\.0\\\.0\\\.1:\d+", r"127\\.0\\.0\\.1:\\d+", p) for p in parts]
        pattern.append("[^\n]*".join(parts) + r"[ \t]*\n")
    text = "\n".join(line.rstrip() for line in actual.rstrip("\n").split("\n")) + "\n"
    return re.fullmatch("".join(pattern), text) is not None
