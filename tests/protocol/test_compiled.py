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
    names = [f.name for f in cache.iterdir() if not f.name.startswith("m")]  # m...: whole message codecs
    assert names == [f"{first.modulename}.{protocol.compiled.sys.implementation.cache_tag}.bin"]

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
    (path,) = [f for f in cache.iterdir() if f.name.startswith(name)]  # not a whole message's (m...)
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


def _fresh(spec, version: int = 0) -> VersionCodec:
    """A message's codec made as a new process makes it (not the Message's, which keeps its codecs)."""
    return VersionCodec(spec, version)


def test_a_message_codec_is_read_whole_without_writing_its_source(project_schemas, cache, monkeypatch):
    spec = _message(project_schemas).spec
    first = _fresh(spec)
    kept = [f for f in cache.iterdir() if f.name.startswith("m")]
    assert len(kept) == 1

    def nothing_written(*args, **kwargs):
        raise AssertionError("the source was written again instead of read from the cache")

    monkeypatch.setattr(protocol.compiled, "compile_construct", nothing_written)
    monkeypatch.setattr(protocol.compiled, "compile", nothing_written, raising=False)
    again = _fresh(spec)
    assert again.compiled.source == first.compiled.source
    assert again.compiled.module.linkedinstances == {0: again.construct}  # its own construct, not the first's
    body = first.encode(BODY)
    assert again.encode(BODY) == body and again.decode(body) == first.decode(body)
    assert again.compiled.parse(body) == first.decode(body)  # construct's entry points, through the link


def test_a_message_codec_is_kept_per_spec_version_and_generator(project_schemas, cache, monkeypatch):
    fetch = project_schemas.request(1)
    _fresh(fetch.spec, 11)
    _fresh(fetch.spec, 12)
    _fresh(_message(project_schemas).spec, 0)
    kept = {f: f.read_bytes() for f in cache.iterdir() if f.name.startswith("m")}
    assert len(kept) == 3
    # an edited module of the package (its size or time) names another generator: written anew, in place
    monkeypatch.setattr(protocol.compiled, "_generator", b"another generator")
    _fresh(fetch.spec, 11)
    again = {f: f.read_bytes() for f in cache.iterdir() if f.name.startswith("m")}
    assert again.keys() == kept.keys()
    assert [f for f in kept if again[f] != kept[f]] == [f for f in kept if b"another generator" in again[f]]
    assert sum(b"another generator" in data for data in again.values()) == 1


def test_the_generator_names_every_module_of_the_package(monkeypatch):
    monkeypatch.setattr(protocol.compiled, "_generator", None)
    named = protocol.compiled.generator().decode()
    folder = Path(protocol.compiled.__file__).parent
    for module in ("structs.py", "emit.py", "types.py", "runs.py", "wire.py", "codec.py", "compiled.py"):
        stat = (folder / module).stat()
        assert f"{module}:{stat.st_size}:{stat.st_mtime_ns}" in named
    assert protocol.compiled.CONSTRUCT_VERSION in named


def test_a_damaged_message_file_is_written_again(project_schemas, cache):
    spec = _message(project_schemas).spec
    first = _fresh(spec)
    (kept,) = [f for f in cache.iterdir() if f.name.startswith("m")]
    kept.write_bytes(b"not marshalled")
    again = _fresh(spec)
    assert again.compiled.source == first.compiled.source
    assert kept.read_bytes() != b"not marshalled"
