"""The ``placement-sim`` command line: one subcommand module per job under ``cli.commands``.

User mistakes end with one line on stderr and exit code 2, never a traceback: a malformed
configuration, a placer that cannot be loaded, a bad argument. Output piped into a command that stops
reading early (``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from controller.plugins.loader import PluginLoadError
from controller.plugins.properties import ConfigError

# Each command's module defines ``register(subparsers, common)``, adding the command with a
# ``func(args) -> int``. A command line naming one imports that module alone (a server starts sooner).
COMMANDS = {
    "serve": "serve",
    "place": "place",
    "compare": "compare",
    "check-placer": "check_placer",
    "check-policy": "check_policy",
    "sweep": "sweep",
    "topics": "topics",
    "cluster": "cluster",
    "settings": "settings",
    "configs": "configs",
    "broker": "broker",
    "partitions": "partitions",
    "elect": "elect",
    "reassign": "reassign",
    "events": "events",
    "faults": "faults",
    "transactions": "transactions",
    "clock": "clock",
    "simulate": "simulate",
    "scenario": "scenario",
    "load": "load",
    "produce": "data",
    "consume": "data",
    "consumer-groups": "consumer_groups",
}

#: Exit code of a command whose reader went away (as a process killed by SIGPIPE reports it).
EXIT_BROKEN_PIPE = 141


class _Version(argparse.Action):
    """``--version``, reading the installed version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("placement-sim")
        except PackageNotFoundError:  # pragma: no cover - running from a checkout that is not installed
            number = "unknown"
        print(f"{parser.prog} {number}")  # on stdout, as argparse's own version action does
        parser.exit()


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand takes after its name too (``placement-sim serve -v``)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v",
        "--verbose",
        dest="verbose_after",
        action="count",
        default=0,
        help="more logging (-v info, -vv debug)",
    )
    return common


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the command it names is registered (all of them when it names none)."""
    parser = argparse.ArgumentParser(
        prog="placement-sim",
        description="A Kafka-wire-compatible controller simulator for replica placement.",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)"
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = common_options()
    named = _command_named(argv)
    registered: set[str] = set()  # a module may register several commands (produce and consume)
    for command, module in COMMANDS.items():
        if (named is None or command == named) and module not in registered:
            registered.add(module)
            importlib.import_module(f"placement_sim.cli.commands.{module}").register(subparsers, common)
    return parser


def _command_named(argv: Sequence[str] | None) -> str | None:
    """The command of a command line (its first word that is not an option), when it is a known one."""
    words = [word for word in (sys.argv[1:] if argv is None else argv) if not word.startswith("-")]
    return words[0] if words and words[0] in COMMANDS else None


class _Stderr(logging.Handler):
    """Log lines on the ``sys.stderr`` of the moment (a test's capture, say), while a command runs.

    Without ``-v`` a line reads as the command's other messages (``placement-sim: warning: ...``); with
    ``-v`` it carries the time, level and logger, as a log does."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - as logging.Handler: a log line never breaks the command
            self.handleError(record)


_DETAILED = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")


class _Plain(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = f"placement-sim: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        return f"{text}\n{record.exc_text}" if record.exc_text else text


def setup_logging(verbosity: int) -> Callable[[], None]:
    """Warnings and errors on stderr (with ``-v`` info too, ``-vv`` debug); returns what undoes it (a
    command run in a test's process leaves the logging as it found it)."""
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    root = logging.getLogger()
    handler = _Stderr()
    handler.setFormatter(_Plain() if verbosity == 0 else _DETAILED)
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)

    def undo() -> None:
        root.removeHandler(handler)
        root.setLevel(previous)

    return undo


def run_command(args: argparse.Namespace) -> int:
    """Runs the parsed command, turning user mistakes into one line on stderr and exit code 2."""
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # inside the try: a reader that went away shows here, not at exit
        return status
    except PluginLoadError as exc:
        print(f"placement-sim: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"placement-sim: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): no traceback, and nothing more to flush to it.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed command line. A command's module may rewrite its words first (``rewrite_argv``: the
    Kafka spellings of ``topics``); an unknown option is reported with the usage of the (sub)command it
    was given to, not the top level's."""
    words = list(sys.argv[1:] if argv is None else argv)
    named = _command_named(words)
    if named is not None:
        rewrite = getattr(
            importlib.import_module(f"placement_sim.cli.commands.{COMMANDS[named]}"), "rewrite_argv", None
        )
        words = rewrite(words) if rewrite is not None else words
    parser = build_parser(words)
    args, unknown = parser.parse_known_args(words)
    if unknown:
        _innermost(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser that parsed the last command word of ``args``."""
    while True:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, subparsers[0].dest, None) if subparsers else None
        if chosen is None:
            return parser
        parser = subparsers[0].choices[chosen]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    undo = setup_logging(args.verbose + getattr(args, "verbose_after", 0))
    try:
        return run_command(args)
    finally:
        undo()


if __name__ == "__main__":
    sys.exit(main())
