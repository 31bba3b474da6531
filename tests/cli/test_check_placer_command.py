"""``placement-sim check-placer``: runs the kit on a named placer and reports like a test runner."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from placement_sim.cli import main as cli
from placement_sim.cli.commands import check_placer

GOOD = """
from controller.placement.api import InvalidReplicationFactorError, ReplicaPlacer

class Rotating(ReplicaPlacer):
    def place(self, spec, cluster):
        usable = cluster.usable(spec)
        live = sorted(b.id for b in usable if not b.fenced)
        if spec.num_replicas <= 0 or spec.num_replicas > len(usable) or not live:
            raise InvalidReplicationFactorError("cannot place")
        order = live + sorted(b.id for b in usable if b.fenced)
        out = []
        for p in range(spec.num_partitions):
            leader = live[p % len(live)]
            out.append([leader] + [b for b in order if b != leader][: spec.num_replicas - 1])
        return out
"""

FENCED_LEADER = GOOD.replace("live[p % len(live)]", "order[-1]")


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="placement-sim")
    check_placer.register(parser.add_subparsers(dest="command", required=True), cli.common_options())
    args = parser.parse_args(argv)
    return cli.run_command(args)


def test_the_command_is_registered_with_the_cli() -> None:
    assert cli.COMMANDS["check-placer"].module == "check_placer"


def test_a_builtin_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["check-placer", "striped", "--max-examples", "30"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("striped (controller.placement.builtin.striped.StripedReplicaPlacer): passed")
    assert "rack spread checked on" in out


def test_a_plugin_file_passes_with_properties(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rotating.py"
    path.write_text(GOOD)
    assert (
        run(["check-placer", f"{path}:Rotating", "--max-examples", "30", "--seed", "4", "--set", "a=b"]) == 0
    )
    assert ": passed" in capsys.readouterr().out


def test_a_failing_placer_prints_the_smallest_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.py"
    path.write_text(FENCED_LEADER)
    assert run(["check-placer", str(path), "--max-examples", "50"]) == 1
    out = capsys.readouterr().out
    assert ": FAILED" in out
    assert "failed the 'unfenced leader' check" in out
    assert "smallest failing example:" in out
    assert "fenced" in out.split("brokers:")[1]


def test_an_unknown_placer_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["check-placer", "no-such-placer"]) == 2
    assert capsys.readouterr().err.startswith("placement-sim: unknown placer 'no-such-placer'")


def test_max_examples_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run(["check-placer", "striped", "--max-examples", "0"])
    assert "must be positive" in capsys.readouterr().err
