"""CRC-32C from the crc32c package's extension, loaded without the package's __init__ (protocol.checksum)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import protocol.checksum
from protocol.checksum import crc32c

ROOT = Path(__file__).resolve().parents[2]

#: CRC-32C's check value (the CRC of the ASCII digits 1 to 9), and RFC 3720's 32 zero bytes.
CHECK = (b"123456789", 0xE3069283)
ZEROS = (bytes(32), 0x8A9136AA)


@pytest.mark.parametrize(("data", "expected"), [CHECK, ZEROS])
def test_the_known_values_from_every_kind_of_buffer(data, expected):
    assert crc32c(data) == expected
    assert crc32c(bytearray(data)) == expected
    assert crc32c(memoryview(b"xx" + data)[2:]) == expected  # a slice of a buffer, as a batch's CRC reads it
    assert crc32c(data[4:], crc32c(data[:4])) == expected  # extended from a first part


def test_a_fresh_process_loads_the_extension_only_and_the_package_still_imports_after():
    script = (
        "import json, sys\n"
        "from protocol.checksum import crc32c\n"
        "before = sorted(m for m in ('crc32c', 'importlib.metadata', 'argparse') if m in sys.modules)\n"
        "import crc32c as package\n"
        "print(json.dumps([before, crc32c(b'123456789'), package.crc32c is crc32c]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    before, value, same = json.loads(done.stdout.splitlines()[-1])
    assert before == []  # neither the package's __init__ nor what it imports
    assert value == CHECK[1] and same  # the package, imported later, exports the same function


def test_where_the_extension_cannot_be_found_the_package_is_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, protocol.checksum.EXTENSION, raising=False)
    monkeypatch.setattr(protocol.checksum, "find_spec", lambda name: None)
    fallback = protocol.checksum._load()
    assert fallback(CHECK[0]) == CHECK[1]
    assert fallback.__module__ == "crc32c._crc32c"  # the package's own function
