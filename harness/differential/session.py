"""One differential session: the real cluster and the simulator side by side, each step sent to both, the
answers normalized and compared field by field, every difference looked up in ``docs/fidelity.md``.

A session runs sequences (:meth:`DifferentialSession.begin` ... :meth:`DifferentialSession.end`); each
has its own name prefix for topics and groups, stripped from the answers, so that sequences share the two
clusters without seeing each other, and at its end its topics and groups are deleted and its stopped
brokers brought back. Failures are compared at settled points: after a broker stops, once neither cluster
names it or lets it lead; after it comes back, once every replica is in sync again.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.differential.fidelity import Difference, FidelityTable, Row
from harness.differential.model import Model, TopicModel, resolve, wall_ms
from harness.differential.normalize import differences, flatten, normalize
from harness.differential.targets import LoopThread, Outcome, Side

__all__ = ["METADATA_CHANGES", "DifferentialSession", "Step", "StepResult", "UnlistedDifferences"]

#: Requests after which the real cluster's brokers are waited for until they applied the change.
METADATA_CHANGES = frozenset(
    {
        "CreateTopics",
        "CreatePartitions",
        "DeleteTopics",
        "AlterConfigs",
        "IncrementalAlterConfigs",
        "ElectLeaders",
        "AlterPartitionReassignments",
    }
)

_sequence_numbers = itertools.count(1)


@dataclass
class Step:
    """One request, as a generator made it (placeholders still in ``data``)."""

    api: str
    version: int
    data: Any
    broker: int | None = None  # None: the first live broker
    expect_response: bool = True
    timeout: float | None = None
    #: The label the answer's producer id (InitProducerId) or member id (JoinGroup) gets.
    label: str | None = None
    #: Updates the model from both answers (normalized); Kafka's is the oracle's.
    learn: Callable[[Model, Outcome, Outcome], None] | None = None
    note: str = ""
    #: The request asks for everything (all topics, all groups): only the sequence's own are compared.
    scoped: bool = False

    def describe(self) -> str:
        where = f" on broker {self.broker}" if self.broker is not None else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.api} v{self.version}{where}{note}: {self.data!r}"


@dataclass
class StepResult:
    step: Step
    kafka: Outcome
    sim: Outcome
    listed: list[tuple[Difference, Row]]
    unlisted: list[Difference]


class UnlistedDifferences(AssertionError):
    """The simulator answered differently from Kafka where docs/fidelity.md lists no such difference."""

    def __init__(self, result: StepResult) -> None:
        self.result = result
        lines = [f"{len(result.unlisted)} difference(s) from Kafka not listed in docs/fidelity.md:"]
        lines += [f"  {d}" for d in result.unlisted[:40]]
        if len(result.unlisted) > 40:
            lines.append(f"  ... and {len(result.unlisted) - 40} more")
        lines.append(f"step: {result.step.describe()}"[:3000])
        lines.append(f"Kafka: {_short(result.kafka)}")
        lines.append(f"simulator: {_short(result.sim)}")
        super().__init__("\n".join(lines))


def _short(outcome: Outcome) -> str:
    text = (
        f"{outcome.kind} {outcome.body!r}" if outcome.body is not None else f"{outcome.kind} {outcome.detail}"
    )
    return text[:3000]


@dataclass
class ApiCounts:
    steps: int = 0
    listed: int = 0
    unlisted: int = 0


@dataclass
class DifferentialSession:
    kafka: Side
    sim: Side
    cluster: str
    loop: LoopThread
    table: FidelityTable
    #: Raise :class:`UnlistedDifferences` at the first step with one (tests); else collect (benchmark).
    strict: bool = True
    counts: dict[str, ApiCounts] = field(default_factory=lambda: defaultdict(ApiCounts))
    unlisted: list[tuple[Difference, str]] = field(default_factory=list)
    unlisted_kinds: Counter[tuple[str, str]] = field(default_factory=Counter)
    model: Model | None = None
    #: Per side: topic ids, producer ids and member ids by base name / label.
    ids: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    settle_timeout: float = 60.0
    #: The steps of the current sequence, described (what led to a difference).
    history: list[str] = field(default_factory=list)
    _warm: bool = False
    _barriers: int = 0
    _barrier_topics: list[str] = field(default_factory=list)

    @property
    def sides(self) -> tuple[Side, Side]:
        return (self.kafka, self.sim)

    # ------------------------------------------------------------------------------------- sequences

    def begin(self) -> Model:
        if not self._warm:
            self.loop.run(self._warm_up())
            self._warm = True
        self.history = []
        prefix = f"d{next(_sequence_numbers)}x{int(time.time()) % 100000}-"
        for side in self.sides:
            side.names.begin(prefix)
            side.refresh_names()
            self.ids[side.name] = {"topics": {}, "producers": {}, "members": {}}
        self.model = Model(self.cluster, self.kafka.broker_ids())
        return self.model

    def end(self) -> None:
        """Brings stopped brokers back, then deletes the sequence's topics and groups on both sides."""
        model = self.model
        if model is None:
            return
        for broker in list(model.failed):
            self.recover(broker, compare=False)
        self.loop.run(self._cleanup())
        self.model = None

    async def _cleanup(self) -> None:
        async def one(side: Side) -> None:
            prefix = side.names.prefix
            live = side.broker_ids()[0]
            meta = await side.send(live, "Metadata", 1, {"Topics": None}, timeout=30)
            if meta.kind == "answer" and meta.body is not None:
                names = [t["Name"] for t in meta.body["Topics"] if t["Name"].startswith(prefix)]
                if names:
                    await side.send(
                        live, "DeleteTopics", 1, {"TopicNames": names, "TimeoutMs": 30000}, timeout=40
                    )
            groups = await side.send(live, "ListGroups", 0, {}, timeout=30)
            if groups.kind == "answer" and groups.body is not None:
                ids = [g["GroupId"] for g in groups.body["Groups"] if g["GroupId"].startswith(prefix)]
                if ids:
                    await side.send(live, "DeleteGroups", 0, {"GroupsNames": ids}, timeout=30)

        await asyncio.gather(one(self.kafka), one(self.sim))
        if self._barrier_topics:
            names, self._barrier_topics = self._barrier_topics, []
            await self.kafka.send(
                self.kafka.broker_ids()[0],
                "DeleteTopics",
                1,
                {"TopicNames": names, "TimeoutMs": 30000},
                timeout=40,
            )

    # ----------------------------------------------------------------------------------------- steps

    def run(self, step: Step) -> StepResult:
        """Sends ``step`` to both clusters at once and compares the answers."""
        assert self.model is not None, "begin() a sequence first"
        now = wall_ms()
        broker = step.broker if step.broker is not None else self.model.live_brokers()[0]

        async def both() -> tuple[Outcome, Outcome]:
            sends = []
            for side in self.sides:
                data = resolve(step.data, side.names, self.ids[side.name], now)
                sends.append(
                    side.send(
                        broker,
                        step.api,
                        step.version,
                        data,
                        expect_response=step.expect_response,
                        timeout=step.timeout,
                    )
                )
            kafka, sim = await asyncio.gather(*sends)
            return kafka, sim

        kafka, sim = self.loop.run(both())
        if step.api in METADATA_CHANGES and kafka.kind == "answer":
            self.loop.run(self._barrier())
        if step.api == "EndTxn" and kafka.body is not None and kafka.body.get("ErrorCode") == 0:
            transactional_id = resolve(step.data["TransactionalId"], self.kafka.names, {}, now)
            self.loop.run(self._markers_written(broker, transactional_id))
        for side, outcome in ((self.kafka, kafka), (self.sim, sim)):
            self._learn_ids(side, step, outcome)
        result = self.compare(step, kafka, sim)
        if step.learn is not None:
            step.learn(self.model, self._normalized(self.kafka, kafka), self._normalized(self.sim, sim))
        return result

    def compare(self, step: Step, kafka: Outcome, sim: Outcome) -> StepResult:
        a = flatten(normalize(_scope(step, kafka.comparable(), self.kafka.names.prefix), self.kafka.names))
        b = flatten(normalize(_scope(step, sim.comparable(), self.sim.names.prefix), self.sim.names))
        listed, unlisted = [], []
        for path, ka, si in differences(a, b):
            difference = Difference(step.api, step.version, path, ka, si, step.note)
            row = self.table.match(difference)
            if row is None:
                unlisted.append(difference)
            else:
                listed.append((difference, row))
        counts = self.counts[step.api]
        counts.steps += 1
        counts.listed += len(listed)
        counts.unlisted += len(unlisted)
        result = StepResult(step, kafka, sim, listed, unlisted)
        self.history.append(step.describe()[:300])
        for difference in unlisted:
            context = "\n".join([*self.history[-8:-1], step.describe()[:500]])
            self.unlisted.append((difference, context))
            self.unlisted_kinds[(difference.api, _generic(difference.path))] += 1
        if unlisted and self.strict:
            raise UnlistedDifferences(result)
        return result

    @staticmethod
    def _normalized(side: Side, outcome: Outcome) -> Outcome:
        if outcome.kind != "answer" or outcome.body is None:
            return outcome
        return Outcome(outcome.kind, normalize(outcome.body, side.names), outcome.detail)

    def _learn_ids(self, side: Side, step: Step, outcome: Outcome) -> None:
        if outcome.kind != "answer" or outcome.body is None:
            return
        ids = self.ids[side.name]
        prefix = side.names.prefix

        def walk(value: Any) -> None:
            if isinstance(value, dict):
                name, topic_id = value.get("Name"), value.get("TopicId")
                if (
                    isinstance(name, str)
                    and name.startswith(prefix)
                    and topic_id is not None
                    and topic_id.int
                ):
                    base = name[len(prefix) :]
                    ids["topics"][base] = topic_id
                    side.names.topic_ids[topic_id] = base
                for v in value.values():
                    walk(v)
            elif isinstance(value, list):
                for v in value:
                    walk(v)

        walk(outcome.body)
        body = outcome.body
        if step.label is not None and body.get("ErrorCode", 0) == 0:
            if step.api == "InitProducerId" and body.get("ProducerId", -1) >= 0:
                ids["producers"][step.label] = body["ProducerId"]
                side.names.producer_ids[body["ProducerId"]] = step.label
            if step.api == "JoinGroup" and body.get("MemberId"):
                ids["members"][step.label] = body["MemberId"]
                side.names.member_ids[body["MemberId"]] = step.label
        if step.api == "JoinGroup" and body.get("MemberId") and step.label is not None:
            # MEMBER_ID_REQUIRED names the id the member is to join with.
            ids["members"][step.label] = body["MemberId"]
            side.names.member_ids[body["MemberId"]] = step.label

    async def _warm_up(self) -> None:
        """What a fresh Kafka does once and the simulator does not (listed in docs/fidelity.md), done
        before the first sequence so that sequences compare what they ask: the group coordinator's
        ``__consumer_offsets`` is made by the first FindCoordinator, then each partition loads
        (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS meanwhile), and the transaction
        coordinator's ``__transaction_state`` alike; the first InitProducerId of each broker waits for a
        block of producer ids from the controller (COORDINATOR_LOAD_IN_PROGRESS)."""
        deadline = time.monotonic() + self.settle_timeout
        groups = [f"warm-up-{i}" for i in range(12)]  # enough ids for every __consumer_offsets partition
        for side in self.sides:
            broker = side.broker_ids()[0]
            while True:
                ready, last = True, None
                for each in side.broker_ids():  # each broker has a block of producer ids of its own
                    producer = await side.send(
                        each, "InitProducerId", 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000}
                    )
                    last = producer
                    if producer.body is None or producer.body["ErrorCode"] != 0:
                        ready = False
                # The transaction coordinator's topic, made at its first use; then each of its partitions
                # loads (a transactional InitProducerId on every one of them).
                for transactional_id in groups if ready else ():
                    found = await side.send(
                        broker, "FindCoordinator", 3, {"Key": transactional_id, "KeyType": 1}
                    )
                    last = found
                    if found.body is None or found.body["ErrorCode"] != 0:
                        ready = False
                        break
                    producer = await side.send(
                        found.body["NodeId"],
                        "InitProducerId",
                        4,
                        {"TransactionalId": transactional_id, "TransactionTimeoutMs": 60000},
                    )
                    last = producer
                    if producer.body is None or producer.body["ErrorCode"] != 0:
                        ready = False
                        break
                for group in groups if ready else ():
                    found = await side.send(broker, "FindCoordinator", 3, {"Key": group, "KeyType": 0})
                    last = found
                    if found.body is None or found.body["ErrorCode"] != 0:
                        ready = False
                        break
                    described = await side.send(
                        found.body["NodeId"], "DescribeGroups", 5, {"Groups": [group]}
                    )
                    last = described
                    if described.body is None or described.body["Groups"][0]["ErrorCode"] != 0:
                        ready = False
                        break
                if ready:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{side.name} did not warm up: {last}")
                await asyncio.sleep(0.2)

    async def _markers_written(self, broker: int, transactional_id: str) -> None:
        """Until the real cluster's transaction coordinator has written the markers of the transaction an
        EndTxn ended: Kafka answers once the transaction is prepared and writes the markers after, the
        simulator answers once they are written (docs/fidelity.md)."""
        deadline = time.monotonic() + self.settle_timeout
        while True:
            described = await self.kafka.send(
                broker, "DescribeTransactions", 0, {"TransactionalIds": [transactional_id]}
            )
            states = (described.body or {}).get("TransactionStates") or [{}]
            if states[0].get("TransactionState") not in ("PrepareCommit", "PrepareAbort"):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"Kafka did not complete {transactional_id}'s transaction: {described}")
            await asyncio.sleep(0.05)

    async def _barrier(self) -> None:
        """Until every live broker of the real cluster applied the metadata the last step changed.

        Kafka's controller answers once a change is committed; its brokers apply it from the metadata log a
        moment later, and a request in between sees the old state (a Produce to a topic just created:
        UNKNOWN_TOPIC_OR_PARTITION). The simulator has one state. So a topic is created after the change,
        and once each broker names it with a leader, each has applied everything before it (the log is
        ordered). Barrier topics have a prefix of their own (no sequence compares them) and go at the
        sequence's end."""
        assert self.model is not None
        live = self.model.live_brokers()
        self._barriers += 1
        name = f"zbarrier-{self.kafka.names.prefix}{self._barriers}"
        self._barrier_topics.append(name)
        topic = {
            "Name": name,
            "NumPartitions": -1,
            "ReplicationFactor": -1,
            "Assignments": [{"PartitionIndex": 0, "BrokerIds": [live[0]]}],
            "Configs": [],
        }
        await self.kafka.send(
            live[0], "CreateTopics", 7, {"Topics": [topic], "timeoutMs": 30000, "validateOnly": False}
        )
        deadline = time.monotonic() + self.settle_timeout
        for broker in live:
            while True:
                meta = await self.kafka.send(
                    broker,
                    "Metadata",
                    12,
                    {"Topics": [{"Name": name}], "AllowAutoTopicCreation": False},
                    timeout=5,
                )
                body = meta.body if meta.kind == "answer" else None
                if (
                    body
                    and body["Topics"][0]["ErrorCode"] == 0
                    and body["Topics"][0]["Partitions"][0]["LeaderId"] >= 0
                ):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"broker {broker} did not apply the metadata barrier {name}: {meta}")
                await asyncio.sleep(0.02)
        await self._leaders_lead(deadline)

    async def _leaders_lead(self, deadline: float) -> None:
        """Until each leader the real cluster names for the sequence's partitions leads them.

        A Kafka broker names a new leader in Metadata a moment before its replica manager leads the
        partition (its metadata publisher sets the cache's image first, then applies the partitions'
        changes): a Produce in between gets NOT_LEADER_OR_FOLLOWER. Under load the moment is tens of
        milliseconds (a SIGKILLed broker's partitions moved: 52 ms between broker 1's "Transitioning to
        local leaders" and its "Leader ... starts at leader epoch 1"). Each leader is asked for the
        partition's end until it answers for it. The simulator has one state: the leader it names leads."""
        assert self.model is not None
        live = self.model.live_brokers()
        meta = await self.kafka.send(
            live[0], "Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False}
        )
        if meta.kind != "answer" or meta.body is None:
            return
        for topic in _ours(meta.body, self.kafka.names.prefix)["Topics"]:
            for p in topic["Partitions"]:
                if p["LeaderId"] not in live:
                    continue
                asked = {
                    "ReplicaId": -1,
                    "IsolationLevel": 0,
                    "Topics": [
                        {
                            "Name": topic["Name"],
                            "Partitions": [
                                {
                                    "PartitionIndex": p["PartitionIndex"],
                                    "CurrentLeaderEpoch": p["LeaderEpoch"],
                                    "Timestamp": -1,
                                }
                            ],
                        }
                    ],
                }
                while True:
                    found = await self.kafka.send(p["LeaderId"], "ListOffsets", 9, asked, timeout=5)
                    code = found.body["Topics"][0]["Partitions"][0]["ErrorCode"] if found.body else -1
                    if code not in _NOT_LED_YET:
                        break
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"broker {p['LeaderId']} does not lead {topic['Name']}: {found}")
                    await asyncio.sleep(0.02)

    # -------------------------------------------------------------------------------------- failures

    def fail(self, broker: int, mode: str) -> StepResult:
        """Stops ``broker`` on both sides, waits until both have moved its leaders away, then compares
        their Metadata."""
        assert self.model is not None
        self.loop.run(_gather(self.kafka.fail(broker, mode), self.sim.fail(broker, mode)))
        self.model.failed[broker] = mode
        return self._settled(lambda meta: _without(meta, broker, self.kafka.names.prefix), f"{mode} {broker}")

    def recover(self, broker: int, compare: bool = True) -> StepResult | None:
        """Brings ``broker`` back on both sides, waits until every replica is in sync again on both, then
        compares their Metadata."""
        assert self.model is not None
        self.loop.run(_gather(self.kafka.recover(broker), self.sim.recover(broker)), timeout=400)
        self.model.failed.pop(broker, None)
        for side in self.sides:
            side.refresh_names()
        check = lambda meta: _all_in_sync(meta, broker)  # noqa: E731
        if not compare:
            self.loop.run(_gather(*(self._wait(s, check) for s in self.sides)))
            return None
        return self._settled(check, f"restart {broker}")

    def settle_reassignments(self, topic: str, partition: int, target: list[int]) -> StepResult:
        """Waits until both clusters finished reassigning ``topic``-``partition`` to ``target`` and every
        replica is in sync, then compares their Metadata."""
        prefix = self.kafka.names.prefix

        def done(meta: dict[str, Any]) -> bool:
            for t in meta["Topics"]:
                if t["Name"] == prefix + topic:
                    for p in t["Partitions"]:
                        if p["PartitionIndex"] == partition:
                            return list(p["ReplicaNodes"]) == target and sorted(p["IsrNodes"]) == sorted(
                                target
                            )
            return False

        return self._settled(done, f"reassigning {topic}-{partition} to {target}")

    def _settled(self, predicate: Callable[[dict[str, Any]], bool], what: str) -> StepResult:
        assert self.model is not None
        self.loop.run(_gather(*(self._wait(s, predicate) for s in self.sides)))
        self.loop.run(self._leaders_lead(time.monotonic() + self.settle_timeout))
        step = Step(
            "Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False}, note="settled", scoped=True
        )
        self.history.append(f"(settled after {what})")
        result = self.run(step)
        self._learn_leaders(result.kafka)
        return result

    async def _wait(self, side: Side, predicate: Callable[[dict[str, Any]], bool]) -> None:
        assert self.model is not None
        deadline = time.monotonic() + self.settle_timeout
        last: Any = None
        while time.monotonic() < deadline:
            for broker in self.model.live_brokers():
                meta = await side.send(
                    broker, "Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False}, timeout=5
                )
                last = meta
                if (
                    meta.kind != "answer"
                    or meta.body is None
                    or not predicate(_ours(meta.body, side.names.prefix))
                ):
                    break
            else:
                return
            await asyncio.sleep(0.2)
        raise TimeoutError(
            f"{side.name} did not settle within {self.settle_timeout:g}s; last Metadata: {last}"
        )

    def _learn_leaders(self, kafka: Outcome) -> None:
        assert self.model is not None
        if kafka.kind != "answer" or kafka.body is None:
            return
        prefix = self.kafka.names.prefix
        for topic in kafka.body["Topics"]:
            if not topic["Name"].startswith(prefix):
                continue
            base = topic["Name"][len(prefix) :]
            for p in topic["Partitions"]:
                self.model.leaders[(base, p["PartitionIndex"])] = p["LeaderId"]
                self.model.epochs[(base, p["PartitionIndex"])] = p["LeaderEpoch"]

    # ------------------------------------------------------------------------------------------ misc

    def learn_topic(
        self, name: str, partitions: int, replicas: list[list[int]], configs: dict[str, str]
    ) -> None:
        assert self.model is not None
        self.model.topics[name] = TopicModel(name, partitions, replicas, configs)

    def report(self) -> str:
        lines = [f"{'API':<28}{'steps':>8}{'listed':>10}{'unlisted':>10}"]
        for api in sorted(self.counts):
            c = self.counts[api]
            lines.append(f"{api:<28}{c.steps:>8}{c.listed:>10}{c.unlisted:>10}")
        return "\n".join(lines)


async def _gather(*coroutines: Any) -> list[Any]:
    return list(await asyncio.gather(*coroutines))


#: What a broker answers (ListOffsets) for a partition it has not begun to lead at the epoch its Metadata
#: named: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, UNKNOWN_LEADER_EPOCH,
#: and -1 (no answer).
_NOT_LED_YET = frozenset({6, 3, 5, 76, -1})

_NAMED = ("Name", "Topic", "GroupId", "TopicName", "TransactionalId")


def _scope(step: Step, body: Any, prefix: str) -> Any:
    """For a request that asks for everything: the answer with only the sequence's own topics and groups
    in its lists."""
    if not step.scoped:
        return body

    def keep(item: Any) -> bool:
        if not isinstance(item, dict):
            return True
        for key in _NAMED:
            if isinstance(item.get(key), str):
                return item[key].startswith(prefix)
        return True

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value if keep(v)]
        return value

    return walk(body)


def _ours(meta: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {**meta, "Topics": [t for t in meta["Topics"] if t["Name"].startswith(prefix)]}


def _without(meta: dict[str, Any], broker: int, prefix: str) -> bool:
    if any(b["NodeId"] == broker for b in meta["Brokers"]):
        return False
    return all(p["LeaderId"] != broker for t in meta["Topics"] for p in t["Partitions"])


def _all_in_sync(meta: dict[str, Any], broker: int) -> bool:
    if not any(b["NodeId"] == broker for b in meta["Brokers"]):
        return False
    return all(
        sorted(p["IsrNodes"]) == sorted(p["ReplicaNodes"]) for t in meta["Topics"] for p in t["Partitions"]
    )


def _generic(path: str) -> str:
    """A path with its list keys made ``*`` (for counting kinds of differences)."""
    out, depth = [], 0
    for char in path:
        if char == "[":
            depth += 1
            if depth == 1:
                out.append("[*]")
            continue
        if char == "]":
            depth -= 1
            continue
        if depth == 0:
            out.append(char)
    return "".join(out)
