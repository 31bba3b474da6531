"""Where the reference harness's Java side lives, and running a Java program against it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The project-local cache the Makefile fills (``make reference``).
CACHE = ROOT / ".cache" / "reference"
#: Apache Kafka's jars and their dependencies, at the version pinned in harness/kafka/pom.xml.
KAFKA_LIB = CACHE / "kafka" / "lib"
#: The SLF4J-to-Log4j 2 binding Kafka's distribution has and its jars do not (harness/kafka/logging/pom.xml):
#: on the class path of what should log (the reference brokers, Kafka's tools), not of every program.
KAFKA_LOGGING = CACHE / "kafka" / "logging"
#: The harness's own Java programs (harness/java/), compiled by ``make reference``.
JAVA_SOURCES = ROOT / "harness" / "java"
JAVA_CLASSES = CACHE / "java"

__all__ = [
    "CACHE",
    "JAVA_CLASSES",
    "JAVA_SOURCES",
    "KAFKA_LIB",
    "KAFKA_LOGGING",
    "ROOT",
    "HarnessMissing",
    "java",
    "harness_classes",
    "java_command",
    "kafka_classpath",
    "run_java",
]


class HarnessMissing(RuntimeError):
    """A piece of the reference harness is not in the cache: ``make reference`` fetches and builds it."""


def java() -> str:
    """The ``java`` launcher: $JAVA_HOME's, else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise HarnessMissing("no java on the PATH: `make system-deps` installs Java 17")
    return found


def kafka_classpath(*extra: Path | str) -> str:
    """Kafka's jars (and ``extra`` entries before them) as a class path."""
    if not (KAFKA_LIB / ".fetched").exists():
        raise HarnessMissing(f"Kafka's jars are not in {KAFKA_LIB}: run `make reference`")
    return os.pathsep.join([*(str(e) for e in extra), str(KAFKA_LIB / "*")])


def harness_classes() -> Path:
    """The compiled harness programs; HarnessMissing when they are absent or older than a source."""
    stamp = JAVA_CLASSES / ".built"
    if not stamp.exists():
        raise HarnessMissing(
            f"the harness's Java programs are not built in {JAVA_CLASSES}: run `make reference`"
        )
    built = stamp.stat().st_mtime
    stale = [p.name for p in JAVA_SOURCES.rglob("*.java") if p.stat().st_mtime > built]
    if stale:
        raise HarnessMissing(f"{', '.join(sorted(stale))} changed since the last build: run `make reference`")
    return JAVA_CLASSES


def java_command(
    main: str,
    args: Sequence[str] = (),
    *,
    heap: str = "256m",
    extra_classpath: Sequence[Path | str] = (),
    jvm_options: Sequence[str] = (),
) -> list[str]:
    """The command line running class ``main`` on Kafka's class path (``jvm_options`` before it)."""
    return [
        java(),
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        *jvm_options,
        "-cp",
        kafka_classpath(*extra_classpath),
        main,
        *args,
    ]


def run_java(
    main: str, args: Sequence[str] = (), *, timeout: float = 120.0, **kwargs
) -> subprocess.CompletedProcess[str]:
    """Runs ``main`` to its end (bounded by ``timeout``), its output captured as text."""
    return subprocess.run(
        java_command(main, args), capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )
