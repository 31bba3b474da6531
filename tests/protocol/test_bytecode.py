"""The compiled code of the methods dataclasses writes, kept on disk (protocol.bytecode): read back instead
of compiled, the same classes made, never stale, and optional."""

from __future__ import annotations

import dataclasses
import marshal
import sys
import types
from pathlib import Path

import pytest

import protocol.bytecode
from protocol.bytecode import _DataclassCode, keep_dataclass_code
from tests.support.interpreters import second_process

ROOT = Path(__file__).resolve().parents[2]


#: The module the test's classes are made in (the cache keeps the classes of the project's packages).
MODULE = "protocol.test_classes"

POINT = """
import dataclasses

@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int = 2
    tags: list = dataclasses.field(default_factory=list)
"""


def _make(
    cache: _DataclassCode, monkeypatch: pytest.MonkeyPatch, source: str = POINT, name: str = MODULE
) -> type:
    """A frozen dataclass (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``,
    ``__delattr__``) of :data:`MODULE`, made with ``cache`` as dataclasses' exec."""
    module = types.ModuleType(name)
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, name, module)
        patch.setattr(dataclasses, "exec", cache.exec, raising=False)
        exec(source, module.__dict__)  # noqa: S102 - the test's own class
    return module.Point


def _read_file(cache: _DataclassCode) -> dict:
    with open(cache.path(MODULE), "rb") as stream:
        return marshal.loads(stream.read())


def _methods(codes) -> int:
    """How many functions ``codes`` (compiled sources of dataclasses) define: a source may write one method
    (Python 3.11, 3.12) or all of a class's (3.13 and newer)."""
    found, stack = 0, list(codes)
    while stack:
        code = stack.pop()
        found += code.co_name != "__create_fn__"
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found - len(codes)  # not the module-level code of each source


def _works(point: type) -> None:
    p = point(1)
    assert (p.x, p.y, p.tags) == (1, 2, [])
    assert p == point(1, 2) and p != point(1, 3)
    assert len({point(5, 6, None), point(5, 6, None), point(5, 7, None)}) == 2  # __hash__ with __eq__
    assert repr(p) == "Point(x=1, y=2, tags=[])"
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3  # type: ignore[misc]


def test_a_class_made_again_reads_its_methods_instead_of_compiling_them(tmp_path, monkeypatch):
    first = _DataclassCode(str(tmp_path))
    _works(_make(first, monkeypatch))
    assert first.compiled >= 1 and len(first.used[MODULE]) == first.compiled
    assert _methods(list(first.used[MODULE].values())) >= 6  # __init__ ... __delattr__
    first.save()
    path = Path(first.path(MODULE))
    assert first.compiled == 0 and [p.name for p in tmp_path.iterdir()] == [path.name]
    written = path.stat().st_mtime_ns

    again = _DataclassCode(str(tmp_path))  # a new process: the file read at the module's first class
    _works(_make(again, monkeypatch))
    assert again.compiled == 0
    assert set(again.known[MODULE]) == set(first.used[MODULE])
    again.save()  # nothing new: the file is not written again
    assert path.stat().st_mtime_ns == written and len(list(tmp_path.iterdir())) == 1


def test_a_changed_class_is_compiled_and_its_old_code_not_kept(tmp_path, monkeypatch):
    cache = _DataclassCode(str(tmp_path))
    _make(cache, monkeypatch)
    cache.save()
    old = set(cache.used[MODULE])
    cache = _DataclassCode(str(tmp_path))
    point = _make(cache, monkeypatch, POINT.replace("    tags: list", "    z: int = 7\n    tags: list"))
    assert point(1).z == 7 and point(1) != point(1, 2, 8)
    assert cache.compiled >= 1  # its __init__ (at least) was compiled, not read
    cache.save()
    kept = set(_read_file(cache))
    assert kept == set(cache.used[MODULE]) and kept != old  # what this process used, nothing more


def test_a_damaged_or_missing_file_is_no_cache_and_an_unwritable_one_no_error(tmp_path, monkeypatch):
    cache = _DataclassCode(str(tmp_path))
    damaged = Path(cache.path(MODULE))
    damaged.write_bytes(b"not marshalled code")
    _works(_make(cache, monkeypatch))
    # the damaged file read as nothing
    assert cache.compiled >= 1 and _methods(list(cache.used[MODULE].values())) >= 6
    cache.save()  # replaced by a whole file
    assert set(_read_file(cache)) == set(cache.used[MODULE])

    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    unwritable = _DataclassCode(str(blocked / "sub"))
    _works(_make(unwritable, monkeypatch))
    assert unwritable.compiled > 0
    unwritable.save()  # no error: the code was compiled and used, and is not kept
    assert not (blocked / "sub").exists()


@pytest.mark.parametrize("name", ["__main__", "elsewhere.models"])
def test_classes_of_other_packages_are_compiled_as_dataclasses_does(tmp_path, monkeypatch, name):
    cache = _DataclassCode(str(tmp_path))
    _works(_make(cache, monkeypatch, name=name))
    cache.save()
    assert cache.used == {} and list(tmp_path.iterdir()) == []


def test_the_package_installs_one_cache_and_a_second_process_compiles_nothing():
    assert keep_dataclass_code() is dataclasses.exec.__self__  # installed by the protocol package, once
    assert keep_dataclass_code() is keep_dataclass_code()
    script = (
        "import dataclasses, json\n"
        "from tests.protocol.test_bytecode import _methods\n"
        "from controller.embedded import ServerThread\n"
        "ServerThread.start().stop()\n"
        "cache = dataclasses.exec.__self__\n"
        "codes = [code for used in cache.used.values() for code in used.values()]\n"
        "print(json.dumps([cache.compiled, _methods(codes)]))\n"
    )
    compiled, known = second_process(script)
    assert known >= 100  # a bare server's classes' methods, all read from the file
    assert compiled == 0, f"the second process compiled {compiled} of {known}"
    assert protocol.bytecode.DATACLASS_CODE.startswith(str(ROOT / "protocol" / "__pycache__"))
