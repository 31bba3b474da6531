"""The compiled code of generated codecs kept on disk (protocol.compiled): reused, never stale, optional."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import protocol.compiled
from protocol.codec import VersionCodec
from protocol.compiled import compile_construct

BODY = {"NumPartitions": 3, "ReplicationFactor": 2}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(protocol.compiled, "CACHE", tmp_path / "codecs")
    return tmp_path / "codecs"


def _message(project_schemas):  # CreateReplicaPlacementRequest v0: a codec of the project's own
    return project_schemas.request(68)


def test_the_compiled_code_is_kept_and_read_back_instead_of_compiling(project_schemas, cache, monkeypatch):
    codec = _message(project_schemas).codec(0)
    first = compile_construct(codec.construct)
    files = list(cache.iterdir())
    assert [f.name for f in files] == [
        f"{first.modulename}.{protocol.compiled.sys.implementation.cache_tag}.bin"
    ]

    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled again instead of read from the cache")

    monkeypatch.setattr(protocol.compiled, "compile", no_compiling, raising=False)
    again = VersionCodec(_message(project_schemas).spec, 0)  # a new construct: new id()s, same source
    assert again.compiled.modulename == first.modulename
    assert again.compiled.source == first.source
    body = codec.encode(BODY)
    assert again.encode(BODY) == body
    assert again.decode(body) == codec.decode(body)
    assert again.compiled.parse(body) == codec.decode(body)  # construct's own entry points, linked objects


def test_the_source_names_linked_objects_by_order_not_by_id(project_schemas, cache):
    compiled = compile_construct(project_schemas.request(1).codec(16).construct)
    linked = re.findall(r"linked(?:instances|parsers|builders)\[(\d+)\]", compiled.source)
    assert linked and all(int(n) < 100 for n in linked)
    assert set(compiled.module.linkedinstances) == {int(n) for n in linked}


def test_a_damaged_cache_file_is_compiled_and_replaced(project_schemas, cache):
    codec = _message(project_schemas).codec(0)
    name = compile_construct(codec.construct).modulename
    (path,) = cache.iterdir()
    path.write_bytes(b"not marshalled code")
    again = compile_construct(codec.construct)
    assert again.modulename == name
    assert again.build(BODY) == codec.encode(BODY)
    assert path.read_bytes() != b"not marshalled code"


def test_a_cache_that_cannot_be_written_is_no_error(project_schemas, tmp_path, monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setattr(protocol.compiled, "CACHE", blocked / "codecs")  # mkdir fails
    codec = _message(project_schemas).codec(0)
    assert compile_construct(codec.construct).build(BODY) == codec.encode(BODY)
