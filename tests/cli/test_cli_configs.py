"""``placement-sim topics create --config`` and the configs ``topics describe`` shows, as
``kafka-topics.sh`` does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from placement_sim.cli.main import main


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    """Three brokers; log.retention.hours=48 in server.properties (a non-default value every topic shows)."""
    with ServerThread.start(
        brokers=[(0, "a"), (1, "b"), (2, "c")], properties={"log.retention.hours": "48"}
    ) as s:
        yield s


def run(capsys: pytest.CaptureFixture[str], server: ServerThread, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--bootstrap", server.bootstrap, "--timeout", "10"])
    out, err = capsys.readouterr()
    return code, out, err


def test_create_with_configs_and_describe_shows_the_non_default_ones(capsys, server):
    code, out, err = run(
        capsys,
        server,
        "topics",
        "create",
        "cfg-cli",
        "-p",
        "1",
        "-r",
        "3",
        "--config",
        "min.insync.replicas=2",
        "--config",
        "cleanup.policy=compact",
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[1].endswith(
        "\tConfigs: retention.ms=172800000,cleanup.policy=compact,min.insync.replicas=2"
    )
    assert server.call(lambda: dict(server.server.controller.cluster.topics["cfg-cli"].configs)) == {
        "min.insync.replicas": "2",
        "cleanup.policy": "compact",
    }


def test_an_invalid_config_is_reported_with_kafkas_message(capsys, server):
    code, _, err = run(capsys, server, "topics", "create", "cfg-bad", "--config", "retention.ms=soon")
    assert code == 1
    assert err == (
        "placement-sim: topic cfg-bad: INVALID_CONFIG (40): Invalid value soon for configuration retention.ms: "
        "Not a number of type LONG\n"
    )


def test_a_malformed_config_option_is_a_usage_error(capsys, server):
    with pytest.raises(SystemExit) as exited:
        main(["topics", "create", "x", "--config", "novalue", "--bootstrap", server.bootstrap])
    assert exited.value.code == 2
    assert "expected KEY=VALUE, got 'novalue'" in capsys.readouterr().err
