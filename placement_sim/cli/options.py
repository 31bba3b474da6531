"""Argument types and options shared by the subcommands: one definition each."""

from __future__ import annotations

import argparse

from controller.config.parsing import key_value
from protocol.client import parse_bootstrap

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "add_bootstrap_option",
    "add_property_option",
    "bootstrap_address",
    "broker_id_list",
    "positive_int",
    "property_pair",
]

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def property_pair(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (``--set``, ``--conf``) as a pair."""
    try:
        return key_value(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def bootstrap_address(text: str) -> str:
    """``HOST:PORT`` of a running server, checked before any connection is tried."""
    try:
        parse_bootstrap(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip()


def broker_id_list(text: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated broker ids, got {text!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("expected at least one broker id")
    return ids


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def add_bootstrap_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    default: str | None = DEFAULT_BOOTSTRAP,
    help: str = "",
) -> None:
    """``--bootstrap HOST:PORT``, also spelled ``--bootstrap-server`` as Kafka's tools spell it."""
    parser.add_argument(
        "--bootstrap",
        "--bootstrap-server",
        dest="bootstrap",
        type=bootstrap_address,
        default=default,
        metavar="HOST:PORT",
        help=help or f"the simulator (or any Kafka broker) to talk to (default {default})",
    )


def add_property_option(parser: argparse.ArgumentParser, help: str, flag: str = "--set") -> None:
    """A repeatable ``KEY=VALUE`` option (``--set`` for properties, ``--conf`` for Spark settings)."""
    parser.add_argument(flag, type=property_pair, action="append", default=[], metavar="KEY=VALUE", help=help)
