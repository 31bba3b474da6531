"""Parsed specs kept on disk (protocol.spec's PARSED_SPECS): read back instead of parsed, parsed anew when the
file changes, never an error when the cache cannot be used."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import protocol.spec
from protocol import load_schemas
from protocol.exceptions import SpecError
from protocol.spec import STRUCT_DEFAULT, SpecHeader, Versions, _ParsedSpecs
from tests.support.interpreters import second_process


def _header(path: Path, versions: Versions) -> SpecHeader:
    """A header as the index gives one: no document, the file read at the first parse."""
    return SpecHeader("ApiVersionsRequest", "request", 18, versions, str(path), None, path.read_text)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _ParsedSpecs:
    kept = _ParsedSpecs(str(tmp_path / "specs"))
    monkeypatch.setattr(protocol.spec, "PARSED_SPECS", kept)
    return kept


@pytest.fixture
def spec_file(tmp_path: Path) -> tuple[Path, Versions]:
    source = load_schemas().request(18)
    path = tmp_path / "ApiVersionsRequest.json"
    path.write_text(Path(source.source).read_text(encoding="utf-8"), encoding="utf-8")
    return path, Versions(*source.valid_versions)


def test_a_spec_is_parsed_once_then_read_back(cache, spec_file, monkeypatch):
    path, versions = spec_file
    parsed = _header(path, versions).parse()
    assert len(os.listdir(cache.folder)) == 1

    def no_parsing(*args: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(protocol.spec, "read_document", no_parsing)
    again = _header(path, versions).parse()
    assert again == parsed and again is not parsed  # unpickled from the file


def test_a_changed_file_is_parsed_anew(cache, spec_file):
    path, versions = spec_file
    before = _header(path, versions).parse()
    document = json.loads(protocol.spec.strip_comments(path.read_text()))
    document["fields"][0]["about"] = "changed"
    path.write_text(json.dumps(document))
    after = _header(path, versions).parse()
    assert after.fields[0].about == "changed" != before.fields[0].about
    assert len(os.listdir(cache.folder)) == 2


def test_a_stale_index_is_told_even_with_the_spec_kept(cache, spec_file):
    path, versions = spec_file
    _header(path, versions).parse()
    with pytest.raises(SpecError, match="stale"):
        _header(path, Versions(0, versions.highest - 1)).parse()


def test_a_damaged_file_is_parsed_again_and_an_unwritable_cache_is_no_error(cache, spec_file, tmp_path):
    path, versions = spec_file
    parsed = _header(path, versions).parse()
    (kept,) = Path(cache.folder).iterdir()
    kept.write_bytes(b"not a pickle")
    assert _header(path, versions).parse() == parsed
    assert kept.read_bytes() != b"not a pickle"  # written again, whole

    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    unwritable = _ParsedSpecs(str(blocked / "specs"))
    unwritable.put(path.read_text(), str(path), parsed)  # no error
    assert unwritable.get(path.read_text(), str(path)) is None


def test_every_spec_of_the_package_reads_back_equal_with_its_struct_default_marker(cache):
    markers = 0
    for message in load_schemas():
        text = Path(message.source).read_text(encoding="utf-8")
        spec = message._header.parse()
        back = cache.get(text, message.source)
        assert back == spec, message.name
        stack = list(back.fields)
        while stack:
            f = stack.pop()
            markers += f.default is STRUCT_DEFAULT  # by identity, as the codecs compare it
            stack.extend(f.fields or ())
    assert markers > 0


def test_a_second_process_reads_every_spec_it_uses_from_the_cache():
    script = (
        "import json, protocol.spec as spec\n"
        "parsed = []\n"
        "original = spec._SpecParser.message\n"
        "def counting(self, doc):\n"
        "    parsed.append(self.source)\n"
        "    return original(self, doc)\n"
        "spec._SpecParser.message = counting\n"
        "hits = []\n"
        "get = spec.PARSED_SPECS.get\n"
        "def reading(text, source):\n"
        "    kept = get(text, source)\n"
        "    hits.append(kept is not None)\n"
        "    return kept\n"
        "spec.PARSED_SPECS.get = reading\n"
        "from controller.embedded import ServerThread\n"
        "from protocol.client import BlockingClient\n"
        "with ServerThread.start() as server:\n"
        "    client = BlockingClient.connect(server.bootstrap, connect_timeout=10, request_timeout=10)\n"
        "    client.send('MetadataRequest', {'Topics': None})\n"
        "    client.close()\n"
        "print(json.dumps([len(parsed), sum(hits)]))\n"
    )
    parsed, read = second_process(script)
    # Codecs are read whole by their spec file's text (protocol.codec): the specs read are those whose
    # caps are checked against them (Metadata's request: controller/handlers/metadata.py's decode_caps).
    assert read >= 1
    assert parsed == 0, f"the second process parsed {parsed} specs"
