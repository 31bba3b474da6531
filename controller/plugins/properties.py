"""The properties a plugin's ``configure()`` receives: their text, the keys every plugin shares, the
value types plugins and the server read them with, and how a plugin declares its own.

A plugin receives every server property as text, as Kafka's ``Configurable.configure`` does. Properties
given from Python (``ServerThread.start(properties=...)``, the pytest plugin, the conformance kit) may
be numbers and booleans: :func:`property_texts` writes them as a properties file would (``1500``,
``true``), the one conversion every such path goes through.

The server's configuration (:mod:`controller.config`) reads its own keys with the value types of this
module and lists every built-in plugin's declared :class:`Property` in its settings table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SEED",
    "WORKER_MAX_MEMORY_MB",
    "ConfigError",
    "Property",
    "PropertyValue",
    "boolean",
    "integer",
    "one_of",
    "optional_integer",
    "property_text",
    "property_texts",
    "text",
]

#: The seed every plugin draws its randomness from, so that the same seed gives the same results.
SEED = "simulator.seed"
#: The address space a plugin's worker process may use, in MB (0: no limit).
WORKER_MAX_MEMORY_MB = "simulator.placer.worker.max.memory.mb"

#: A property's value as Python code may give it: text, or a number or boolean written as text.
PropertyValue = str | int | float | bool


class PluginLoadError(ValueError):
    """The plugin name cannot be resolved to a usable class, or the class cannot be set up (raised by
    ``controller.plugins.loader``; defined here, beside :class:`ConfigError`, so that the command line can
    catch both without importing the loader)."""


class ConfigError(ValueError):
    """A configuration file or value is malformed; the message names the key."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def property_text(value: object) -> str:
    """A property value as a properties file holds it: text as it is, ``true``/``false`` for booleans
    (Java's spelling), numbers in decimal."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise TypeError(f"a property value is text, a number or a boolean, not {type(value).__name__} {value!r}")


def property_texts(properties: Mapping[str, object]) -> dict[str, str]:
    """Every value of ``properties`` as text (:func:`property_text`); a value of another type is a
    ConfigError naming its key."""
    out: dict[str, str] = {}
    for key, value in properties.items():
        try:
            out[key] = property_text(value)
        except TypeError as exc:
            raise ConfigError(f"{key}: {exc}", key) from None
    return out


# ------------------------------------------------------------------------------------ value types


def integer(minimum: int | None = None, maximum: int = 2**63 - 1) -> Callable[[str, str], int]:
    def parse(key: str, raw: str) -> int:
        try:
            value = int(raw.strip().replace("_", ""))
        except ValueError:
            raise ConfigError(f"{key}: {raw!r} is not an integer", key) from None
        if minimum is not None and value < minimum:
            raise ConfigError(f"{key}: {value} is below the minimum {minimum}", key)
        if value > maximum:
            raise ConfigError(f"{key}: {value} is above the maximum {maximum}", key)
        return value

    return parse


def optional_integer(key: str, raw: str) -> int | None:
    return None if not raw.strip() else integer()(key, raw)


def boolean(key: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}: {raw!r} is not true or false", key)
    return value == "true"


def one_of(*choices: str) -> Callable[[str, str], str]:
    def parse(key: str, raw: str) -> str:
        value = raw.strip()
        if value not in choices:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(choices)}", key)
        return value

    return parse


def text(nonempty: bool = True) -> Callable[[str, str], str]:
    def parse(key: str, raw: str) -> str:
        value = raw.strip()
        if nonempty and not value:
            raise ConfigError(f"{key}: must not be empty", key)
        return value

    return parse


# ------------------------------------------------------------------------------------ declarations


@dataclass(frozen=True)
class Property:
    """A property a plugin reads in ``configure()``: its key, its default (as a properties file writes
    it), how its text is read (``parse(key, text)``, raising ConfigError or ValueError naming the key)
    and what it means. Built-in plugins list theirs in a class attribute ``properties``; the server's
    settings table (``placement-sim settings``) shows them and knows their keys."""

    key: str
    default: str
    parse: Callable[[str, str], Any]
    meaning: str
