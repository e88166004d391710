"""The exactly-once streaming sink: Kafka transactions committed by the driver after a durable decision.

Per micro-batch:

1. Each task takes the transactional id ``weir-sink-<query>-<partition id>``
   (stable across attempts and restarts, so a task fences its predecessor and
   aborts whatever that one left open), writes its rows in a transaction with
   the client's transactional Producer (every ``kafka.*`` producer option
   applies), prepares it (``prepare_transaction``: flushed, left open) and
   returns (transactional id, producer id, epoch) without EndTxn.
   A task of a batch id the decision log already holds writes nothing (Spark
   runs a batch again when the driver died before recording it as done).
2. The driver's ``commit`` writes the decision ``{"batch", "state": "commit",
   "txns"}`` to the decision log, then commits every transaction by EndTxn with
   the reported producer id and epoch (``complete_prepared_transaction``), then
   writes ``{"batch", "state": "done"}``.

Recovery: ``commit`` first rolls forward a batch that was decided but not done
(EndTxn commit is answered with success when it already completed with that
epoch, so repeating it is harmless: at transaction version 1 the epoch is
unchanged, at version 2 the coordinator bumped it by one and takes the repeat
as a retry; nothing else touched those ids, since the replayed batch's tasks
wrote nothing). When a query (re)starts, the writer
Spark plans before running any task also fences every transactional id the
query may have used (InitProducerId), so transactions of an undecided batch
are aborted at once instead of holding back the last stable offset until they
time out. Fencing covers the ids up to the largest task count or probe recorded,
then probes upward until an id nobody held (epoch 0) and records how far it went
("probed"). The probe itself claims that last id, so each driver start widens
the range by one id: bounded by restarts, and harmless. Recovery runs once per
planning process: Spark plans every micro-batch of a query in the same Python
worker, and batches after the first recovery ran one after the other.

Spark creates a stream writer both when planning (a fresh DataSource) and
for every commit (a DataSource unpickled by its commit runner); fencing may
only happen in the first, or it would abort the batch being committed, so
``WeirDataSource`` tells the writer which one it is.

Timing (``kafka.transaction.timeout.ms``, Kafka's default 60000, at most the
broker's transaction.max.timeout.ms, else InitProducerId fails with
INVALID_TRANSACTION_TIMEOUT when the query starts): a task's transaction must
outlive the rest of its micro-batch (the slowest task, the decision and the
EndTxns) and, after a crash between decision and commits, the time until the
restarted query commits it. Otherwise the coordinator aborts a decided
transaction and the roll-forward fails with ``TransactionLostError`` (the
query stops rather than lose data silently). So:

    transaction.timeout.ms > micro-batch duration + driver restart time

Transactions are open only while a batch runs, so a long trigger interval
with short batches is fine; but a query that keeps up finishes each batch
within its trigger interval, so the interval is the batch budget to plan with.
Two checks enforce the relation before anything is decided:

- at start (``check_transaction_timing``): ``weir.sink.restartAllowanceMs``
  (default 10000, the time reserved for a driver restart: set it to the
  real one, a cluster driver takes longer) must leave room in
  the timeout, and so must it plus ``weir.sink.triggerIntervalMs`` when a job
  names its trigger interval (the sink cannot see Spark's trigger itself);
- per batch, in ``commit``: if the oldest transaction of the batch has been
  open so long that the allowance no longer fits before the timeout, the batch
  is aborted, not decided, and the query fails with ``TransactionTimingError``
  naming the settings: a decision it might not be able to honour after a
  restart would otherwise turn a slow batch into lost output.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from weir.client import PreparedTxnState, Producer, complete_prepared_transaction, fence_transactional_id
from weir.client.cluster import Cluster
from weir.client.errors import BrokerResponseError
from weir.protocol.errors import Errors

from .decisions import COMMIT, DEFAULT_TOPIC, DONE, DecisionLog
from .options import OptionError
from .sink import WriteSettings, send_batches

if TYPE_CHECKING:
    import pyarrow as pa

# Fault injection for the crash tests: after writing a decision, write the batch id to this file and
# block until the process is killed, so a test can kill -9 the driver exactly between decision and commits;
# with HOLD_FROM_BATCH, only once the batch id has reached that number.
HOLD_AFTER_DECISION = "WEIR_SINK_HOLD_AFTER_DECISION"
HOLD_FROM_BATCH = "WEIR_SINK_HOLD_FROM_BATCH"
RESTART_ALLOWANCE_OPTION = "weir.sink.restartAllowanceMs"
TRIGGER_INTERVAL_OPTION = "weir.sink.triggerIntervalMs"
DEFAULT_RESTART_ALLOWANCE_MS = 10000  # a driver restarted at once, as in local runs; set the real figure
# The local property MicroBatchExecution sets for the tasks of a micro-batch.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
# Queries whose recovery ran in this (planning) process: Spark plans every micro-batch in the same
# worker, and after the first recovery the query's batches ran one after the other.
_RECOVERED: set[str] = set()


class TransactionLostError(RuntimeError):
    """A decided transaction can no longer be committed (it timed out and was aborted)."""


class TransactionTimingError(OptionError):
    """``kafka.transaction.timeout.ms`` leaves no room for a batch plus a driver restart."""


def check_transaction_timing(transaction_timeout_ms: int, restart_allowance_ms: int,
                             trigger_interval_ms: int | None = None) -> None:
    """Fail fast on settings under which a decided batch could be aborted by the coordinator."""
    if restart_allowance_ms < 0 or transaction_timeout_ms <= restart_allowance_ms:
        raise TransactionTimingError(
            f"kafka.transaction.timeout.ms ({transaction_timeout_ms}) must exceed {RESTART_ALLOWANCE_OPTION} "
            f"({restart_allowance_ms}), the time a crashed driver has to restart and commit a decided batch")
    if trigger_interval_ms is not None and trigger_interval_ms + restart_allowance_ms >= transaction_timeout_ms:
        raise TransactionTimingError(
            f"kafka.transaction.timeout.ms ({transaction_timeout_ms}) must exceed the trigger interval "
            f"({trigger_interval_ms}) plus {RESTART_ALLOWANCE_OPTION} ({restart_allowance_ms}): a batch that takes "
            "its whole interval and then a driver restart must both fit before the coordinator aborts its "
            "transactions (the broker allows up to transaction.max.timeout.ms, 900000 by default)")


class TxnCommitMessage(WriterCommitMessage):
    def __init__(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: int,
                 records: int, started_ms: int = -1):
        self.started_ms = started_ms  # wall clock when the task took its transactional id, -1 if it wrote nothing
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.partitions = partitions
        self.records = records


class ExactlyOnceStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: dict[str, str], schema, query_key: str, *, planning: bool):
        self.settings = WriteSettings(options, schema)
        self.prefix = f"weir-sink-{query_key}"
        self.transaction_timeout_ms = self.settings.producer.setdefault("transaction_timeout_ms", 60000)
        self.restart_allowance_ms = int(options.get(RESTART_ALLOWANCE_OPTION.lower(),
                                                    str(DEFAULT_RESTART_ALLOWANCE_MS)))
        trigger = options.get(TRIGGER_INTERVAL_OPTION.lower())
        check_transaction_timing(self.transaction_timeout_ms, self.restart_allowance_ms,
                                 None if trigger is None else int(trigger))
        self.log = DecisionLog(self.settings.bootstrap, options.get("weir.sink.decisionstopic", DEFAULT_TOPIC),
                               query_key, self.settings.security)
        if planning:
            asyncio.run(self.recover())

    def transactional_id(self, task: int) -> str:
        return f"{self.prefix}-{task}"

    # ------------------------------------------------------------------ tasks

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TxnCommitMessage:
        context = TaskContext.get()
        if context is None:
            raise RuntimeError("the exactly-once writer's write() runs in a Spark task only")
        batch_id = context.getLocalProperty(BATCH_ID_PROPERTY)
        if batch_id is None:
            raise RuntimeError(f"Spark did not tell the task its micro-batch ({BATCH_ID_PROPERTY})")
        return asyncio.run(self._write(context.partitionId(), int(batch_id), iterator))

    async def _write(self, task: int, batch_id: int, batches: Iterable[pa.RecordBatch]) -> TxnCommitMessage:
        latest = await self.log.latest()
        if latest is not None and batch_id <= latest["batch"]:
            # Decided before: its transactions are (or will be rolled forward) committed. Writing nothing
            # also leaves their ids alone, so the roll-forward's epochs stay valid.
            return TxnCommitMessage(self.transactional_id(task), -1, -1, 0, 0)
        transactional_id = self.transactional_id(task)
        started_ms = int(time.time() * 1000)
        # start() fences the id's earlier holders
        async with Producer(self.settings.bootstrap, transactional_id=transactional_id,
                            **self.settings.producer, **self.settings.security.keywords()) as producer:
            producer.begin_transaction()
            deliveries, written = await send_batches(producer, self.settings.topic, batches)
            prepared = await producer.prepare_transaction()  # raises what made the transaction abortable
            for delivery in deliveries:
                delivery.result()  # all settled by the prepare's flush; no failure is left unretrieved
            assert producer.transaction_manager is not None  # a producer with a transactional id has one
            partitions = len(producer.transaction_manager.partitions)
        # close() leaves a prepared transaction open: the driver ends it
        return TxnCommitMessage(transactional_id, prepared.producer_id, prepared.producer_epoch, partitions,
                                written, started_ms)

    # ------------------------------------------------------------------ driver

    def commit(self, messages, batchId: int) -> None:
        asyncio.run(self._commit([m for m in messages if m is not None], batchId))

    async def _commit(self, messages: list[TxnCommitMessage], batch_id: int) -> None:
        latest = await self.log.latest()
        if latest is not None and latest["state"] == COMMIT:
            await self._roll_forward(latest)
        if latest is not None and batch_id <= latest["batch"]:
            # Spark runs a batch again whose decision was already taken: its new writes must not show.
            await self._end_all(messages, commit=False)
            return
        await self._check_batch_age(messages, batch_id)
        decision = {"batch": batch_id, "state": COMMIT, "tasks": len(messages),
                    "probed": latest.get("probed", 0) if latest is not None else 0,
                    "txns": [[m.transactional_id, m.producer_id, m.producer_epoch] for m in messages if m.partitions]}
        await self.log.write(decision)
        # Read it back: if another run of this query (same checkpoint) decided meanwhile, do not commit.
        if await self.log.latest() != decision:
            await self._end_all(messages, commit=False)
            raise RuntimeError(f"batch {batch_id}: another run of this query wrote to the decision log; "
                               "two drivers share one checkpoint")
        _hold_if_asked(batch_id)
        await self._roll_forward(decision)

    async def _check_batch_age(self, messages: list[TxnCommitMessage], batch_id: int) -> None:
        """Refuse to decide a batch whose transactions may time out before a restarted driver commits them.
        Task clocks are wall clocks: on a cluster this assumes them synchronised (NTP) to well under the
        allowance."""
        started = [m.started_ms for m in messages if m.partitions and m.started_ms >= 0]
        if not started:
            return
        age_ms = int(time.time() * 1000) - min(started)
        if age_ms + self.restart_allowance_ms < self.transaction_timeout_ms:
            return
        await self._end_all(messages, commit=False)
        raise TransactionTimingError(
            f"batch {batch_id} kept its transactions open {age_ms} ms; with {RESTART_ALLOWANCE_OPTION} "
            f"({self.restart_allowance_ms}) that reaches kafka.transaction.timeout.ms "
            f"({self.transaction_timeout_ms}), so a driver crash after the decision could lose the batch. "
            "It was aborted, not decided: raise kafka.transaction.timeout.ms or make batches smaller "
            "(maxOffsetsPerTrigger)")

    def abort(self, messages, batchId: int) -> None:
        """A task failed: abort what the others wrote (fencing at the next run would abort it too)."""
        asyncio.run(self._end_all([m for m in messages if m is not None], commit=False))

    async def _end_all(self, messages: list[TxnCommitMessage], *, commit: bool) -> list[int]:
        """End the tasks' prepared transactions; each one's error code (0 when it ended as asked)."""
        return await self._end([(m.transactional_id, m.producer_id, m.producer_epoch) for m in messages
                                if m.partitions], commit=commit)

    async def _end(self, txns, *, commit: bool) -> list[int]:
        async def end(cluster, txn_id, producer_id, epoch) -> int:
            try:
                await complete_prepared_transaction(cluster, txn_id, PreparedTxnState(producer_id, epoch),
                                                    commit=commit)
            except BrokerResponseError as failed:
                return failed.code
            return Errors.NONE
        cluster = Cluster(self.settings.bootstrap, security=self.settings.security.client())
        try:
            await cluster.refresh([])
            return await asyncio.gather(*(end(cluster, *txn) for txn in txns))
        finally:
            await cluster.close()

    async def _roll_forward(self, decision: dict) -> None:
        """Commit every transaction of a decided batch, then mark the batch done."""
        codes = await self._end(decision["txns"], commit=True)
        lost = [txn[0] for txn, code in zip(decision["txns"], codes, strict=True) if code != Errors.NONE]
        if lost:
            raise TransactionLostError(
                f"batch {decision['batch']} was decided but transactions {lost} could not be committed "
                f"(errors {[Errors(c).name for c in codes if c]}): they outlived kafka.transaction.timeout.ms "
                "and were aborted by the coordinator; raise the timeout above the batch duration plus restart time")
        done = {"batch": decision["batch"], "state": DONE, "tasks": decision["tasks"],
                "probed": decision.get("probed", 0)}
        await self.log.write(done)

    async def recover(self) -> None:
        """Roll a decided batch forward, then fence and abort whatever the query's tasks left open."""
        if self.prefix in _RECOVERED:
            return  # this planning process already recovered the query; since then Spark ran batches in order
        latest = await self.log.latest()
        if latest is not None and latest["state"] == COMMIT:
            await self._roll_forward(latest)
            latest = await self.log.latest()
        bound = max(latest.get("tasks", 0), latest.get("probed", 0)) if latest is not None else 0
        cluster = Cluster(self.settings.bootstrap, security=self.settings.security.client())
        try:
            await cluster.refresh([])
            task = 0
            while True:
                claimed = await fence_transactional_id(cluster, self.transactional_id(task),
                                                       transaction_timeout_ms=self.transaction_timeout_ms)
                task += 1
                if claimed.producer_epoch == 0 and task >= bound:
                    break
        finally:
            await cluster.close()
        if latest is not None and task > bound:
            # Remember how far ids were claimed, so the next recovery fences them without probing further.
            await self.log.write({**latest, "probed": task})
        _RECOVERED.add(self.prefix)


def _hold_if_asked(batch_id: int) -> None:
    marker = os.environ.get(HOLD_AFTER_DECISION)
    if marker and batch_id >= int(os.environ.get(HOLD_FROM_BATCH, "0")):
        with open(marker, "w") as out:
            out.write(str(batch_id))
        threading.Event().wait()  # until kill -9


