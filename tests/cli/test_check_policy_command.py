"""``placement-sim check-policy``: runs the election kit on a named policy, as ``check-placer`` runs the
placement kit: exit 0 when it passes, 1 when it breaks a rule (with the smallest failing batch), 2 when
it cannot be loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement_sim.cli.main import main

EVERY_REPLICA = '''
from controller.election import ElectionPolicy


class EveryReplica(ElectionPolicy):
    """Offers every replica, dead or out of sync ones too."""

    def elect(self, partitions):
        return [list(view.replicas) for view in partitions]
'''


def test_a_builtin_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-policy", "fluvio", "--max-examples", "20"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "fluvio (controller.election.builtin.fluvio.FluvioElectionPolicy): passed (20 batch(es) passed every check)"
    )
    assert out[1].startswith("  partitions: ") and len(out) == 2


def test_a_policy_that_breaks_a_rule_fails_with_its_smallest_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "every.py").write_text(EVERY_REPLICA)
    monkeypatch.chdir(tmp_path)
    assert main(["check-policy", "every.py:EveryReplica", "--max-examples", "50"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("every.py:EveryReplica: FAILED (0 batch(es) passed every check)\n")
    assert "failed the 'eligible only' check: t-0: names broker 0, which cannot lead now" in out
    assert "smallest failing batch:\n  PartitionView(topic='t', partition=0, replicas=(0,)" in out
    assert list(tmp_path.iterdir()) == [tmp_path / "every.py"]  # hypothesis left no files behind


def test_properties_reach_the_policy_and_one_it_refuses_fails_the_configure_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["check-policy", "fluvio", "--max-examples", "10", "--set", "simulator.election.fluvio.max.lag=3"]
    assert main(argv) == 0
    assert "passed (10 batch(es)" in capsys.readouterr().out
    argv[-1] = "simulator.election.fluvio.max.lag=0"
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "FAILED (0 batch(es) passed every check)" in out
    assert (
        "failed the 'configure' check: configure() raised ValueError: "
        "simulator.election.fluvio.max.lag must be at least 1, got 0\n"
    ) in out


def test_a_policy_that_cannot_be_loaded_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-policy", str(tmp_path / "nope.py")]) == 2
    assert (
        capsys.readouterr().err
        == f"placement-sim: election policy file {tmp_path / 'nope.py'} does not exist\n"
    )
