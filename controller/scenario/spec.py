"""A scenario file (TOML) read into typed steps; a bad file is ONE error naming its line and key.

The format (docs/scenarios.md has every key)::

    [scenario]
    name = "rack loss"
    end = "30s"                    # run until (default: the last step's time)

    [cluster]
    brokers = [{id = 0, rack = "a"}, {id = 1, rack = "b"}, 2]   # or a count: brokers = 6, racks = [...]
    # file = "cluster.json"        # or a cluster file as --cluster reads it (relative to this file)

    [settings]                     # server.properties keys
    "simulator.election.policy" = "kafka"

    [[steps]]
    t = "10s"                      # "1500ms", "2m", or an integer of ms
    action = "stop-broker"
    broker = 1
    mode = "crash"

Errors read ``FILE:LINE: KEY: what``: ``scenario.toml:12: steps[3].mode: 'crsh' is not one of crash,
hang, isolate, controlled``. ``tomllib`` gives the line of a syntax error; for a value that is well
formed but wrong the key's line is found in the text (:class:`_KeyLines`). Steps are numbered from 0.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from controller.dynamics import ELECTION_KINDS, STOP_MODES
from controller.faults import FaultSpec, FaultSyntaxError, parse_faults
from controller.placement.api import UsableBroker
from controller.plugins.properties import property_texts

__all__ = [
    "ACTIONS",
    "AddBroker",
    "CreateTopic",
    "Elect",
    "FailPromotion",
    "FaultAdd",
    "FaultClear",
    "ProduceLoad",
    "Reassign",
    "RemoveBroker",
    "Scenario",
    "ScenarioError",
    "SlowFollower",
    "Snapshot",
    "StartBroker",
    "Step",
    "StopBroker",
    "load_scenario",
    "parse_duration",
    "parse_scenario",
]

#: The longest a scenario may run (virtual or real time): a week.
MAX_TIME_MS = 7 * 24 * 3600 * 1000


class ScenarioError(ValueError):
    """A scenario file that cannot be read: ``source:line: key: what``."""


# --- steps -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step: when (``at_ms`` after the scenario starts), its place in the file (``index``)."""

    at_ms: int
    index: int

    #: The ``action`` value that makes this step.
    action = ""

    def describe(self) -> str:
        """What the step does, in a few words (the event log's step line)."""
        return self.action


@dataclass(frozen=True)
class CreateTopic(Step):
    topic: str = ""
    partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    #: Replica lists (leader first) of partitions 0, 1, ...; empty: the configured placer places them.
    assignments: tuple[tuple[int, ...], ...] = ()
    action = "create-topic"

    def describe(self) -> str:
        if self.assignments:
            return f"create-topic {self.topic} ({len(self.assignments)} partitions, assigned)"
        parts = "default" if self.partitions == -1 else str(self.partitions)
        rf = "default" if self.replication_factor == -1 else str(self.replication_factor)
        return f"create-topic {self.topic} ({parts} partitions, RF {rf})"


@dataclass(frozen=True)
class ProduceLoad(Step):
    topic: str = ""
    #: Records per second per partition; or ``total_records_per_s`` spread over the topic's partitions.
    records_per_s: float | None = None
    total_records_per_s: float | None = None
    action = "produce"

    def describe(self) -> str:
        if self.total_records_per_s is not None:
            return f"produce {self.topic} ({_number(self.total_records_per_s)} records/s in total)"
        return f"produce {self.topic} ({_number(self.records_per_s or 0)} records/s per partition)"


@dataclass(frozen=True)
class StopBroker(Step):
    #: The brokers, or every broker of ``rack`` (found when the step runs).
    brokers: tuple[int, ...] = ()
    rack: str | None = None
    mode: str = "crash"
    action = "stop-broker"

    def describe(self) -> str:
        return f"stop-broker {_targets(self.brokers, self.rack)} ({self.mode})"


@dataclass(frozen=True)
class StartBroker(Step):
    brokers: tuple[int, ...] = ()
    rack: str | None = None
    action = "start-broker"

    def describe(self) -> str:
        return f"start-broker {_targets(self.brokers, self.rack)}"


@dataclass(frozen=True)
class AddBroker(Step):
    broker: int = 0
    rack: str | None = None
    action = "add-broker"

    def describe(self) -> str:
        return f"add-broker {self.broker}" + (f" (rack {self.rack})" if self.rack else "")


@dataclass(frozen=True)
class RemoveBroker(Step):
    broker: int = 0
    action = "remove-broker"

    def describe(self) -> str:
        return f"remove-broker {self.broker}"


@dataclass(frozen=True)
class SlowFollower(Step):
    """How one broker's followers copy (``ServerThread.set_replication``): ``delay_ms`` behind their
    leaders (None: unchanged), at most ``records_per_s`` per partition (None: no limit; -1: unchanged)."""

    broker: int = 0
    delay_ms: int | None = None
    records_per_s: float | None = -1
    action = "slow-follower"

    def describe(self) -> str:
        parts = []
        if self.delay_ms is not None:
            parts.append(f"delay {self.delay_ms} ms")
        if self.records_per_s is None:
            parts.append("no rate limit")
        elif self.records_per_s != -1:
            parts.append(f"{_number(self.records_per_s)} records/s")
        return f"slow-follower {self.broker} ({', '.join(parts)})"


@dataclass(frozen=True)
class FailPromotion(Step):
    broker: int = 0
    fails: bool = True
    action = "fail-promotion"

    def describe(self) -> str:
        return f"fail-promotion {self.broker}" + ("" if self.fails else " (cleared)")


@dataclass(frozen=True)
class Elect(Step):
    kind: str = "preferred"
    #: None: every partition (of ``topic`` when given); ``partition`` only with ``topic``.
    topic: str | None = None
    partition: int | None = None
    action = "elect"

    def describe(self) -> str:
        what = "every partition" if self.topic is None else self.topic
        if self.partition is not None:
            what += f"-{self.partition}"
        return f"elect {self.kind} ({what})"


@dataclass(frozen=True)
class Reassign(Step):
    topic: str = ""
    partition: int = 0
    replicas: tuple[int, ...] = ()
    action = "reassign"

    def describe(self) -> str:
        return f"reassign {self.topic}-{self.partition} to {list(self.replicas)}"


@dataclass(frozen=True)
class FaultAdd(Step):
    faults: tuple[FaultSpec, ...] = ()
    action = "fault-add"

    def describe(self) -> str:
        return "fault-add " + "; ".join(str(f) for f in self.faults)


@dataclass(frozen=True)
class FaultClear(Step):
    #: None: every fault.
    ids: tuple[int, ...] | None = None
    action = "fault-clear"

    def describe(self) -> str:
        return "fault-clear " + ("all" if self.ids is None else ", ".join(map(str, self.ids)))


@dataclass(frozen=True)
class Snapshot(Step):
    label: str = ""
    #: None: every topic.
    topics: tuple[str, ...] | None = None
    #: Whether the partition table is shown (the summary always is).
    table: bool = True
    action = "snapshot"

    def describe(self) -> str:
        return "snapshot" + (f" {self.label!r}" if self.label else "")


STEP_TYPES: tuple[type[Step], ...] = (
    CreateTopic,
    ProduceLoad,
    StopBroker,
    StartBroker,
    AddBroker,
    RemoveBroker,
    SlowFollower,
    FailPromotion,
    Elect,
    Reassign,
    FaultAdd,
    FaultClear,
    Snapshot,
)
ACTIONS = tuple(t.action for t in STEP_TYPES)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _targets(brokers: tuple[int, ...], rack: str | None) -> str:
    if rack is not None:
        return f"rack {rack}"
    return ", ".join(map(str, brokers))


# --- the scenario ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario: steps in time order (ties in file order)."""

    source: str
    name: str = ""
    #: None: the last step's time.
    end_ms: int | None = None
    seed: int | None = None
    #: None: the server's own brokers (``simulator.brokers``, or those of ``cluster_file``).
    brokers: tuple[UsableBroker, ...] | None = None
    #: A cluster file (JSON, ``--cluster``'s format), relative to the scenario file: read by the command
    #: line (``placement_sim.cli.clusterfile``), which replaces it with brokers and create-topic steps.
    cluster_file: str | None = None
    #: Server properties, as text.
    settings: Mapping[str, str] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()
    #: Where each key is in the text, for errors found later (a setting the server refuses).
    lines: _KeyLines | None = field(default=None, repr=False, compare=False)

    @property
    def duration_ms(self) -> int:
        last = max((s.at_ms for s in self.steps), default=0)
        return max(last, self.end_ms if self.end_ms is not None else 0)

    def error(self, key: str, message: str) -> ScenarioError:
        """An error about ``key`` (``settings.KEY``, ``steps[2].mode``) at its line."""
        return _error(self.source, self.lines, key, message)

    def with_cluster(
        self, brokers: Sequence[UsableBroker], topics: Mapping[str, Sequence[Sequence[int]]]
    ) -> Scenario:
        """The scenario with a cluster file's brokers, its topics created first (at 0 ms, with the
        file's replica lists; such a step has index -1)."""
        created = tuple(
            CreateTopic(0, -1, name, assignments=tuple(tuple(r) for r in lists))
            for name, lists in topics.items()
        )
        return replace(self, brokers=tuple(brokers), cluster_file=None, steps=created + self.steps)

    def with_partitions(self, partitions: int) -> Scenario:
        """Every create-topic step placing ``partitions`` partitions (a scaled copy for benchmarks)."""
        steps = tuple(
            replace(s, partitions=partitions) if isinstance(s, CreateTopic) and not s.assignments else s
            for s in self.steps
        )
        return replace(self, steps=steps)


# --- where keys are ----------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_.-]+)\s*=')


class _KeyLines:
    """The line of each key of a TOML text: ``steps[3].mode``, ``settings.simulator.seed``, ``cluster``.

    A plain scan of table headers and ``key =`` lines (what a scenario file holds); a key inside an
    inline table or a multi-line array is found at the line of the key that holds it."""

    def __init__(self, text: str) -> None:
        self._lines: dict[str, int] = {}
        arrays: dict[str, int] = {}
        table = ""
        for number, line in enumerate(text.splitlines(), 1):
            header = _HEADER.match(line)
            if header and not _KEY.match(line):
                name = ".".join(_unquote(part.strip()) for part in header.group(2).split("."))
                if header.group(1) == "[[":
                    arrays[name] = arrays.get(name, -1) + 1
                    table = f"{name}[{arrays[name]}]"
                else:
                    table = name
                self._lines.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key:
                path = f"{table}.{_unquote(key.group(1))}" if table else _unquote(key.group(1))
                self._lines.setdefault(path, number)

    def line_of(self, key: str) -> int | None:
        """The line of ``key`` (a dotted key written ``a.b = 1`` is at its first line), or of the nearest
        key or table holding it."""
        if key not in self._lines:
            within = [line for name, line in self._lines.items() if name.startswith(key + ".")]
            if within:
                return min(within)
        path = key
        while path:
            if path in self._lines:
                return self._lines[path]
            cut = max(path.rfind("."), path.rfind("["))
            if cut <= 0:
                break
            path = path[:cut]
        return self._lines.get(path)


def _error(source: str, lines: _KeyLines | None, key: str, message: str) -> ScenarioError:
    line = lines.line_of(key) if lines is not None else None
    return ScenarioError(f"{source}:{line}: {key}: {message}" if line else f"{source}: {key}: {message}")


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


# --- values --------------------------------------------------------------------------------------

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def parse_duration(value: Any) -> int:
    """``"10s"``, ``"1500ms"``, ``"2m"``, ``"1h"`` or an integer of ms -> whole milliseconds."""
    if isinstance(value, bool):
        raise ValueError(f'expected a time like "10s" or "1500ms", got {value!r}')
    if isinstance(value, int):
        ms = value
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        amount = float(match.group(1)) * _UNIT_MS[match.group(2)]
        if not amount.is_integer():
            raise ValueError(f"{value!r} is not a whole number of milliseconds")
        ms = int(amount)
    else:
        raise ValueError(f'expected a time like "10s" or "1500ms", got {value!r}')
    if not 0 <= ms <= MAX_TIME_MS:
        raise ValueError(f"a time must be from 0 to {MAX_TIME_MS} ms (a week), got {ms}")
    return ms


T = TypeVar("T")


class _Reader:
    """Reads one table of the document, naming the key of every mistake."""

    def __init__(self, scenario: _Parse, table: Mapping[str, Any], path: str) -> None:
        self.p = scenario
        self.table = table
        self.path = path
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def fail(self, name: str, message: str) -> ScenarioError:
        return self.p.error(self.key(name), message)

    def has(self, name: str) -> bool:
        return name in self.table

    def get(
        self, name: str, convert: Callable[[Any], T], default: T | None = None, required: bool = False
    ) -> T:
        self.used.add(name)
        if name not in self.table:
            if required:
                raise self.p.error(self.path or name, f"missing {name!r}")
            return default  # type: ignore[return-value]
        try:
            return convert(self.table[name])
        except (ValueError, TypeError) as exc:
            raise self.fail(name, str(exc)) from None

    def done(self, allowed: str) -> None:
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            raise self.fail(unknown[0], f"unknown key; {allowed}")


def _int(minimum: int = 0, maximum: int = 2**31 - 1) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"expected an integer, got {value!r}")
        if not minimum <= value <= maximum:
            raise ValueError(f"must be from {minimum} to {maximum}, got {value}")
        return value

    return convert


def _rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number of records per second, got {value!r}")
    if not math.isfinite(value) or not 0 <= value <= 1e9:
        raise ValueError(f"must be from 0 to 1e9 records per second, got {value}")
    return float(value)


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _one_of(choices: Sequence[str]) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
        return str(value)

    return convert


def _ids(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a non-empty list of broker ids, got {value!r}")
    ids = tuple(_int()(v) for v in value)
    if len(set(ids)) != len(ids):
        raise ValueError(f"a broker appears twice in {list(ids)}")
    return ids


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a non-empty list of names, got {value!r}")
    return tuple(_text(v) for v in value)


# --- the parse -----------------------------------------------------------------------------------

_TOP = ("scenario", "cluster", "settings", "steps")


class _Parse:
    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines = _KeyLines(text)
        try:
            self.doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
            where = f"{source}:{match.group(1)}" if match else source
            message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
            raise ScenarioError(f"{where}: not valid TOML: {message}") from None

    def error(self, key: str, message: str) -> ScenarioError:
        return _error(self.source, self.lines, key, message)

    def table(self, name: str) -> Mapping[str, Any]:
        value = self.doc.get(name, {})
        if not isinstance(value, dict):
            raise self.error(name, f"expected a table [{name}]")
        return value

    def parse(self) -> Scenario:
        unknown = sorted(set(self.doc) - set(_TOP))
        if unknown:
            raise self.error(unknown[0], f"unknown section; a scenario has {', '.join(_TOP)}")
        head = _Reader(self, self.table("scenario"), "scenario")
        name = head.get("name", lambda v: str(_text(v)), "")
        end = head.get("end", parse_duration)
        seed = head.get("seed", _int(0, 2**63 - 1))
        head.done("[scenario] has name, end and seed")
        brokers, cluster_file = self.cluster()
        settings = self.settings()
        steps = self.steps()
        ordered = tuple(sorted(steps, key=lambda s: (s.at_ms, s.index)))
        return Scenario(self.source, name, end, seed, brokers, cluster_file, settings, ordered, self.lines)

    def cluster(self) -> tuple[tuple[UsableBroker, ...] | None, str | None]:
        r = _Reader(self, self.table("cluster"), "cluster")
        if r.has("file") and r.has("brokers"):
            raise r.fail("file", "give brokers or a cluster file, not both")
        cluster_file = r.get("file", _text)
        brokers: tuple[UsableBroker, ...] | None = None
        if r.has("brokers"):
            value = r.table["brokers"]
            if isinstance(value, int) and not isinstance(value, bool):
                count = r.get("brokers", _int(1, 100_000))
                racks = r.get("racks", _names)
                brokers = tuple(
                    UsableBroker(i, racks[i % len(racks)] if racks else None, False) for i in range(count)
                )
            else:
                r.used.add("brokers")
                if not isinstance(value, list) or not value:
                    raise r.fail("brokers", "expected a list of brokers or a count")
                if r.has("racks"):
                    raise r.fail("racks", "racks go with a count of brokers; a listed broker names its rack")
                brokers = tuple(self.broker(entry, f"cluster.brokers[{i}]") for i, entry in enumerate(value))
                ids = [b.id for b in brokers]
                dup = next((b for b in ids if ids.count(b) > 1), None)
                if dup is not None:
                    raise r.fail("brokers", f"broker id {dup} appears twice")
        r.done("[cluster] has brokers (a list, or a count with racks) or file")
        return brokers, cluster_file

    def broker(self, entry: Any, key: str) -> UsableBroker:
        if isinstance(entry, int) and not isinstance(entry, bool):
            entry = {"id": entry}
        if not isinstance(entry, dict):
            raise self.error(key, f'expected {{id = 0, rack = "a"}} or an id, got {entry!r}')
        r = _Reader(self, entry, key)
        broker_id = r.get("id", _int(), required=True)
        rack = r.get("rack", _text)
        fenced = r.get("fenced", _bool, False)
        r.done("a broker has id, rack and fenced")
        return UsableBroker(broker_id, rack, fenced)

    def settings(self) -> dict[str, str]:
        table = self.table("settings")
        for key, value in table.items():
            if isinstance(value, (dict, list)):
                raise self.error(
                    f"settings.{key}", "a setting is a string, number or boolean (quote dotted keys)"
                )
        try:
            return property_texts(table)
        except ValueError as exc:
            raise self.error(f"settings.{getattr(exc, 'key', '')}", str(exc)) from None

    def steps(self) -> list[Step]:
        entries = self.doc.get("steps", [])
        if not isinstance(entries, list):
            raise self.error("steps", "expected [[steps]] tables")
        steps = []
        for index, entry in enumerate(entries):
            path = f"steps[{index}]"
            if not isinstance(entry, dict):
                raise self.error(path, "expected a table")
            steps.append(self.step(_Reader(self, entry, path), index))
        return steps

    def step(self, r: _Reader, index: int) -> Step:
        at = r.get("t", parse_duration, required=True)
        action = r.get("action", _one_of(ACTIONS), required=True)
        make = _STEP_READERS[action]
        step = make(r, at, index)
        r.done(f"{action} takes {', '.join(['t', 'action', *_STEP_KEYS[action]])}")
        return step


def _brokers_or_rack(r: _Reader) -> tuple[tuple[int, ...], str | None]:
    given = [k for k in ("broker", "brokers", "rack") if r.has(k)]
    if len(given) != 1:
        raise r.p.error(r.path, "give one of broker, brokers or rack")
    if given[0] == "broker":
        return (r.get("broker", _int()),), None
    if given[0] == "brokers":
        return r.get("brokers", _ids), None
    return (), r.get("rack", _text)


def _create_topic(r: _Reader, at: int, index: int) -> Step:
    topic = r.get("topic", _text, required=True)
    partitions = r.get("partitions", _int(1), -1)
    rf = r.get("replication_factor", _int(1, 32767), -1)
    configs_raw = r.get("configs", _table, {})
    try:
        configs = property_texts(configs_raw)
    except ValueError as exc:
        raise r.fail("configs", str(exc)) from None
    assignments = r.get("assignments", _assignments, ())
    if assignments and (r.has("partitions") or r.has("replication_factor")):
        raise r.fail("assignments", "give assignments or partitions and replication_factor, not both")
    return CreateTopic(at, index, topic, partitions, rf, configs, assignments)


def _table(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f'expected a table like {{"min.insync.replicas" = 2}}, got {value!r}')
    return value


def _assignments(value: Any) -> tuple[tuple[int, ...], ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a list of replica lists (leader first), got {value!r}")
    return tuple(_ids(v) for v in value)


def _produce(r: _Reader, at: int, index: int) -> Step:
    topic = r.get("topic", _text, required=True)
    if r.has("records_per_s") == r.has("total_records_per_s"):
        raise r.p.error(r.path, "give records_per_s (per partition) or total_records_per_s")
    return ProduceLoad(at, index, topic, r.get("records_per_s", _rate), r.get("total_records_per_s", _rate))


def _stop(r: _Reader, at: int, index: int) -> Step:
    brokers, rack = _brokers_or_rack(r)
    mode = r.get("mode", _one_of(tuple(STOP_MODES)), "crash")
    return StopBroker(at, index, brokers, rack, mode)


def _start(r: _Reader, at: int, index: int) -> Step:
    brokers, rack = _brokers_or_rack(r)
    return StartBroker(at, index, brokers, rack)


def _add(r: _Reader, at: int, index: int) -> Step:
    return AddBroker(at, index, r.get("broker", _int(), required=True), r.get("rack", _text))


def _remove(r: _Reader, at: int, index: int) -> Step:
    return RemoveBroker(at, index, r.get("broker", _int(), required=True))


def _slow(r: _Reader, at: int, index: int) -> Step:
    broker = r.get("broker", _int(), required=True)
    delay = r.get("delay", parse_duration)
    unlimited = r.get("unlimited", _bool, False)
    if unlimited and r.has("records_per_s"):
        raise r.fail("unlimited", "give records_per_s or unlimited = true, not both")
    rate: float | None = None if unlimited else r.get("records_per_s", _rate, -1.0)
    if delay is None and rate == -1:
        raise r.p.error(r.path, "give delay, records_per_s or unlimited = true")
    return SlowFollower(at, index, broker, delay, rate)


def _fail_promotion(r: _Reader, at: int, index: int) -> Step:
    return FailPromotion(at, index, r.get("broker", _int(), required=True), r.get("fails", _bool, True))


def _elect(r: _Reader, at: int, index: int) -> Step:
    kind = r.get("kind", _one_of(tuple(k.value for k in ELECTION_KINDS)), "preferred")
    topic = r.get("topic", _text)
    partition = r.get("partition", _int())
    if partition is not None and topic is None:
        raise r.fail("partition", "a partition goes with its topic")
    return Elect(at, index, kind, topic, partition)


def _reassign(r: _Reader, at: int, index: int) -> Step:
    topic = r.get("topic", _text, required=True)
    partition = r.get("partition", _int(), required=True)
    return Reassign(at, index, topic, partition, r.get("replicas", _ids, required=True))


def _fault_add(r: _Reader, at: int, index: int) -> Step:
    def faults(value: Any) -> tuple[FaultSpec, ...]:
        try:
            specs = tuple(parse_faults(_text(value)))
        except FaultSyntaxError as exc:
            raise ValueError(str(exc)) from None
        if not specs:
            raise ValueError("no fault given")
        return specs

    return FaultAdd(at, index, r.get("spec", faults, required=True))


def _fault_clear(r: _Reader, at: int, index: int) -> Step:
    def ids(value: Any) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise ValueError(f"expected a list of fault ids, got {value!r}")
        return tuple(_int(1)(v) for v in value)

    return FaultClear(at, index, r.get("ids", ids))


def _snapshot(r: _Reader, at: int, index: int) -> Step:
    label = r.get("label", lambda v: str(_text(v)), "")
    return Snapshot(at, index, label, r.get("topics", _names), r.get("table", _bool, True))


_STEP_READERS: dict[str, Callable[[_Reader, int, int], Step]] = {
    "create-topic": _create_topic,
    "produce": _produce,
    "stop-broker": _stop,
    "start-broker": _start,
    "add-broker": _add,
    "remove-broker": _remove,
    "slow-follower": _slow,
    "fail-promotion": _fail_promotion,
    "elect": _elect,
    "reassign": _reassign,
    "fault-add": _fault_add,
    "fault-clear": _fault_clear,
    "snapshot": _snapshot,
}
_STEP_KEYS: dict[str, tuple[str, ...]] = {
    "create-topic": ("topic", "partitions", "replication_factor", "configs", "assignments"),
    "produce": ("topic", "records_per_s", "total_records_per_s"),
    "stop-broker": ("broker", "brokers", "rack", "mode"),
    "start-broker": ("broker", "brokers", "rack"),
    "add-broker": ("broker", "rack"),
    "remove-broker": ("broker",),
    "slow-follower": ("broker", "delay", "records_per_s", "unlimited"),
    "fail-promotion": ("broker", "fails"),
    "elect": ("kind", "topic", "partition"),
    "reassign": ("topic", "partition", "replicas"),
    "fault-add": ("spec",),
    "fault-clear": ("ids",),
    "snapshot": ("label", "topics", "table"),
}


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """The scenario ``text`` holds; ScenarioError (``source:line: key: what``) for the first mistake."""
    return _Parse(text, source).parse()


def load_scenario(path: str | Path) -> Scenario:
    """Reads a scenario file; ScenarioError names what is wrong and where."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text: {exc.reason}") from None
    return parse_scenario(text, str(path))
