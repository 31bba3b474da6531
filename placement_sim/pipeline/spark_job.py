"""The sweep on Spark: scenarios expanded in Spark, runs on the executors, Parquet out, SQL aggregates.

Plan::

    cluster families --mapInArrow(expand_family)--> shapes
    shapes x workloads x seeds x placers (cross joins) --repartition--> runs to do
    runs to do --mapInArrow(run_scenario)--> results, one row per run (persisted)
    results --> metrics/, placements/, failures/, rack_losses/, failovers/ (Parquet) --> Spark SQL aggregates

The executors run :func:`placement_sim.pipeline.runner.run_scenario` (through :mod:`placement_sim.pipeline.spark_tasks`), the
same function the single-process path calls, on Arrow batches. Placers are loaded there by the
server's loader: third-party placers must be importable on the executors (installed, or shipped with
``--py-files`` / ``addPyFile``).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from placement_sim.pipeline import aggregates, output
from placement_sim.pipeline.grid import Grid, family_document, workload_document
from placement_sim.pipeline.progress import ProgressCallback, Ticker
from placement_sim.pipeline.records import SPLITS, metrics_columns, result_schema
from placement_sim.pipeline.spark_tasks import (
    FAMILY_SCHEMA,
    SHAPE_SCHEMA,
    WORKLOAD_SCHEMA,
    expand_families,
    run_batches,
)

log = logging.getLogger(__name__)

__all__ = ["SparkSweep", "run_sweep_spark", "spark_session"]

#: Spark settings the sweep wants unless the caller sets them.
SESSION_DEFAULTS: dict[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Small Arrow batches keep each executor's memory flat however large its partition is.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "256",
    "spark.python.worker.reuse": "true",
    "spark.sql.debug.maxToStringFields": "200",
}


#: In local mode the driver's JVM shares the machine's cores with the Python workers that do the real
#: work. It only converts Arrow batches and writes Parquet, for which the quick C1 compiler is plenty;
#: the optimising C2 compiler costs more CPU than it saves on a sweep of any size (measured: about
#: 40% less JVM CPU per sweep with C1 only).
LOCAL_DEFAULTS: dict[str, str] = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}


#: What a quiet driver JVM logs: errors only, without the banner of Spark's default profile ("Using
#: Spark's default log4j profile") or of a shell: PySpark's gateway (PythonGatewayServer) starts logging
#: as an interpreter, and Spark's Logging then prints "Setting default log level to ..." unless that
#: class's logger has a level of its own.
QUIET_LOG4J2 = """\
rootLogger.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
"""

#: Lines the JVM itself prints at start, before any logging is set up (Spark 4 loads the Vector API).
JVM_BANNER = (b"WARNING: Using incubator modules: ",)


def _quiet_log4j2_file() -> str:
    handle, path = tempfile.mkstemp(prefix="placement-sim-log4j2-", suffix=".properties")
    with os.fdopen(handle, "w") as file:
        file.write(QUIET_LOG4J2)
    atexit.register(lambda: os.path.exists(path) and os.remove(path))
    return path


#: Set once a sweep is interrupted: the JVM's stderr, where it goes through :func:`_stderr_without`, is
#: dropped from then on (a JVM shutting down with cancelled jobs prints stack traces of its own).
_JVM_STDERR_MUTED = threading.Event()


@contextmanager
def _stderr_without(prefixes: Sequence[bytes]) -> Iterator[None]:
    """Processes started inside (the driver JVM, and the Python workers it starts later) write their
    stderr through a thread that drops the lines starting with ``prefixes`` (every line once
    :data:`_JVM_STDERR_MUTED` is set) and passes the rest on."""
    sys.stderr.flush()
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def forward() -> None:
        with os.fdopen(read_end, "rb") as lines, os.fdopen(real, "wb", buffering=0) as out:
            for line in lines:  # until every process holding the write end has exited
                if not _JVM_STDERR_MUTED.is_set() and not line.startswith(tuple(prefixes)):
                    out.write(line)

    threading.Thread(target=forward, name="jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)  # this process writes to the real stderr again (the thread keeps its own copy)


def spark_session(
    master: str | None = None,
    app_name: str = "placement-sim sweep",
    conf: Mapping[str, str] | None = None,
    py_files: Sequence[str] = (),
    ui: bool = False,
    log_level: str = "WARN",
    quiet: bool = False,
) -> SparkSession:
    """A SparkSession for the sweep.

    ``master`` None means: the one ``spark-submit`` set, else ``local[*]``. With a local master the
    Python workers use this interpreter (``PYSPARK_PYTHON``). ``py_files`` (modules, packages as .zip,
    .egg) are shipped to the executors and importable on the driver too. ``quiet``: the driver logs
    errors only, and a JVM started here prints no start banner.
    """
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit
    if master is None and not submitted:
        master = "local[*]"
    if master is not None and master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    settings = {**SESSION_DEFAULTS, "spark.ui.enabled": "true" if ui else "false"}
    if master is not None and master.startswith("local"):
        settings.update(LOCAL_DEFAULTS)
    launches_jvm = not submitted and SparkSession.getActiveSession() is None
    if quiet and launches_jvm:
        options = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = (
            f"{options} -Dlog4j2.configurationFile={_quiet_log4j2_file()}".strip()
        )
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    if quiet and launches_jvm:
        _JVM_STDERR_MUTED.clear()  # a new JVM: an earlier sweep's interruption is over
        with _stderr_without(JVM_BANNER):
            spark = builder.getOrCreate()
    else:
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR" if quiet else log_level)
    for path in py_files:
        spark.sparkContext.addPyFile(path)
    log.info("Spark %s on %s", spark.version, spark.sparkContext.master)
    return spark


# --- driver side -----------------------------------------------------------------------------------


def scenario_frame(spark: SparkSession, grid: Grid) -> DataFrame:
    """Scenarios x placers, one row per run to do, expanded in Spark."""
    families = spark.createDataFrame(
        [(f.name, json.dumps(family_document(f))) for f in grid.clusters], FAMILY_SCHEMA
    )
    # The small sides of the cross joins stay in one partition each: a cartesian product has a task per
    # pair of partitions and expands the families again in each (a Python task, with a fixed cost of its
    # own on the worker: about 0.1 s of its CPU, and a second or more of wall clock on a busy machine).
    shapes = families.coalesce(1).mapInArrow(expand_families, SHAPE_SCHEMA)
    workloads = spark.createDataFrame(
        [(w.name, json.dumps(workload_document(w))) for w in grid.workloads], WORKLOAD_SCHEMA
    ).coalesce(1)
    if grid.seeds == tuple(range(len(grid.seeds))):
        seeds = spark.range(len(grid.seeds)).withColumnRenamed("id", "seed")
    else:
        seeds = spark.createDataFrame([(s,) for s in grid.seeds], "seed long").coalesce(1)
    placers = spark.createDataFrame([(p,) for p in grid.placers], "placer string").coalesce(1)
    return shapes.crossJoin(workloads).crossJoin(seeds).crossJoin(placers)


@dataclass(frozen=True)
class SparkSweep:
    """What a Spark sweep wrote and how long it took."""

    out: str
    runs: int
    scenarios: int
    partitions: int
    seconds: float
    tables: Mapping[str, DataFrame]
    aggregates: Mapping[str, pa.Table]


def _found(spark: SparkSession, path: str) -> tuple[Any, Any] | None:
    """``path`` (any Hadoop file system) and its file system, if it exists."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
    return (fs, hadoop_path) if fs.exists(hadoop_path) else None


def _delete(spark: SparkSession, path: str) -> None:
    """Deletes ``path`` (any Hadoop file system) if it exists."""
    found = _found(spark, path)
    if found is not None:
        fs, hadoop_path = found
        fs.delete(hadoop_path, True)
        log.info("deleted %s", path)


class Interrupts:
    """What :func:`cancel_on_interrupt` saw: whether Ctrl-C came, and the session whose jobs it cancels."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.session: SparkSession | None = None
        self.settled = threading.Event()  # the sweep stopped starting jobs: the canceller may stop

    @property
    def interrupted(self) -> bool:
        return self.event.is_set()

    def wait_until_idle(self, timeout: float = 60.0) -> None:
        """Returns once no job of the session is active and no task runs (or after ``timeout``). A
        cancelled write's tasks stop a little after its job fails, and one still running would create
        its table's folder again after the folder was removed."""
        if self.session is None:
            return
        tracker = self.session.sparkContext._jsc.sc().statusTracker()  # type: ignore[attr-defined]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = sum(info.numRunningTasks() for info in tracker.getExecutorInfos())
            if not running and not self.session.sparkContext.statusTracker().getActiveJobsIds():
                return
            time.sleep(0.05)
        log.warning("the sweep's cancelled tasks still ran after %.0f s", timeout)


class _KeepsOurInterruptHandler:
    """What PySpark's context module sees as ``signal`` while a sweep runs: ``signal.signal(SIGINT, ...)``
    keeps the sweep's handler (PySpark's would call the JVM from inside the signal handler); the rest is
    the real module."""

    def __getattr__(self, name: str) -> object:
        return getattr(signal, name)

    @staticmethod
    def signal(signum: int, handler: object) -> object:
        if signum == signal.SIGINT:
            return signal.getsignal(signum)
        return signal.signal(signum, handler)  # type: ignore[arg-type]


@contextmanager
def cancel_on_interrupt() -> Iterator[Interrupts]:
    """While inside, Ctrl-C (SIGINT) cancels the Spark jobs of ``interrupts.session`` (once it is set)
    instead of interrupting the driver: the call waiting on Spark then fails, and ``interrupted`` says
    why. PySpark's own handler calls the JVM from the signal handler, on the connection the interrupted
    call is reading (``reentrant call``, and a page of py4j errors): it is kept from being installed by a
    SparkContext made inside, and the cancel is sent from a thread of its own, on its own connection. More
    Ctrl-Cs while it cancels are ignored. Only the main thread can handle signals: elsewhere this does
    nothing."""
    interrupts = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return

    def on_interrupt(signum: int, frame: object) -> None:
        if interrupts.event.is_set():
            return
        interrupts.event.set()
        if interrupts.session is not None:
            threading.Thread(target=_cancel_all, args=(interrupts,), name="sweep-cancel", daemon=True).start()

    import pyspark.core.context as pyspark_context

    previous = signal.signal(signal.SIGINT, on_interrupt)
    their_signal = getattr(pyspark_context, "signal", None)
    pyspark_context.signal = _KeepsOurInterruptHandler()  # type: ignore[attr-defined]
    try:
        yield interrupts
    finally:
        interrupts.settled.set()
        if their_signal is not None:
            pyspark_context.signal = their_signal  # type: ignore[attr-defined]
        signal.signal(signal.SIGINT, previous)


def _cancel_all(interrupts: Interrupts) -> None:
    """Cancels every job until the sweep settles, its log silenced first: each cancelled write logs an
    error with its stack, and a JVM stopping with cancelled work prints stack traces of its own (dropped
    where its stderr goes through this process: a quiet sweep's). Once is not enough: a write makes its
    table's ``_temporary`` folder before it submits its job, and a cancel between the two finds no job
    and lets the whole write run (seen in CI)."""
    _JVM_STDERR_MUTED.set()
    spark = interrupts.session
    assert spark is not None
    try:
        spark.sparkContext.setLogLevel("OFF")
        while True:
            spark.sparkContext.cancelAllJobs()
            if interrupts.settled.wait(0.1):
                return
    except Exception as exc:  # noqa: BLE001 - the session may be stopping already: nothing more to cancel
        log.debug("cancelling the sweep's jobs: %s", exc)


#: The tables a sweep writes under its folder.
_TABLES = (output.METRICS, *(split.name for split in SPLITS), output.AGGREGATES)


def remove_tables(spark: SparkSession, out: str) -> None:
    """Deletes every table a sweep writes under ``out`` (any Hadoop path): after an interrupted sweep, no
    table of it, nor one of an earlier sweep it had begun to replace, is left to look complete."""
    for name in _TABLES:
        _delete(spark, f"{out}/{name}")


def remove_tables_once_idle(
    interrupts: Interrupts, spark: SparkSession, out: str, settle: float = 1.0, timeout: float = 60.0
) -> None:
    """:func:`remove_tables` once the cancelled work is idle (:meth:`Interrupts.wait_until_idle`), and again
    while a table's folder comes back within ``settle`` seconds. Spark does not interrupt a cancelled
    task's thread (``spark.job.interruptOnCancel`` is false): the task stops at its next record, and one
    whose first record reaches its writer after the removal makes its table's folder again before it
    stops (seen in CI: the interrupted sweep left an empty ``metrics`` folder after it had removed its
    tables)."""
    if not removed_for_good(
        interrupts.wait_until_idle,
        lambda: remove_tables(spark, out),
        lambda: _any_table(spark, out),
        settle,
        timeout,
    ):
        log.warning("a table of the interrupted sweep came back for %.0f s: %s", timeout, out)


def removed_for_good(
    wait_idle: Callable[[float], None],
    remove: Callable[[], None],
    left: Callable[[], bool],
    settle: float,
    timeout: float,
) -> bool:
    """Waits for the work to be idle, removes, and does it again while something comes back (``left``)
    within ``settle`` seconds of a removal; whether nothing came back within ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        wait_idle(max(0.0, deadline - time.monotonic()))
        remove()
        quiet_until = min(time.monotonic() + settle, deadline)
        while time.monotonic() < quiet_until and not left():
            time.sleep(min(0.1, settle))
        if not left():
            return True
        if time.monotonic() >= deadline:
            return False


def _any_table(spark: SparkSession, out: str) -> bool:
    """Whether a folder of a sweep's table is under ``out`` (any Hadoop file system)."""
    return any(_found(spark, f"{out}/{name}") is not None for name in _TABLES)


def default_partitions(spark: SparkSession, runs: int) -> int:
    """Four tasks per core (load balance and progress), but at least ~50 runs per task."""
    cores = spark.sparkContext.defaultParallelism
    return max(1, min(cores * 4, runs // 50 or 1))


def run_sweep_spark(
    spark: SparkSession,
    grid: Grid,
    out: str,
    *,
    partitions: int | None = None,
    write_placements: bool = True,
    progress: ProgressCallback | None = None,
) -> SparkSweep:
    """Runs every (scenario, placer) of ``grid`` on the executors and writes ``out`` (any Hadoop path)."""
    started = time.perf_counter()
    total = grid.run_count
    # A run's failure simulations cost far more than its placement: count each as a run of its own.
    partitions = partitions or default_partitions(spark, total + grid.failover_count)
    sc = spark.sparkContext
    counter = sc.accumulator(0)
    schema = result_schema()
    todo = scenario_frame(spark, grid).repartition(partitions)
    results = todo.mapInArrow(
        partial(run_batches, configs=dict(grid.placer_configs), counter=counter, plan=grid.failover_plan),
        from_arrow_schema(schema),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    log.info(
        "sweep: %d runs (%d scenarios x %d placers) in %d tasks",
        total,
        grid.scenario_count,
        len(grid.placers),
        partitions,
    )
    ticker = Ticker(lambda: progress(min(counter.value, total), total)) if progress else None
    if ticker:
        ticker.start()
    try:
        metrics = results.select(*metrics_columns(schema))
        metrics.write.mode("overwrite").parquet(f"{out}/{output.METRICS}")
        if ticker:
            ticker.stop()
            ticker = None
        if progress:
            progress(total, total)
        tables: dict[str, DataFrame] = {output.METRICS: spark.read.parquet(f"{out}/{output.METRICS}")}
        for split in SPLITS:
            path = f"{out}/{split.name}"
            if split.name == output.PLACEMENTS and not write_placements:
                _delete(spark, path)  # a table left by an earlier sweep would not match this one
                continue
            results.select(*split.keys, F.inline(split.column)).write.mode("overwrite").parquet(path)
            tables[split.name] = spark.read.parquet(path)
        collected = {}
        for name, frame in aggregates.spark_aggregates(spark, tables).items():
            frame = frame.coalesce(1).cache()
            frame.write.mode("overwrite").parquet(f"{out}/{output.AGGREGATES}/{name}")
            collected[name] = frame.toArrow()
            frame.unpersist()
    finally:
        if ticker:
            ticker.stop()
        results.unpersist()
    return SparkSweep(
        out=out,
        runs=total,
        scenarios=grid.scenario_count,
        partitions=partitions,
        seconds=time.perf_counter() - started,
        tables=tables,
        aggregates=collected,
    )
