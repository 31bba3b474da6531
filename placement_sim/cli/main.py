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
from typing import Any, NamedTuple

from controller.plugins.properties import ConfigError, PluginLoadError


class Command(NamedTuple):
    """A command of the command line: the module under ``cli.commands`` that defines it (its
    ``register(subparsers, common)`` adds the command with a ``func(args) -> int``) and its one-line help."""

    module: str
    help: str


# The one home of each command's name and help line: ``--help`` (or a command line naming no known
# command) lists them from here without importing any command's module, and a command line naming one
# imports that module alone (a server starts sooner).
COMMANDS = {
    "serve": Command("serve", "run the controller simulator"),
    "place": Command("place", "place one topic in-process and print the replica map"),
    "compare": Command("compare", "place the same topic with several placers and compare their metrics"),
    "check-placer": Command("check_placer", "run the conformance kit on a placer"),
    "check-policy": Command("check_policy", "run the conformance kit on an election policy"),
    "sweep": Command("sweep", "evaluate placers over many cluster shapes and workloads (PySpark)"),
    "topics": Command("topics", "create, list, describe, alter and delete topics on a running simulator"),
    "cluster": Command("cluster", "describe the cluster of a running simulator"),
    "settings": Command("settings", "list the configuration keys"),
    "configs": Command("configs", "describe and alter topic and broker configs of a running simulator"),
    "broker": Command("broker", "stop, start, add and remove brokers of a running simulator"),
    "partitions": Command("partitions", "describe the partitions of a running simulator"),
    "elect": Command("elect", "elect preferred or unclean leaders (ElectLeaders)"),
    "reassign": Command(
        "reassign",
        "move partitions to other brokers (AlterPartitionReassignments), as kafka-reassign-partitions.sh",
    ),
    "events": Command("events", "show (and follow) the event log of a running simulator"),
    "faults": Command("faults", "add, list and clear request faults of a running simulator"),
    "transactions": Command(
        "transactions", "list and describe the transactions of a running simulator (as kafka-transactions.sh)"
    ),
    "clock": Command("clock", "move the virtual clock of a running simulator"),
    "simulate": Command("simulate", "play a scenario file on a virtual clock, in process"),
    "scenario": Command("scenario", "load a scenario into a running simulator"),
    "load": Command("load", "put a produce load on a topic of a running simulator (0 stops it)"),
    "produce": Command("data", "write records (lines from stdin) to a topic"),
    "consume": Command("data", "print a topic's records, one a line"),
    "consumer-groups": Command(
        "consumer_groups", "list, describe, reset the offsets of and delete consumer groups"
    ),
}


class _Commands:
    """The subparsers as a command's module sees them: each command it adds gets its help line from
    :data:`COMMANDS`."""

    def __init__(self, subparsers: Any) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._subparsers.add_parser(
            name, help=COMMANDS[name].help, **kwargs
        )
        return parser


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
    if named is None:
        # No command named (``--help``, a mistyped command): the list of commands, no module imported.
        for command, about in COMMANDS.items():
            subparsers.add_parser(command, help=about.help, add_help=False)
        return parser
    module = importlib.import_module(f"placement_sim.cli.commands.{COMMANDS[named].module}")
    module.register(_Commands(subparsers), common)
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
            importlib.import_module(f"placement_sim.cli.commands.{COMMANDS[named].module}"),
            "rewrite_argv",
            None,
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
