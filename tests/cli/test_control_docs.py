"""docs/control.md's examples run as printed: its server.properties, its Python example, and its command
line session, output for output."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import ServerConfig
from controller.config.parsing import parse_properties
from controller.embedded import ServerThread
from placement_sim.cli.main import main

DOC = Path(__file__).parents[2] / "docs" / "control.md"
PRINTED_BOOTSTRAP = "127.0.0.1:9092"


def block(kind: str) -> str:
    text = DOC.read_text()
    start = text.index(f"```{kind}\n") + len(f"```{kind}\n")
    return text[start : text.index("```", start)]


def properties() -> dict[str, str]:
    return dict(parse_properties(block("properties")))


def test_the_properties_are_valid_and_their_fault_is_active_from_start():
    config = ServerConfig.from_properties(properties())
    assert [str(f) for f in config.faults] == ["error=NOT_CONTROLLER api=CreateTopics client=flaky once"]
    assert config.control_enabled


def test_the_python_example_runs():
    exec(compile(block("python"), str(DOC), "exec"), {})


def test_the_command_line_session_prints_what_the_doc_shows(capsys):
    steps: list[tuple[list[str], list[str]]] = []
    for line in block("console").splitlines():
        if line.startswith("$ placement-sim "):
            steps.append((line.removeprefix("$ placement-sim ").split(), []))
        else:
            steps[-1][1].append(line)
    assert len(steps) == 9
    served = {**properties(), "listeners": "127.0.0.1:0"}
    with ServerThread(ServerConfig.from_properties(served)).run_in_background() as server:
        for argv, expected in steps:
            argv = [server.bootstrap if word == PRINTED_BOOTSTRAP else word for word in argv]
            code = main(argv)
            out = capsys.readouterr().out
            assert [line.rstrip() for line in out.splitlines()] == expected, argv
            assert code == (1 if argv[0] == "elect" else 0)


@pytest.mark.parametrize("name", ["simulator.control.enable", "simulator.control.users", "simulator.faults"])
def test_the_settings_are_documented(name):
    assert f"`{name}`" in DOC.read_text()
