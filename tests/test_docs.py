"""Every example of README.md and docs/*.md runs as printed (tests/support/docs.py says how each kind
runs); a block that cannot run is marked ``<!-- not run: why -->`` and counted here."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.config import ConfigError, ServerConfig
from controller.config.parsing import parse_properties
from harness.kafka_tools import write_scripts
from tests.support.docs import PAGES, ROOT, Block, blocks, matches

#: The blocks marked ``not run``: a new mark is a decision, so it changes this number.
NOT_RUN = 47  # counted on the pages after merging main (main's 44 is two fewer than its own pages hold:
# benchmarks.md 20 (scale.py added), sweep-cluster.md 7, sweep.md 6, clients.md 3, data-path.md 3, and 8 more)

TIMEOUT = 240  # seconds for one block (a pytest block with real clients, check-placer's examples)


class Page:
    """The scratch directory, the server and the environment one page's blocks run in."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        (workdir / "examples").symlink_to(ROOT / "examples")
        bin_dir = workdir / "bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "placement-sim"
        wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m placement_sim.cli.main "$@"\n')
        wrapper.chmod(0o755)
        python = bin_dir / "python"
        python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        python.chmod(0o755)
        write_scripts(bin_dir)  # Kafka's tools, as its distribution's bin/ has them (docs/clients.md)
        self.env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(workdir)]),
            "COLUMNS": "100",
            "PYTHONUNBUFFERED": "1",
        }
        self.servers: list[subprocess.Popen[str]] = []
        self.bootstrap: str | None = None

    def start(self, command: str) -> tuple[subprocess.Popen[str], list[str]]:
        """``placement-sim serve ...`` on a free port; the lines it prints until it is ready (or ends)."""
        args = [*shlex.split(command), "--listen", "127.0.0.1:0"]
        process = subprocess.Popen(
            args, cwd=self.workdir, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.servers.append(process)
        assert process.stdout is not None
        lines: list[str] = []
        while not lines or not lines[-1].startswith("brokers on"):
            line = process.stdout.readline()
            if not line:  # it ended: a configuration error, say
                process.wait(10)
                break
            lines.append(line)
        return process, lines

    def server(self) -> str:
        if self.bootstrap is None:
            _, lines = self.start("placement-sim serve --seed 1")
            self.bootstrap = _listening(lines)
        return self.bootstrap

    def here(self, text: str) -> str:
        """``text`` with ``127.0.0.1:9092`` meaning this page's server."""
        return text.replace("127.0.0.1:9092", self.server()) if "127.0.0.1:9092" in text else text

    def close(self) -> None:
        for process in self.servers:
            process.terminate()
            process.wait(10)


def _listening(lines: list[str]) -> str:
    [address] = [line.split()[2] for line in lines if line.startswith("listening on ")]
    return address


def _commands(text: str) -> Iterator[tuple[str, str]]:
    """``(command, expected output)`` of each ``$`` line of a console block."""
    command: str | None = None
    output: list[str] = []
    lines = text.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            if command is not None:
                yield command, "\n".join(output)
            command, output = line[2:], []
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + lines[i].strip()
        else:
            output.append(line)
        i += 1
    if command is not None:
        yield command, "\n".join(output)


def run_console(page: Page, block: Block) -> None:
    for command, expected in _commands(block.text):
        if command.startswith("placement-sim serve"):
            background = command.endswith("&")
            process, lines = page.start(command.rstrip("& "))
            assert matches(expected, "".join(lines)), f"{block.where}: $ {command}\n{''.join(lines)}"
            if process.poll() is not None:
                assert not background, f"{block.where}: $ {command} ended"
            elif background:
                page.bootstrap = _listening(lines)
            else:
                process.terminate()
                process.wait(10)
            continue
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", page.here(command)],
            cwd=page.workdir,
            env=page.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=TIMEOUT,
        )
        actual = result.stdout
        assert matches(expected, actual), f"{block.where}: $ {command}\n{actual}"


def run_python(page: Page, block: Block, expected: str | None) -> None:
    if block.file_name:
        (page.workdir / block.file_name).write_text(block.text)
    result = subprocess.run(
        [sys.executable, "-c", page.here(block.text)],
        cwd=page.workdir,
        env=page.env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, f"{block.where}:\n{result.stdout}{result.stderr}"
    if expected is not None:
        assert matches(expected, result.stdout), f"{block.where}:\n{result.stdout}"


def run_pytest(page: Page, block: Block) -> None:
    name = f"test_block_{block.line}.py"
    (page.workdir / name).write_text(page.here(block.text))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", name],
        cwd=page.workdir,
        env=page.env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, f"{block.where}:\n{result.stdout}{result.stderr}"
    assert re.search(r"\b\d+ passed\b", result.stdout) and "skipped" not in result.stdout, result.stdout


def run_properties(page: Page, block: Block) -> None:
    assert block.file_name, f"{block.where}: a properties block names its file on its first line"
    (page.workdir / block.file_name).write_text(block.text)
    props = parse_properties(block.text, block.where)
    try:
        ServerConfig.from_properties(props)
    except ConfigError as exc:  # a file the example names (a keystore) is not here: the keys still are
        assert "keystore" in str(exc) or "truststore" in str(exc), f"{block.where}: {exc}"


def run_data(block: Block) -> None:
    data = json.loads(block.text) if block.info == "json" else tomllib.loads(block.text)
    if block.file:
        path = ROOT / block.file
        shipped = json.loads(path.read_text()) if path.suffix == ".json" else tomllib.loads(path.read_text())
        assert data == shipped, f"{block.where}: not what {block.file} holds"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_of_the_page_runs_as_printed(page: Path, tmp_path: Path) -> None:
    runner = Page(tmp_path)
    found = blocks(page)
    try:
        for i, block in enumerate(found):
            after = found[i + 1] if i + 1 < len(found) else None
            if block.kind == "console":
                run_console(runner, block)
            elif block.kind == "python":
                run_python(runner, block, after.text if after and after.kind == "output" else None)
            elif block.kind == "pytest":
                run_pytest(runner, block)
            elif block.kind == "properties":
                run_properties(runner, block)
            elif block.kind in ("json", "toml"):
                run_data(block)
            elif block.kind == "output":
                assert found[i - 1].kind == "python", f"{block.where}: an output block follows a python block"
    finally:
        runner.close()


def test_every_block_runs_or_is_marked_not_run() -> None:
    every = [block for page in PAGES for block in blocks(page)]
    unmarked = [f"{b.where} ({b.info or 'no info string'})" for b in every if b.kind == "unmarked"]
    assert not unmarked, f"blocks that neither run nor say why: {unmarked}"
    marked = [b for b in every if b.kind == "not run"]
    assert len(marked) == NOT_RUN, [f"{b.where}: {b.not_run}" for b in marked]
    assert len(every) - len(marked) > NOT_RUN
