"""Kafka's tools as the tests run them: the pinned release's classes, each shown in docs/clients.md."""

from __future__ import annotations

import re
from pathlib import Path

from harness.jvm import ROOT
from harness.kafka_tools import TOOLS, run_tool, write_scripts


def test_every_tool_has_a_transcript_in_the_docs() -> None:
    page = (ROOT / "docs" / "clients.md").read_text()
    shown = set(re.findall(r"^\$ (?:printf .*?\| )?(kafka-[a-z-]+\.sh)\b", page, re.M))
    assert shown == set(TOOLS)


def test_a_script_runs_the_pinned_release(tmp_path: Path) -> None:
    pom = (ROOT / "harness" / "kafka" / "pom.xml").read_text()
    pinned = re.search(r"<kafka.version>(.+?)</kafka.version>", pom)
    assert pinned is not None
    scripts = write_scripts(tmp_path)
    assert sorted(p.name for p in scripts) == sorted(TOOLS)
    result = run_tool("kafka-topics.sh", ["--version"], timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == pinned.group(1)
    assert result.stderr == ""  # the logging is configured: no SLF4J or Log4j complaint
