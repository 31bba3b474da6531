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
        ("", "Topic name is invalid: the empty string is not allowed"),
        (".", "Topic name is invalid: '.' is not allowed"),
        ("..", "Topic name is invalid: '..' is not allowed"),
        (
            "x" * 250,
            "Topic name is invalid: the length of '"
            + "x" * 250
            + "' is longer than the max allowed length 249",
        ),
        (
            "orders!",
            "Topic name is invalid: 'orders!' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'",
        ),
        (
            "caf\u00e9",
            "Topic name is invalid: 'caf\u00e9' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'",
        ),
        (
            "a b",
            "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'",
        ),
    ],
)
def test_illegal_names(name, message):
    assert topic_name_problem(name) == message


def test_dots_and_underscores_collide():
    assert collision_key("s03.metrics") == collision_key("s03_metrics")
    assert collision_key("s03.metrics") != collision_key("s03-metrics")
