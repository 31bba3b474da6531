"""CRC-32C (Castagnoli), the checksum of a RecordBatch, from the ``crc32c`` package's C extension.

The package's ``__init__`` reads its own version through ``importlib.metadata`` and builds its
command line before it exports the function: 25-70 ms, more than the rest of a first Produce, for
modules nothing here uses. The extension module is loaded from the package's folder without running
that ``__init__``; anything unexpected (another layout, an extension that does not load) falls back
to the plain ``from crc32c import crc32c``. A later ``import crc32c`` finds the extension already
loaded and works as before.

``crc32c(data, value=0)`` takes any buffer (bytes, bytearray, memoryview) and the CRC to extend.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.machinery import PathFinder
from importlib.util import find_spec, module_from_spec
from types import ModuleType

__all__ = ["crc32c"]

#: The extension module's name, as the package names it (its ``PyInit__crc32c`` comes from the last part).
EXTENSION = "crc32c._crc32c"


def _extension() -> ModuleType | None:
    """The package's C extension, loaded without the package's ``__init__`` (None when it cannot be)."""
    loaded = sys.modules.get(EXTENSION)
    if loaded is not None:
        return loaded
    try:
        package = find_spec("crc32c")  # a top-level package's spec: found, not run
        folders = package.submodule_search_locations if package is not None else None
        spec = PathFinder.find_spec(EXTENSION, list(folders)) if folders else None
        if spec is None or spec.loader is None:
            return None
        module = module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None
    sys.modules[EXTENSION] = module  # what the package's own ``from ._crc32c import ...`` will find
    return module


def _load() -> Callable[..., int]:
    module = _extension()
    function = getattr(module, "crc32c", None)
    if callable(function):
        return function
    from crc32c import crc32c as plain  # the package as it imports itself

    return plain


crc32c: Callable[..., int] = _load()
