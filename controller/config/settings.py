"""The settings table: every configuration key the server reads, with its default, parser and meaning.

Kafka's own key names where Kafka has one; the simulator's own keys start with ``simulator.``. Each key
is a :class:`Setting`, the one place it is defined (the README's table is ``placement-sim settings
--markdown``). The built-in placers declare their own properties
(:class:`~controller.plugins.properties.Property`, a placer class's ``properties``); the table lists
them between the server's settings and the security ones, read from the placers the first time the
whole table is needed (:func:`settings`), so that a server that never asks does not import them.

Topic configs (Kafka's per-topic table with its types, defaults and validators) are
:mod:`controller.config.topic_configs`: they are typed as Kafka types them (DescribeConfigs shows the
type) and checked with Kafka's messages. Their broker synonyms that are settings here
(``min.insync.replicas``, ``unclean.leader.election.enable``) are read through the topic table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.config.values import (
    SASL_MECHANISM_NAMES,
    STANDARD_AUTHORIZER,
    authorizer_class,
    consumer_assignor_list,
    fault_list,
    id_list,
    mechanism_list,
    name_list,
    parse_brokers,
    pem_store,
    principal_list,
    protocol_map,
    secret,
    user_list,
)
from controller.defaults import DEFAULT_LISTENER, DEFAULT_PLACER
from controller.plugins.properties import SEED as PLUGIN_SEED
from controller.plugins.properties import (
    WORKER_MAX_MEMORY_MB,
    boolean,
    integer,
    one_of,
    optional_integer,
    text,
)

__all__ = ["SERVER_FIELDS", "SERVER_KEYS", "Setting", "settings", "settings_by_key"]


@dataclass(frozen=True)
class Setting:
    """One configuration key: where it lands in :class:`ServerConfig`, its default (as written in a
    properties file, shown in the README) and what it means."""

    key: str
    #: The ServerConfig attribute it sets; None for keys only the built-in placers read.
    attr: str | None
    default: str
    parse: Callable[[str, str], Any]
    meaning: str


LISTENERS = "listeners"
PROTOCOL_MAP = "listener.security.protocol.map"
PLACER = "replica.placer.class.name"
MAX_REQUEST_BYTES = "socket.request.max.bytes"
IDLE_MS = "connections.max.idle.ms"
DEFAULT_RF = "default.replication.factor"
NUM_PARTITIONS = "num.partitions"
CLUSTER_ID = "cluster.id"
AUTO_CREATE = "auto.create.topics.enable"
BROKERS = "simulator.brokers"
FENCED = "simulator.brokers.fenced"
BROKER_PORT_BASE = "simulator.broker.port.base"
BROKER_PORT_STEP = "simulator.broker.port.step"
SEED = PLUGIN_SEED
MAX_REPLICAS = "simulator.placement.max.replicas"
ISOLATION = "simulator.placer.isolation"
PLACER_START_MS = "simulator.placer.start.timeout.ms"
PLACER_MAX_MEMORY_MB = WORKER_MAX_MEMORY_MB
MAX_CONNECTIONS = "max.connections"
MAX_CONNECTIONS_PER_IP = "max.connections.per.ip"
QUEUED_MAX_REQUESTS = "queued.max.requests"
QUEUED_MAX_REQUEST_BYTES = "queued.max.request.bytes"
MAX_PARTITIONS = "simulator.max.partitions"
REQUEST_MAX_TIMEOUT_MS = "simulator.request.max.timeout.ms"
EVENT_LOOP = "simulator.event.loop"
CLOCK = "simulator.clock"
SESSION_TIMEOUT_MS = "broker.session.timeout.ms"
HEARTBEAT_INTERVAL_MS = "broker.heartbeat.interval.ms"
REPLICA_LAG_MS = "replica.lag.time.max.ms"
MIN_INSYNC = "min.insync.replicas"
OFFSETS_PARTITIONS = "offsets.topic.num.partitions"
OFFSETS_RF = "offsets.topic.replication.factor"
GROUP_INITIAL_DELAY = "group.initial.rebalance.delay.ms"
GROUP_MIN_SESSION = "group.min.session.timeout.ms"
GROUP_MAX_SESSION = "group.max.session.timeout.ms"
GROUP_MAX_SIZE = "group.max.size"
CONSUMER_MAX_SIZE = "group.consumer.max.size"
CONSUMER_ASSIGNORS = "group.consumer.assignors"
CONSUMER_MIGRATION = "group.consumer.migration.policy"
CONSUMER_REGEX_REFRESH = "group.consumer.regex.refresh.interval.ms"
API_KEY_68 = "simulator.apikey.68"
TXN_PARTITIONS = "transaction.state.log.num.partitions"
TXN_RF = "transaction.state.log.replication.factor"
TXN_MIN_ISR = "transaction.state.log.min.isr"
TXN_MAX_TIMEOUT = "transaction.max.timeout.ms"
TXN_ABORT_INTERVAL = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
TXN_VERIFICATION = "transaction.partition.verification.enable"
TXN_ID_EXPIRATION = "transactional.id.expiration.ms"
TXN_EXPIRATION_INTERVAL = "transaction.remove.expired.transaction.cleanup.interval.ms"
TRANSACTION_VERSION = "simulator.transaction.version"
UNCLEAN_ELECTION = "unclean.leader.election.enable"
ELR_VERSION = "simulator.eligible.leader.replicas.version"
#: Its default: eligible leader replicas on, as a new Kafka 4.1+ cluster formats them (KIP-966).
ELR_VERSION_DEFAULT = 1
AUTO_REBALANCE = "auto.leader.rebalance.enable"
IMBALANCE_CHECK_SECONDS = "leader.imbalance.check.interval.seconds"
ELECTION_POLICY = "simulator.election.policy"
ELECTION_ISOLATION = "simulator.election.isolation"
FLUVIO_PROMOTION_TIMEOUT_MS = "simulator.election.fluvio.promotion.timeout.ms"
FLUVIO_HEALTH_TIMEOUT_MS = "simulator.election.fluvio.health.timeout.ms"
FLUVIO_LRS_MAX_LAG_RECORDS = "simulator.election.fluvio.lrs.max.lag.records"
REPLICATION_TICK_MS = "simulator.replication.tick.ms"
REPLICATION_FETCH_AT_ONCE = "simulator.replication.fetch.at.once"
MAX_EVENTS = "simulator.events.max"
CONTROL_ENABLE = "simulator.control.enable"
CONTROL_USERS = "simulator.control.users"
FAULTS = "simulator.faults"
LOG_MAX_BYTES = "simulator.log.max.bytes"
RECORDS_MAX_DECOMPRESSED_BYTES = "simulator.records.max.decompressed.bytes"
PRODUCER_ID_EXPIRATION_MS = "producer.id.expiration.ms"
PRODUCER_ID_EXPIRATION_CHECK_MS = "producer.id.expiration.check.interval.ms"
MAX_PRODUCERS = "simulator.max.producers.per.partition"
MAX_GROUPS = "simulator.max.groups"
MAX_PENDING_MEMBERS = "simulator.max.pending.members"
FETCH_MAX_BYTES = "fetch.max.bytes"
UNSENT_ANSWERS_MAX_BYTES = "simulator.unsent.answers.max.bytes"
# Read by the built-in election policy (through configure()), not by the server.
FLUVIO_MAX_LAG = "simulator.election.fluvio.max.lag"
# Security (TLS and SASL, controller.security): Kafka's names, and the simulator's users.
SASL_MECHANISMS = "sasl.enabled.mechanisms"
SASL_USERS = "simulator.sasl.users"
SCRAM_ITERATIONS = "simulator.sasl.scram.iterations"
SCRAM_NONCE_CHECK = "simulator.sasl.scram.nonce.check"
FAILED_AUTH_DELAY_MS = "connection.failed.authentication.delay.ms"
SASL_MAX_RECEIVE_SIZE = "sasl.server.max.receive.size"
# Authorization (controller.acls): Kafka's names.
AUTHORIZER_CLASS = "authorizer.class.name"
SUPER_USERS = "super.users"
ALLOW_EVERYONE_IF_NO_ACL = "allow.everyone.if.no.acl.found"
SSL_HANDSHAKE_TIMEOUT_MS = "simulator.ssl.handshake.timeout.ms"
SSL_KEYSTORE_TYPE = "ssl.keystore.type"
SSL_KEYSTORE_LOCATION = "ssl.keystore.location"
SSL_KEYSTORE_PASSWORD = "ssl.keystore.password"
SSL_KEYSTORE_CHAIN = "ssl.keystore.certificate.chain"
SSL_KEYSTORE_KEY = "ssl.keystore.key"
SSL_KEY_PASSWORD = "ssl.key.password"
SSL_TRUSTSTORE_TYPE = "ssl.truststore.type"
SSL_TRUSTSTORE_LOCATION = "ssl.truststore.location"
SSL_TRUSTSTORE_PASSWORD = "ssl.truststore.password"
SSL_TRUSTSTORE_CERTIFICATES = "ssl.truststore.certificates"
SSL_CLIENT_AUTH = "ssl.client.auth"

ISOLATION_MODES = ("auto", "inline", "process")

#: The server's own settings, in the order of the table (the README's), up to the plugins' properties.
_SERVER_SETTINGS: tuple[Setting, ...] = (
    Setting(
        LISTENERS,
        "listener_text",
        DEFAULT_LISTENER,
        text(),
        "the bootstrap listener, `HOST:PORT` or `NAME://HOST:PORT` (the first of a list)",
    ),
    Setting(
        PROTOCOL_MAP,
        "protocol_map",
        "",
        protocol_map,
        "listener names to security protocols, `NAME:PROTOCOL,...`, added to Kafka's four",
    ),
    Setting(
        PLACER,
        "placer",
        DEFAULT_PLACER,
        text(),
        "short name, `package.module.Class`, `package.module:Class`, `file.py[:Class]` or entry point",
    ),
    Setting(
        MAX_REQUEST_BYTES,
        "max_request_bytes",
        "104857600",
        integer(minimum=1, maximum=2**31 - 1),
        "larger frames close the connection before their body is read",
    ),
    Setting(
        IDLE_MS,
        "idle_ms",
        "600000",
        integer(minimum=1),
        "a connection with no complete request for this long is closed",
    ),
    Setting(
        NUM_PARTITIONS, "num_partitions", "1", integer(minimum=1), "what CreateTopics' `-1` partitions means"
    ),
    Setting(
        DEFAULT_RF,
        "default_replication_factor",
        "1",
        integer(minimum=1, maximum=2**15 - 1),
        "what CreateTopics' `-1` replication factor means",
    ),
    Setting(
        CLUSTER_ID, "cluster_id", "placement-sim", text(), "the cluster id of Metadata and DescribeCluster"
    ),
    Setting(
        AUTO_CREATE,
        "auto_create_topics",
        "false",
        boolean,
        "Metadata creates the unknown topics a client asks for",
    ),
    Setting(
        BROKERS,
        "broker_list",
        "",
        parse_brokers,
        "`id[:rack],...`, e.g. `0:/dc1/r1,1:/dc1/r2,2` (no rack for 2); default: 6 brokers in 3 racks",
    ),
    Setting(FENCED, "fenced_ids", "", id_list, "fenced broker ids, e.g. `2,5`"),
    Setting(
        BROKER_PORT_BASE,
        "broker_port_base",
        "0",
        integer(minimum=0, maximum=65535),
        "broker `id` listens on `base + step * id`; 0: ephemeral ports",
    ),
    Setting(
        BROKER_PORT_STEP,
        "broker_port_step",
        "1",
        integer(minimum=1, maximum=1000),
        "with `simulator.broker.port.base`: the ports between one broker id's and the next (3 lays brokers "
        "0, 1, 2 on 9092, 9095, 9098 as kafkajs's test cluster does)",
    ),
    Setting(
        SEED,
        "seed",
        "",
        optional_integer,
        "seeds every placer and the topic ids: the same requests give the same bytes (default: random)",
    ),
    Setting(
        MAX_REPLICAS,
        "max_replicas",
        "1000000",
        integer(minimum=1),
        "partitions x replication factor of one placement above this is POLICY_VIOLATION",
    ),
    Setting(
        ISOLATION,
        "isolation",
        "auto",
        one_of(*ISOLATION_MODES),
        "`auto` (built-ins inline, plugins in a worker process), `inline`, `process`",
    ),
    Setting(
        PLACER_START_MS,
        "placer_start_ms",
        "30000",
        integer(minimum=1),
        "how long a plugin's worker may take to load it",
    ),
    Setting(
        PLACER_MAX_MEMORY_MB,
        "placer_max_memory_mb",
        "2048",
        integer(minimum=0),
        "address space a plugin's worker process may use, in MB (0: no limit); past it the call fails",
    ),
    Setting(
        MAX_CONNECTIONS,
        "max_connections",
        "4096",
        integer(minimum=1),
        "connections served at once; past it the listeners stop accepting until one closes",
    ),
    Setting(
        MAX_CONNECTIONS_PER_IP,
        "max_connections_per_ip",
        "1024",
        integer(minimum=1),
        "connections from one address; past it a new one is closed at once",
    ),
    Setting(
        QUEUED_MAX_REQUESTS,
        "queued_max_requests",
        "500",
        integer(minimum=1),
        "unanswered requests one connection may queue before it stops being read",
    ),
    Setting(
        QUEUED_MAX_REQUEST_BYTES,
        "queued_max_request_bytes",
        "209715200",
        integer(minimum=1),
        "bytes of request frames the server holds in all; past it connections stop being read",
    ),
    Setting(
        MAX_PARTITIONS,
        "max_partitions",
        "500000",
        integer(minimum=1),
        "partitions the cluster may hold in all; a request that would pass it is POLICY_VIOLATION",
    ),
    Setting(
        REQUEST_MAX_TIMEOUT_MS,
        "request_max_timeout_ms",
        "120000",
        integer(minimum=1),
        "the most a request's `timeoutMs` is honoured for (larger values are cut to it)",
    ),
    Setting(
        EVENT_LOOP,
        "event_loop",
        "auto",
        one_of("auto", "uvloop", "asyncio"),
        "`auto` (uvloop where it is installed), `uvloop` or `asyncio`",
    ),
    Setting(
        CLOCK,
        "clock",
        "real",
        one_of("real", "virtual"),
        "`real`, or `virtual`: the dynamics' clock moves only when told (`advance(ms)`), so a seed and the same "
        "events give the same bytes",
    ),
    Setting(
        SESSION_TIMEOUT_MS,
        "session_timeout_ms",
        "9000",
        integer(minimum=1),
        "a broker the controller has not heard from for this long is fenced and its leaders move",
    ),
    Setting(
        HEARTBEAT_INTERVAL_MS,
        "heartbeat_interval_ms",
        "2000",
        integer(minimum=1),
        "how often brokers heartbeat: a restarted broker is unfenced at its first heartbeat",
    ),
    Setting(
        REPLICA_LAG_MS,
        "replica_lag_ms",
        "30000",
        integer(minimum=1),
        "a follower that has not caught up for this long leaves the ISR (checked every half of it)",
    ),
    Setting(
        MIN_INSYNC,
        "min_insync_replicas",
        "1",
        integer(minimum=1),
        "the high watermark does not advance while the ISR is smaller (topic config overrides)",
    ),
    Setting(
        UNCLEAN_ELECTION,
        "unclean_election",
        "false",
        boolean,
        "elect a replica outside the ISR when no ISR member can lead (topic config overrides)",
    ),
    Setting(
        ELR_VERSION,
        "elr_version",
        str(ELR_VERSION_DEFAULT),
        integer(minimum=0, maximum=1),
        "Kafka's `eligible.leader.replicas.version` feature: `1` (a new Kafka 4.1+ cluster's level) keeps "
        "eligible leader replicas (KIP-966) under the `kafka` election style; `0` turns them off, Kafka 3.x's "
        "rules (docs/election-policies.md)",
    ),
    Setting(
        AUTO_REBALANCE,
        "auto_rebalance",
        "true",
        boolean,
        "periodic preferred-leader elections for partitions not led by their first replica",
    ),
    Setting(
        IMBALANCE_CHECK_SECONDS,
        "imbalance_check_seconds",
        "300",
        integer(minimum=1),
        "how often the automatic rebalance runs",
    ),
    Setting(
        OFFSETS_PARTITIONS,
        "offsets_partitions",
        "50",
        integer(minimum=1),
        "partitions of `__consumer_offsets` (made at the first FindCoordinator); a group's coordinator leads one",
    ),
    Setting(
        OFFSETS_RF,
        "offsets_replication_factor",
        "3",
        integer(minimum=1, maximum=2**15 - 1),
        "replication factor of `__consumer_offsets`, capped by the brokers there are",
    ),
    Setting(
        GROUP_INITIAL_DELAY,
        "group_initial_rebalance_delay_ms",
        "3000",
        integer(minimum=0),
        "how long a new group's first rebalance waits for more members (0 in tests)",
    ),
    Setting(
        GROUP_MIN_SESSION,
        "group_min_session_timeout_ms",
        "6000",
        integer(minimum=0),
        "JoinGroup with a shorter session timeout is refused (INVALID_SESSION_TIMEOUT)",
    ),
    Setting(
        GROUP_MAX_SESSION,
        "group_max_session_timeout_ms",
        "1800000",
        integer(minimum=1),
        "JoinGroup with a longer session timeout is refused (INVALID_SESSION_TIMEOUT)",
    ),
    Setting(
        GROUP_MAX_SIZE,
        "group_max_size",
        "2147483647",
        integer(minimum=1, maximum=2**31 - 1),
        "the most members of a classic group (GROUP_MAX_SIZE_REACHED); a consumer group with more classic "
        "members is not converted back to a classic group",
    ),
    Setting(
        CONSUMER_MAX_SIZE,
        "consumer_max_size",
        "2147483647",
        integer(minimum=1, maximum=2**31 - 1),
        "the most members of a group of the consumer group protocol (KIP-848; GROUP_MAX_SIZE_REACHED)",
    ),
    Setting(
        CONSUMER_ASSIGNORS,
        "consumer_assignors",
        "uniform,range",
        consumer_assignor_list,
        "the server-side assignors of the consumer group protocol, the first the default: `uniform`, `range` "
        "(or Kafka's class names of them)",
    ),
    Setting(
        CONSUMER_MIGRATION,
        "consumer_migration_policy",
        "bidirectional",
        one_of("bidirectional", "upgrade", "downgrade", "disabled"),
        "whether a classic group becomes a consumer group when a member of the consumer protocol joins "
        "(upgrade) and back when only classic members stay (downgrade)",
    ),
    Setting(
        CONSUMER_REGEX_REFRESH,
        "consumer_regex_refresh_interval_ms",
        "600000",
        integer(minimum=0),
        "how often a consumer group's regular expressions are resolved again when no topic changed",
    ),
    Setting(
        API_KEY_68,
        "api_key_68",
        "auto",
        one_of("auto", "CreateReplicaPlacement", "ConsumerGroupHeartbeat"),
        "what apiKey 68 is: `auto`, per connection (ConsumerGroupHeartbeat for clients that name themselves "
        "a KIP-848 library in ApiVersions, CreateReplicaPlacement for the others; docs/groups.md), or one "
        "of the two for every connection",
    ),
    Setting(
        TXN_PARTITIONS,
        "txn_partitions",
        "50",
        integer(minimum=1),
        "partitions of `__transaction_state` (made at the first FindCoordinator for a transaction); a "
        "transactional id's coordinator leads one",
    ),
    Setting(
        TXN_RF,
        "txn_replication_factor",
        "3",
        integer(minimum=1, maximum=2**15 - 1),
        "replication factor of `__transaction_state`, capped by the brokers there are",
    ),
    Setting(
        TXN_MIN_ISR,
        "txn_min_isr",
        "2",
        integer(minimum=1),
        "`min.insync.replicas` of `__transaction_state`: below it the coordinator answers "
        "COORDINATOR_NOT_AVAILABLE",
    ),
    Setting(
        TXN_MAX_TIMEOUT,
        "txn_max_timeout_ms",
        "900000",
        integer(minimum=1, maximum=2**31 - 1),
        "InitProducerId with a longer transaction timeout is refused (INVALID_TRANSACTION_TIMEOUT)",
    ),
    Setting(
        TXN_ABORT_INTERVAL,
        "txn_abort_interval_ms",
        "10000",
        integer(minimum=1),
        "how often the coordinator aborts the transactions open longer than their timeout",
    ),
    Setting(
        TXN_VERIFICATION,
        "txn_verification",
        "true",
        boolean,
        "partition leaders ask the coordinator whether a partition is in the transaction before the "
        "first transactional batch there (KIP-890)",
    ),
    Setting(
        TXN_ID_EXPIRATION,
        "txn_id_expiration_ms",
        "604800000",
        integer(minimum=1, maximum=2**31 - 1),
        "a transactional id without a transaction for this long is forgotten",
    ),
    Setting(
        TXN_EXPIRATION_INTERVAL,
        "txn_expiration_interval_ms",
        "3600000",
        integer(minimum=1),
        "how often the coordinator forgets expired transactional ids",
    ),
    Setting(
        TRANSACTION_VERSION,
        "transaction_version",
        "2",
        integer(minimum=0, maximum=2),
        "the transaction version of the aborts the coordinator starts itself (timeouts, fencing): 2 bumps "
        "the epoch as KIP-890 part 2 does; a client's own ends follow its EndTxn version",
    ),
    Setting(
        ELECTION_POLICY,
        "election_policy",
        "kafka",
        text(),
        "`kafka`, `fluvio`, `package.module.Class`, `package.module:Class`, `file.py[:Class]` or entry point",
    ),
    Setting(
        ELECTION_ISOLATION,
        "election_isolation",
        "auto",
        one_of(*ISOLATION_MODES),
        "like `simulator.placer.isolation`, for the election policy",
    ),
    Setting(
        FLUVIO_MAX_LAG,
        None,
        "4",
        integer(minimum=1),
        "`fluvio` policy: a candidate must lag the previous leader's log end offset by less than this",
    ),
    Setting(
        FLUVIO_PROMOTION_TIMEOUT_MS,
        "fluvio_promotion_timeout_ms",
        "5000",
        integer(minimum=1),
        "`fluvio` policy: how long the SC waits for a candidate to confirm before it asks the next",
    ),
    Setting(
        FLUVIO_HEALTH_TIMEOUT_MS,
        "fluvio_health_timeout_ms",
        "90000",
        integer(minimum=1),
        "`fluvio` policy: an SPU silent for this long (hung, isolated) is offline (a crash is noticed at once)",
    ),
    Setting(
        FLUVIO_LRS_MAX_LAG_RECORDS,
        "fluvio_lrs_max_lag_records",
        "",
        lambda key, raw: None if not raw.strip() else integer(minimum=0)(key, raw),
        "`fluvio` policy: a follower more records than this behind its leader leaves the live replica set "
        "(default: only an offline SPU leaves it, as in Fluvio's SC)",
    ),
    Setting(
        REPLICATION_TICK_MS,
        "replication_tick_ms",
        "100",
        integer(minimum=1),
        "the step of the replication model: records arrive and followers copy every tick",
    ),
    Setting(
        REPLICATION_FETCH_AT_ONCE,
        "replication_fetch_at_once",
        "false",
        one_of("auto", "true", "false"),
        "followers copy a leader's append at once, as a Kafka leader answers its followers' waiting "
        "fetches, not at the next tick (where they copy all at each tick: no delay, no rate); `auto`: with "
        "the real clock only (off by default, docs/fidelity.md says why)",
    ),
    Setting(
        LOG_MAX_BYTES,
        "log_max_bytes",
        "67108864",
        integer(minimum=-1),
        "the most bytes of records one partition's log holds (replicas share them); past it the oldest "
        "batches below the high watermark are deleted and the log start moves, as `retention.bytes` "
        "(-1: no bound)",
    ),
    Setting(
        RECORDS_MAX_DECOMPRESSED_BYTES,
        "records_max_decompressed_bytes",
        "67108864",
        integer(minimum=-1),
        "the most bytes a compressed batch's records may decompress to; a Produce past it is refused "
        "with INVALID_RECORD (-1: no bound)",
    ),
    Setting(
        PRODUCER_ID_EXPIRATION_MS,
        "producer_id_expiration_ms",
        "86400000",
        integer(minimum=1),
        "an idempotent producer whose last batch is this old is forgotten by the partitions it wrote to",
    ),
    Setting(
        PRODUCER_ID_EXPIRATION_CHECK_MS,
        "producer_id_expiration_check_interval_ms",
        "600000",
        integer(minimum=1),
        "how often a partition forgets its expired producers (when it is next appended to or described)",
    ),
    Setting(
        MAX_PRODUCERS,
        "max_producers_per_partition",
        "10000",
        integer(minimum=1),
        "the idempotent producers one partition keeps state for (about 700 bytes each); past it the one "
        "that appended least recently is forgotten",
    ),
    Setting(
        MAX_GROUPS,
        "max_groups",
        "100000",
        integer(minimum=1),
        "the classic groups the coordinators keep (about 1.3 KB each, 4.3 KB with a member); a JoinGroup "
        "or OffsetCommit that would make one more is GROUP_MAX_SIZE_REACHED",
    ),
    Setting(
        MAX_PENDING_MEMBERS,
        "max_pending_members",
        "50000",
        integer(minimum=1),
        "member ids handed out with MEMBER_ID_REQUIRED and not joined with yet, in all (about 1.3 KB "
        "each, for up to the session timeout); past it a new member's JoinGroup is GROUP_MAX_SIZE_REACHED",
    ),
    Setting(
        FETCH_MAX_BYTES,
        "fetch_max_bytes",
        "57671680",
        integer(minimum=1024),
        "the most bytes of records one Fetch answer carries, whatever its MaxBytes (its first batch is "
        "carried whole, as KIP-74 says)",
    ),
    Setting(
        UNSENT_ANSWERS_MAX_BYTES,
        "unsent_answers_max_bytes",
        "104857600",
        integer(minimum=0),
        "bytes of answers the server holds for clients that do not read them; past it a Fetch answer "
        "carries at most its first batch",
    ),
    Setting(
        MAX_EVENTS,
        "max_events",
        "1000000",
        integer(minimum=1),
        "how many events the event log keeps (older ones are dropped)",
    ),
    Setting(
        CONTROL_ENABLE,
        "control_enable",
        "auto",
        one_of("auto", "true", "false"),
        "serve the control APIs (keys 1000 and up, docs/control.md); `auto`: only when the listener is on a "
        "loopback address",
    ),
    Setting(
        CONTROL_USERS,
        "control_users",
        "",
        name_list,
        "`alice,bob`: on a `SASL_*` listener, the users the control APIs answer (others are refused)",
    ),
    Setting(
        FAULTS,
        "faults",
        "",
        fault_list,
        "request faults active from start, `;`-separated: `error=NOT_CONTROLLER api=CreateTopics once` "
        "(docs/control.md)",
    ),
)

#: The security settings, after the plugins' properties in the table.
_SECURITY_SETTINGS: tuple[Setting, ...] = (
    # Security: TLS on SSL and SASL_SSL listeners, SASL on SASL_PLAINTEXT and SASL_SSL (controller.security).
    Setting(
        SASL_MECHANISMS,
        "sasl_mechanisms",
        ",".join(SASL_MECHANISM_NAMES),
        mechanism_list,
        "what a `SASL_*` listener offers, of `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512` (Kafka's default, "
        "`GSSAPI`, is not served)",
    ),
    Setting(
        SASL_USERS,
        "sasl_users",
        "",
        user_list,
        "`user:password,...`: who may authenticate on a `SASL_*` listener, with every enabled mechanism; "
        "`user:SCRAM-SHA-512:password` gives a password for one mechanism (docs/clients.md)",
    ),
    Setting(
        AUTHORIZER_CLASS,
        "authorizer_class",
        "",
        authorizer_class,
        f"`{STANDARD_AUTHORIZER}` turns on authorization by ACLs, as Kafka's `StandardAuthorizer` "
        "(docs/acls.md); empty: every client may do everything, and the ACL APIs answer SECURITY_DISABLED",
    ),
    Setting(
        SUPER_USERS,
        "super_users",
        "",
        principal_list,
        "`User:alice;User:bob`: principals the authorizer allows everything (`User:ANONYMOUS` for clients "
        "that did not authenticate)",
    ),
    Setting(
        ALLOW_EVERYONE_IF_NO_ACL,
        "allow_if_no_acl",
        "false",
        boolean,
        "with the authorizer, a resource that has no ACL at all is open to everyone (else to super users only)",
    ),
    Setting(
        SCRAM_ITERATIONS,
        "scram_iterations",
        "4096",
        integer(minimum=4096, maximum=16384),
        "the iteration count of the users' SCRAM credentials (Kafka's bounds); salts are random at startup",
    ),
    Setting(
        SCRAM_NONCE_CHECK,
        "scram_nonce_check",
        "exact",
        one_of("exact", "suffix"),
        "`exact`: a SCRAM client's final nonce must be the server's (Kafka 4); `suffix`: it may repeat the "
        "client nonce before it, as librdkafka before 2.6.1 does (Kafka 3.8.1 to 3.9 accept that)",
    ),
    Setting(
        FAILED_AUTH_DELAY_MS,
        "failed_auth_delay_ms",
        "100",
        integer(minimum=0),
        "a failed authentication is answered, and the connection closed, after this delay",
    ),
    Setting(
        SASL_MAX_RECEIVE_SIZE,
        "sasl_max_receive_size",
        "524288",
        integer(minimum=1, maximum=2**31 - 1),
        "on a `SASL_*` listener, a larger frame before authentication closes the connection unread (Kafka's "
        "`SaslServerAuthenticator`)",
    ),
    Setting(
        SSL_HANDSHAKE_TIMEOUT_MS,
        "ssl_handshake_timeout_ms",
        "10000",
        integer(minimum=1),
        "a TLS handshake not finished in this time closes the connection (it holds a connection slot of its "
        "address meanwhile)",
    ),
    Setting(
        SSL_KEYSTORE_TYPE,
        "ssl_keystore_type",
        "PEM",
        pem_store,
        "only `PEM` is read (Kafka's default, `JKS`, is not)",
    ),
    Setting(
        SSL_KEYSTORE_LOCATION,
        "ssl_keystore_location",
        "",
        text(nonempty=False),
        "PEM file with the listener's private key and certificate chain (`SSL`, `SASL_SSL`)",
    ),
    Setting(
        SSL_KEYSTORE_CHAIN,
        "ssl_keystore_chain",
        "",
        text(nonempty=False),
        "instead of a file: the certificate chain as PEM text (with `ssl.keystore.key`)",
    ),
    Setting(
        SSL_KEYSTORE_KEY,
        "ssl_keystore_key",
        "",
        text(nonempty=False),
        "instead of a file: the private key as PEM text",
    ),
    Setting(
        SSL_KEY_PASSWORD,
        "ssl_key_password",
        "",
        secret,
        "the password of an encrypted private key",
    ),
    Setting(
        SSL_KEYSTORE_PASSWORD,
        "ssl_keystore_password",
        "",
        secret,
        "refused with a PEM keystore, as Kafka does (use `ssl.key.password`)",
    ),
    Setting(
        SSL_TRUSTSTORE_TYPE,
        "ssl_truststore_type",
        "PEM",
        pem_store,
        "only `PEM` is read",
    ),
    Setting(
        SSL_TRUSTSTORE_LOCATION,
        "ssl_truststore_location",
        "",
        text(nonempty=False),
        "PEM file of the CA certificates that client certificates are checked against",
    ),
    Setting(
        SSL_TRUSTSTORE_CERTIFICATES,
        "ssl_truststore_certificates",
        "",
        text(nonempty=False),
        "instead of a file: those CA certificates as PEM text",
    ),
    Setting(
        SSL_TRUSTSTORE_PASSWORD,
        "ssl_truststore_password",
        "",
        secret,
        "refused with a PEM truststore, as Kafka does",
    ),
    Setting(
        SSL_CLIENT_AUTH,
        "ssl_client_auth",
        "none",
        one_of("none", "requested", "required"),
        "client certificates on `SSL` listeners: `none`, `requested` or `required` (a `SASL_SSL` listener "
        "only takes `listener.name.<name>.ssl.client.auth`, as Kafka)",
    ),
)


def _placer_settings() -> tuple[Setting, ...]:
    """The properties the built-in placers declare, in the order of the built-ins, each key once."""
    from controller.placement.loader import BUILTIN_PLACERS, resolve_placer_class

    found: dict[str, Setting] = {}
    for name in BUILTIN_PLACERS:
        for p in resolve_placer_class(name).properties:
            found.setdefault(p.key, Setting(p.key, None, p.default, p.parse, p.meaning))
    return tuple(found.values())


@functools.cache
def settings() -> tuple[Setting, ...]:
    """Every setting, in the order of the table: the server's, the built-in placers', the security ones."""
    return (*_SERVER_SETTINGS, *_placer_settings(), *_SECURITY_SETTINGS)


@functools.cache
def settings_by_key() -> dict[str, Setting]:
    return {s.key: s for s in settings()}


#: The keys of the server's own settings (the table without the placers' properties).
SERVER_KEYS: frozenset[str] = frozenset(s.key for s in (*_SERVER_SETTINGS, *_SECURITY_SETTINGS))

#: The settings :class:`~controller.config.server_config.ServerConfig` reads into its fields, in order.
SERVER_FIELDS: tuple[Setting, ...] = tuple(s for s in (*_SERVER_SETTINGS, *_SECURITY_SETTINGS) if s.attr)
