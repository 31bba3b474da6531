"""DescribeLogDirs (35): the replicas a broker holds, in its one log directory, as Kafka's
``ReplicaManager.describeLogDirs`` answers.

The broker whose listener receives the request answers for itself (the bootstrap listener is no broker:
it answers with no directory). Its directory is Kafka's default, ``/tmp/kafka-logs``. A replica's
``OffsetLag`` is 0, as Kafka's: ``getLogEndOffsetLag`` compares a current log's end offset with that
replica's own high watermark, which never passes it (a follower's is at most its log end offset).
``PartitionSize`` is the bytes of the batches the replica's log holds (Kafka's ``UnifiedLog.size``); the
volume's ``TotalBytes`` / ``UsableBytes`` are -1 (unknown: no disk). Null ``Topics`` means every replica the broker
holds; otherwise the partitions named, those it does not hold left out. A broker with many replicas is
answered in turns of the event loop, the answer encoded off it.
"""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation
from controller.answers import Sized
from controller.handlers import RequestContext
from controller.offload import Turns
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_LOG_DIRS
VERSIONS = (1, 5)

#: Kafka's default ``log.dir``: the directory every replica of a simulated broker is in.
LOG_DIR = "/tmp/kafka-logs"


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Sized:
    broker = ctx.listener_broker
    results: list[dict[str, Any]] = []
    count = 0
    if ctx.refused_on_cluster(Operation.DESCRIBE) is not None:  # Kafka: no results, the error at the top
        return Sized(
            {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Results": []}, 0
        )
    if broker is not None:
        wanted = request["Topics"]
        only = None if wanted is None else {(t["Topic"], p) for t in wanted for p in t["Partitions"]}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        turns = Turns()
        data_path = ctx.controller.data_path
        for p in ctx.controller.cluster.partitions_on(broker):
            await turns.yield_if_due()
            if only is not None and (p.topic, p.index) not in only:
                continue
            by_topic.setdefault(p.topic, []).append(
                {
                    "PartitionIndex": p.index,
                    "PartitionSize": data_path.log_of(p, broker).size_bytes,
                    "OffsetLag": 0,
                    "IsFutureKey": False,
                }
            )
            count += 1
        results.append(
            {
                "ErrorCode": ErrorCode.NONE,
                "LogDir": LOG_DIR,
                "Topics": [{"Name": name, "Partitions": parts} for name, parts in by_topic.items()],
                "TotalBytes": -1,
                "UsableBytes": -1,
                "IsCordoned": False,
            }
        )
    return Sized({"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "Results": results}, count)
