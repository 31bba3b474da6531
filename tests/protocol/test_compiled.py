"""The compiled code of generated codecs kept on disk (protocol.compiled): reused, never stale, optional."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import protocol.codec
import protocol.compiled
from protocol.codec import Message, VersionCodec
from protocol.compiled import compile_construct
from protocol.exceptions import DecodeError
from tests.support.interpreters import second_process

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
    import construct  # the test's own import: construct's modules, found where it is installed

    core = Path(construct.__file__).with_name("core.py").stat()
    assert f"core.py:{core.st_size}:{core.st_mtime_ns}" in named


def test_a_damaged_message_file_is_written_again(project_schemas, cache):
    spec = _message(project_schemas).spec
    first = _fresh(spec)
    (kept,) = [f for f in cache.iterdir() if f.name.startswith("m")]
    kept.write_bytes(b"not marshalled")
    again = _fresh(spec)
    assert again.compiled.source == first.compiled.source
    assert kept.read_bytes() != b"not marshalled"


def test_a_codec_read_from_the_cache_builds_its_construct_only_when_asked(
    project_schemas, cache, monkeypatch
):
    spec = _message(project_schemas).spec
    first = _fresh(spec)
    built = []
    real = protocol.codec._build_message

    def counted(*args, **kwargs):
        built.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(protocol.codec, "_build_message", counted)
    again = _fresh(spec)
    body = first.encode(BODY)
    assert again.encode(BODY) == body and again.decode(body) == first.decode(body)
    assert built == []  # the generated functions ran without it
    with pytest.raises(DecodeError) as failed:  # malformed: the interpreted codec names the field
        again.decode(body[:-2])
    assert len(built) == 1
    with pytest.raises(DecodeError) as made_first:
        first.decode(body[:-2])
    assert str(failed.value) == str(made_first.value)
    assert again.compiled.module.linkedinstances == {0: again.construct}


def test_caps_and_parts_are_kept_whole_as_the_message_is(project_schemas, cache):
    # new Messages, as a new process has (the fixture's keep the codecs other tests made)
    create = Message(project_schemas.request(19).spec)  # CreateTopicsRequest: caps on its arrays
    version = create.valid_versions[1]
    capped = create.prepare_caps(version, {("Topics",): 2}).codec
    metadata = Message(project_schemas.response(3).spec)
    high = metadata.valid_versions[1]
    element = metadata.encode_element(high, "Brokers", {"NodeId": 1, "Host": "h", "Port": 1, "Rack": None})
    whole = metadata.encode_with_elements(high, {"Topics": []}, {"Brokers": [element]})
    kept = sorted(f.name for f in cache.iterdir() if f.name.startswith("m"))
    # the two messages' own codecs, the capped one, the element's and the message's with elements
    assert len(kept) == 5
    assert metadata.decode(whole, high)["Brokers"] == [{"NodeId": 1, "Host": "h", "Port": 1, "Rack": None}]
    body = create.encode({"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}] * 3}, version)
    assert str(create.decode(body, version, {("Topics",): 2})["Topics"]).startswith("Capped")
    assert capped.decode(body)["Topics"] == create.decode(body, version, {("Topics",): 2})["Topics"]


_NO_CONSTRUCT = """
import json, sys
from protocol import load_schemas
schemas = load_schemas()
request = schemas.request(18)
body = request.encode({"ClientSoftwareName": "a", "ClientSoftwareVersion": "1"}, 3)
assert request.decode(body, 3)["ClientSoftwareName"] == "a"
create = schemas.request(19)
top = create.valid_versions[1]
wire = create.encode({"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}]}, top)
assert create.decode(wire, top, create.prepare_caps(top, {("Topics",): 5}))["Topics"][0]["Name"] == "t"
metadata = schemas.response(3)
high = metadata.valid_versions[1]
element = metadata.encode_element(high, "Brokers", {"NodeId": 1, "Host": "h", "Port": 1, "Rack": None})
metadata.encode_with_elements(high, {"Topics": []}, {"Brokers": [element]})
print(json.dumps(sorted(m for m in sys.modules if m == "construct" or m.startswith("construct."))))
"""


def test_a_second_process_answers_from_kept_codecs_without_importing_construct():
    assert second_process(_NO_CONSTRUCT) == []
