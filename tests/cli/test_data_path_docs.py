"""docs/data-path.md's examples run as printed: its Python examples, and its command line session (each
``$`` line run against a server started here, its output compared with the lines printed under it,
``...`` standing for a part that differs from run to run, as a topic id)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from controller.embedded import ServerThread

ROOT = Path(__file__).parents[2]
DOC = (ROOT / "docs/data-path.md").read_text()
PYTHON = {
    m.group(1): m.group(0) for m in re.finditer(r"(?<=```python\n)# example: ([^\n]+)\n.*?(?=```)", DOC, re.S)
}
CONSOLE = re.search(r"```console\n(.*?)```", DOC, re.S).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(PYTHON))
def test_python_example(name: str) -> None:
    exec(compile(PYTHON[name], f"docs/data-path.md ({name})", "exec"), {})  # noqa: S102


def test_command_line_session() -> None:
    with ServerThread.start(brokers=[(0, None), (1, None), (2, None)]) as server:
        commands: list[tuple[str, list[str]]] = []
        for line in CONSOLE.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:], []))
            else:
                commands[-1][1].append(line)
        for command, expected in commands:
            command = command.replace("127.0.0.1:9092", server.bootstrap)
            stdin = None
            if command.startswith("printf "):
                printed, command = command.split(" | ", 1)
                stdin = shlex.split(printed)[1].encode().decode("unicode_escape")
            words = shlex.split(command)
            assert words[0] == "placement-sim"
            done = subprocess.run(
                [sys.executable, "-m", "placement_sim.cli.main", *words[1:]],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=60,
                cwd=ROOT,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            got = done.stdout.splitlines()
            assert len(got) == len(expected), (command, got)
            for line, pattern in zip(got, expected, strict=True):  # "..." in the doc stands for anything
                assert re.fullmatch(".*".join(map(re.escape, pattern.split("..."))), line), (command, line)
