"""Codec speed: placement-sim's compiled codecs next to kio and kafka-python, on the same bytes.

Cases: a MetadataResponse v12 with 100 topics x 12 partitions (Kafka's spec, as shipped by
kafka-python) and a CreateReplicaPlacementResponse v0 with 12 partitions (the project's spec; the
peers do not have it, so the script gives each of them a codec for it in their own way). Before
timing, every implementation decodes the bytes the others produced and re-encodes them identically.

A second table times decoding with caps on array lengths (``Message.prepare_caps``) that no array of
the message exceeds, next to decoding the same bytes without caps, in alternating rounds: the caps
must cost at most 5% (the script exits 1 otherwise).

Run: .venv/bin/python benchmarks/codec.py   (prints two Markdown tables; takes about a minute and a half)
"""

# No ``from __future__ import annotations``: kio reads the dataclass field types at run time.
import io
import shutil
import statistics
import sys
import tempfile
import timeit
import types
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import kafka.protocol.schemas as kafka_python_schemas
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import MetadataResponse as KpMetadataResponse
from kio.schema.metadata.v12.response import MetadataResponse as KioMetadataResponse
from kio.schema.response_header.v1.header import ResponseHeader as KioResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32

from protocol import load_schemas
from protocol.resources import project_schemas

KAFKA_SPECS = Path(kafka_python_schemas.__file__).parent / "resources"
ROUNDS = 7
CAPS_COST = 1.05
"""Decoding with caps that no array exceeds may take at most this many times as long as without."""


# -- the data --------------------------------------------------------------------------------------------


def metadata_response() -> dict[str, Any]:
    brokers = [
        {"NodeId": i, "Host": f"broker-{i}.example", "Port": 9092, "Rack": f"rack-{i % 3}"} for i in range(6)
    ]
    topics = []
    for t in range(100):
        partitions = [
            {
                "ErrorCode": 0,
                "PartitionIndex": p,
                "LeaderId": (t + p) % 6,
                "LeaderEpoch": 3,
                "ReplicaNodes": [(t + p + k) % 6 for k in range(3)],
                "IsrNodes": [(t + p + k) % 6 for k in range(3)],
                "OfflineReplicas": [],
            }
            for p in range(12)
        ]
        topics.append(
            {
                "ErrorCode": 0,
                "Name": f"topic-{t:03d}",
                "TopicId": uuid.UUID(int=(t + 1) * 0x1234567),
                "IsInternal": False,
                "Partitions": partitions,
                "TopicAuthorizedOperations": -2147483648,
            }
        )
    return {
        "ThrottleTimeMs": 0,
        "Brokers": brokers,
        "ClusterId": "sim-cluster",
        "ControllerId": 1,
        "Topics": topics,
    }


def placement_response() -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "ReplicaPlacement": [
            {"PartitionId": p, "Replicas": [(p + k) % 6 for k in range(3)]} for p in range(12)
        ],
    }


def create_topics_request() -> dict[str, Any]:
    """20 topics of 12 partitions, each assigned to 3 brokers by hand, with two configs."""
    return {
        "Topics": [
            {
                "Name": f"topic-{t:03d}",
                "NumPartitions": -1,
                "ReplicationFactor": -1,
                "Assignments": [
                    {"PartitionIndex": p, "BrokerIds": [(t + p + k) % 6 for k in range(3)]} for p in range(12)
                ],
                "Configs": [
                    {"Name": "cleanup.policy", "Value": "compact"},
                    {"Name": "retention.ms", "Value": "86400000"},
                ],
            }
            for t in range(20)
        ],
        "timeoutMs": 30000,
        "validateOnly": False,
    }


# -- the peers' codecs for CreateReplicaPlacementResponse ------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class KioReplicaPlacement:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(68)
    __header_schema__: ClassVar[type[KioResponseHeaderV1]] = KioResponseHeaderV1
    partition_id: i32 = field(metadata={"kafka_type": "int32"})
    replicas: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class KioCreateReplicaPlacementResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(68)
    __header_schema__: ClassVar[type[KioResponseHeaderV1]] = KioResponseHeaderV1
    throttle_time_ms: i32 = field(metadata={"kafka_type": "int32"})
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    replica_placement: tuple[KioReplicaPlacement, ...]


def kafka_python_message(spec_file: str) -> type:
    """kafka-python's message class for one of the project's spec files.

    kafka-python reads specs from a regular package's resources, so the file is copied into a
    throwaway package for the class to load it.
    """
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(tmp) / "placement_sim_benchmark_specs"
        package.mkdir()
        (package / "__init__.py").touch()
        (package / spec_file).write_text(project_schemas().joinpath(spec_file).read_text(encoding="utf-8"))
        sys.path.insert(0, tmp)
        try:
            name = spec_file.removesuffix(".json")
            return types.new_class(name, (ApiMessage,), {"load_json": package.name})
        finally:
            sys.path.remove(tmp)
            sys.modules.pop(package.name, None)
            shutil.rmtree(package, ignore_errors=True)


# -- timing ----------------------------------------------------------------------------------------------


def per_call_us(fn: Callable[[], object]) -> float:
    """Median over ROUNDS of the mean time per call, in microseconds (each round runs ~0.2 s).

    Uses ``timeit``, which, as usual, switches the garbage collector off while timing: its pauses depend
    on everything else alive in the process, not on the codec being measured.
    """
    timer = timeit.Timer(fn)
    calls, _ = timer.autorange()
    calls = max(1, calls)
    return statistics.median(t / calls * 1e6 for t in timer.repeat(repeat=ROUNDS, number=calls))


@dataclass
class Case:
    name: str
    ours: dict[str, Callable[[], object]]
    kio: dict[str, Callable[[], object]]
    kafka_python: dict[str, Callable[[], object]]


def kio_encoder(kind: type, value: object) -> Callable[[], bytes]:
    write = entity_writer(kind)

    def encode() -> bytes:
        buffer = io.BytesIO()
        write(buffer, value)
        return buffer.getvalue()

    return encode


def build_case(
    name: str, message: Any, version: int, data: dict[str, Any], kio_type: type, kp_type: type
) -> Case:
    ours = message.encode(data, version)
    assert message.decode(ours, version) == data, "placement-sim does not round-trip its own data"
    kio_read = entity_reader(kio_type)
    kio_value, size = kio_read(ours, 0)
    assert size == len(ours)
    kio_encode = kio_encoder(kio_type, kio_value)
    kp_value = kp_type.decode(ours, version=version)
    kp_value._header = None  # kafka-python's decoder skips __init__, which sets this; encode() reads it
    kp_bytes = bytes(kp_value.encode(version=version))
    assert kio_encode() == ours, "kio re-encodes placement-sim's bytes differently"
    assert kp_bytes == ours, "kafka-python re-encodes placement-sim's bytes differently"
    return Case(
        name,
        ours={
            "decode": lambda: message.decode(ours, version),
            "encode": lambda: message.encode(data, version),
        },
        kio={"decode": lambda: kio_read(ours, 0), "encode": kio_encode},
        kafka_python={
            "decode": lambda: kp_type.decode(ours, version=version),
            "encode": lambda: kp_value.encode(version=version),
        },
    )


def paired_us(first: Callable[[], object], second: Callable[[], object]) -> tuple[float, float]:
    """:func:`per_call_us` of two functions, their rounds alternating (so that both see the same
    machine: other work on it slows both alike)."""
    timers = [timeit.Timer(first), timeit.Timer(second)]
    calls = max(1, timers[0].autorange()[0])
    rounds: list[list[float]] = [[], []]
    for _ in range(ROUNDS):
        for timer, times in zip(timers, rounds, strict=True):
            times.append(min(timer.repeat(repeat=3, number=calls)) / calls * 1e6)
    return statistics.median(rounds[0]), statistics.median(rounds[1])


def caps_cases(kafka_specs: Any, project: Any) -> list[tuple[str, Any, int, dict[str, Any], dict[Any, int]]]:
    """(name, message, version, data, caps): caps well above the data's array lengths."""
    return [
        (
            "MetadataResponse v12, 100 topics x 12 partitions",
            kafka_specs.message("MetadataResponse"),
            12,
            metadata_response(),
            {
                ("Brokers",): 1000,
                ("Topics",): 10_000,
                ("Topics", "Partitions"): 10_000,
                ("Topics", "Partitions", "ReplicaNodes"): 100,
                ("Topics", "Partitions", "IsrNodes"): 100,
                ("Topics", "Partitions", "OfflineReplicas"): 100,
            },
        ),
        (
            "CreateTopicsRequest v7, 20 topics x 12 assignments",
            project.request(19),
            7,
            create_topics_request(),
            {
                ("Topics",): 10_000,
                ("Topics", "Assignments"): 10_000,
                ("Topics", "Assignments", "BrokerIds"): 100,
                ("Topics", "Configs"): 1000,
            },
        ),
        (
            "CreateReplicaPlacementResponse v0, 12 partitions",
            project.message("CreateReplicaPlacementResponse"),
            0,
            placement_response(),
            {("ReplicaPlacement",): 10_000, ("ReplicaPlacement", "Replicas"): 100},
        ),
    ]


def caps_table(kafka_specs: Any, project: Any) -> bool:
    """Print the caps table; whether every case is within CAPS_COST."""
    print(f"\nDecoding with caps no array exceeds; alternating rounds; at most {CAPS_COST:.2f}x allowed\n")
    print("| message | without caps | with caps | with / without |")
    print("|---|---:|---:|---:|")
    within = True
    for name, message, version, data, caps in caps_cases(kafka_specs, project):
        body = message.encode(data, version)
        prepared = message.prepare_caps(version, caps)
        assert prepared.caps == caps and prepared.codec is not message.codec(version), "the caps apply"
        assert message.decode(body, version, prepared) == message.decode(body, version) == data
        plain, capped = paired_us(
            lambda m=message, b=body, v=version: m.decode(b, v),
            lambda m=message, b=body, v=version, c=prepared: m.decode(b, v, c),
        )
        ratio = capped / plain
        within = within and ratio <= CAPS_COST
        print(f"| {name} | {plain:,.1f} | {capped:,.1f} | {ratio:.3f}x |")
    return within


def main() -> int:
    kafka_specs = load_schemas(KAFKA_SPECS)
    project = load_schemas()
    cases = [
        build_case(
            "MetadataResponse v12, 100 topics x 12 partitions",
            kafka_specs.message("MetadataResponse"),
            12,
            metadata_response(),
            KioMetadataResponse,
            KpMetadataResponse,
        ),
        build_case(
            "CreateReplicaPlacementResponse v0, 12 partitions",
            project.message("CreateReplicaPlacementResponse"),
            0,
            placement_response(),
            KioCreateReplicaPlacementResponse,
            kafka_python_message("CreateReplicaPlacementResponse.json"),
        ),
    ]
    print(
        f"Python {sys.version.split()[0]}; median of {ROUNDS} rounds; microseconds per call (lower is better)\n"
    )
    print("| message | operation | placement-sim | kio | kafka-python | kio / ours | kafka-python / ours |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for case in cases:
        for operation in ("decode", "encode"):
            ours = per_call_us(case.ours[operation])
            kio = per_call_us(case.kio[operation])
            kp = per_call_us(case.kafka_python[operation])
            print(
                f"| {case.name} | {operation} | {ours:,.1f} | {kio:,.1f} | {kp:,.1f} "
                f"| {kio / ours:.2f}x | {kp / ours:.2f}x |"
            )
    if not caps_table(kafka_specs, project):
        print(f"\ndecoding with caps costs more than {CAPS_COST:.2f}x decoding without them")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
