"""construct's compiler with the Python bytecode of what it generates kept on disk.

A codec is compiled on its first use (:class:`protocol.codec.VersionCodec`): construct writes the
message's Python source, then Python compiles that source, and the second step is about two thirds of
the cost (3.7 of 5.5 ms for Fetch v16). :func:`compile_construct` does what ``Construct.compile()``
does, but keeps the compiled code of each source in ``protocol/__pycache__/codecs/`` (as Python keeps a
module's), so a new process only writes the source and loads the code.

The source construct writes names the Python objects it links to by their ``id()``
(``linkedinstances[139661340719696]``), which differs from process to process; those numbers are
replaced by their order of first appearance before the source is hashed and compiled, and the objects
are linked under the same numbers. A cache file is named by the hash of that source and the
interpreter's tag, so a changed spec, construct or interpreter is a different file, never a stale one.
A cache that cannot be read or written (a read-only install) is not an error: the code is compiled.

A message's own codec (:func:`compile_message`) goes one step further: its source depends only on the
message's spec, its version (and its caps, or the part of it it encodes) and the code that writes codecs,
and it links one object, the message's construct (array run sites are made by the module itself,
:meth:`protocol.runs.Runs.source`), which only construct's own entry points (``parseall``, ``buildall``)
use. So its source and code are kept in a file per key, with the name of the generator that wrote them,
and a new process reads them before anything else: no source written, no construct built, and construct
itself not imported until a codec must be written or interpreted (:class:`Generated`). The generator is
named by the size and modification time of each module of this package and of construct's
(:func:`protocol.bytecode.package_stamp`, :func:`protocol.bytecode.folder_stamp`), so an edited generator
or another construct writes its codecs anew, over the old files.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import marshal
import re
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol.bytecode import CACHE_DIR, folder_stamp, package_stamp, read_marshalled, write_atomically

if TYPE_CHECKING:
    from construct.core import Compiled, Construct

__all__ = ["CACHE", "Generated", "compile_construct", "compile_message", "generator"]

#: Where the compiled code of generated codecs is kept.
CACHE = Path(CACHE_DIR) / "codecs"

# What construct's compile() puts before a construct's own code (its generated modules all start so), but
# its star imports and its ``Compiled``: the project's constructs write their own code (protocol.emit's
# PRELUDE imports what it uses), copying construct's hundreds of names into each codec's module was a
# third of the cost of making a codec from the cache, and a codec's module runs without construct (its
# ``Compiled`` is made from the module's functions when asked for: :class:`Generated`).
_PRELUDE = """
    from io import BytesIO
    import struct
    import collections
    import itertools

    def restream(data, func):
        return func(BytesIO(data))
    def reuse(obj, func):
        return func(obj)

    linkedinstances = {}
    linkedparsers = {}
    linkedbuilders = {}

    len_ = len
    sum_ = sum
    min_ = min
    max_ = max
    abs_ = abs
"""

_LINKED = re.compile(r"linked(instances|parsers|builders)\[(\d+)\]")
_LINK_COMMENT = re.compile(r"^\s*# linked(instances|parsers|builders)\[\d+\] is .*$", re.MULTILINE)


def compile_construct(construct: Construct) -> Compiled:
    """``construct.compile()``, its Python compilation read from the cache when it was done before."""
    source, digest, links = _emit(construct)
    module = _module(_code(source, digest), digest, links)
    return _as_compiled(module, source, digest, construct)


Links = dict[tuple[str, int], Any]


def _emit(construct: Construct) -> tuple[str, str, Links]:
    """What construct's compile() writes for ``construct``: the source (linked objects numbered by their
    order of first appearance), its digest and the objects it links, by (kind, number)."""
    from construct.core import CodeGen

    code = CodeGen()
    code.append(_PRELUDE)
    code.append(f"""
        def parseall(io, this):
            return {construct._compileparse(code)}
        def buildall(obj, io, this):
            return {construct._compilebuild(code)}
    """)
    numbers: dict[tuple[str, str], int] = {}

    def renumber(match: re.Match[str]) -> str:
        number = numbers.setdefault((match[1], match[2]), len(numbers))
        return f"linked{match[1]}[{number}]"

    source = _LINKED.sub(renumber, _LINK_COMMENT.sub("", code.toString()))
    digest = hashlib.sha1(source.encode()).hexdigest()
    linked = {
        "instances": code.linkedinstances,
        "parsers": code.linkedparsers,
        "builders": code.linkedbuilders,
    }
    return source, digest, {(kind, number): linked[kind][int(i)] for (kind, i), number in numbers.items()}


def _module(code: Any, name: str, links: Links) -> types.ModuleType:
    """The module of ``code``, its linked objects bound."""
    module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(name, None))
    exec(code, module.__dict__)
    for (kind, number), obj in links.items():
        getattr(module, "linked" + kind)[number] = obj
    return module


def _as_compiled(module: types.ModuleType, source: str, name: str, construct: Construct) -> Compiled:
    """The module as construct's compile() returns it: a ``Compiled`` of its parser and builder."""
    from construct.core import Compiled

    compiled = Compiled(module.parseall, module.buildall)
    compiled.source = source
    compiled.module = module
    compiled.modulename = name
    compiled.defersubcon = construct
    return compiled


_generator: bytes | None = None


def generator() -> bytes:
    """What names the code that writes codecs: this package's modules (:func:`protocol.bytecode.package_stamp`)
    and construct's, found without importing it."""
    global _generator
    if _generator is None:
        found = importlib.util.find_spec("construct")
        folders = list(found.submodule_search_locations or []) if found is not None else []
        _generator = b"\0".join([*(folder_stamp(folder) for folder in folders), package_stamp()])
    return _generator


class Generated:
    """A codec's module as :func:`compile_message` makes it: the generated ``decode`` and ``encode``
    functions (named by :attr:`decode_function`, :attr:`encode_function`) run without construct; the
    construct it was written from is built (by ``build``) and linked when first asked for, by the
    interpreted fallback or construct's own entry points (:attr:`compiled`)."""

    def __init__(
        self,
        module: types.ModuleType,
        source: str,
        modulename: str,
        decode_function: str,
        encode_function: str,
        build: Callable[[], Construct],
        construct: Construct | None = None,
    ) -> None:
        self.module = module
        self.source = source
        self.modulename = modulename
        self.decode_function = decode_function
        self.encode_function = encode_function
        self._build = build
        self._construct = construct
        self._compiled: Compiled | None = None
        self._lock = threading.Lock()

    @property
    def construct(self) -> Construct:
        construct = self._construct
        if construct is None:
            with self._lock:
                construct = self._construct
                if construct is None:
                    construct = self._build()
                    self.module.linkedinstances[0] = construct
                    self._construct = construct
        return construct

    @property
    def compiled(self) -> Compiled:
        """The module as construct's compile() gives it (``parse``, ``build``)."""
        if self._compiled is None:
            self._compiled = _as_compiled(self.module, self.source, self.modulename, self.construct)
        return self._compiled


def compile_message(key: bytes, build: Callable[[], Construct]) -> Generated:
    """The codec of the construct ``build`` makes, whose source depends only on ``key`` (a message's spec
    and version, and its caps or part) and on :func:`generator`: read whole from the cache when the file
    of ``key`` was written by the same generator (``build`` is not called), else built, written, compiled
    and kept there (one file per key: an edited generator writes over it, nothing piles up) when it links
    nothing but the construct itself."""
    path = CACHE / f"m{hashlib.sha1(key).hexdigest()}.{sys.implementation.cache_tag}.bin"
    made_by = generator()
    kept = read_marshalled(str(path), tuple)
    if (
        kept is not None
        and len(kept) == 6
        and kept[0] == made_by
        and all(isinstance(part, str) for part in (kept[1], kept[2], kept[4], kept[5]))
        and isinstance(kept[3], types.CodeType)
    ):
        _, name, source, code, decode_function, encode_function = kept
        return Generated(_module(code, name, {}), source, name, decode_function, encode_function, build)
    construct = build()
    source, digest, links = _emit(construct)
    code = _code(source, digest)
    decode_function, encode_function = construct.decode_function, construct.encode_function
    if links == {("instances", 0): construct}:
        kept = (made_by, digest, source, code, decode_function, encode_function)
        write_atomically(str(path), marshal.dumps(kept))
    module = _module(code, digest, links)
    return Generated(module, source, digest, decode_function, encode_function, build, construct)


def _code(source: str, digest: str) -> Any:
    path = CACHE / f"{digest}.{sys.implementation.cache_tag}.bin"
    cached = read_marshalled(str(path), types.CodeType)
    if cached is not None:
        return cached
    code = compile(source, "", "exec")
    write_atomically(str(path), marshal.dumps(code))
    return code
