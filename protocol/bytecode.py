"""The compiled code of Python source written at run time, kept on disk as Python keeps a module's.

Two things write Python source while the project runs, and compiling it is most of their cost:

- construct, each codec's parser and builder (:mod:`protocol.compiled` keeps one file per codec);
- the standard library's ``dataclasses``, each class's ``__init__``, ``__repr__``, ``__eq__``,
  ``__hash__`` and, when frozen, ``__setattr__`` and ``__delattr__``: some 350 functions for a bare
  server, 55 of its 230 ms from import to a stopped server (measured on Python 3.11, which writes
  each method as a source of its own; 3.13 writes a class's methods as one source).

:func:`keep_dataclass_code` (called by the ``protocol`` package, which ``controller`` imports first)
gives ``dataclasses`` an ``exec`` that looks each source up in the file of its class's module before it
compiles it; a module's file is written again, when the process ends, if some of its code had to be
compiled. The source is the key, so a changed class is compiled, never given stale code, and files are
named by the interpreter's tag. As the codecs' cache, it is written whatever
``PYTHONDONTWRITEBYTECODE`` says (it is generated code, not the modules' own bytecode, which ``make
bytecode`` compiles ahead). A cache that cannot be read or written (a read-only install, a file cut
short) is not an error: the code is compiled.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import marshal
import os
import sys
import threading
import types
from typing import Any, TypeVar

__all__ = [
    "CACHE_DIR",
    "DATACLASS_CODE",
    "folder_stamp",
    "keep_dataclass_code",
    "package_stamp",
    "read_marshalled",
    "write_atomically",
]

T = TypeVar("T")

#: Where compiled code of generated source is kept (beside the package's own bytecode).
CACHE_DIR = os.path.join(os.path.dirname(__file__), "__pycache__")
#: The compiled code of the methods ``dataclasses`` writes: a file per module that defines classes.
DATACLASS_CODE = os.path.join(CACHE_DIR, "dataclasses")
#: The packages whose classes' code is kept (the project's; a script's ``__main__`` is not one).
PACKAGES = frozenset({"controller", "protocol", "placement_sim"})


_stamp: bytes | None = None


def package_stamp() -> bytes:
    """What names this package's code as it is now (:func:`folder_stamp`, once per process). What is made
    from data by this code and kept (parsed specs, codecs) is kept with it and made again when it differs."""
    global _stamp
    if _stamp is None:
        _stamp = folder_stamp(os.path.dirname(__file__))
    return _stamp


def folder_stamp(folder: str) -> bytes:
    """The modules of ``folder`` by name, size and modification time (a stat each), as Python names a
    module's source in its bytecode."""
    parts = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            stat = os.stat(os.path.join(folder, name))
            parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return b"\0".join(parts)


def write_atomically(path: str, data: bytes) -> None:
    """Writes ``data`` to ``path`` whole or not at all (processes may write the same file at once); a
    folder that cannot be written is not an error."""
    temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(temporary, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def read_marshalled(path: str, kind: type[T]) -> T | None:
    """What ``path`` holds, marshalled, when it is a ``kind``; None when the file is absent, cut short or
    holds something else (a cache then compiles again)."""
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
        with open(path, "rb") as stream:
            loaded = marshal.loads(stream.read())
        if isinstance(loaded, kind):
            return loaded
    return None


class _DataclassCode:
    """The ``exec`` ``dataclasses`` calls: each source looked up in its module's file first.

    A module's file holds the methods of the classes it defined in the last process that compiled one of
    them: a module's classes are all made when it is imported, so what a process used is the whole of
    what the module needs now, and a changed class leaves nothing stale behind."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        #: By module: the code its file holds (read at the module's first class).
        self.known: dict[str, dict[str, types.CodeType]] = {}
        #: By module: the code this process used.
        self.used: dict[str, dict[str, types.CodeType]] = {}
        #: Modules some code of which this process had to compile.
        self.changed: set[str] = set()
        self.compiled = 0

    def path(self, module: str) -> str:
        return os.path.join(self.folder, f"{module}.{sys.implementation.cache_tag}.bin")

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:  # noqa: A002
        module = globals.get("__name__") if isinstance(source, str) and isinstance(globals, dict) else None
        if isinstance(module, str) and module.partition(".")[0] in PACKAGES:  # the class's module
            known = self.known.get(module)
            if known is None:
                known = self.known[module] = read_marshalled(self.path(module), dict) or {}
            code = known.get(source)
            if code is None:
                code = known[source] = compile(source, "<string>", "exec")
                self.compiled += 1
                self.changed.add(module)
            self.used.setdefault(module, {})[source] = code
            source = code
        exec(source, globals, locals)  # noqa: S102 - the standard library's own generated code

    def save(self) -> None:
        """Writes the file of each module this process compiled code of."""
        for module in sorted(self.changed):
            write_atomically(self.path(module), marshal.dumps(self.used[module]))
        self.changed.clear()
        self.compiled = 0


def keep_dataclass_code(folder: str = DATACLASS_CODE) -> _DataclassCode:
    """Makes ``dataclasses`` read the compiled code of its methods from ``folder`` (once per process; the
    cache in effect is returned)."""
    current = getattr(dataclasses, "exec", None)
    owner = getattr(current, "__self__", None)
    if isinstance(owner, _DataclassCode):
        return owner
    cache = _DataclassCode(folder)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache
