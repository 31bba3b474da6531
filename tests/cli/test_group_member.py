"""The consumer protocol bytes a group carries (read and written with the specs in schemas/) and Kafka's
range assignor, as ``consume --group`` uses them."""

from __future__ import annotations

import struct

from placement_sim.cli.group_member import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)


def test_subscription_and_assignment_bytes_are_kafkas() -> None:
    # Version 0, one topic, null user data: as Kafka's ConsumerProtocol.serializeSubscription writes it.
    assert (
        encode_subscription(["orders"])
        == b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x06orders" + b"\xff\xff\xff\xff"
    )
    assert decode_subscription(encode_subscription(["a", "b"])) == ["a", "b"]
    assignment = encode_assignment({"orders": [2, 0]})
    assert assignment == (
        b"\x00\x00"
        + b"\x00\x00\x00\x01"
        + b"\x00\x06orders"
        + b"\x00\x00\x00\x02"
        + struct.pack(">ii", 2, 0)
        + b"\xff\xff\xff\xff"
    )
    assert decode_assignment(assignment) == {"orders": [0, 2]}
    assert decode_assignment(b"") == {}


def test_a_newer_subscription_is_read_as_the_newest_known() -> None:
    # Version 3 (owned partitions, generation, rack) with a version number from the future.
    body = (
        b"\x00\x00\x00\x01\x00\x01t"
        + b"\xff\xff\xff\xff"  # topics, user data
        + b"\x00\x00\x00\x00"  # owned partitions
        + b"\x00\x00\x00\x05"  # generation
        + b"\x00\x01r"  # rack
        + b"\x01\x02"  # a later version's field
    )
    assert decode_subscription(struct.pack(">h", 9) + body) == ["t"]


def test_the_range_assignor_gives_contiguous_ranges_the_first_members_one_more() -> None:
    subscriptions = {"c-2": ["orders"], "c-1": ["orders", "audit"], "c-3": ["orders"]}
    assert range_assign(subscriptions, {"orders": 7, "audit": 2}) == {
        "c-1": {"orders": [0, 1, 2], "audit": [0, 1]},
        "c-2": {"orders": [3, 4]},
        "c-3": {"orders": [5, 6]},
    }
    assert range_assign({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 2}) == {
        "a": {"t": [0]},
        "b": {"t": [1]},
        "c": {},
    }
