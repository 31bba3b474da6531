"""JavaRandom, MockRandom, shuffle and the Java hashing helpers against values printed by a real JVM.

The expected values in data/java_reference.json come from data/JavaReference.java run on OpenJDK 17;
MockRandom's come from a ``java.util.Random`` subclass with the ``next(bits)`` of Kafka's test generator.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from controller.placement.builtin.java_collections import (
    hashmap_capacity,
    hashmap_iteration_order,
    java_string_hash,
    java_string_sort_key,
    optional_string_hash,
    optional_string_sort_key,
)
from controller.placement.builtin.java_random import (
    SEED_KEY,
    JavaRandom,
    MockRandom,
    random_from_configs,
    seed_from_configs,
    shuffle,
)

REFERENCE = json.loads((Path(__file__).parent / "data" / "java_reference.json").read_text())


def _float32(value: float) -> bytes:
    return struct.pack(">f", value)


@pytest.mark.parametrize("ref", REFERENCE["random"], ids=lambda ref: f"seed={ref['seed']}")
def test_java_random_matches_the_jvm(ref: dict) -> None:
    _assert_draws_match(JavaRandom(ref["seed"]), ref)


@pytest.mark.parametrize("ref", REFERENCE["mock_random"], ids=lambda ref: f"state={ref['state']}")
def test_mock_random_matches_kafkas_generator_on_the_jvm(ref: dict) -> None:
    """MockRandom against a java.util.Random subclass with Kafka's next(bits), run on the JVM."""
    _assert_draws_match(MockRandom(ref["state"]), ref)


def _assert_draws_match(rnd: JavaRandom, ref: dict) -> None:
    """Every kind of draw, in the order the JVM program made them."""
    assert [rnd.next_int() for _ in range(5)] == ref["next_int"]
    bounded = [rnd.next_int(bound) for bound in ref["bounds"] for _ in range(3)]
    assert bounded == ref["next_int_bounded"]
    assert [rnd.next_long() for _ in range(3)] == ref["next_long"]
    assert [rnd.next_double() for _ in range(3)] == ref["next_double"]
    assert [_float32(rnd.next_float()) for _ in range(3)] == [_float32(f) for f in ref["next_float"]]
    assert [rnd.next_boolean() for _ in range(5)] == ref["next_boolean"]
    items = list(range(20))
    shuffle(items, rnd)
    assert items == ref["shuffle_0_to_19"]


def test_mock_random_gives_kafkas_sequence() -> None:
    rnd = MockRandom()
    assert [rnd.next_int(4) for _ in range(4)] == [2, 2, 0, 3]


def test_mock_random_ignores_set_seed_and_starts_from_its_state() -> None:
    a, b = MockRandom(), MockRandom(17)
    a.set_seed(99)
    assert [a.next_int(1000) for _ in range(10)] == [b.next_int(1000) for _ in range(10)]
    assert [MockRandom(18).next_int(1000) for _ in range(3)] != [
        MockRandom(17).next_int(1000) for _ in range(3)
    ]


def test_shuffle_uses_next_int_like_collections_shuffle() -> None:
    """With a generator of Java's interface, shuffle swaps i - 1 with nextInt(i) from the end."""

    class Recorder:
        def __init__(self) -> None:
            self.bounds: list[int] = []

        def next_int(self, bound: int | None = None) -> int:
            assert bound is not None
            self.bounds.append(bound)
            return 0

    rec = Recorder()
    items = ["a", "b", "c", "d"]
    shuffle(items, rec)
    assert rec.bounds == [4, 3, 2]
    assert items == ["b", "c", "d", "a"]


def test_shuffle_fast_path_draws_like_next_int() -> None:
    for size in (0, 1, 2, 5, 16, 17, 1000):
        fast, slow = list(range(size)), list(range(size))
        r1, r2 = JavaRandom(size), JavaRandom(size)
        shuffle(fast, r1)
        for i in range(size, 1, -1):
            j = r2.next_int(i)
            slow[i - 1], slow[j] = slow[j], slow[i - 1]
        assert fast == slow
        assert r1.next_long() == r2.next_long()


def test_next_int_rejects_a_non_positive_bound() -> None:
    with pytest.raises(ValueError, match="bound must be positive: 0"):
        JavaRandom(1).next_int(0)


def test_unseeded_generators_differ() -> None:
    assert [JavaRandom().next_long() for _ in range(3)] != [JavaRandom().next_long() for _ in range(3)]


def test_seed_from_configs() -> None:
    assert seed_from_configs({}) is None
    assert seed_from_configs({SEED_KEY: "  "}) is None
    assert seed_from_configs({SEED_KEY: "42"}) == 42
    assert seed_from_configs({SEED_KEY: "-7"}) == -7
    assert seed_from_configs({"other.seed": "0x10"}, key="other.seed") == 16
    with pytest.raises(ValueError, match="simulator.seed must be an integer, got 'abc'"):
        seed_from_configs({SEED_KEY: "abc"})


def test_random_from_configs_is_seeded_by_simulator_seed() -> None:
    assert random_from_configs({SEED_KEY: "42"}).next_int() == JavaRandom(42).next_int()


@pytest.mark.parametrize(("text", "expected"), REFERENCE["string_hash"], ids=repr)
def test_string_hash_matches_the_jvm(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_string_sort_follows_utf16_code_units_like_the_jvm() -> None:
    names = [name for name, _ in REFERENCE["string_hash"]]
    assert sorted(names, key=java_string_sort_key) == REFERENCE["string_sorted"]
    assert sorted(names) != REFERENCE["string_sorted"]  # Python's code point order differs


def test_optional_string_helpers() -> None:
    assert optional_string_hash(None) == 0
    assert optional_string_hash("Aa") == optional_string_hash("BB") == 2112
    assert sorted(["b", None, "a"], key=optional_string_sort_key) == [None, "a", "b"]


@pytest.mark.parametrize("ref", REFERENCE["hashmap_order"], ids=lambda ref: f"{len(ref['insertion'])} keys")
def test_hashmap_iteration_order_matches_the_jvm(ref: dict) -> None:
    assert hashmap_iteration_order(ref["insertion"], optional_string_hash) == ref["iteration"]


def test_hashmap_capacity_grows_past_three_quarters() -> None:
    assert [hashmap_capacity(n) for n in (0, 12, 13, 24, 25, 48, 49)] == [16, 16, 32, 32, 64, 64, 128]
