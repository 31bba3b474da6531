"""The table of request generators, one or more per API: what a differential sequence may send.

A generator is ``make(draw, model) -> Step | None``: ``draw`` reads its choices
(:mod:`harness.differential.choices`, the vocabulary of hypothesis's strategies, imported as ``st``), ``model``
what the sequence knows (:class:`harness.differential.model.Model`); it returns the request (with
placeholders for what each cluster names its own way) and, in the step's ``learn``, how Kafka's answer
changes the model. ``None``: nothing to send in this state. Register one with :func:`generator`; a new
API (transactions, share groups, KIP-848, ACLs) is one more function here and its rows in
docs/fidelity.md::

    @generator("AddPartitionsToTxn", clusters=SINGLE)
    def add_partitions_to_txn(draw, model):
        ...
        return Step("AddPartitionsToTxn", version, {...})

Generators of cluster-wide actions (a broker's failure, a reassignment) are in :data:`ACTIONS`: they act
on the session (:class:`harness.differential.session.DifferentialSession`) rather than return one step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any
from uuid import UUID

from harness.differential import choices as st
from harness.differential.batches import BatchSpec, RecordSpec
from harness.differential.model import (
    Group,
    GroupModel,
    Member,
    Model,
    Now,
    Pid,
    ProducerModel,
    Records,
    Topic,
    TopicId,
    TopicModel,
)
from harness.differential.session import Step
from harness.differential.targets import Outcome

if TYPE_CHECKING:
    from harness.differential.session import DifferentialSession

__all__ = [
    "ACTIONS",
    "GENERATORS",
    "SINGLE",
    "THREE",
    "Action",
    "Generator",
    "action",
    "generator",
    "versions",
]

SINGLE = frozenset({"single"})
THREE = frozenset({"three-racks"})
BOTH = SINGLE | THREE

#: What a generator draws its choices with (:class:`harness.differential.choices.Chooser`).
Draw = Callable[[Any], Any]


@dataclass(frozen=True)
class Generator:
    name: str
    api: str
    make: Callable[[Draw, Model], Step | None]
    clusters: frozenset[str]
    weight: int


@dataclass(frozen=True)
class Action:
    name: str
    run: Callable[[Draw, DifferentialSession], None]
    clusters: frozenset[str]
    weight: int


ZERO = UUID(int=0)

GENERATORS: dict[str, Generator] = {}
ACTIONS: dict[str, Action] = {}


def generator(api: str, *, clusters: frozenset[str] = BOTH, weight: int = 1) -> Callable[..., Any]:
    def register(make: Callable[[Draw, Model], Step | None]) -> Callable[[Draw, Model], Step | None]:
        GENERATORS[make.__name__] = Generator(make.__name__, api, make, clusters, weight)
        return make

    return register


def action(*, clusters: frozenset[str] = THREE, weight: int = 1) -> Callable[..., Any]:
    def register(run: Callable[[Draw, DifferentialSession], None]) -> Callable[[Draw, Any], None]:
        ACTIONS[run.__name__] = Action(run.__name__, run, clusters, weight)
        return run

    return register


@cache
def versions(api: str) -> tuple[int, int]:
    """The versions the project's client can encode (its spec's ``validVersions``)."""
    from protocol import load_schemas

    return tuple(load_schemas().message(f"{api}Request").valid_versions)  # type: ignore[return-value]


def version(draw: Draw, api: str, low: int | None = None, high: int | None = None) -> int:
    lo, hi = versions(api)
    return draw(
        st.integers(max(lo, low if low is not None else lo), min(hi, high if high is not None else hi))
    )


# ------------------------------------------------------------------------------------------- names

#: Topic names a sequence uses (prefixed with the sequence's own prefix when sent).
TOPICS = ("t0", "t1", "t2", "c.x", "c_x")
#: Names no topic may have (sent as they are).
INVALID_TOPICS = ("", ".", "..", "a" * 250, "bad name", "t0/x", "ü")
GROUPS = ("g0", "g1")
#: Transactional ids a sequence uses (prefixed as groups are): one its transactions use, one never used.
TRANSACTIONAL_IDS = ("tx", "tx", "tx", "tx-unused")


def topic_name(draw: Draw, model: Model, existing_bias: bool = True) -> Any:
    """An existing topic (mostly), another of :data:`TOPICS`, or sometimes an invalid name."""
    choices = sorted(model.topics)
    kind = draw(
        st.sampled_from(["existing"] * (4 if existing_bias and choices else 0) + ["any", "any", "invalid"])
    )
    if kind == "existing":
        return Topic(draw(st.sampled_from(choices)))
    if kind == "invalid":
        return draw(st.sampled_from(INVALID_TOPICS))
    return Topic(draw(st.sampled_from(TOPICS)))


def existing(draw: Draw, model: Model) -> TopicModel | None:
    if not model.topics:
        return None
    return model.topics[draw(st.sampled_from(sorted(model.topics)))]


def partition_of(draw: Draw, topic: TopicModel | None) -> int:
    count = topic.partitions if topic is not None else 1
    return draw(
        st.sampled_from([*range(count), count, -1] if draw(st.integers(0, 9)) == 0 else list(range(count)))
    )


def base(value: Any) -> str | None:
    return value.name if isinstance(value, Topic) else None


def kafka_ok(outcome: Outcome, *path: Any) -> Any:
    """The value at ``path`` in Kafka's answer (None when it did not answer)."""
    if outcome.kind != "answer" or outcome.body is None:
        return None
    value: Any = outcome.body
    for key in path:
        if isinstance(key, int):
            if not isinstance(value, list) or key >= len(value):
                return None
            value = value[key]
        else:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
    return value


# --------------------------------------------------------------------------------------- metadata


@generator("ApiVersions")
def api_versions(draw: Draw, model: Model) -> Step:
    v = version(draw, "ApiVersions")
    data = {
        "ClientSoftwareName": draw(st.sampled_from(["differential", "bad name!", ""])),
        "ClientSoftwareVersion": "1.0",
    }
    return Step("ApiVersions", v, data)


@generator("Metadata", weight=3)
def metadata(draw: Draw, model: Model) -> Step:
    v = version(draw, "Metadata")
    kind = draw(st.sampled_from(["named", "named", "ids", "all"] if v >= 10 else ["named", "named", "all"]))
    if kind == "named":
        pool = sorted({*TOPICS, *model.topics})
        names = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
        topics: Any = [{"Name": Topic(n), "TopicId": ZERO} for n in names]
        if draw(st.integers(0, 5)) == 0:
            topics.append({"Name": draw(st.sampled_from(INVALID_TOPICS)), "TopicId": ZERO})
    elif kind == "ids":
        names = draw(
            st.lists(st.sampled_from(sorted({*TOPICS, *model.topics})), min_size=1, max_size=2, unique=True)
        )
        topics = [{"Name": None, "TopicId": TopicId(n)} for n in names]
    else:
        topics = [] if v == 0 else None  # every topic: v0 says it with an empty list
    data = {
        "Topics": topics,
        "AllowAutoTopicCreation": False,
        "IncludeClusterAuthorizedOperations": False,
        "IncludeTopicAuthorizedOperations": draw(st.booleans()) if v >= 8 else False,
    }
    return Step("Metadata", v, data, scoped=kind == "all")


@generator("DescribeCluster")
def describe_cluster(draw: Draw, model: Model) -> Step:
    v = version(draw, "DescribeCluster")
    data = {
        "IncludeClusterAuthorizedOperations": draw(st.booleans()),
        "EndpointType": draw(st.sampled_from([1, 1, 2, 3])) if v >= 1 else 1,
        "IncludeFencedBrokers": draw(st.booleans()) if v >= 2 else False,
    }
    return Step("DescribeCluster", v, data)


# ---------------------------------------------------------------------------------------- topics

TOPIC_CONFIGS: dict[str, tuple[str, ...]] = {
    "retention.ms": ("1000", "-1", "abc", "-5", "604800000"),
    "cleanup.policy": ("compact", "delete", "compact,delete", "bogus", ""),
    "min.insync.replicas": ("1", "2", "0", "5"),
    "max.message.bytes": ("200", "1048588", "-1", "x"),
    "message.timestamp.type": ("LogAppendTime", "CreateTime", "Foo"),
    "message.timestamp.after.max.ms": ("1000", "3600000", "-1"),
    "message.timestamp.before.max.ms": ("1000", "9223372036854775807"),
    "unclean.leader.election.enable": ("true", "false", "maybe"),
    "compression.type": ("gzip", "lz4", "producer", "uncompressed", "brotli"),
    "segment.bytes": ("100", "1048576"),
    "retention.bytes": ("1000", "-1"),
    "unknown.config": ("1",),
}


def config_entries(draw: Draw, *, max_size: int = 3) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(sorted(TOPIC_CONFIGS)), max_size=max_size, unique=True))
    return [{"Name": n, "Value": draw(st.sampled_from(TOPIC_CONFIGS[n]))} for n in names]


def _assignment(draw: Draw, model: Model, partitions: int, rf: int, valid: bool) -> list[list[int]]:
    brokers = model.brokers
    out = []
    for _ in range(partitions):
        if valid:
            out.append(draw(st.permutations(brokers))[:rf])
        else:
            out.append(draw(st.lists(st.sampled_from([*brokers, 7, -1]), min_size=0, max_size=rf + 1)))
    return out


@generator("CreateTopics", weight=4)
def create_topics(draw: Draw, model: Model) -> Step:
    v = version(draw, "CreateTopics")
    three = model.cluster == "three-racks"
    topics, plan = [], {}
    for _ in range(draw(st.integers(1, 2))):
        name = topic_name(draw, model, existing_bias=False)
        manual = three or draw(st.integers(0, 3)) == 0
        valid = draw(st.integers(0, 4)) > 0
        if manual:
            partitions = draw(st.integers(1, 3))
            rf = draw(st.integers(1, len(model.brokers)))
            replicas = _assignment(draw, model, partitions, rf, valid)
            if not valid and draw(st.booleans()):
                replicas = replicas[:-1] or replicas
            entry = {
                "Name": name,
                "NumPartitions": -1 if valid else draw(st.sampled_from([-1, 2])),
                "ReplicationFactor": -1 if valid else draw(st.sampled_from([-1, 1])),
                "Assignments": [
                    {"PartitionIndex": i if valid else draw(st.sampled_from([i, i + 1, 5])), "BrokerIds": r}
                    for i, r in enumerate(replicas)
                ],
            }
        else:
            partitions = draw(st.sampled_from([1, 2, 3, -1, 0, -5] if not valid else [1, 2, 3, -1]))
            rf = draw(st.sampled_from([1, -1] if valid else [0, 2, 4, -2, 1]))
            replicas = [[model.brokers[0]]] * (partitions if partitions > 0 else 1)
            entry = {"Name": name, "NumPartitions": partitions, "ReplicationFactor": rf, "Assignments": []}
        entry["Configs"] = config_entries(draw, max_size=2) if draw(st.integers(0, 2)) == 0 else []
        topics.append(entry)
        if isinstance(name, Topic):
            plan[name.name] = (replicas, {c["Name"]: c["Value"] for c in entry["Configs"]})
    validate_only = draw(st.integers(0, 4)) == 0 if v >= 1 else False

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        if validate_only:
            return
        for answer in kafka_ok(kafka, "Topics") or []:
            name = answer["Name"]
            if answer["ErrorCode"] == 0 and name in plan and name not in model.topics:
                replicas, configs = plan[name]
                count = answer.get("NumPartitions", -1)
                if count and count > 0 and len(replicas) != count:
                    replicas = [replicas[0]] * count
                model.topics[name] = TopicModel(name, len(replicas), replicas, configs)
                for p in range(len(replicas)):
                    model.log_end[(name, p)] = 0
                    model.log_start[(name, p)] = 0

    data = {"Topics": topics, "timeoutMs": 30000, "validateOnly": validate_only}
    return Step("CreateTopics", v, data, learn=learn)


@generator("CreatePartitions", weight=2)
def create_partitions(draw: Draw, model: Model) -> Step:
    v = version(draw, "CreatePartitions")
    topic = existing(draw, model)
    name: Any = (
        Topic(topic.name) if topic is not None and draw(st.integers(0, 4)) else topic_name(draw, model)
    )
    current = topic.partitions if topic is not None else 1
    count = draw(st.sampled_from([current + 1, current + 2, current, max(current - 1, 0), 0, -1]))
    assignments = None
    if draw(st.booleans()) or model.cluster == "three-racks":
        rf = len(topic.replicas[0]) if topic is not None and topic.replicas else 1
        valid = draw(st.integers(0, 3)) > 0
        extra = max(count - current, 0) + (0 if valid else draw(st.sampled_from([-1, 1])))
        assignments = [{"BrokerIds": r} for r in _assignment(draw, model, max(extra, 0), rf, valid)]
    validate_only = draw(st.integers(0, 4)) == 0

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        if validate_only or topic is None:
            return
        for answer in kafka_ok(kafka, "Results") or []:
            if answer["Name"] == topic.name and answer["ErrorCode"] == 0:
                added = count - topic.partitions
                new = [a["BrokerIds"] for a in assignments] if assignments else [topic.replicas[0]] * added
                for p in range(topic.partitions, count):
                    model.log_end[(topic.name, p)] = 0
                    model.log_start[(topic.name, p)] = 0
                topic.replicas = topic.replicas + new[:added]
                topic.partitions = count

    entries = [{"Name": name, "Count": count, "Assignments": assignments}]
    if draw(st.integers(0, 9)) == 0:
        entries.append(dict(entries[0]))  # the same topic twice
    return Step(
        "CreatePartitions",
        v,
        {"Topics": entries, "TimeoutMs": 30000, "ValidateOnly": validate_only},
        learn=learn,
    )


@generator("DeleteTopics", weight=1)
def delete_topics(draw: Draw, model: Model) -> Step:
    v = version(draw, "DeleteTopics")
    names = [topic_name(draw, model) for _ in range(draw(st.integers(1, 2)))]
    if v >= 6:
        by_id = draw(st.booleans())
        topics = [
            {"Name": None, "TopicId": TopicId(n.name)}
            if by_id and isinstance(n, Topic)
            else {"Name": n, "TopicId": ZERO}
            for n in names
        ]
        data: dict[str, Any] = {"Topics": topics, "TimeoutMs": 30000}
    else:
        data = {"TopicNames": names, "TimeoutMs": 30000}

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        for answer in kafka_ok(kafka, "Responses") or []:
            if answer.get("ErrorCode") == 0:
                name = answer.get("Name")
                if name is None:
                    continue
                model.topics.pop(name, None)
                for key in [k for k in model.log_end if k[0] == name]:
                    model.log_end.pop(key, None)
                    model.log_start.pop(key, None)

    return Step("DeleteTopics", v, data, learn=learn)


# --------------------------------------------------------------------------------------- configs


@generator("DescribeConfigs", weight=2)
def describe_configs(draw: Draw, model: Model) -> Step:
    v = version(draw, "DescribeConfigs")
    resources = []
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["topic", "topic", "broker", "bad-broker"]))
        keys = None
        if draw(st.booleans()):
            pool = [*TOPIC_CONFIGS] if kind == "topic" else list(BROKER_CONFIG_NAMES)
            keys = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
        if kind == "topic":
            resources.append(
                {"ResourceType": 2, "ResourceName": topic_name(draw, model), "ConfigurationKeys": keys}
            )
        elif kind == "broker":
            broker = str(draw(st.sampled_from(model.live_brokers())))
            resources.append({"ResourceType": 4, "ResourceName": broker, "ConfigurationKeys": keys})
        else:
            name = draw(st.sampled_from(["7", "abc", "-1"]))
            resources.append(
                {
                    "ResourceType": draw(st.sampled_from([4, 8, 1])),
                    "ResourceName": name,
                    "ConfigurationKeys": keys,
                }
            )
    data = {
        "Resources": resources,
        "IncludeSynonyms": draw(st.booleans()) if v >= 1 else False,
        "IncludeDocumentation": draw(st.booleans()) if v >= 3 else False,
    }
    return Step("DescribeConfigs", v, data)


#: Broker configs a differential DescribeConfigs asks for by name (the simulator's own broker table
#: and a name no broker has).
BROKER_CONFIG_NAMES = (
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "default.replication.factor",
    "num.partitions",
    "log.retention.ms",
    "message.max.bytes",
    "log.message.timestamp.type",
    "broker.rack",
    "auto.create.topics.enable",
    "no.such.config",
)


def _learn_configs(
    topic_name_: str | None, new: dict[str, str | None], replace_all: bool, validate_only: bool
):
    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        if validate_only or topic_name_ is None or topic_name_ not in model.topics:
            return
        for answer in kafka_ok(kafka, "Responses") or []:
            if answer["ResourceType"] == 2 and answer["ErrorCode"] == 0:
                topic = model.topics[topic_name_]
                if replace_all:
                    topic.configs = {}
                for k, val in new.items():
                    if val is None:
                        topic.configs.pop(k, None)
                    else:
                        topic.configs[k] = val

    return learn


@generator("AlterConfigs", weight=2)
def alter_configs(draw: Draw, model: Model) -> Step:
    v = version(draw, "AlterConfigs")
    name = topic_name(draw, model)
    configs = config_entries(draw)
    validate_only = draw(st.integers(0, 3)) == 0
    resources = [{"ResourceType": 2, "ResourceName": name, "Configs": configs}]
    if draw(st.integers(0, 5)) == 0:  # a broker's dynamic config: checked only, never kept
        validate_only = True
        resources.append(
            {
                "ResourceType": 4,
                "ResourceName": draw(st.sampled_from(["0", "", "7"])),
                "Configs": [
                    {
                        "Name": draw(
                            st.sampled_from(["log.cleaner.threads", "min.insync.replicas", "broker.rack"])
                        ),
                        "Value": "2",
                    }
                ],
            }
        )
    learn = _learn_configs(base(name), {c["Name"]: c["Value"] for c in configs}, True, validate_only)
    return Step("AlterConfigs", v, {"Resources": resources, "ValidateOnly": validate_only}, learn=learn)


@generator("IncrementalAlterConfigs", weight=3)
def incremental_alter_configs(draw: Draw, model: Model) -> Step:
    v = version(draw, "IncrementalAlterConfigs")
    name = topic_name(draw, model)
    entries, new = [], {}
    for config in draw(st.lists(st.sampled_from(sorted(TOPIC_CONFIGS)), min_size=1, max_size=3)):
        operation = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 7]))
        value = (
            None if operation == 1 and draw(st.booleans()) else draw(st.sampled_from(TOPIC_CONFIGS[config]))
        )
        entries.append({"Name": config, "ConfigOperation": operation, "Value": value})
        if operation == 0:
            new[config] = value
        elif operation == 1:
            new[config] = None
    validate_only = draw(st.integers(0, 3)) == 0
    resources = [{"ResourceType": 2, "ResourceName": name, "Configs": entries}]
    if draw(st.integers(0, 5)) == 0:
        validate_only = True
        resources.append(
            {
                "ResourceType": 4,
                "ResourceName": draw(st.sampled_from(["0", "", "7"])),
                "Configs": [
                    {
                        "Name": draw(
                            st.sampled_from(
                                ["log.cleaner.threads", "min.insync.replicas", "log.retention.ms"]
                            )
                        ),
                        "ConfigOperation": draw(st.sampled_from([0, 1])),
                        "Value": draw(st.sampled_from(["2", "x"])),
                    }
                ],
            }
        )
    learn = _learn_configs(base(name), new, False, validate_only)
    return Step(
        "IncrementalAlterConfigs", v, {"Resources": resources, "ValidateOnly": validate_only}, learn=learn
    )


# ------------------------------------------------------------------------------------- data path

CODEC_WEIGHTS = ["none"] * 6 + ["gzip", "snappy", "lz4", "zstd"]
BAD_BATCHES = (
    "crc",
    "base_offset",
    "count",
    "last_offset_delta",
    "future",
    "past",
    "magic0",
    "magic1",
    "transactional",
    "control",
    "log_append_time",
    "unknown_codec",
    "length",
    "partial",
    "too_large",
    "empty",
    "offset_deltas",
)


def _records(draw: Draw) -> tuple[RecordSpec, ...]:
    count = draw(st.integers(1, 4))
    return tuple(
        RecordSpec(
            key=draw(st.sampled_from([None, b"k", b"key-%d" % i])),
            value=draw(st.sampled_from([b"v", b"", None, b"value-%d" % i * 3])),
            headers=(("h", b"x"),) if draw(st.integers(0, 4)) == 0 else (),
            timestamp_delta=draw(st.sampled_from([0, 0, 1, 5])),
        )
        for i in range(count)
    )


def _batch(draw: Draw, kind: str) -> BatchSpec:
    spec = BatchSpec(
        records=_records(draw), base_timestamp=Now(0), codec=draw(st.sampled_from(CODEC_WEIGHTS))
    )  # type: ignore[arg-type]
    if kind == "good":
        return spec
    if kind == "crc":
        return spec.with_(corrupt_crc=True)
    if kind == "base_offset":
        return spec.with_(base_offset=draw(st.sampled_from([5, -1])))
    if kind == "count":
        return spec.with_(count=len(spec.records) + draw(st.sampled_from([1, -1])))
    if kind == "last_offset_delta":
        return spec.with_(last_offset_delta=len(spec.records) + 2)
    if kind == "future":
        return spec.with_(base_timestamp=Now(draw(st.sampled_from([2 * 3600_000, 10_000, 7200_000]))))
    if kind == "past":
        return spec.with_(base_timestamp=Now(-draw(st.sampled_from([2 * 3600_000, 30 * 86400_000]))))
    if kind == "magic0":
        return spec.with_(magic=0, codec="none")
    if kind == "magic1":
        return spec.with_(magic=1, codec="none")
    if kind == "transactional":
        return spec.with_(transactional=True, producer_id=Pid("none"), producer_epoch=0, base_sequence=0)
    if kind == "control":
        return spec.with_(control=True)
    if kind == "log_append_time":
        return spec.with_(log_append_time=True)
    if kind == "unknown_codec":
        return spec.with_(codec="none", attributes_extra=draw(st.sampled_from([5, 6, 7])))
    if kind == "length":
        return spec.with_(length_delta=draw(st.sampled_from([-3, 4])))
    if kind == "partial":
        return spec.with_(trailing=b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
    if kind == "too_large":
        return spec.with_(records=(RecordSpec(value=b"x" * 1_100_000),), codec="none")
    if kind == "empty":
        return spec.with_(records=(), count=0, last_offset_delta=-1, codec="none")
    if kind == "offset_deltas":
        # Uncompressed only: a compressed one is refused by the simulator where Kafka rebuilds it
        # (docs/fidelity.md), and the two logs would stay apart for the rest of the sequence.
        return spec.with_(records=tuple(RecordSpec(offset_delta=i * 2) for i in range(2)), codec="none")
    raise ValueError(kind)


def _partition_target(draw: Draw, model: Model, topic: TopicModel | None, partition: int) -> int:
    """The partition's leader (as Kafka last said), now and then another live broker."""
    live = model.live_brokers()
    if topic is None or partition >= topic.partitions or partition < 0:
        return draw(st.sampled_from(live))
    leader = model.leader(topic.name, partition)
    if leader not in live or (len(live) > 1 and draw(st.integers(0, 7)) == 0):
        return draw(st.sampled_from(live))
    return leader


def _topic_field(v: int, by_id_from: int, topic: TopicModel | None, name: Any) -> dict[str, Any]:
    if v >= by_id_from:
        return {"TopicId": TopicId(topic.name) if topic is not None else TopicId("none")}
    return {"Name": Topic(topic.name) if topic is not None else name}


@generator("Produce", weight=6)
def produce(draw: Draw, model: Model) -> Step:
    v = version(draw, "Produce")
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partition = partition_of(draw, topic)
    acks = draw(st.sampled_from([1, 1, -1, -1, 0, 2] if model.cluster == "single" else [-1, -1, -1, 1, 0, 2]))
    kind = draw(st.sampled_from(["good"] * 8 + ["idempotent"] * 3 + list(BAD_BATCHES)))
    producer: ProducerModel | None = None
    if kind == "idempotent":
        if not model.producers:
            kind = "good"
        else:
            producer = model.producers[draw(st.sampled_from(sorted(model.producers)))]
    spec = _batch(draw, "good" if kind == "idempotent" else kind)
    count = len(spec.records)
    sequence_key = (topic.name if topic is not None else "", partition)
    if producer is not None:
        expected = producer.sequences.get(sequence_key, 0)
        sequence = draw(st.sampled_from([expected] * 6 + [expected + 3, max(expected - count, 0), 0]))
        epoch = draw(st.sampled_from([producer.epoch] * 8 + [producer.epoch + 1, max(producer.epoch - 1, 0)]))
        spec = spec.with_(producer_id=Pid(producer.label), producer_epoch=epoch, base_sequence=sequence)
    batches = (spec,)
    if kind == "good" and draw(st.integers(0, 9)) == 0:
        batches = (spec, _batch(draw, "good"))  # two batches in one partition's records
    entry = {"Index": partition, "Records": Records(batches)}
    transactional_id = Group("tx") if draw(st.integers(0, 19)) == 0 else None
    if transactional_id is not None and kind == "transactional":
        kind = "transactional"  # a transaction's batch: transactions are in docs/fidelity.md
    elif kind == "transactional":
        kind = "transactional-batch-without-id"
    data = {
        "TransactionalId": transactional_id,
        "Acks": acks,
        "TimeoutMs": 5000,
        "TopicData": [{**_topic_field(v, 13, topic, name), "PartitionData": [entry]}],
    }
    broker = _partition_target(draw, model, topic, partition)

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        if topic is None:
            return
        answer = kafka_ok(kafka, "Responses", 0, "PartitionResponses", 0)
        if answer is not None and answer["ErrorCode"] == 0 and 0 <= partition < topic.partitions:
            model.log_end[(topic.name, partition)] = answer["BaseOffset"] + sum(
                len(b.records) for b in batches
            )
            if producer is not None:
                producer.sequences[sequence_key] = spec.base_sequence + count  # type: ignore[operator]
        elif acks == 0 and kafka.kind == "sent":
            model.log_end.pop((topic.name, partition), None)  # unknown until Kafka says

    return Step("Produce", v, data, broker=broker, expect_response=acks != 0, learn=learn, note=kind)


def _offset(draw: Draw, model: Model, topic: TopicModel | None, partition: int) -> int:
    if topic is None:
        return 0
    end = model.log_end.get((topic.name, partition), 0)
    start = model.log_start.get((topic.name, partition), 0)
    return draw(st.sampled_from([start, start, end, max(end - 1, 0), (start + end) // 2, end + 5, -1, 0]))


def _epoch(draw: Draw, model: Model, topic: TopicModel | None, partition: int) -> int:
    current = model.epochs.get((topic.name, partition), 0) if topic is not None else 0
    return draw(st.sampled_from([-1, -1, current, current, current + 1, current - 1]))


@generator("Fetch", weight=5)
def fetch(draw: Draw, model: Model) -> Step:
    v = version(draw, "Fetch")
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partition = partition_of(draw, topic)
    entry = {
        "Partition": partition,
        "CurrentLeaderEpoch": _epoch(draw, model, topic, partition),
        "FetchOffset": _offset(draw, model, topic, partition),
        "LastFetchedEpoch": draw(st.sampled_from([-1, -1, 0, 1])),
        "LogStartOffset": -1,
        "PartitionMaxBytes": draw(st.sampled_from([1048576, 1048576, 1, 100, 0])),
        "ReplicaDirectoryId": ZERO,
        "HighWatermark": 9223372036854775807,
    }
    data = {
        "ClusterId": None,
        "ReplicaId": -1,
        "ReplicaState": {"ReplicaId": -1, "ReplicaEpoch": -1},
        "MaxWaitMs": draw(st.sampled_from([0, 10, 100])),
        "MinBytes": draw(st.sampled_from([0, 1, 1])),
        "MaxBytes": draw(st.sampled_from([52428800, 52428800, 1, 200])),
        "IsolationLevel": draw(st.sampled_from([0, 1])),
        "SessionId": 0,
        "SessionEpoch": draw(st.sampled_from([-1, -1, -1, 0])),
        "Topics": [{**_topic_field(v, 13, topic, name), "Partitions": [entry]}],
        "ForgottenTopicsData": [],
        "RackId": draw(st.sampled_from(["", "a"])),
    }
    broker = _partition_target(draw, model, topic, partition)
    return Step("Fetch", v, data, broker=broker, timeout=10)


#: ListOffsets' special timestamps: latest, earliest, max timestamp, earliest local, latest tiered,
#: earliest pending upload.
SPECIAL_TIMESTAMPS = (-1, -2, -3, -4, -5, -6)


@generator("ListOffsets", weight=4)
def list_offsets(draw: Draw, model: Model) -> Step:
    v = version(draw, "ListOffsets")
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partitions = []
    for partition in draw(
        st.lists(
            st.just(0) if topic is None else st.sampled_from([*range(topic.partitions), topic.partitions]),
            min_size=1,
            max_size=2,
            unique=True,
        )
    ):
        timestamp: Any = draw(
            st.sampled_from([*SPECIAL_TIMESTAMPS, *SPECIAL_TIMESTAMPS, 0, -7, "now", "past", "future"])
        )
        if timestamp == "now":
            timestamp = Now(0)
        elif timestamp == "past":
            timestamp = Now(-3600_000)
        elif timestamp == "future":
            timestamp = Now(3600_000)
        partitions.append(
            {
                "PartitionIndex": partition,
                "CurrentLeaderEpoch": _epoch(draw, model, topic, partition),
                "Timestamp": timestamp,
            }
        )
    data = {
        "ReplicaId": draw(st.sampled_from([-1, -1, -1, -2])),
        "IsolationLevel": draw(st.sampled_from([0, 1])),
        "Topics": [{"Name": name, "Partitions": partitions}],
        "TimeoutMs": 5000,
    }
    broker = _partition_target(draw, model, topic, partitions[0]["PartitionIndex"])
    return Step("ListOffsets", v, data, broker=broker)


@generator("OffsetForLeaderEpoch", weight=2)
def offset_for_leader_epoch(draw: Draw, model: Model) -> Step:
    v = version(draw, "OffsetForLeaderEpoch")
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partition = partition_of(draw, topic)
    current = model.epochs.get((topic.name, partition), 0) if topic is not None else 0
    data = {
        "ReplicaId": draw(st.sampled_from([-1, -1, -2])),
        "Topics": [
            {
                "Topic": name,
                "Partitions": [
                    {
                        "Partition": partition,
                        "CurrentLeaderEpoch": _epoch(draw, model, topic, partition),
                        "LeaderEpoch": draw(
                            st.sampled_from([current, current, 0, current + 1, current - 1, -1])
                        ),
                    }
                ],
            }
        ],
    }
    broker = _partition_target(draw, model, topic, partition)
    return Step("OffsetForLeaderEpoch", v, data, broker=broker)


@generator("DeleteRecords", weight=2)
def delete_records(draw: Draw, model: Model) -> Step:
    v = version(draw, "DeleteRecords")
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partition = partition_of(draw, topic)
    offset = draw(st.sampled_from([-1, -5, 0, _offset(draw, model, topic, partition)]))
    data = {
        "Topics": [{"Name": name, "Partitions": [{"PartitionIndex": partition, "Offset": offset}]}],
        "TimeoutMs": 5000,
    }

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        answer = kafka_ok(kafka, "Topics", 0, "Partitions", 0)
        if topic is not None and answer is not None and answer["ErrorCode"] == 0:
            model.log_start[(topic.name, partition)] = answer["LowWatermark"]

    broker = _partition_target(draw, model, topic, partition)
    return Step("DeleteRecords", v, data, broker=broker, learn=learn)


@generator("InitProducerId", weight=2)
def init_producer_id(draw: Draw, model: Model) -> Step:
    v = version(draw, "InitProducerId")
    transactional = model.cluster == "single" and draw(st.integers(0, 3)) == 0
    transactional_id = draw(st.sampled_from(TRANSACTIONAL_IDS)) if transactional else None
    label = model.label("pid")
    if transactional:
        known = model.transactional.get(transactional_id)  # type: ignore[arg-type]
        bump = v >= 3 and known is not None and draw(st.integers(0, 2)) == 0
        producer = known if bump else None
    else:
        bump = v >= 3 and bool(model.producers) and draw(st.integers(0, 3)) == 0
        producer = model.producers[draw(st.sampled_from(sorted(model.producers)))] if bump else None
    data = {
        "TransactionalId": Group(transactional_id) if transactional_id is not None else None,
        "TransactionTimeoutMs": draw(st.sampled_from([60000, 60000, 60000, -1, 0, 2**31 - 1])),
        "ProducerId": Pid(producer.label) if producer is not None else -1,
        "ProducerEpoch": producer.epoch if producer is not None else -1,
    }

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        answer = kafka_ok(kafka)
        if answer is None or answer["ErrorCode"] != 0:
            return
        if transactional_id is not None:
            # A transactional producer's new epoch ends (aborts) whatever it had begun.
            model.transactional[transactional_id] = ProducerModel(label, answer["ProducerEpoch"])
            model.in_transaction[transactional_id] = set()
        elif producer is not None and answer["ProducerId"] == producer.label:
            producer.epoch = answer["ProducerEpoch"]
            producer.sequences.clear()
        else:
            model.producers[label] = ProducerModel(label, answer["ProducerEpoch"])

    return Step(
        "InitProducerId", v, data, label=label, learn=learn, note="transactional" if transactional else ""
    )


@generator("DescribeProducers")
def describe_producers(draw: Draw, model: Model) -> Step:
    v = version(draw, "DescribeProducers")
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partition = partition_of(draw, topic)
    data = {"Topics": [{"Name": name, "PartitionIndexes": [partition]}]}
    return Step("DescribeProducers", v, data, broker=_partition_target(draw, model, topic, partition))


@generator("DescribeLogDirs")
def describe_log_dirs(draw: Draw, model: Model) -> Step | None:
    v = version(draw, "DescribeLogDirs")
    topic = existing(draw, model)
    if topic is None:
        return None
    data = {"Topics": [{"Topic": Topic(topic.name), "Partitions": list(range(topic.partitions + 1))}]}
    return Step("DescribeLogDirs", v, data, broker=draw(st.sampled_from(model.live_brokers())))


# ---------------------------------------------------------------------------------- transactions
#
# One broker only: the transaction coordinator of an id is a different broker in each cluster of three.
# A transaction's steps take the producer id and epoch Kafka gave (now and then a stale or wrong one), the
# partitions it added, and its offsets' group.


def _transactional(draw: Draw, model: Model) -> tuple[str, ProducerModel | None]:
    """A transactional id of the sequence's and its producer as Kafka last answered (None: never given)."""
    transactional_id = draw(st.sampled_from(TRANSACTIONAL_IDS))
    return transactional_id, model.transactional.get(transactional_id)


def _txn_producer(draw: Draw, producer: ProducerModel | None) -> dict[str, Any]:
    """The producer id and epoch a transactional request names: mostly the right ones."""
    if producer is None:
        return {
            "ProducerId": draw(st.sampled_from([-1, 4242])),
            "ProducerEpoch": draw(st.sampled_from([-1, 0])),
        }
    wrong = draw(st.integers(0, 9))
    return {
        "ProducerId": Pid(producer.label) if wrong != 0 else 4242,
        "ProducerEpoch": producer.epoch if wrong != 1 else producer.epoch + draw(st.sampled_from([1, -1])),
    }


@generator("AddPartitionsToTxn", clusters=SINGLE, weight=2)
def add_partitions_to_txn(draw: Draw, model: Model) -> Step:
    v = version(draw, "AddPartitionsToTxn", high=3)  # v4+ is the brokers' own batched form
    transactional_id, producer = _transactional(draw, model)
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partitions = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True))
    producer_fields = _txn_producer(draw, producer)
    data = {
        "V3AndBelowTransactionalId": Group(transactional_id),
        "V3AndBelowProducerId": producer_fields["ProducerId"],
        "V3AndBelowProducerEpoch": producer_fields["ProducerEpoch"],
        "V3AndBelowTopics": [{"Name": name, "Partitions": partitions}],
    }

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        if topic is None:
            return
        for result in kafka_ok(kafka, "ResultsByTopicV3AndBelow") or []:
            for each in result["ResultsByPartition"]:
                if each["PartitionErrorCode"] == 0:
                    model.in_transaction.setdefault(transactional_id, set()).add(
                        (topic.name, each["PartitionIndex"])
                    )

    return Step("AddPartitionsToTxn", v, data, learn=learn)


@generator("Produce", clusters=SINGLE, weight=3)
def produce_in_transaction(draw: Draw, model: Model) -> Step | None:
    """A transactional producer's batch: to a partition its transaction added (now and then to one it did
    not), with the sequence it is at (now and then another)."""
    transactional_id, producer = _transactional(draw, model)
    if producer is None:
        return None
    v = version(draw, "Produce", low=3)
    added = sorted(model.in_transaction.get(transactional_id, ()))
    if added and draw(st.integers(0, 5)) != 0:
        topic_name_, partition = draw(st.sampled_from(added))
        topic = model.topics.get(topic_name_)
    else:
        topic = existing(draw, model)
        partition = partition_of(draw, topic)
    if topic is None:
        return None
    key = (topic.name, partition)
    expected = producer.sequences.get(key, 0)
    spec = _batch(draw, "good").with_(
        transactional=True,
        producer_id=Pid(producer.label),
        producer_epoch=producer.epoch,
        base_sequence=draw(st.sampled_from([expected] * 6 + [expected + 2])),
    )
    data = {
        "TransactionalId": Group(transactional_id) if draw(st.integers(0, 9)) else Group("tx-unused"),
        "Acks": draw(st.sampled_from([-1, -1, 1])),
        "TimeoutMs": 5000,
        "TopicData": [
            {
                **_topic_field(v, 13, topic, Topic(topic.name)),
                "PartitionData": [{"Index": partition, "Records": Records((spec,))}],
            }
        ],
    }

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        answer = kafka_ok(kafka, "Responses", 0, "PartitionResponses", 0)
        if answer is not None and answer["ErrorCode"] == 0:
            model.log_end[key] = answer["BaseOffset"] + len(spec.records) + 1  # and the marker to come
            producer.sequences[key] = spec.base_sequence + len(spec.records)  # type: ignore[operator]
            model.in_transaction.setdefault(transactional_id, set()).add(key)

    return Step("Produce", v, data, learn=learn, note="in-transaction")


@generator("AddOffsetsToTxn", clusters=SINGLE)
def add_offsets_to_txn(draw: Draw, model: Model) -> Step:
    v = version(draw, "AddOffsetsToTxn")
    transactional_id, producer = _transactional(draw, model)
    data = {
        "TransactionalId": Group(transactional_id),
        **_txn_producer(draw, producer),
        "GroupId": Group(draw(st.sampled_from(GROUPS))),
    }
    return Step("AddOffsetsToTxn", v, data)


@generator("TxnOffsetCommit", clusters=SINGLE)
def txn_offset_commit(draw: Draw, model: Model) -> Step:
    v = version(draw, "TxnOffsetCommit")
    transactional_id, producer = _transactional(draw, model)
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    data = {
        "TransactionalId": Group(transactional_id),
        "GroupId": Group(draw(st.sampled_from(GROUPS))),
        **_txn_producer(draw, producer),
        "GenerationId": -1,
        "MemberId": "",
        "GroupInstanceId": None,
        "Topics": [
            {
                "Name": name,
                "Partitions": [
                    {
                        "PartitionIndex": partition_of(draw, topic),
                        "CommittedOffset": draw(st.sampled_from([0, 2, 7])),
                        "CommittedLeaderEpoch": -1,
                        "CommittedMetadata": draw(st.sampled_from([None, "", "m"])),
                    }
                ],
            }
        ],
    }
    return Step("TxnOffsetCommit", v, data)


@generator("EndTxn", clusters=SINGLE, weight=2)
def end_txn(draw: Draw, model: Model) -> Step:
    v = version(draw, "EndTxn")
    transactional_id, producer = _transactional(draw, model)
    committed = draw(st.booleans())
    data = {
        "TransactionalId": Group(transactional_id),
        **_txn_producer(draw, producer),
        "Committed": committed,
    }

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        answer = kafka_ok(kafka)
        if answer is None or answer["ErrorCode"] != 0 or producer is None:
            return
        model.in_transaction[transactional_id] = set()
        if answer.get("ProducerEpoch", -1) >= 0:  # v5: the epoch the transaction's end bumped to
            producer.epoch = answer["ProducerEpoch"]
            producer.sequences.clear()

    return Step("EndTxn", v, data, learn=learn, note="commit" if committed else "abort")


@generator("DescribeTransactions", clusters=SINGLE)
def describe_transactions(draw: Draw, model: Model) -> Step:
    v = version(draw, "DescribeTransactions")
    ids = draw(st.lists(st.sampled_from(["tx", "tx-unused"]), min_size=1, max_size=2, unique=True))
    return Step("DescribeTransactions", v, {"TransactionalIds": [Group(i) for i in ids]})


@generator("ListTransactions", clusters=SINGLE)
def list_transactions(draw: Draw, model: Model) -> Step:
    v = version(draw, "ListTransactions")
    data = {
        "StateFilters": draw(
            st.sampled_from([[], ["Ongoing"], ["CompleteCommit", "CompleteAbort", "Empty"]])
        ),
        "ProducerIdFilters": [],
        "DurationFilter": draw(st.sampled_from([-1, -1, 0, 3_600_000])),
    }
    return Step("ListTransactions", v, data, scoped=True)


# ---------------------------------------------------------------------------------------- groups


@generator("FindCoordinator", clusters=SINGLE)
def find_coordinator(draw: Draw, model: Model) -> Step:
    v = version(draw, "FindCoordinator")
    key: Any = Group(draw(st.sampled_from(GROUPS)))
    key_type = draw(st.sampled_from([0, 0, 0, 1, 2])) if v >= 1 else 0
    if key_type == 1:
        key = Group("tx")  # a transactional id of the sequence's own
    if v >= 4:
        data = {"KeyType": key_type, "CoordinatorKeys": [key]}
    else:
        data = {"Key": key, "KeyType": key_type}
    note = {0: "", 1: "transaction-coordinator", 2: "share-coordinator"}[key_type]
    return Step("FindCoordinator", v, data, note=note)


def _member_label(model: Model, group: str) -> str:
    return f"<member:{group}>"


@generator("JoinGroup", clusters=SINGLE, weight=2)
def join_group(draw: Draw, model: Model) -> Step:
    v = version(draw, "JoinGroup")
    group = draw(st.sampled_from(GROUPS))
    state = model.groups.setdefault(group, GroupModel(group))
    label = _member_label(model, group)
    known = label in state.members or draw(st.booleans())
    data = {
        "GroupId": Group(group),
        "SessionTimeoutMs": draw(st.sampled_from([10000, 10000, 1, 3_600_001])),
        "RebalanceTimeoutMs": 10000,
        "MemberId": Member(label) if known else "",
        "GroupInstanceId": None,
        "ProtocolType": draw(st.sampled_from(["consumer", "consumer", "connect"])),
        "Protocols": [{"Name": draw(st.sampled_from(["range", "roundrobin"])), "Metadata": b"\x00\x01"}],
        "Reason": None,
    }

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        answer = kafka_ok(kafka)
        if answer is not None and answer["ErrorCode"] == 0:
            state.members[label] = answer["GenerationId"]

    return Step("JoinGroup", v, data, label=label, learn=learn, timeout=15)


@generator("SyncGroup", clusters=SINGLE, weight=2)
def sync_group(draw: Draw, model: Model) -> Step | None:
    v = version(draw, "SyncGroup")
    group = draw(st.sampled_from(GROUPS))
    state = model.groups.get(group)
    label = _member_label(model, group)
    generation = state.members.get(label, -1) if state is not None else -1
    data = {
        "GroupId": Group(group),
        "GenerationId": draw(st.sampled_from([generation, generation, generation + 1])),
        "MemberId": Member(label),
        "GroupInstanceId": None,
        "ProtocolType": "consumer",
        "ProtocolName": "range",
        "Assignments": [{"MemberId": Member(label), "Assignment": b"\x00\x01\x02"}]
        if draw(st.booleans())
        else [],
    }
    return Step("SyncGroup", v, data, timeout=15)


@generator("Heartbeat", clusters=SINGLE)
def heartbeat(draw: Draw, model: Model) -> Step:
    v = version(draw, "Heartbeat")
    group = draw(st.sampled_from(GROUPS))
    state = model.groups.get(group)
    label = _member_label(model, group)
    generation = state.members.get(label, -1) if state is not None else -1
    data = {
        "GroupId": Group(group),
        "GenerationId": draw(st.sampled_from([generation, generation, generation + 1])),
        "MemberId": Member(label),
        "GroupInstanceId": None,
    }
    return Step("Heartbeat", v, data)


@generator("LeaveGroup", clusters=SINGLE)
def leave_group(draw: Draw, model: Model) -> Step:
    v = version(draw, "LeaveGroup")
    group = draw(st.sampled_from(GROUPS))
    label = _member_label(model, group)
    data = {
        "GroupId": Group(group),
        "MemberId": Member(label),
        "Members": [{"MemberId": Member(label), "GroupInstanceId": None, "Reason": None}],
    }

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        if kafka_ok(kafka, "ErrorCode") == 0 and group in model.groups:
            model.groups[group].members.pop(label, None)

    return Step("LeaveGroup", v, data, learn=learn)


@generator("OffsetCommit", clusters=SINGLE, weight=2)
def offset_commit(draw: Draw, model: Model) -> Step:
    v = version(draw, "OffsetCommit")
    group = draw(st.sampled_from(GROUPS))
    state = model.groups.get(group)
    label = _member_label(model, group)
    member = draw(st.booleans()) and state is not None and label in state.members
    generation = state.members.get(label, -1) if state is not None and member else -1
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partition = partition_of(draw, topic)
    data = {
        "GroupId": Group(group),
        "GenerationIdOrMemberEpoch": generation,
        "MemberId": Member(label) if member else "",
        "GroupInstanceId": None,
        "RetentionTimeMs": -1,
        "Topics": [
            {
                "Name": name,
                "Partitions": [
                    {
                        "PartitionIndex": partition,
                        "CommittedOffset": draw(st.sampled_from([0, 3, -1, 100])),
                        "CommittedLeaderEpoch": draw(st.sampled_from([-1, 0])),
                        "CommitTimestamp": -1,
                        "CommittedMetadata": draw(st.sampled_from([None, "", "meta"])),
                    }
                ],
            }
        ],
    }
    return Step("OffsetCommit", v, data)


@generator("OffsetFetch", clusters=SINGLE, weight=2)
def offset_fetch(draw: Draw, model: Model) -> Step:
    v = version(draw, "OffsetFetch")
    group = draw(st.sampled_from(GROUPS))
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    topics = None if draw(st.integers(0, 3)) == 0 and v >= 2 else [{"Name": name, "PartitionIndexes": [0, 1]}]
    if v >= 8:
        data: dict[str, Any] = {
            "Groups": [{"GroupId": Group(group), "MemberId": None, "MemberEpoch": -1, "Topics": topics}],
            "RequireStable": draw(st.booleans()),
        }
    else:
        data = {
            "GroupId": Group(group),
            "Topics": topics,
            "RequireStable": draw(st.booleans()) if v >= 7 else False,
        }
    return Step("OffsetFetch", v, data)


@generator("OffsetDelete", clusters=SINGLE)
def offset_delete(draw: Draw, model: Model) -> Step:
    v = version(draw, "OffsetDelete")
    group = draw(st.sampled_from(GROUPS))
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    data = {"GroupId": Group(group), "Topics": [{"Name": name, "Partitions": [{"PartitionIndex": 0}]}]}
    return Step("OffsetDelete", v, data)


@generator("DescribeGroups", clusters=SINGLE)
def describe_groups(draw: Draw, model: Model) -> Step:
    v = version(draw, "DescribeGroups")
    groups = [Group(g) for g in draw(st.lists(st.sampled_from(GROUPS), min_size=1, max_size=2, unique=True))]
    return Step("DescribeGroups", v, {"Groups": groups, "IncludeAuthorizedOperations": draw(st.booleans())})


@generator("ListGroups", clusters=SINGLE)
def list_groups(draw: Draw, model: Model) -> Step:
    v = version(draw, "ListGroups")
    data = {
        "StatesFilter": draw(st.sampled_from([[], ["Stable"], ["Empty", "CompletingRebalance"]])),
        "TypesFilter": draw(st.sampled_from([[], ["classic"], ["consumer"]])),
    }
    return Step("ListGroups", v, data, scoped=True)


@generator("DeleteGroups", clusters=SINGLE)
def delete_groups(draw: Draw, model: Model) -> Step:
    v = version(draw, "DeleteGroups")
    groups = draw(st.lists(st.sampled_from(GROUPS), min_size=1, max_size=2, unique=True))

    def learn(model: Model, kafka: Outcome, sim: Outcome) -> None:
        for result in kafka_ok(kafka, "Results") or []:
            if result["ErrorCode"] == 0:
                model.groups.pop(result["GroupId"], None)

    return Step("DeleteGroups", v, {"GroupsNames": [Group(g) for g in groups]}, learn=learn)


# ------------------------------------------------------------------------------------ replication


@generator("ElectLeaders", weight=2)
def elect_leaders(draw: Draw, model: Model) -> Step:
    v = version(draw, "ElectLeaders")
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    partitions = draw(st.lists(st.sampled_from([0, 1, 5]), min_size=1, max_size=2, unique=True))
    data = {
        "ElectionType": draw(st.sampled_from([0, 0, 1, 2])) if v >= 1 else 0,
        "TopicPartitions": [{"Topic": name, "Partitions": partitions}],
        "TimeoutMs": 10000,
    }
    return Step("ElectLeaders", v, data)


@generator("ListPartitionReassignments", clusters=THREE)
def list_partition_reassignments(draw: Draw, model: Model) -> Step:
    v = version(draw, "ListPartitionReassignments")
    topic = existing(draw, model)
    name = Topic(topic.name) if topic is not None else topic_name(draw, model)
    data = {"TimeoutMs": 10000, "Topics": [{"Name": name, "PartitionIndexes": [0, 1]}]}
    return Step("ListPartitionReassignments", v, data)


@action(clusters=THREE, weight=2)
def reassign(draw: Draw, session: DifferentialSession) -> None:
    """AlterPartitionReassignments on both, then (when accepted) both waited for until done and their
    Metadata compared."""
    model = session.model
    assert model is not None
    topic = existing(draw, model)
    if topic is None:
        return
    partition = draw(st.integers(0, topic.partitions - 1))
    current = topic.replicas[partition]
    kind = draw(
        st.sampled_from(
            ["reorder", "move", "move", "grow", "shrink", "unknown", "duplicate", "empty", "cancel"]
        )
    )
    brokers = model.brokers
    if kind == "reorder":
        target: list[int] | None = list(reversed(current))
    elif kind == "move":
        spare = [b for b in brokers if b not in current]
        target = ([draw(st.sampled_from(spare))] + current[1:]) if spare else list(reversed(current))
    elif kind == "grow":
        target = current + [b for b in brokers if b not in current][:1]
    elif kind == "shrink":
        target = current[:-1] or current
    elif kind == "unknown":
        target = [*current[:-1], 7]
    elif kind == "duplicate":
        target = [current[0], current[0]]
    elif kind == "empty":
        target = []
    else:
        target = None
    v = version(draw, "AlterPartitionReassignments")
    data = {
        "TimeoutMs": 10000,
        "AllowReplicationFactorChange": draw(st.sampled_from([True, True, False])),
        "Topics": [
            {"Name": Topic(topic.name), "Partitions": [{"PartitionIndex": partition, "Replicas": target}]}
        ],
    }
    result = session.run(Step("AlterPartitionReassignments", v, data, note=kind))
    accepted = kafka_ok(result.kafka, "Responses", 0, "Partitions", 0, "ErrorCode") == 0
    if accepted and target is not None:
        if any(b in model.failed for b in target):
            # A target broker is down: neither cluster can finish until it is back (the end of the
            # sequence brings it back); both are compared with the reassignment under way.
            listed = {
                "TimeoutMs": 10000,
                "Topics": [{"Name": Topic(topic.name), "PartitionIndexes": [partition]}],
            }
            session.run(Step("ListPartitionReassignments", 0, listed, note="a target broker down"))
            return
        session.settle_reassignments(topic.name, partition, target)
        topic.replicas[partition] = list(target)


@action(clusters=THREE, weight=2)
def broker_failure(draw: Draw, session: DifferentialSession) -> None:
    """A broker stops (SIGKILL / SIGSTOP / SIGTERM against the matching ``stop_broker`` mode), both
    clusters compared once settled; later, or at the sequence's end, it comes back and both are compared
    again once every replica is in sync."""
    model = session.model
    assert model is not None
    if model.failed:
        broker = next(iter(model.failed))
        session.recover(broker)
        return
    broker = draw(st.sampled_from(model.brokers))
    mode = draw(st.sampled_from(["crash", "crash", "hang", "controlled"]))
    session.fail(broker, mode)
