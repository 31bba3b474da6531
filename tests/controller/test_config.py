"""server.properties parsing and validation."""

from __future__ import annotations

import logging

import pytest

from controller.config import ConfigError, ServerConfig, parse_properties
from controller.defaults import DEFAULT_BROKERS
from controller.placement import UsableBroker


def test_no_configuration_is_the_embedded_default():
    config = ServerConfig.from_properties({})
    assert config.brokers == DEFAULT_BROKERS
    assert len({b.rack for b in config.brokers}) == 3 and len(config.brokers) == 6
    assert (config.listener.host, config.listener.port) == ("127.0.0.1", 9092)
    assert config.placer == "striped"
    assert config.seed is None


def test_java_properties_syntax():
    text = "# comment\n! also a comment\n  a.b = 1 \nc: two words\nd three\nlong=x\\\n   y\nempty=\n"
    assert parse_properties(text) == {"a.b": "1", "c": "two words", "d": "three", "long": "xy", "empty": ""}


def test_brokers_racks_and_fencing():
    config = ServerConfig.from_properties(
        {
            "simulator.brokers": "1:/dc1/r1, 2:/dc1/r2,3",
            "simulator.brokers.fenced": "3",
            "simulator.seed": "9",
        }
    )
    assert config.brokers == (
        UsableBroker(1, "/dc1/r1", False),
        UsableBroker(2, "/dc1/r2", False),
        UsableBroker(3, None, True),
    )
    assert config.placer_properties()["simulator.seed"] == "9"


def test_kafka_listener_syntax():
    assert (
        str(ServerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0"}).listener) == "127.0.0.1:0"
    )
    assert ServerConfig.from_properties({"listeners": "[::1]:19092"}).listener.host == "::1"


def test_unknown_keys_are_passed_to_the_placer():
    config = ServerConfig.from_properties({"my.placer.weight": "3"})
    assert config.placer_properties()["my.placer.weight"] == "3"


def test_values_may_be_python_numbers_and_booleans_written_as_a_properties_file_would():
    config = ServerConfig.from_properties(
        {"broker.session.timeout.ms": 1500, "auto.create.topics.enable": True, "my.placer.ratio": 0.5}
    )
    assert (config.session_timeout_ms, config.auto_create_topics) == (1500, True)
    assert config.placer_properties()["auto.create.topics.enable"] == "true"
    assert config.placer_properties()["my.placer.ratio"] == "0.5"
    with pytest.raises(
        ConfigError, match=r"my\.placer\.list: a property value is text, a number or a boolean"
    ):
        ServerConfig.from_properties({"my.placer.list": [1, 2]})


def test_a_mistyped_kafka_key_is_accepted_with_one_warning_naming_the_nearest_key(caplog):
    with caplog.at_level(logging.WARNING, logger="controller.config"):
        for _ in range(3):
            config = ServerConfig.from_properties(
                {"broker.sesion.timeout.ms": "1500", "my.placer.weight": "3"}
            )
    assert config.session_timeout_ms == 9000  # accepted, as Kafka accepts it, and not read
    assert config.placer_properties()["broker.sesion.timeout.ms"] == "1500"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "unknown setting broker.sesion.timeout.ms is passed to the plugins as it is; "
        "did you mean broker.session.timeout.ms?"
    ]  # once for the key, and none for a plugin's own key that resembles no setting


def test_kafka_keys_the_simulator_does_not_read_are_silent_and_their_typos_are_named(caplog):
    from controller.config.kafka_keys import KAFKA_BROKER_KEYS

    assert {
        "log.retention.hours",
        "process.roles",
        "advertised.listeners",
        "log.cleaner.enable",
    } <= KAFKA_BROKER_KEYS
    with caplog.at_level(logging.WARNING, logger="controller.config"):
        config = ServerConfig.from_properties(
            {
                "log.retention.hours": "5",
                "process.roles": "broker",
                "log.retension.hours": "5",
                "node.idd": "1",
            }
        )
    assert config.placer_properties()["log.retension.hours"] == "5"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "unknown setting log.retension.hours is passed to the plugins as it is; did you mean log.retention.hours?",
        "unknown setting node.idd is passed to the plugins as it is; did you mean node.id?",
    ]


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"simulator.seed": "abc"}, "simulator.seed"),
        ({"num.partitions": "0"}, "num.partitions"),
        ({"default.replication.factor": "-1"}, "default.replication.factor"),
        ({"simulator.brokers": "1,1"}, "simulator.brokers"),
        ({"simulator.brokers": "1:"}, "simulator.brokers"),
        ({"simulator.brokers": "1,,2"}, "simulator.brokers"),
        ({"simulator.brokers.fenced": "a"}, "simulator.brokers.fenced"),
        ({"listeners": "127.0.0.1:99999"}, "listeners"),
        ({"auto.create.topics.enable": "yes"}, "auto.create.topics.enable"),
        ({"connections.max.idle.ms": "0"}, "connections.max.idle.ms"),
    ],
)
def test_malformed_values_name_the_key(props, key):
    with pytest.raises(ConfigError) as info:
        ServerConfig.from_properties(props)
    assert info.value.key == key
    assert str(info.value).startswith(key)


def test_unparseable_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("ok=1\n=broken\n")
    with pytest.raises(ConfigError, match=r"server.properties:2"):
        ServerConfig.load(path)


def test_an_unknown_simulator_key_names_the_nearest_known_one():
    with pytest.raises(ConfigError) as info:
        ServerConfig.from_properties({"simulator.sead": "1"})
    assert str(info.value) == "simulator.sead: unknown simulator setting; did you mean simulator.seed?"
    assert info.value.key == "simulator.sead"
    with pytest.raises(ConfigError) as info:
        ServerConfig.from_properties({"simulator.xyzzy.plover.frob": "1"})
    message = str(info.value)
    assert message.startswith("simulator.xyzzy.plover.frob: unknown simulator setting (known: simulator.")
    known = message.split("(known: ", 1)[1].rstrip(")").split(", ")
    assert known == sorted(known) and {"simulator.brokers", "simulator.seed"} <= set(known)


def test_an_empty_broker_list_is_an_error():
    with pytest.raises(ConfigError) as info:
        ServerConfig.from_properties({"simulator.brokers": "  "})
    assert info.value.key == "simulator.brokers"
    assert "no brokers given" in str(info.value)


@pytest.mark.parametrize(
    ("props", "name", "protocol"),
    [
        ({"listeners": "SSL://127.0.0.1:9093"}, "SSL", "SSL"),
        ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093"}, "SASL_PLAINTEXT", "SASL_PLAINTEXT"),
        ({"listeners": "sasl_ssl://127.0.0.1:9093"}, "SASL_SSL", "SASL_SSL"),
        (
            {"listeners": "CLIENT://127.0.0.1:9093", "listener.security.protocol.map": "CLIENT:SASL_SSL"},
            "CLIENT",
            "SASL_SSL",
        ),
    ],
)
def test_every_kafka_security_protocol_is_served(props, name, protocol):
    listener = ServerConfig.from_properties(props).listener
    assert (listener.name, listener.security_protocol, listener.port) == (name, protocol, 9093)


def test_a_listener_name_without_a_security_protocol_is_an_error():
    with pytest.raises(ConfigError, match="listener CLIENT has no security protocol") as info:
        ServerConfig.from_properties({"listeners": "CLIENT://127.0.0.1:9093"})
    assert info.value.key == "listeners"


def test_a_named_listener_mapped_to_plaintext_is_served():
    props = {"listeners": "CLIENT://127.0.0.1:0", "listener.security.protocol.map": "CLIENT:PLAINTEXT"}
    listener = ServerConfig.from_properties(props).listener
    assert (listener.name, listener.security_protocol, listener.port) == ("CLIENT", "PLAINTEXT", 0)


def test_every_setting_is_in_the_readme_table_with_its_default():
    """docs/configuration.md's table is ``placement-sim settings --markdown``, row for row."""
    from pathlib import Path

    from controller.config import SETTINGS
    from placement_sim.cli.commands.settings import markdown_table

    page = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    table = markdown_table()
    assert len(table) == len(SETTINGS) + 2
    assert "\n".join(table) in page, (
        "regenerate docs/configuration.md's table: placement-sim settings --markdown"
    )
    for setting, row in zip(SETTINGS, table[2:], strict=True):
        assert row.startswith(f"| `{setting.key}` | ") and (setting.default or "none") in row
