"""The process that hosts one plugin when the server isolates it, and the calling rules both runners share.

The parent speaks to the worker over stdin/stdout with length-prefixed pickles of the messages below
(stdout is moved to a private descriptor first, so a plugin that prints cannot corrupt the channel;
what it prints goes to stderr). Parent to worker: :class:`Load` once, then :class:`Call` per call and
:class:`Close` at the end. Worker to parent: :class:`Ready`, then per call :class:`Returned` or a
:class:`~controller.plugins.isolation.outcome.PluginError`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import signal
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from controller.plugins.isolation.outcome import PluginError, Reason, attributes_of, failure, normalized

LENGTH = struct.Struct(">I")

#: The worker's exit code after it ran out of memory (after telling the parent so).
EXIT_OUT_OF_MEMORY = 86


@dataclass(frozen=True)
class Load:
    """Load plugin ``name`` of the kind at ``kind_ref`` (``module:ATTRIBUTE``) and configure it."""

    kind_ref: str
    name: str
    configs: Mapping[str, str]
    sys_path: list[str]
    max_memory_mb: int = 0  # 0: no limit


@dataclass(frozen=True)
class Call:
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Close:
    pass


@dataclass(frozen=True)
class Ready:
    label: str
    attributes: Mapping[str, Any]


@dataclass(frozen=True)
class Returned:
    value: Any


def resolve_kind(ref: str) -> Any:
    module_name, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def invoke(kind: Any, plugin: Any, label: str, args: tuple[Any, ...], portable: bool) -> Any:
    """Calls the plugin in this process (awaiting it when it is async); its result or PluginError."""
    try:
        result = getattr(plugin, kind.method)(*args)
        if inspect.isawaitable(result):
            import asyncio

            async def _await() -> Any:
                return await result

            result = asyncio.run(_await())
    except BaseException as exc:  # noqa: BLE001 - a plugin's failure is reported, never fatal
        raise failure(kind, label, exc) from None
    return normalized(kind, label, result, portable)


def write_message(stream: BinaryIO, message: Any) -> None:
    import pickle  # the worker's, and a parent's only once a plugin runs in one (not at a server's start)

    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(LENGTH.pack(len(payload)) + payload)
    stream.flush()


def read_message(stream: BinaryIO) -> Any:
    header = stream.read(LENGTH.size)
    if len(header) < LENGTH.size:
        return None
    (size,) = LENGTH.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    import pickle

    return pickle.loads(payload)


def _limit_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    try:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError) as exc:  # not every platform has address-space limits
        print(f"worker: cannot limit memory to {megabytes} MB: {exc}", file=sys.stderr)


def main() -> int:
    """The worker's life: load, then answer calls until Close or the end of input (``python -m
    controller.plugins.isolation`` runs it)."""
    # Ctrl-C in a terminal reaches the whole process group: the server stops its workers itself (Close,
    # or the end of their input when it exits), so a worker takes no KeyboardInterrupt of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    channel_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel_in = sys.stdin.buffer
    first = read_message(channel_in)
    if not isinstance(first, Load):
        return 2
    for entry in reversed(first.sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    from controller.plugins.loader import load_plugin, plugin_label

    kind = resolve_kind(first.kind_ref)
    try:
        plugin = load_plugin(kind, first.name, first.configs)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops startup
        write_message(channel_out, PluginError(Reason.UNEXPECTED, first.name, str(exc), type(exc).__name__))
        return 1
    label = plugin_label(plugin)
    state: Any = None  # what the server last sent, for arguments that travel as changes
    _limit_memory(first.max_memory_mb)
    write_message(channel_out, Ready(label, attributes_of(kind, plugin)))
    while True:
        try:
            message = read_message(channel_in)
        except MemoryError:
            write_message(channel_out, PluginError(Reason.OUT_OF_MEMORY, label, "the request did not fit"))
            return EXIT_OUT_OF_MEMORY
        if not isinstance(message, Call):
            break
        reply: Any
        args = message.args
        if kind.inbound is not None:
            args, state = kind.inbound(args, state)
        try:
            value = invoke(kind, plugin, label, args, portable=True)
            reply = Returned(kind.pack(value) if kind.pack is not None else value)
        except PluginError as exc:
            reply = exc
        try:
            write_message(channel_out, reply)
        except MemoryError:
            write_message(channel_out, PluginError(Reason.OUT_OF_MEMORY, label, "the result did not fit"))
            return EXIT_OUT_OF_MEMORY
        except Exception as exc:  # noqa: BLE001 - e.g. a result that does not pickle
            write_message(
                channel_out,
                PluginError(
                    Reason.MALFORMED, label, f"the result cannot be sent back: {type(exc).__name__}: {exc}"
                ),
            )
        if isinstance(reply, PluginError) and reply.reason is Reason.OUT_OF_MEMORY:
            return EXIT_OUT_OF_MEMORY  # what the plugin holds now cannot be trusted: the parent starts a fresh worker
    close = getattr(plugin, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # noqa: BLE001
            print(f"{kind.noun} close() failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0
