"""The small frictions of issue 29 (item 7), each as the user met it: a message that names what the user
typed, one line and a clear exit code, never an internal name, a raw errno or a logger's format."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from controller.embedded import ServerThread
from placement_sim.cli import main as cli
from placement_sim.cli.main import main
from tests.support.docs import ROOT

CLI = [sys.executable, "-m", "placement_sim.cli.main"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_missing_class_in_a_placer_file_names_the_file_and_its_classes(capsys, tmp_path: Path) -> None:
    plugin = tmp_path / "mine.py"
    plugin.write_text(
        "from controller.placement.api import ReplicaPlacer\n\n"
        "class Mine(ReplicaPlacer):\n    def place(self, spec, cluster):\n        return None\n"
    )
    code, _, err = run(capsys, "check-placer", f"{plugin}:Nope")
    assert code == 2
    assert err == (
        f"placement-sim: placer '{plugin}:Nope': '{plugin}' has no attribute 'Nope' (its placer classes: Mine)\n"
    )
    assert "_placement_sim_plugin" not in err


def test_a_reassignment_file_that_is_not_there_is_named_without_an_errno(capsys, tmp_path: Path) -> None:
    missing = tmp_path / "nosuch.json"
    code, _, err = run(capsys, "reassign", "--execute", str(missing), "--bootstrap", "127.0.0.1:1")
    assert (code, err) == (1, f"placement-sim: cannot read {missing}: No such file or directory\n")
    with ServerThread.start(brokers=[(0, None)]) as server:
        code, _, err = run(
            capsys,
            "reassign",
            "--generate",
            "--topics-to-move-json-file",
            str(missing),
            "--broker-list",
            "0",
            "--bootstrap",
            server.bootstrap,
        )
    assert (code, err) == (1, f"placement-sim: cannot read {missing}: No such file or directory\n")


def test_serve_listen_tells_the_users_own_words(capsys) -> None:
    code, _, err = run(capsys, "serve", "--listen", "29099")
    assert code == 2
    assert err == (
        "placement-sim: configuration error: --listen: '29099' is not HOST:PORT (a port alone? "
        "127.0.0.1:29099, or :29099 for every address)\n"
    )
    assert "PLAINTEXT://" not in err


def test_a_broker_list_mistake_names_the_entry_and_the_format(capsys) -> None:
    code, _, err = run(capsys, "serve", "--listen", "127.0.0.1:0", "--set", "simulator.brokers=0:a,zz")
    assert (code, err) == (
        2,
        "placement-sim: configuration error: simulator.brokers: 'zz' is not a broker id; the brokers are ID or "
        "ID:RACK, comma-separated, as 0:rack-a,1:rack-b (got '0:a,zz')\n",
    )


def test_a_mistyped_key_is_warned_about_like_every_other_message(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [*CLI, "serve", "--listen", "127.0.0.1:0", "--set", "log.retension.hours=5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert server.stdout is not None and server.stdout.readline().startswith("placer ")
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    assert err.splitlines() == [
        "placement-sim: warning: unknown setting log.retension.hours is passed to the plugins as it is; did you "
        "mean log.retention.hours?"
    ]


def test_sweep_tells_a_bad_placer_before_its_header(capsys, tmp_path: Path) -> None:
    code, out, err = run(
        capsys,
        "sweep",
        "--no-spark",
        "--placers",
        "strped",
        "--seeds",
        "1",
        "--quiet",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 2 and out == ""
    assert err.startswith("placement-sim: unknown placer 'strped'") and err.count("\n") == 1
    code, _, err = run(
        capsys,
        "sweep",
        "--no-spark",
        "--grid",
        "examples/small-grid.toml",
        "--placers",
        "legacy",
        "--quiet",
        "--out",
        str(tmp_path / "o"),
        "--no-placements",
    )
    assert code == 0 and err.splitlines()[0] == "sweep: 4 scenarios x 1 placer = 4 runs in this process"


def test_partitions_describe_takes_topic_colon_partition_as_elect_does(capsys) -> None:
    with ServerThread.start(brokers=[(0, "a"), (1, "b")], seed=1) as server:
        server.create_topic("orders", 3, 2)
        bootstrap = ["--bootstrap", server.bootstrap]
        code, out, _ = run(capsys, "partitions", "describe", "orders:2", "orders:0", *bootstrap)
        assert code == 0 and [line.split()[:2] for line in out.splitlines()] == [
            ["TOPIC", "PARTITION"],
            ["orders", "0"],
            ["orders", "2"],
        ]
        code, out, err = run(capsys, "partitions", "describe", "orders:9", *bootstrap)
        assert code == 1 and err.startswith("placement-sim: orders-9: UNKNOWN_TOPIC_OR_PARTITION (3)")
        assert run(capsys, "elect", "--preferred", "orders:2", *bootstrap)[:2] == (
            0,
            "orders-2: no election needed\n",
        )


def test_help_loads_no_commands_work() -> None:
    """``placement-sim --help`` lists every command from the static table (``COMMANDS``) without importing
    any command's module, nor the protocol's codecs or the server's settings table (of the wire layer only
    the package and its cache of dataclass code, :mod:`protocol.bytecode`, which ``controller`` loads
    before any of its classes is made)."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from placement_sim.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "print(json.dumps([out.getvalue(), sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    shown, loaded = json.loads(done.stdout)
    assert {m for m in loaded if m.startswith("placement_sim.cli.")} == {"placement_sim.cli.main"}
    wire = {"protocol", "protocol.bytecode"}
    assert not {m for m in loaded if m.startswith(("protocol", "controller.config", "asyncio"))} - wire
    listed = "".join(shown.split())  # argparse wraps the help lines (at spaces and hyphens)
    for name, command in cli.COMMANDS.items():
        assert "".join(f"{name} {command.help}".split()) in listed, name


def test_each_command_gets_its_help_line_from_the_table() -> None:
    """A command line naming a command imports its module alone, and the command's help is the table's."""
    for name, command in cli.COMMANDS.items():
        parser = cli.build_parser([name])
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        helps = {action.dest: action.help for action in subparsers._choices_actions}
        assert helps[name] == command.help, name
