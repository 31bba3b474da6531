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


def test_configs_describe_prints_kafka_configs_lines(capsys, server):
    run(capsys, server, "topics", "create", "cfg-desc", "-p", "1", "-r", "1", "--config", "retention.ms=1000")
    code, out, err = run(
        capsys, server, "configs", "describe", "--entity-type", "topics", "--entity-name", "cfg-desc"
    )
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Dynamic configs for topic cfg-desc are:",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "STATIC_BROKER_CONFIG:log.retention.hours=48, DEFAULT_CONFIG:log.retention.hours=168}",
    ]
    code, out, _ = run(
        capsys, server, "configs", "describe", "--entity-type", "topics", "--entity-name", "cfg-desc", "--all"
    )
    lines = out.splitlines()
    assert code == 0 and lines[0] == "All configs for topic cfg-desc are:" and len(lines) == 1 + 37
    assert (
        "  max.message.bytes=1048588 sensitive=false synonyms={DEFAULT_CONFIG:message.max.bytes=1048588}"
        in lines
    )


def test_configs_alter_sets_and_deletes_as_kafka_configs_does(capsys, server):
    run(capsys, server, "topics", "create", "cfg-alter", "-p", "1", "-r", "1")
    code, out, err = run(
        capsys,
        server,
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "cfg-alter",
        "--add-config",
        "min.insync.replicas=1,cleanup.policy=[compact,delete]",
    )
    assert (code, out, err) == (0, "Completed updating config for topic cfg-alter.\n", "")
    cluster = server.server.controller.cluster
    assert server.call(lambda: dict(cluster.topics["cfg-alter"].configs)) == {
        "min.insync.replicas": "1",
        "cleanup.policy": "compact,delete",
    }
    code, _, err = run(
        capsys,
        server,
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "cfg-alter",
        "--delete-config",
        "segment.ms",
    )
    assert (code, err) == (1, "placement-sim: Invalid config(s): segment.ms\n")
    code, out, _ = run(
        capsys,
        server,
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "cfg-alter",
        "--delete-config",
        "cleanup.policy",
    )
    assert (code, out) == (0, "Completed updating config for topic cfg-alter.\n")
    assert server.call(lambda: dict(cluster.topics["cfg-alter"].configs)) == {"min.insync.replicas": "1"}
    code, _, err = run(
        capsys,
        server,
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "cfg-alter",
        "--add-config",
        "retention.ms=soon",
    )
    assert (code, err) == (
        1,
        "placement-sim: INVALID_CONFIG (40): Invalid value soon for configuration retention.ms: Not a number of type LONG\n",
    )


def test_configs_of_brokers_and_the_cluster_default(capsys, server):
    code, out, _ = run(
        capsys,
        server,
        "configs",
        "alter",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--add-config",
        "log.retention.ms=1800000",
    )
    assert (code, out) == (0, "Completed updating default config for brokers in the cluster.\n")
    code, out, _ = run(capsys, server, "configs", "describe", "--entity-type", "brokers")
    assert code == 0
    assert out.splitlines() == [
        "Dynamic configs for broker 0 are:",
        "Dynamic configs for broker 1 are:",
        "Dynamic configs for broker 2 are:",
        "Default configs for brokers in the cluster are:",
        "  log.retention.ms=1800000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1800000}",
        # KIP-966 on (Kafka 4.1's default): the controller wrote the cluster's min.insync.replicas
        "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}",
    ]
    code, _, err = run(
        capsys,
        server,
        "configs",
        "alter",
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
        "--add-config",
        "listeners=x",
    )
    assert (code, err) == (
        1,
        "placement-sim: INVALID_REQUEST (42): Cannot update these configs dynamically: [listeners]\n",
    )
    run(
        capsys,
        server,
        "configs",
        "alter",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--delete-config",
        "log.retention.ms",
    )
    assert server.call(server.server.controller.cluster.broker_configs, None) == {"min.insync.replicas": "1"}
