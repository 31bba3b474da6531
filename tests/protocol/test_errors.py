"""The error table in schemas/errors.json: Kafka's codes with Kafka's numbers, and the simulator's own."""

from __future__ import annotations

import pytest

from protocol import SpecError
from protocol.errors import (
    KafkaError,
    UnknownErrorName,
    all_errors,
    error_by_code,
    error_by_name,
    parse_error_table,
)

REQUIRED = [
    ("NONE", 0, False),
    ("UNKNOWN_SERVER_ERROR", -1, False),
    ("UNKNOWN_TOPIC_OR_PARTITION", 3, True),
    ("REQUEST_TIMED_OUT", 7, True),
    ("INVALID_TOPIC_EXCEPTION", 17, False),
    ("UNSUPPORTED_VERSION", 35, False),
    ("TOPIC_ALREADY_EXISTS", 36, False),
    ("INVALID_PARTITIONS", 37, False),
    ("INVALID_REPLICATION_FACTOR", 38, False),
    ("INVALID_REPLICA_ASSIGNMENT", 39, False),
    ("INVALID_CONFIG", 40, False),
    ("NOT_CONTROLLER", 41, True),
    ("INVALID_REQUEST", 42, False),
    ("POLICY_VIOLATION", 44, False),
    ("UNKNOWN_TOPIC_ID", 100, True),
    ("REPLICA_PLACEMENT_FAILED", 1001, False),
]


@pytest.mark.parametrize(("name", "code", "retriable"), REQUIRED)
def test_required_errors(name, code, retriable):
    error = error_by_name(name)
    assert (error.code, error.retriable) == (code, retriable)
    assert error_by_code(code) == error
    assert error.message or name == "NONE"


def test_kafka_default_messages():
    assert (
        error_by_code(38).message
        == "Replication factor is below 1 or larger than the number of available brokers."
    )
    assert error_by_code(1001).message == "The replica placer could not compute a placement."


def test_table_is_sorted_and_unique():
    errors = all_errors()
    assert [e.code for e in errors] == sorted({e.code for e in errors})
    assert len({e.name for e in errors}) == len(errors)
    assert all(-(2**15) <= e.code < 2**15 for e in errors)


def test_unknown_code_keeps_the_code():
    assert error_by_code(9999) == KafkaError(9999, "UNKNOWN_ERROR_9999", False, "Unknown error code 9999.")


def test_unknown_name_is_a_lookup_error():
    with pytest.raises(UnknownErrorName, match="no error named 'NO_SUCH_ERROR'"):
        error_by_name("NO_SUCH_ERROR")
    assert issubclass(UnknownErrorName, LookupError)


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("[]", None, 'expected an object with an "errors" list'),
        ('{"errors": [{"code": 1, "name": "A"}]}', "errors[0]", "needs exactly the keys"),
        (
            '{"errors": [{"code": 1.5, "name": "A", "retriable": false, "message": ""}]}',
            "errors[0]",
            "code must be an int16",
        ),
        (
            '{"errors": [{"code": 1, "name": "a b", "retriable": false, "message": ""}]}',
            "errors[0]",
            "UPPER_SNAKE_CASE",
        ),
        (
            '{"errors": [{"code": 1, "name": "A", "retriable": false, "message": ""},'
            ' {"code": 1, "name": "B", "retriable": false, "message": ""}]}',
            "errors[1]",
            "B (1) repeats a code or a name",
        ),
        (
            '// comment\n{"errors": [{"code": 1, "name": "A", "retriable": 0, "message": ""}]}',
            "errors[0]",
            "retriable",
        ),
    ],
)
def test_bad_tables(text, where, problem):
    with pytest.raises(SpecError) as caught:
        parse_error_table(text, "errors.json")
    assert caught.value.field == where
    assert problem in caught.value.problem
