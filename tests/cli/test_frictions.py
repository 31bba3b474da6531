"""The command line as a new user meets it: Kafka habits work, mistakes end in one line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.embedded import ServerThread
from placement_sim.cli.main import main
from tests.support.docs import find_block
from tests.support.placers import placer_file

CLI = [sys.executable, "-m", "placement_sim.cli.main"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(placer=placer_file("SlowOnce"), seed=1) as started:
        yield started


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("localhost", "is not HOST:PORT"),
        ("localhost:99999", "port 99999 is out of range"),
        ("localhost:0", "port 0 is out of range"),
        ("local host:9092", "is not HOST:PORT"),
        ("[::1:9092", "is not HOST:PORT"),
    ],
)
@pytest.mark.parametrize(
    "command", [["topics", "list"], ["cluster", "describe"], ["place", "-p", "1", "-r", "1"]]
)
def test_a_malformed_bootstrap_is_a_usage_error(capsys, command, address, problem) -> None:
    code, _, err = run(capsys, *command, "--bootstrap", address)
    assert code == 2
    assert problem in err and "Traceback" not in err


@pytest.mark.parametrize(
    "command",
    [
        ["place", "-p", "1", "-r", "1", "--placer", "no.such.Placer"],
        ["compare", "-p", "1", "-r", "1", "--placers", "striped,no.such.Placer"],
        ["check-placer", "no.such.Placer"],
        ["sweep", "--no-spark", "--placers", "no.such.Placer", "--seeds", "1", "--quiet"],
        ["serve", "--listen", "127.0.0.1:0", "--placer", "no.such.Placer"],
    ],
)
def test_a_placer_that_cannot_be_loaded_exits_2_with_one_line_everywhere(capsys, tmp_path, command) -> None:
    if command[0] == "sweep":
        command = [*command, "--out", str(tmp_path / "out")]
    code, out, err = run(capsys, *command)
    lines = [line for line in err.splitlines() if not line.startswith("sweep: ")]
    assert code == 2
    assert lines == [
        "placement-sim: placer 'no.such.Placer': cannot import module 'no.such': No module named 'no'"
    ]


def test_output_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    # 2,000 partitions print far more than a pipe holds: the command writes into a closed pipe.
    proc = subprocess.Popen(
        [*CLI, "place", "-p", "2000", "-r", "3", "--seed", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does after its line
    err = proc.stderr.read().decode()
    proc.wait(30)
    assert first.startswith(b"striped: 2000 partition(s) x 3 replica(s)")
    assert err == ""
    assert proc.returncode == 141


def test_version_and_verbosity_after_the_subcommand(capsys) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("placement-sim ")
    code, out, _ = run(capsys, "place", "-p", "2", "-r", "2", "--seed", "1", "-v")
    assert code == 0 and "Replica map" in out


def test_kafka_topics_habits(capsys, server) -> None:
    bootstrap = ["--bootstrap-server", server.bootstrap]
    code, out, err = run(capsys, "topics", "create", "orders", "-p", "3", "-r", "2", *bootstrap)
    assert code == 0, err
    assert "Created topic orders." in out and "PartitionCount: 3\tReplicationFactor: 2" in out
    code, out, _ = run(capsys, "topics", "create", "audit", "-p", "1", "-r", "1", *bootstrap)
    code, out, _ = run(capsys, "topics", "list", *bootstrap)
    assert code == 0 and out.splitlines() == ["audit", "orders"]
    code, out, err = run(capsys, "topics", "alter", "orders", "--partitions", "5", *bootstrap)
    assert code == 0, err
    assert "Topic orders now has 5 partition(s)." in out and "PartitionCount: 5" in out
    code, _, err = run(capsys, "topics", "alter", "orders", "-p", "4", *bootstrap)
    assert code == 1 and "INVALID_PARTITIONS (37)" in err


def test_topics_create_reports_the_servers_timeout_not_its_own(capsys, server) -> None:
    # SlowOnce sleeps 2 s on its first call; the server gives it --timeout (1 s) and answers
    # REQUEST_TIMED_OUT, which the command waits for and shows.
    code, _, err = run(
        capsys,
        "topics",
        "create",
        "slow",
        "-p",
        "1",
        "-r",
        "1",
        "--bootstrap",
        server.bootstrap,
        "--timeout",
        "1",
    )
    assert code == 1
    assert "REQUEST_TIMED_OUT (7)" in err and "did not answer within timeoutMs=1000" in err


def test_check_placer_leaves_no_hypothesis_folder(tmp_path: Path) -> None:
    result = subprocess.run(
        [*CLI, "check-placer", "striped", "--max-examples", "5"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.iterdir()) == []


def _options(text: str) -> set[str]:
    return {word.strip("[],") for word in text.split() if word.startswith(("--", "[--"))} - {
        "--help",
        "--verbose",
    }


def test_the_sweep_help_and_the_docs_agree() -> None:
    usage = find_block(
        "placement-sim sweep [--grid FILE] [--placers striped,legacy,fluvio,fluvio-fair,multi-level,my.module.MyPlacer]"
    )
    result = subprocess.run([*CLI, "sweep", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert _options(result.stdout) == _options(usage)


def test_settings_lists_every_key_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    from controller.config import SETTINGS

    code, out, _ = run(capsys, "settings")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(SETTINGS)
    by_key = {line.split()[0]: line.split()[1] for line in lines}
    assert by_key["simulator.max.partitions"] == "500000"
    assert by_key["simulator.seed"] == "none"
    assert by_key["replica.placer.class.name"] == "striped"


@pytest.mark.parametrize(
    ("command", "arguments"),
    [
        ("serve", []),
        ("place", ["-p", "1", "-r", "1"]),
        ("compare", ["-p", "1", "-r", "1"]),
        ("check-placer", ["striped"]),
        ("check-policy", ["kafka"]),
        ("sweep", []),
        ("topics create", ["t"]),
        ("topics list", []),
        ("topics describe", []),
        ("topics alter", ["t", "-p", "2"]),
        ("topics delete", ["t"]),
        ("cluster describe", []),
        ("settings", []),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_an_unknown_option_shows_the_usage_of_the_command_it_was_given_to(
    command: str, arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command.split(), *arguments, "--no-such-option"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.startswith(f"usage: placement-sim {command} [-h] ")
    assert err.endswith(f"placement-sim {command}: error: unrecognized arguments: --no-such-option\n")
