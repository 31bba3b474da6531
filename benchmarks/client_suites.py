"""The peers' own test suites, unmodified, against the simulator: confluent-kafka-python's
``tests/integration`` (without schema registry) and kafkajs's admin, producer and consumer suites.

    .venv/bin/python benchmarks/client_suites.py \\
        --confluent-kafka-python /work/checkouts/confluent-kafka-python --ckp-python /path/to/venv/bin/python \\
        --kafkajs /work/checkouts/kafkajs

Each checkout is a git checkout at a tag (printed); neither is part of this repository (docs/benchmarks.md
says how to get them and what each needs installed). For each suite the script starts what the suite
expects, runs it, stops it, and prints passed / failed per test file, every failing test's first error
line, and the pass rate of the tests it could run. Not counted: skipped tests, tests that need a schema
registry or start a cluster of their own (trivup), and kafkajs tests that drive its docker cluster with
its scripts. It exits 1 below the targets: confluent-kafka-python 95%, kafkajs 99%.

- **confluent-kafka-python**: one ``placement-sim serve`` (6 brokers, ephemeral ports, the suite's broker
  settings: :data:`CKP_SETTINGS`) given to the suite as ``BROKERS`` (its "bring your own cluster"
  fixture); the suite runs with ``--ckp-python`` (a venv with confluent-kafka at the checkout's version
  and the suite's test requirements) from the checkout. ``share_consumer_sasl`` and
  ``share_consumer_oauth`` start their own clusters with trivup and take no given broker: not run.
- **kafkajs**: the suite's docker-compose layout on 127.0.0.1: three brokers a listener kind, plaintext
  on 9092/9095/9098, SSL on 9093/9096/9099, SASL_SSL on 9094/9097/9100. The simulator serves one
  security protocol a server, so it is three servers (brokers 0, 1 and 2 with
  ``simulator.broker.port.step`` 3 and ``simulator.broker.port.base`` 9092, 9093 and 9094, the suite's
  broker settings: :data:`KAFKAJS_SETTINGS`); the TLS servers use a self-signed certificate made with
  ``openssl`` in a temporary directory (see :func:`kafkajs_pem`), the SASL one the suite's users
  (``testscram`` with one password for SCRAM-SHA-256 and another for SCRAM-SHA-512). jest runs
  ``src/(admin|producer|consumer)/`` in band with its JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.peers import Server, simulator  # noqa: E402

TARGETS = {"confluent-kafka-python": 0.95, "kafkajs": 0.99}

#: The suite's broker settings: its trivup cluster's (``TestUtils.broker_conf()`` and trivup's broker template:
#: Kafka 4's StandardAuthorizer, ``User:admin`` a super user, everyone allowed where no ACL is found).
CKP_SETTINGS = (
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "offsets.topic.replication.factor=1",
    "offsets.topic.min.isr=1",
    "share.coordinator.state.topic.replication.factor=1",
    "share.coordinator.state.topic.min.isr=1",
    "group.share.record.lock.duration.ms=1000",
    "group.share.min.record.lock.duration.ms=1000",
    "group.initial.rebalance.delay.ms=0",
    "auto.create.topics.enable=true",  # Kafka's default, which trivup keeps (a test produces to a new name)
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users=User:admin",
    "allow.everyone.if.no.acl.found=true",
)
#: Directories of tests/integration that are not run: schema registry, and clusters of their own (trivup).
CKP_IGNORED = ("schema_registry", "share_consumer_sasl", "share_consumer_oauth")
#: A failure whose error names a schema registry, or trivup deploying a cluster of the test's own, is a
#: test this run cannot serve (no registry given; the test does not take the given broker).
NOT_SERVED = re.compile(r"schema[-._ ]registry|SR_URL|trivup", re.IGNORECASE)

KAFKAJS_SUITES = r"src/(admin|producer|consumer)/"
KAFKAJS_BROKER_IDS = "0,1,2"  # ports base + 3 * id, bases 9092, 9093, 9094: the suite's three per kind
#: The suite's docker-compose broker settings (its SimpleAclAuthorizer is Kafka 4's StandardAuthorizer).
KAFKAJS_SETTINGS = (
    "auto.create.topics.enable=true",
    "default.replication.factor=2",
    "num.partitions=2",
    "group.initial.rebalance.delay.ms=0",
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found=true",
)
#: A test that runs one of the suite's scripts, which drive its docker-compose cluster (``docker exec``).
DOCKER_SCRIPT = re.compile(r"Command failed .*\./scripts/")
#: The suite's users (its JAAS file, and the SCRAM user its scripts create with a password per mechanism).
KAFKAJS_USERS = ",".join(
    (
        "test:testtest",
        "bob:bobbob",
        "alice:alicealice",
        "testscram:SCRAM-SHA-256:testtestscram=256",
        "testscram:SCRAM-SHA-512:testtestscram=512",
    )
)


@dataclass
class Outcome:
    """One test's result: ``passed``, ``failed``, ``skipped`` or ``not run`` (needs what is not given)."""

    file: str
    name: str
    status: str
    error: str = ""


@dataclass
class Report:
    suite: str
    tag: str
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def ran(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in ("passed", "failed")]

    @property
    def rate(self) -> float:
        ran = self.ran
        return sum(o.status == "passed" for o in ran) / len(ran) if ran else 0.0

    def print(self) -> None:
        print(f"\n== {self.suite} at {self.tag}")
        per_file: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for outcome in self.outcomes:
            per_file[outcome.file][outcome.status] += 1
        print(f"{'file':70} {'passed':>6} {'failed':>6} {'skipped':>7} {'not run':>7}")
        for name in sorted(per_file):
            counts = per_file[name]
            print(
                f"{name:70} {counts['passed']:>6} {counts['failed']:>6} {counts['skipped']:>7} "
                f"{counts['not run']:>7}"
            )
        failed = [o for o in self.outcomes if o.status == "failed"]
        if failed:
            print("failing tests (first error line):")
            for outcome in failed:
                print(f"  {outcome.file}::{outcome.name}: {outcome.error}")
        ran = self.ran
        passed = sum(o.status == "passed" for o in ran)
        print(
            f"{self.suite}: {passed} of {len(ran)} tests it could run passed ({self.rate:.1%}; target "
            f"{TARGETS[self.suite]:.0%}); {len(self.outcomes) - len(ran)} skipped or not run"
        )


def first_line(text: str) -> str:
    """The first line of an error that says something (not a traceback's frame or a blank)."""
    for line in text.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
        if line.startswith("E ") or (line and not line.startswith(("at ", "File ", "Traceback", "-", "_"))):
            return line.removeprefix("E ").strip()[:200]
    return text.strip()[:200]


def test_file(checkout: Path, classname: str) -> str:
    """The test file of a JUnit ``classname`` (``tests.integration.admin.test_x`` or ``...test_x.TestClass``)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (checkout / path).exists():
            return path
    return classname


def git_tag(checkout: Path) -> str:
    return subprocess.run(
        ["git", "describe", "--tags", "--always"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout.strip()


def started(server: Server) -> Server:
    server.start()
    return server


# -- confluent-kafka-python ------------------------------------------------------------------------------


def run_confluent(checkout: Path, python: str, timeout: int, tests: str = "tests/integration") -> Report:
    report = Report("confluent-kafka-python", git_tag(checkout))
    server = started(simulator(*(arg for s in CKP_SETTINGS for arg in ("--set", s))))
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        command = [
            python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            f"--timeout={timeout}",
            f"--junitxml={junit}",
            *tests.split(),
            *(f"--ignore=tests/integration/{name}" for name in CKP_IGNORED),
        ]
        env = {**os.environ, "BROKERS": "{}:{}".format(*server.address), "PYTHONPATH": str(checkout)}
        env.pop("SR_URL", None)
        log = Path(scratch) / "pytest.log"
        try:
            with log.open("w") as out:
                subprocess.run(
                    command, cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT, check=False
                )
        finally:
            server.stop()
        if not junit.exists():  # the suite did not run (a missing requirement, a collection error)
            sys.exit(f"confluent-kafka-python's suite gave no report:\n{log.read_text()[-3000:]}")
        for case in ET.parse(junit).getroot().iter("testcase"):
            file = test_file(checkout, case.get("classname", ""))
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if case.find("skipped") is not None:
                report.outcomes.append(Outcome(file, case.get("name", ""), "skipped"))
            elif problem is not None:
                message = problem.get("message") or ""
                text = message + "\n" + (problem.text or "")
                # The message only: a traceback names tests/common/schema_registry for every consumer.
                status = "not run" if NOT_SERVED.search(message) else "failed"
                report.outcomes.append(Outcome(file, case.get("name", ""), status, first_line(text)))
            else:
                report.outcomes.append(Outcome(file, case.get("name", ""), "passed"))
    return report


# -- kafkajs ---------------------------------------------------------------------------------------------


def kafkajs_pem(scratch: Path) -> Path:
    """A self-signed certificate for localhost and its key, as one PEM keystore file. The suite's own
    certificate is signed with a digest OpenSSL refuses today (CA_MD_TOO_WEAK), and its clients do not
    verify the broker's (``rejectUnauthorized: false``), so any certificate serves."""
    key, cert = scratch / "server-key.pem", scratch / "server.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    pem = scratch / "server-keystore.pem"
    pem.write_text(key.read_text() + cert.read_text())
    return pem


def run_kafkajs(checkout: Path, timeout: int, pattern: str = KAFKAJS_SUITES) -> Report:
    report = Report("kafkajs", git_tag(checkout))
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        pem = kafkajs_pem(scratch)
        common = [
            f"simulator.brokers={KAFKAJS_BROKER_IDS}",
            "simulator.broker.port.step=3",
            *KAFKAJS_SETTINGS,
        ]
        common_args = tuple(arg for setting in common for arg in ("--set", setting))
        tls = ("--set", "ssl.keystore.type=PEM", "--set", f"ssl.keystore.location={pem}")
        servers: list[Server] = []
        try:
            for base, protocol, extra in (
                (9092, "PLAINTEXT", ()),
                (9093, "SSL", tls),
                (9094, "SASL_SSL", (*tls, "--set", f"simulator.sasl.users={KAFKAJS_USERS}")),
            ):
                server = simulator(
                    *common_args,
                    "--set",
                    f"simulator.broker.port.base={base}",
                    "--listen",  # the last --listen wins: the protocol with the address
                    f"{protocol}://127.0.0.1:0",
                    *extra,
                )
                servers.append(started(server))
            result = scratch / "jest.json"
            env = {**os.environ, "KAFKA_VERSION": "2.4", "NODE_ENV": "test", "CI": "true"}
            subprocess.run(
                [
                    str(checkout / "node_modules" / ".bin" / "jest"),
                    "--ci",
                    "--runInBand",
                    "--forceExit",
                    f"--testTimeout={timeout * 1000}",
                    "--reporters=default",
                    "--json",
                    f"--outputFile={result}",
                    "--testPathPattern",
                    pattern,
                ],
                cwd=checkout,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        finally:
            for server in servers:
                server.stop()
        answer = json.loads(result.read_text())
    for suite in answer["testResults"]:
        file = os.path.relpath(suite["name"], checkout)
        if not suite["assertionResults"] and suite.get("message"):
            report.outcomes.append(Outcome(file, "(the file)", "failed", first_line(suite["message"])))
        for test in suite["assertionResults"]:
            status = {"passed": "passed", "failed": "failed"}.get(test["status"], "skipped")
            if status == "failed" and DOCKER_SCRIPT.search("\n".join(test.get("failureMessages") or [])):
                status = "not run"
            error = first_line("\n".join(test.get("failureMessages") or [])) if status == "failed" else ""
            report.outcomes.append(Outcome(file, test["fullName"], status, error))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--confluent-kafka-python", type=Path, help="checkout of confluent-kafka-python")
    parser.add_argument("--ckp-python", default=sys.executable, help="python of a venv with its test deps")
    parser.add_argument("--kafkajs", type=Path, help="checkout of kafkajs with node_modules installed")
    parser.add_argument("--timeout", type=int, default=120, help="seconds for one test")
    parser.add_argument(
        "--ckp-tests", default="tests/integration", help="the suite's paths to run (to rerun some files)"
    )
    parser.add_argument(
        "--kafkajs-pattern", default=KAFKAJS_SUITES, help="jest's --testPathPattern (to rerun some files)"
    )
    args = parser.parse_args()
    if args.confluent_kafka_python is None and args.kafkajs is None:
        parser.error("give --confluent-kafka-python or --kafkajs (or both)")
    reports = []
    if args.confluent_kafka_python is not None:
        reports.append(
            run_confluent(
                args.confluent_kafka_python.resolve(), args.ckp_python, args.timeout, args.ckp_tests
            )
        )
        reports[-1].print()
    if args.kafkajs is not None:
        reports.append(run_kafkajs(args.kafkajs.resolve(), args.timeout, args.kafkajs_pattern))
        reports[-1].print()
    missed = [r.suite for r in reports if r.rate < TARGETS[r.suite]]
    if missed:
        print(f"below target: {', '.join(missed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
