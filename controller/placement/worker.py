"""The process that hosts a plugin placer when the server isolates it (``simulator.placer.isolation``).

The parent speaks to it over stdin/stdout with length-prefixed pickles (stdout is moved to a private
descriptor first, so a plugin that prints cannot corrupt the channel; what it prints goes to stderr).

Messages, parent to worker: ``("load", name, configs, sys_path)`` once, then ``("place", spec, cluster)``.
Worker to parent: ``("ready", label)``, ``("ok", result)``, ``("none",)``,
``("raised", kind, label, message, exception class name)`` where kind is ``"invalid_rf"``,
``"placement"`` or ``"unexpected"``, and ``("bad", message)`` for a result that cannot be sent back
as replica lists.
"""

from __future__ import annotations

import inspect
import os
import pickle
import struct
import sys
from typing import Any, BinaryIO

_LEN = struct.Struct(">I")


def write_message(stream: BinaryIO, message: Any) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LEN.pack(len(payload)) + payload)
    stream.flush()


def read_message(stream: BinaryIO) -> Any:
    header = stream.read(_LEN.size)
    if len(header) < _LEN.size:
        return None
    (size,) = _LEN.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return pickle.loads(payload)


def _as_lists(result: Any, describe_opaque: bool) -> list[list[Any]] | str:
    """Replica lists as fresh plain lists (their contents are validated by the parent), or what is wrong.

    With ``describe_opaque`` an entry that is not an int is replaced by its description, so that the
    lists always pickle and the parent can say what the entry was.
    """
    if isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
        return f"returned {type(result).__name__}, not a list of replica lists"
    if not describe_opaque and type(result) in _PLAIN and set(map(type, result)) <= _PLAIN:
        return [list(replicas) for replicas in result]  # the usual shape, copied in one pass
    out: list[list[Any]] = []
    append = out.append
    for replicas in result:
        kind = type(replicas)
        if kind is not list and kind is not tuple:
            if isinstance(replicas, (str, bytes)) or not hasattr(replicas, "__iter__"):
                return (
                    f"partition entry {len(out)} is {type(replicas).__name__} {replicas!r:.60}, "
                    "not a list of broker ids"
                )
        entries = list(replicas)
        if describe_opaque:
            for i, r in enumerate(entries):
                if type(r) is not int:
                    entries[i] = _describe(r)
        append(entries)
    return out


_PLAIN = {list, tuple}


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.40}"


def classify_exception(exc: BaseException, label: str) -> tuple[Any, ...]:
    """The reply for a placer that raised: Kafka's two documented exceptions, or anything else."""
    from controller.placement.api import InvalidReplicationFactorError, ReplicaPlacementError

    name = type(exc).__name__
    if isinstance(exc, InvalidReplicationFactorError):
        return ("raised", "invalid_rf", label, str(exc), name)
    if isinstance(exc, ReplicaPlacementError):
        return ("raised", "placement", label, str(exc), name)
    return ("raised", "unexpected", label, f"{name}: {exc}", name)


def classify_result(result: Any, describe_opaque: bool = True) -> tuple[Any, ...]:
    """The reply for a placer that returned: deferral, replica lists, or what is wrong with them.

    ``describe_opaque=False`` keeps non-int entries as they are (the caller is in the same process).
    """
    if result is None:
        return ("none",)
    try:
        lists = _as_lists(result, describe_opaque)
    except BaseException as exc:  # noqa: BLE001 - iterating a hostile result
        return ("bad", f"iterating the result raised {type(exc).__name__}: {exc}")
    if isinstance(lists, str):
        return ("bad", lists)
    return ("ok", lists)


def _call(placer: Any, spec: Any, cluster: Any) -> tuple[Any, ...]:
    from controller.placement.loader import placer_label

    label = placer_label(placer)
    try:
        result = placer.place(spec, cluster)
        if inspect.isawaitable(result):
            import asyncio

            async def _await() -> Any:
                return await result

            result = asyncio.run(_await())
    except BaseException as exc:  # noqa: BLE001 - a plugin's failure is reported, never fatal
        return classify_exception(exc, label)
    return classify_result(result)


def main() -> int:
    channel_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel_in = sys.stdin.buffer
    first = read_message(channel_in)
    if not first or first[0] != "load":
        return 2
    _, name, configs, sys_path = first
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    from controller.placement.loader import load_placer, placer_label

    try:
        placer = load_placer(name, configs)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops startup
        write_message(channel_out, ("raised", "load", name, str(exc)))
        return 1
    write_message(channel_out, ("ready", placer_label(placer)))
    while True:
        message = read_message(channel_in)
        if message is None or message[0] == "close":
            break
        _, spec, cluster = message
        reply = _call(placer, spec, cluster)
        try:
            write_message(channel_out, reply)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that does not pickle
            write_message(
                channel_out, ("bad", f"the result cannot be sent back: {type(exc).__name__}: {exc}")
            )
    close = getattr(placer, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # noqa: BLE001
            print(f"placer close() failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
