"""The exactly-once streaming sink: Kafka transactions committed by the driver after a durable decision.

Per micro-batch:

1. Each task takes the transactional id ``weir-sink-<query>-<partition id>``
   (stable across attempts and restarts, so a task fences its predecessor and
   aborts whatever that one left open), writes its rows in a transaction,
   flushes, and returns (transactional id, producer id, epoch) without EndTxn.
2. The driver's ``commit`` writes the decision ``{"batch", "state": "commit",
   "txns"}`` to the decision log, then commits every transaction by EndTxn with
   the reported producer id and epoch, then writes ``{"batch", "state": "done"}``.

Recovery, when the writer is created for a (re)started query and before any
task of it runs: a batch decided but not done is rolled forward (EndTxn commit
is answered with success when it already completed with that epoch); then
every transactional id the query may have used is fenced (InitProducerId),
which aborts transactions of an undecided batch instead of leaving them to
hold back the last stable offset until they time out. Probing stops at the
first id that nobody held (epoch 0) beyond the task count of the newest batch
(each recovery thus claims one unused id: harmless). A batch id Spark runs
again after its decision (its commit log lost the batch) is aborted whole.

Timing (``kafka.transaction.timeout.ms``, Kafka's default 60000, at most the
broker's transaction.max.timeout.ms): a task's transaction must outlive the
rest of its micro-batch (the slowest task, the decision and the EndTxns) and,
after a crash between decision and commits, the time until the restarted
query's recovery commits it. Otherwise the coordinator aborts a decided
transaction and the roll-forward fails with ``TransactionLostError`` (the
query stops rather than lose data silently). So: transaction.timeout.ms >
longest micro-batch duration + driver restart time; a trigger interval longer
than that timeout is fine, because transactions are open only while a batch
runs.
"""

from __future__ import annotations

import asyncio
import os
import threading

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from client.cluster import Cluster
from protocol.errors import Errors

from .decisions import COMMIT, DEFAULT_TOPIC, DONE, DecisionLog
from .rows import records
from .sink import WriteSettings
from .transactions import TransactionalWriter, end_transaction, init_producer_id

# Fault injection for the crash test: after writing a decision, write the batch id to this file and
# block until the process is killed, so a test can kill -9 the driver exactly between decision and commits.
HOLD_AFTER_DECISION = "WEIR_SINK_HOLD_AFTER_DECISION"


class TransactionLostError(RuntimeError):
    """A decided transaction can no longer be committed (it timed out and was aborted)."""


class TxnCommitMessage(WriterCommitMessage):
    def __init__(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: int,
                 records: int):
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.partitions = partitions
        self.records = records


class ExactlyOnceStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: dict[str, str], schema, query_key: str):
        self.settings = WriteSettings(options, schema)
        self.prefix = f"weir-sink-{query_key}"
        self.transaction_timeout_ms = int(options.get("kafka.transaction.timeout.ms", "60000"))
        self.batch_size = int(options.get("kafka.batch.size", "16384"))
        self.log = DecisionLog(self.settings.bootstrap, options.get("weir.sink.decisionstopic", DEFAULT_TOPIC),
                               query_key)
        self._latest: dict | None = None
        asyncio.run(self.recover())

    def transactional_id(self, task: int) -> str:
        return f"{self.prefix}-{task}"

    # ------------------------------------------------------------------ tasks

    def write(self, iterator) -> TxnCommitMessage:
        return asyncio.run(self._write(TaskContext.get().partitionId(), iterator))

    async def _write(self, task: int, batches) -> TxnCommitMessage:
        cluster = Cluster(self.settings.bootstrap)
        try:
            writer = TransactionalWriter(cluster, self.transactional_id(task),
                                         transaction_timeout_ms=self.transaction_timeout_ms,
                                         batch_size=self.batch_size)
            await writer.begin()
            for topic, partition, key, value, headers, timestamp in records(batches, self.settings.topic):
                await writer.append(topic, partition, key, value, headers, timestamp)
            await writer.flush()
            return TxnCommitMessage(writer.transactional_id, writer.producer_id, writer.producer_epoch,
                                    len(writer.partitions), writer.records)
        finally:
            await cluster.close()

    # ------------------------------------------------------------------ driver

    def commit(self, messages, batchId: int) -> None:
        asyncio.run(self._commit([m for m in messages if m is not None], batchId))

    async def _commit(self, messages: list[TxnCommitMessage], batch_id: int) -> None:
        latest = self._latest if self._latest is not None else await self.log.latest()
        if latest is not None and latest["state"] == COMMIT:
            await self._roll_forward(latest)
            latest = self._latest
        if latest is not None and batch_id <= latest["batch"]:
            # Spark runs a batch again whose decision was already taken: its new writes must not show.
            await self._end_all(messages, commit=False)
            return
        decision = {"batch": batch_id, "state": COMMIT, "tasks": len(messages),
                    "txns": [[m.transactional_id, m.producer_id, m.producer_epoch] for m in messages if m.partitions]}
        await self.log.write(decision)
        self._latest = decision
        _hold_if_asked(batch_id)
        await self._roll_forward(decision)

    def abort(self, messages, batchId: int) -> None:
        """A task failed: abort what the others wrote (fencing at the next run would abort it too)."""
        asyncio.run(self._end_all([m for m in messages if m is not None], commit=False))

    async def _end_all(self, messages: list[TxnCommitMessage], *, commit: bool) -> None:
        cluster = Cluster(self.settings.bootstrap)
        try:
            await cluster.refresh([])
            await asyncio.gather(*(end_transaction(cluster, m.transactional_id, m.producer_id, m.producer_epoch,
                                                   commit) for m in messages if m.partitions))
        finally:
            await cluster.close()

    async def _roll_forward(self, decision: dict) -> None:
        """Commit every transaction of a decided batch, then mark the batch done."""
        cluster = Cluster(self.settings.bootstrap)
        try:
            await cluster.refresh([])
            codes = await asyncio.gather(*(end_transaction(cluster, txn_id, producer_id, epoch, True)
                                           for txn_id, producer_id, epoch in decision["txns"]))
        finally:
            await cluster.close()
        lost = [txn[0] for txn, code in zip(decision["txns"], codes) if code != Errors.NONE]
        if lost:
            raise TransactionLostError(
                f"batch {decision['batch']} was decided but transactions {lost} could not be committed "
                f"(errors {[Errors(c).name for c in codes if c]}): they outlived kafka.transaction.timeout.ms "
                "and were aborted by the coordinator; raise the timeout above the batch duration plus restart time")
        done = {"batch": decision["batch"], "state": DONE, "tasks": decision["tasks"]}
        await self.log.write(done)
        self._latest = done

    async def recover(self) -> None:
        """Roll a decided batch forward, then fence and abort whatever the query's tasks left open."""
        latest = await self.log.latest()
        self._latest = latest
        if latest is not None and latest["state"] == COMMIT:
            await self._roll_forward(latest)
        known_tasks = latest["tasks"] if latest is not None else 0
        cluster = Cluster(self.settings.bootstrap)
        try:
            await cluster.refresh([])
            task = 0
            while True:
                _producer_id, epoch = await init_producer_id(cluster, self.transactional_id(task),
                                                             self.transaction_timeout_ms)
                if epoch == 0 and task >= known_tasks:
                    break
                task += 1
        finally:
            await cluster.close()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_latest"] = None  # the driver's cache; the commit side reads the log once if it has none
        return state


def _hold_if_asked(batch_id: int) -> None:
    marker = os.environ.get(HOLD_AFTER_DECISION)
    if marker:
        with open(marker, "w") as out:
            out.write(str(batch_id))
        threading.Event().wait()  # until kill -9


