"""The transaction coordinator: one ``TxnMetadata`` per transactional id.

Every change is first a record in ``__transaction_state`` (partition = hash of
the transactional id); ``replay`` alone installs it, and start-up replays the
topic, then finishes any commit or abort found half done. Semantics follow
Kafka's coordinator (PROTOCOL.md 4.4-4.6), at the transaction version each
client's requests speak, as Kafka decides it per request: version 1 for EndTxn
up to v4, version 2 (KIP-890 part 2) from EndTxn v5, Produce v12 and
TxnOffsetCommit v5, so librdkafka's TV1 producers and Java's TV2 ones share it.

- EndTxn persists PrepareCommit/PrepareAbort, answers the client, then a
  completion task writes the markers and persists CompleteCommit/CompleteAbort.
  At version 2 the prepare bumps the epoch (or, exhausted, draws the next
  producer id), the markers carry the bumped epoch, and the answer names it.
- A write in flight for an id makes other requests for it fail with
  CONCURRENT_TRANSACTIONS, as Kafka's pending transitions do. One deliberate
  difference: a request arriving while a completion is still writing markers
  waits for that completion (a few local appends) and is then handled, where
  Kafka answers CONCURRENT_TRANSACTIONS and the client retries after a backoff.
  The outcome is the one the retry would get; only the round trip is saved.
- An Ongoing transaction past its timeout, or one whose transactional id is
  re-initialised, is fenced and aborted at the broker's finalized
  transaction.version (``transaction_version``), as Kafka does: at version 1
  the producer's own abort at its old epoch is PRODUCER_FENCED (the Java
  producer then needs a new instance); at version 2 it is the retry of an
  epoch-bumping abort, answered with the new epoch, and the producer carries on.
"""

from __future__ import annotations

import asyncio
import logging

from weir.protocol.errors import Errors, KafkaError

from ..coordinator.runtime import CoordinatorLog
from ..features import TRANSACTION_VERSION
from ..group.offsets import OFFSETS_TOPIC
from .markers import COORDINATOR_EPOCH, until_written, write_markers_until_written
from . import version2
from .state import COMPLETE, MAX_EPOCH, PREPARING, TV2, TxnMetadata, TxnState, decode_key, encode_key

log = logging.getLogger(__name__)

TXN_TOPIC = "__transaction_state"
NO_EPOCH = -1
NO_PRODUCER_ID = -1
_IMPLICIT_ADD_ROUNDS = 5
# A request waits this long for a completion in flight (markers are retried while the disk fails),
# then gets CONCURRENT_TRANSACTIONS, Kafka's answer while markers are pending, and retries.
SETTLE_WAIT_S = 1.0


class TransactionCoordinator:
    def __init__(self, context):
        self.context = context
        self.config = context.config
        self.clock = context.clock
        self.log = CoordinatorLog(context.logs, TXN_TOPIC, self.config["transaction.state.log.num.partitions"])
        self.txns: dict[str, TxnMetadata] = {}
        self._pending: dict[str, TxnState] = {}  # ids with a record write in flight
        self._writes: dict[str, asyncio.Future] = {}  # the same writes, to wait for
        self._completions: dict[str, asyncio.Task] = {}
        self._tasks: list[asyncio.Task] = []

    @property
    def transaction_version(self) -> int:
        """The broker's finalized transaction.version: the version of the aborts the coordinator
        starts itself (timeouts, a re-initialised id), as Kafka's use their own level."""
        return self.context.features.level(TRANSACTION_VERSION)

    # ------------------------------------------------------------------ replay

    def load(self) -> None:
        # The last record of a key decides its state (replay only sets or removes): keep the last
        # value per raw key, as compaction would, and decode only those.
        latest: dict[bytes, bytes | None] = {}
        count = 0
        for entry in self.log.replay():
            if entry.key is not None:
                latest[entry.key] = entry.value
                count += 1
        for key, value in latest.items():
            txn_id = decode_key(key)
            if txn_id is not None:
                self.replay(txn_id, None if value is None else TxnMetadata.from_record(txn_id, value))
        if count:
            log.info("transaction coordinator: replayed %d record(s), %d transactional id(s)", count, len(self.txns))

    def replay(self, txn_id: str, metadata: TxnMetadata | None) -> None:
        if metadata is None or metadata.state == TxnState.DEAD:
            self.txns.pop(txn_id, None)
        else:
            self.txns[txn_id] = metadata

    async def _persist(self, target: TxnMetadata) -> None:
        txn_id = target.transactional_id
        value = None if target.state == TxnState.DEAD else target.value_bytes()
        self._pending[txn_id] = target.state
        written = self._writes[txn_id] = asyncio.get_running_loop().create_future()
        try:
            await self.log.append(self.log.partition_for(txn_id), [(encode_key(txn_id), value)], self.clock.now_ms())
        finally:
            del self._pending[txn_id], self._writes[txn_id]
            written.set_result(None)
        self.replay(txn_id, target)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        for metadata in self.txns.values():
            if metadata.state in PREPARING:
                log.info("completing %s of %r left by the previous run", metadata.state.name,
                         metadata.transactional_id)
                self._complete_later(metadata)
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._every(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms", self.abort_timed_out)))
        self._tasks.append(loop.create_task(self._every(
            "transaction.remove.expired.transaction.cleanup.interval.ms", self.expire_transactional_ids)))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        completions = list(self._completions.values())
        if completions:  # one retrying on a failed disk is left Prepare*: the next start completes it
            _done, retrying = await asyncio.wait(completions, timeout=SETTLE_WAIT_S)
            for task in retrying:
                task.cancel()
            await asyncio.gather(*completions, return_exceptions=True)

    async def _every(self, setting: str, job) -> None:
        while True:
            await self.clock.sleep(self.config[setting] / 1000)
            try:
                await job()
            except KafkaError as exc:  # a write that failed on the disk (logged there): next round
                log.debug("transaction coordinator job %s: %s", job.__name__, exc)
            except Exception:  # a background job must survive one bad round
                log.exception("transaction coordinator job %s failed", job.__name__)

    # ------------------------------------------------------------------ requests

    async def init_producer_id(self, txn_id: str, timeout_ms: int, expected_id: int = -1,
                               expected_epoch: int = NO_EPOCH) -> tuple[int, int]:
        if not txn_id:
            raise KafkaError(Errors.INVALID_REQUEST, "transactional id must not be empty")
        if not 0 < timeout_ms <= self.config["transaction.max.timeout.ms"]:
            raise KafkaError(Errors.INVALID_TRANSACTION_TIMEOUT,
                             f"transaction timeout {timeout_ms} ms is not in (0, transaction.max.timeout.ms]")
        while True:
            metadata = await self._settled(txn_id)
            now = self.clock.now_ms()
            if metadata is None:
                metadata = TxnMetadata(txn_id, self.context.producer_ids.allocate(), timeout_ms=timeout_ms,
                                       last_update_ms=now)
            if expected_id >= 0 and not _may_recover(metadata, expected_id, expected_epoch):
                raise KafkaError(Errors.PRODUCER_FENCED, "a newer producer owns this transactional id")
            if metadata.state == TxnState.ONGOING:
                log.info("aborting the open transaction of %r (producer %d, epoch %d): the id was initialised "
                         "again", txn_id, metadata.producer_id, metadata.producer_epoch)
                await self._fence_and_abort(metadata)  # the old producer's transaction; then bump below
                continue
            if metadata.state in PREPARING:
                self._complete_later(metadata)
                raise KafkaError(Errors.CONCURRENT_TRANSACTIONS)
            target = _bump_epoch(metadata, expected_epoch, timeout_ms, now, self.context.producer_ids.allocate)
            await self._persist(target)
            return target.producer_id, target.producer_epoch

    async def add_partitions(self, txn_id: str, producer_id: int, epoch: int,
                             partitions: set[tuple[str, int]], client_version: int = 0) -> None:
        """AddPartitionsToTxn / AddOffsetsToTxn, or (``client_version`` 2) the implicit add of a
        Produce v12 or TxnOffsetCommit v5; the transaction runs at the version that added last,
        as Kafka's prepareAddPartitions records the client's version."""
        metadata = await self._checked(txn_id, producer_id, epoch)
        if metadata.state in PREPARING:
            raise KafkaError(Errors.CONCURRENT_TRANSACTIONS)
        if metadata.state == TxnState.ONGOING and partitions <= metadata.partitions:
            return
        now = self.clock.now_ms()
        start = now if metadata.state in COMPLETE else metadata.start_ms
        await self._persist(metadata.transition_to(TxnState.ONGOING, partitions=metadata.partitions | partitions,
                                                   start_ms=start, last_update_ms=now,
                                                   client_version=client_version))

    async def end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool,
                      client_version: int = 0) -> tuple[int, int]:
        """EndTxn; returns the producer id and epoch a TV2 client goes on with ((-1, -1) for TV1)."""
        if client_version >= TV2:
            return await self._end_txn_v2(txn_id, producer_id, epoch, commit)
        metadata = await self._checked(txn_id, producer_id, epoch)
        state = metadata.state
        if state == TxnState.ONGOING:
            target = metadata.transition_to(TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                                            last_update_ms=self.clock.now_ms(), client_version=client_version)
            await self._persist(target)
            self._complete_later(target)
            return NO_PRODUCER_ID, NO_EPOCH
        if state == (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT):
            return NO_PRODUCER_ID, NO_EPOCH  # a retry of the EndTxn that completed it
        if state == (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT):
            raise KafkaError(Errors.CONCURRENT_TRANSACTIONS)
        raise KafkaError(Errors.INVALID_TXN_STATE,
                         f"cannot {'commit' if commit else 'abort'} in state {state.name}")

    async def _end_txn_v2(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> tuple[int, int]:
        if not txn_id:
            raise KafkaError(Errors.INVALID_REQUEST, "transactional id must not be empty")
        outcome = version2.end_txn(await self._settled(txn_id), producer_id, epoch, commit, self.clock.now_ms(),
                                   self.context.producer_ids.allocate)
        if isinstance(outcome, TxnMetadata):
            await self._persist(outcome)
            self._complete_later(outcome)
            return version2.completed_identity(outcome)
        return outcome

    async def add_partitions_implicitly(self, txn_id: str | None, producer_id: int, epoch: int,
                                        partitions: set[tuple[str, int]]) -> None:
        """The add a Produce v12 or TxnOffsetCommit v5 makes for its transaction (KIP-890 part 2).

        A record write in flight for the id (another request's add) is waited for and the add
        tried again, where Kafka's ReplicaManager retries CONCURRENT_TRANSACTIONS for these
        requests every 20 ms for up to 100 ms; a few rounds bound it here too."""
        for _ in range(_IMPLICIT_ADD_ROUNDS):
            try:
                return await self.add_partitions(txn_id or "", producer_id, epoch, partitions, client_version=TV2)
            except KafkaError as exc:
                write = self._writes.get(txn_id or "")
                if exc.error != Errors.CONCURRENT_TRANSACTIONS or write is None:
                    raise
            await asyncio.wait([write])
        raise KafkaError(Errors.CONCURRENT_TRANSACTIONS)

    def verify_partition(self, txn_id: str | None, producer_id: int, epoch: int, topic: str, index: int) -> None:
        """Is (topic, index) in this producer's ongoing transaction? (KIP-890 part 1)

        The answers Kafka's broker gives a producer: an unknown id or another producer's is
        INVALID_PRODUCER_ID_MAPPING, any other epoch INVALID_PRODUCER_EPOCH (the coordinator
        says PRODUCER_FENCED, which producers of these versions know by that name).
        """
        metadata = self.txns.get(txn_id) if txn_id else None
        if metadata is None or metadata.producer_id != producer_id:
            raise KafkaError(Errors.INVALID_PRODUCER_ID_MAPPING, "no such producer for this transactional id")
        if epoch != metadata.producer_epoch:
            raise KafkaError(Errors.INVALID_PRODUCER_EPOCH, f"epoch {epoch} is not the current epoch")
        if metadata.state != TxnState.ONGOING or (topic, index) not in metadata.partitions:
            raise KafkaError(Errors.INVALID_TXN_STATE,
                             f"{topic}-{index} is not in an ongoing transaction of this producer")

    def verifier(self, txn_id: str | None, topic: str, index: int):
        """``verify_partition`` bound to one partition, as the append paths take it."""
        def verify(header) -> None:
            self.verify_partition(txn_id, header.producer_id, header.producer_epoch, topic, index)
        return verify

    def offsets_partition(self, group_id: str) -> tuple[str, int]:
        return OFFSETS_TOPIC, self.context.offsets.log.partition_for(group_id)

    # ------------------------------------------------------------------ background

    async def abort_timed_out(self) -> int:
        """Fence and abort every Ongoing transaction past its transaction.timeout.ms."""
        aborted = 0
        for txn_id in list(self.txns):
            metadata = self.txns.get(txn_id)
            if metadata is None or txn_id in self._pending or txn_id in self._completions:
                continue
            if metadata.state == TxnState.ONGOING and metadata.start_ms + metadata.timeout_ms < self.clock.now_ms():
                log.info("aborting transaction of %r (producer %d): open longer than %d ms", txn_id,
                         metadata.producer_id, metadata.timeout_ms)
                await self._fence_and_abort(metadata)
                aborted += 1
            elif metadata.state in PREPARING:  # a completion that failed earlier
                self._complete_later(metadata)
        return aborted

    async def expire_transactional_ids(self) -> int:
        """Remove ids idle past transactional.id.expiration.ms (a tombstone in the log)."""
        expiration = self.config["transactional.id.expiration.ms"]
        expired = 0
        for txn_id in list(self.txns):
            metadata = self.txns.get(txn_id)
            if metadata is None or txn_id in self._pending or metadata.state not in COMPLETE:
                continue
            now = self.clock.now_ms()
            if metadata.last_update_ms + expiration <= now:
                await self._persist(metadata.transition_to(TxnState.DEAD, last_update_ms=now))
                expired += 1
        if expired:
            log.info("expired %d transactional id(s)", expired)
        return expired

    # ------------------------------------------------------------------ internals

    async def _settled(self, txn_id: str) -> TxnMetadata | None:
        """The id's metadata once a completion in flight has finished."""
        task = self._completions.get(txn_id)
        if task is not None:
            await asyncio.wait([task], timeout=SETTLE_WAIT_S)  # never cancels the completion itself
            if not task.done():
                raise KafkaError(Errors.CONCURRENT_TRANSACTIONS)
        if txn_id in self._pending:
            raise KafkaError(Errors.CONCURRENT_TRANSACTIONS)
        return self.txns.get(txn_id)

    async def _checked(self, txn_id: str, producer_id: int, epoch: int) -> TxnMetadata:
        if not txn_id:
            raise KafkaError(Errors.INVALID_REQUEST, "transactional id must not be empty")
        metadata = await self._settled(txn_id)
        if metadata is None or metadata.producer_id != producer_id:
            raise KafkaError(Errors.INVALID_PRODUCER_ID_MAPPING,
                             "the producer id does not belong to this transactional id")
        if epoch != metadata.producer_epoch:
            raise KafkaError(Errors.PRODUCER_FENCED, "a newer producer epoch exists for this transactional id")
        return metadata

    async def _fence_and_abort(self, metadata: TxnMetadata) -> None:
        # Kafka aborts at the broker's finalized transaction.version, not the transaction's own.
        # At version 2 this is the epoch-bumping abort of any EndTxn: the fenced epoch stays the
        # last epoch, so the producer's own abort at its old epoch finds it done (a retry, one
        # epoch behind) and carries on, and an InitProducerId naming that epoch recovers it
        # (KIP-360); a new producer's InitProducerId without an epoch clears it for good.
        # At version 1 the fence forgets the last epoch (Kafka's prepareFenceProducerEpoch), so
        # the fenced producer's EndTxn and its InitProducerId naming its epoch are both
        # PRODUCER_FENCED (tests/reference/test_differential_recovery.py at both levels).
        if self.transaction_version >= TV2:
            target = version2.prepare_end(metadata, False, self.clock.now_ms(), self.context.producer_ids.allocate)
        else:
            epoch = metadata.producer_epoch if metadata.epoch_exhausted else metadata.producer_epoch + 1
            target = metadata.transition_to(TxnState.PREPARE_ABORT, producer_epoch=epoch,
                                            last_producer_epoch=NO_EPOCH, last_update_ms=self.clock.now_ms())
        await self._persist(target)
        self._complete_later(target)
        await asyncio.wait([self._completions[target.transactional_id]], timeout=SETTLE_WAIT_S)

    def _complete_later(self, prepared: TxnMetadata) -> None:
        txn_id = prepared.transactional_id
        if txn_id in self._completions:
            return
        task = asyncio.get_running_loop().create_task(self._complete(prepared))
        self._completions[txn_id] = task

        def finished(done: asyncio.Task) -> None:
            self._completions.pop(txn_id, None)
            if not done.cancelled() and done.exception() is not None:
                # The state stays Prepare*: the timeout job retries the completion.
                log.error("completing the transaction of %r failed: %r", txn_id, done.exception())

        task.add_done_callback(finished)

    async def _complete(self, prepared: TxnMetadata) -> None:
        commit = prepared.state == TxnState.PREPARE_COMMIT
        # Markers that failed on the disk are retried until written; otherwise a marker fails only
        # for a partition that no longer exists or a producer a newer epoch has fenced: neither
        # can be fixed by retrying, so the transaction completes.
        await write_markers_until_written(self.context, prepared.producer_id, prepared.producer_epoch,
                                          COORDINATOR_EPOCH, commit, sorted(prepared.partitions))
        producer_id, epoch = version2.completed_identity(prepared)
        rotated = producer_id != prepared.producer_id
        completed = prepared.transition_to(
            TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
            producer_id=producer_id, producer_epoch=epoch, next_producer_id=NO_PRODUCER_ID,
            previous_producer_id=prepared.producer_id if rotated else prepared.previous_producer_id,
            partitions=frozenset(), last_update_ms=self.clock.now_ms())
        await until_written(self.clock, lambda: self._persist(completed))



def _may_recover(metadata: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360: may a producer that names its id and epoch re-initialise?"""
    return (metadata.producer_epoch == NO_EPOCH or producer_id == metadata.producer_id
            or (producer_id == metadata.previous_producer_id and epoch >= MAX_EPOCH))


def _bump_epoch(metadata: TxnMetadata, expected_epoch: int, timeout_ms: int, now: int, allocate) -> TxnMetadata:
    """The Empty state InitProducerId leaves: epoch + 1, or a new producer id once exhausted."""
    common = dict(timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1, last_update_ms=now)
    if metadata.epoch_exhausted:
        return metadata.transition_to(TxnState.EMPTY, producer_id=allocate(), producer_epoch=0,
                                      last_producer_epoch=NO_EPOCH, previous_producer_id=metadata.producer_id,
                                      **common)
    bumped = metadata.producer_epoch + 1
    if expected_epoch == NO_EPOCH:
        epoch, last = bumped, NO_EPOCH
    elif metadata.producer_epoch == NO_EPOCH or expected_epoch == metadata.producer_epoch:
        epoch, last = bumped, metadata.producer_epoch
    elif expected_epoch == metadata.last_producer_epoch:
        epoch, last = metadata.producer_epoch, metadata.last_producer_epoch  # a retry of a bump that happened
    else:
        raise KafkaError(Errors.PRODUCER_FENCED, f"epoch {expected_epoch} is not the current epoch")
    return metadata.transition_to(TxnState.EMPTY, producer_epoch=epoch, last_producer_epoch=last, **common)
