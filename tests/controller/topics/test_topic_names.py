"""Kafka's topic-name rules with Kafka's messages."""

from __future__ import annotations

import pytest

from controller.topic_names import collision_key, topic_name_problem


@pytest.mark.parametrize("name", ["orders", "a", "A-b_c.9", "x" * 249, "__consumer_offsets", "..."])
def test_legal_names(name):
    assert topic_name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is illegal, it can't be empty"),
        (".", 'Topic name cannot be "." or ".."'),
        ("..", 'Topic name cannot be "." or ".."'),
        (
            "x" * 250,
            "Topic name is illegal, it can't be longer than 249 characters, topic name: " + "x" * 250,
        ),
        (
            "orders!",
            "Topic name \"orders!\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' "
            "and '-'",
        ),
        (
            "caf\u00e9",
            "Topic name \"caf\u00e9\" is illegal, it contains a character other than ASCII alphanumerics, '.', "
            "'_' and '-'",
        ),
        (
            "a b",
            "Topic name \"a b\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'",
        ),
    ],
)
def test_illegal_names(name, message):
    assert topic_name_problem(name) == message


def test_dots_and_underscores_collide():
    assert collision_key("s03.metrics") == collision_key("s03_metrics")
    assert collision_key("s03.metrics") != collision_key("s03-metrics")
