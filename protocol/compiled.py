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
message's spec, its version and the code that writes codecs, and it links one object, the message's
construct (array run sites are made by the module itself, :meth:`protocol.runs.Runs.source`). So its
source and code are kept in a file per spec and version, with the name of the generator that wrote them,
and a new process reads them before writing anything: no source written, no spec walked but to build the
construct. The generator is named by the size and modification time of each module of this package
(:func:`protocol.bytecode.package_stamp`) and construct's version, so an edited generator writes its
codecs anew, over the old files.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import marshal
import re
import sys
import types
from pathlib import Path
from typing import Any

from construct.core import CodeGen, Compiled, Construct
from construct.version import version_string as CONSTRUCT_VERSION

from protocol.bytecode import CACHE_DIR, package_stamp, read_marshalled, write_atomically

__all__ = ["CACHE", "compile_construct", "compile_message", "generator"]

#: Where the compiled code of generated codecs is kept.
CACHE = Path(CACHE_DIR) / "codecs"

# What construct's compile() puts before a construct's own code (its generated modules all start so), but
# its star imports: the project's constructs write their own code (protocol.emit's PRELUDE imports what
# it uses), and copying construct's hundreds of names into each codec's module was a third of the cost
# of making a codec from the cache.
_PRELUDE = """
    from construct.core import Compiled
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
    return _compiled(construct, source, _code(source, digest), digest, links)


Links = dict[tuple[str, int], Any]


def _emit(construct: Construct) -> tuple[str, str, Links]:
    """What construct's compile() writes for ``construct``: the source (linked objects numbered by their
    order of first appearance), its digest and the objects it links, by (kind, number)."""
    code = CodeGen()
    code.append(_PRELUDE)
    code.append(f"""
        def parseall(io, this):
            return {construct._compileparse(code)}
        def buildall(obj, io, this):
            return {construct._compilebuild(code)}
        compiled = Compiled(parseall, buildall)
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


def _compiled(construct: Construct, source: str, code: Any, name: str, links: Links) -> Compiled:
    """The module of ``code`` (compiled from ``source``), its linked objects bound, as construct's compile()
    returns it."""
    module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(name, None))
    exec(code, module.__dict__)
    for (kind, number), obj in links.items():
        getattr(module, "linked" + kind)[number] = obj
    compiled: Compiled = module.compiled
    compiled.source = source
    compiled.module = module
    compiled.modulename = name
    compiled.defersubcon = construct
    return compiled


_generator: bytes | None = None


def generator() -> bytes:
    """What names the code that writes codecs: this package's modules (:func:`protocol.bytecode.package_stamp`)
    and construct's version."""
    global _generator
    if _generator is None:
        _generator = CONSTRUCT_VERSION.encode() + b"\0" + package_stamp()
    return _generator


def compile_message(construct: Construct, key: bytes) -> Compiled:
    """:func:`compile_construct` for a message's construct whose source depends only on ``key`` (its spec
    and version) and on :func:`generator`: read whole from the cache when the file of ``key`` was written
    by the same generator, else written, compiled and kept there (one file per key: an edited generator
    writes over it, nothing piles up) when it links nothing but ``construct`` itself."""
    path = CACHE / f"m{hashlib.sha1(key).hexdigest()}.{sys.implementation.cache_tag}.bin"
    made_by = generator()
    only_itself: Links = {("instances", 0): construct}
    kept = read_marshalled(str(path), tuple)
    if (
        kept is not None
        and len(kept) == 4
        and kept[0] == made_by
        and isinstance(kept[1], str)
        and isinstance(kept[2], str)
        and isinstance(kept[3], types.CodeType)
    ):
        _, name, source, code = kept
        return _compiled(construct, source, code, name, only_itself)
    source, digest, links = _emit(construct)
    code = _code(source, digest)
    if links == only_itself:
        write_atomically(str(path), marshal.dumps((made_by, digest, source, code)))
    return _compiled(construct, source, code, digest, links)


def _code(source: str, digest: str) -> Any:
    path = CACHE / f"{digest}.{sys.implementation.cache_tag}.bin"
    cached = read_marshalled(str(path), types.CodeType)
    if cached is not None:
        return cached
    code = compile(source, "", "exec")
    write_atomically(str(path), marshal.dumps(code))
    return code
