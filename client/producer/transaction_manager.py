"""The transactional producer's state machine and its requests to the coordinators.

States and legal transitions are the Java client's (``TransactionManager.State``),
in one table, ``TRANSITIONS``; ``transition_to`` is the only place the state
changes. How an error answer moves the state is the Java client's too, in one
table (``error_policy.RULES``, read through ``classify``). Its requests go through the
cluster's call path to the coordinator, which retries every retriable answer
(CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, a lost
connection, ...) until ``max_block_ms``.

Transaction version (KIP-890 part 2), decided as the Java 4.x client decides it:
the finalized ``transaction.version`` of the cluster's ApiVersions (the highest
features epoch seen), read after InitProducerId and again as each transaction
ends, so a transaction runs at one version from begin to end. At version 1 the
sender asks for the partitions a send round needs with one AddPartitionsToTxn
per round (``add_partitions``) and offsets take AddOffsetsToTxn then
TxnOffsetCommit v3. At version 2 nothing is added by the client: Produce v12
and TxnOffsetCommit v5 add implicitly, and EndTxn v5 answers the producer id
and epoch the coordinator bumped, which the producer adopts (sequences restart
at 0), so a late write from the ended transaction is fenced. An upgrade seen as
a transaction ends bumps the epoch once by InitProducerId (the Java client's
clientSideEpochBumpRequired), so the first version-2 transaction starts on an
epoch no version-1 transaction used.

The Producer drives begin / commit / abort; the sender reports failed batches
(``batch_failed``).

Hand-off (KIP-939's shape): ``prepare`` leaves a flushed transaction open as
PREPARED_TRANSACTION and names it by ``PreparedTxnState`` (producer id, epoch);
another process ``adopt``s that state and ends the transaction with EndTxn.
Simplification: KIP-939 keeps the prepared transaction across InitProducerId
(``keepPreparedTxn``, 2PC enabled on the broker); here the adopter sends EndTxn
with the preparer's producer id and epoch directly, which every Kafka coordinator
accepts, so no broker-side 2PC support is needed. At version 2 that EndTxn is v5
with the epoch the transaction ran at; the coordinator answers a retry of an
ended one (epoch one behind its bumped epoch) as Kafka answers a producer's retry.
"""

from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import add_offsets_to_txn, add_partitions_to_txn, end_txn, init_producer_id, \
    txn_offset_commit

from ..calls import Coordinator, first_retriable
from ..cluster import GROUP, TRANSACTION
from ..error_policy import RULES, Outcome, classify  # noqa: F401 (API)
from ..errors import BrokerResponseError, IllegalStateError, KafkaException, KafkaTimeoutError, error_for
from ..types import OffsetAndMetadata, TopicPartition
from .txn_errors import E, StaleGroupMetadataError, txn_error  # noqa: F401 (API)

if TYPE_CHECKING:
    from ..cluster import Cluster
    from ..consumer.group import GroupMetadata
    from .sender import ProducerIdentity

log = logging.getLogger(__name__)

TRANSACTION_VERSION = "transaction.version"


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    PREPARED_TRANSACTION = "PREPARED_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


S = TxnState
#: target state -> the states it may be entered from (FATAL_ERROR: from any state).
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    S.UNINITIALIZED: frozenset({S.READY, S.ABORTABLE_ERROR}),
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    # From INITIALIZING: a transaction another process prepared, taken over to be ended here.
    S.PREPARED_TRANSACTION: frozenset({S.IN_TRANSACTION, S.INITIALIZING}),
    S.COMMITTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.PREPARED_TRANSACTION}),
    S.ABORTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR, S.PREPARED_TRANSACTION}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR,
                                  S.INITIALIZING}),
    S.FATAL_ERROR: frozenset(TxnState),
}


@dataclass(frozen=True)
class PreparedTxnState:
    """A prepared transaction's identity (KIP-939): whoever holds it can commit or abort the transaction."""
    producer_id: int
    producer_epoch: int


class TransactionAbortedError(KafkaException):
    """A record's transaction was aborted before the record was sent (its delivery fails with this)."""


_ADD_PARTITIONS_RETRY_BACKOFF = 0.02  # the Java client's ADD_PARTITIONS_RETRY_BACKOFF_MS for a starting txn


class TransactionManager:
    def __init__(self, cluster: Cluster, identity: ProducerIdentity, transactional_id: str, *,
                 transaction_timeout_ms: int, max_block_ms: int,
                 on_epoch_bump: Callable[[], None] | None = None) -> None:
        self.cluster = cluster
        self.identity = identity  # the sender's ProducerIdentity: one owner of the producer id and epoch
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.max_block = max_block_ms / 1000
        self.state = TxnState.UNINITIALIZED
        self.last_error: BaseException | None = None
        self.partitions: set[TopicPartition] = set()  # added to the open transaction
        self.epoch_bump_required = False
        self.can_bump_epoch = True  # InitProducerId v3+ (KIP-360); learned at init
        self._on_epoch_bump = on_epoch_bump or (lambda: None)  # the sender resets its sequences
        self._offsets_added = False  # AddOffsetsToTxn done for some group in this transaction
        self._adopted = False  # the open transaction was prepared by another process
        self.transaction_version = 1  # 2 once the cluster finalizes transaction.version >= 2 (KIP-890)
        self._features_epoch = -1  # the finalized features epoch transaction_version was read at

    # ------------------------------------------------------------------ the state machine

    def transition_to(self, target: TxnState, error: BaseException | None = None) -> None:
        if self.state not in TRANSITIONS[target]:
            raise IllegalStateError(f"transactional id {self.transactional_id}: invalid transition from "
                                    f"{self.state.name} to {target.name}")
        if target in (S.ABORTABLE_ERROR, S.FATAL_ERROR):
            if error is None:
                raise ValueError(f"{target.name} needs the error that caused it")
            self.last_error = error
        else:
            self.last_error = None
        log.debug("transaction %s: %s -> %s", self.transactional_id, self.state.name, target.name)
        self.state = target

    def fail(self, outcome: Outcome, error: BaseException) -> BaseException:
        """Enter the error state ``outcome`` names; returns ``error`` for the caller to raise."""
        if outcome is Outcome.ABORTABLE_WITH_BUMP:
            # Simplification: a failed batch always bumps the epoch at the abort (sequences restart
            # at 0) where the Java client, while completing, renumbers the later batches instead.
            if self.transaction_version >= 2 and not isinstance(error, error_for(E.INVALID_PRODUCER_ID_MAPPING)):
                pass  # the abort's EndTxn v5 bumps the epoch (the Java client's needToTriggerEpochBumpFromClient)
            elif self.can_bump_epoch:
                self.epoch_bump_required = True
            else:
                outcome = Outcome.FATAL
        if outcome is Outcome.FATAL:
            self.transition_to(S.FATAL_ERROR, error)
        elif self.state is S.ABORTING_TRANSACTION:
            pass  # already aborting: the abort goes on (as the Java client skips this transition)
        elif self.state in TRANSITIONS[S.ABORTABLE_ERROR]:
            self.transition_to(S.ABORTABLE_ERROR, error)
        else:  # outside a transaction (a late batch): nothing to abort
            log.warning("transaction %s: %r in state %s", self.transactional_id, error, self.state.name)
        return error

    def require_epoch_bump(self) -> None:
        """The epoch must change before the next transaction (a batch's sequence left a gap); at version 2
        the abort's EndTxn changes it."""
        if self.transaction_version < 2:
            self.epoch_bump_required = True

    def read_transaction_version(self, *, initializing: bool) -> None:
        """Take the cluster's finalized transaction.version if its features epoch is newer than the one
        read before (the Java client's maybeUpdateTransactionV2Enabled, called after InitProducerId and
        as a transaction ends). An upgrade to 2 seen as a transaction ends bumps the epoch first."""
        if self.cluster.finalized_features_epoch <= self._features_epoch:
            return
        self._features_epoch = self.cluster.finalized_features_epoch
        upgraded = self.transaction_version < 2
        self.transaction_version = 2 if self.cluster.finalized_features.get(TRANSACTION_VERSION, 0) >= 2 else 1
        upgraded = upgraded and self.transaction_version >= 2
        if upgraded and not initializing:
            self.epoch_bump_required = True
        log.debug("transactional id %s: transaction version %d (features epoch %d)", self.transactional_id,
                  self.transaction_version, self._features_epoch)

    def maybe_fail_with_error(self) -> None:
        if self.state in (S.ABORTABLE_ERROR, S.FATAL_ERROR):
            assert self.last_error is not None  # transition_to keeps the error of these states
            raise self.last_error

    def require_transaction(self, operation: str) -> None:
        self.maybe_fail_with_error()
        if self.state is not S.IN_TRANSACTION:
            raise IllegalStateError(f"cannot {operation} in state {self.state.name}: begin_transaction() first")

    @property
    def in_transaction(self) -> bool:
        return self.state in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION,
                              S.ABORTABLE_ERROR)

    # ------------------------------------------------------------------ the user's calls

    async def initialize(self) -> None:
        """InitProducerId: fences earlier producers with this id, aborting their open transaction."""
        self.transition_to(S.INITIALIZING)
        await self._init_producer_id(bump=False)

    def begin(self) -> None:
        self.maybe_fail_with_error()
        self.transition_to(S.IN_TRANSACTION)

    def prepare(self) -> PreparedTxnState:
        """The flushed transaction stays open, to be ended by whoever gets the returned state."""
        self.maybe_fail_with_error()
        self.transition_to(S.PREPARED_TRANSACTION)
        return PreparedTxnState(self.identity.producer_id, self.identity.producer_epoch)

    def adopt(self, prepared: PreparedTxnState) -> None:
        """Take over a transaction another process prepared, so ``end`` can commit or abort it (the
        states the Java client passes through when initTransactions keeps a prepared transaction)."""
        self.transition_to(S.INITIALIZING)
        self.identity.producer_id, self.identity.producer_epoch = prepared.producer_id, prepared.producer_epoch
        self.transition_to(S.PREPARED_TRANSACTION)
        self._adopted = True

    def begin_commit(self) -> None:
        self.maybe_fail_with_error()
        self.transition_to(S.COMMITTING_TRANSACTION)

    def begin_abort(self) -> None:
        if self.state is not S.ABORTABLE_ERROR:
            self.maybe_fail_with_error()
        self.transition_to(S.ABORTING_TRANSACTION)

    async def end(self, commit: bool) -> None:
        """EndTxn for the transaction begin_commit / begin_abort started, then the epoch bump it needs."""
        lost_mapping = isinstance(self.last_error, error_for(E.INVALID_PRODUCER_ID_MAPPING))
        if self.partitions or self._offsets_added or self._adopted:
            if not lost_mapping:  # the coordinator would refuse EndTxn: go straight to InitProducerId
                response = await self._request(ApiKey.END_TXN, lambda _v: end_txn.REQUEST(
                    transactional_id=self.transactional_id, producer_id=self.identity.producer_id,
                    producer_epoch=self.identity.producer_epoch, committed=commit), lambda r: r.error_code)
                if response.producer_id >= 0:  # EndTxn v5: the epoch the coordinator bumped (or a new id)
                    self.identity.producer_id, self.identity.producer_epoch = (response.producer_id,
                                                                               response.producer_epoch)
                    self._on_epoch_bump()
        # A transaction with nothing sent or added sends no EndTxn, as in the Java client (transactionStarted).
        self.partitions.clear()
        self._offsets_added = False
        self._adopted = False
        self.read_transaction_version(initializing=False)  # the next transaction's version
        if self.epoch_bump_required:
            self.transition_to(S.INITIALIZING)
            await self._init_producer_id(bump=True)
        else:
            self.transition_to(S.READY)

    async def send_offsets(self, offsets: dict[TopicPartition, OffsetAndMetadata], group: GroupMetadata) -> None:
        """AddOffsetsToTxn (version 1 only: TxnOffsetCommit v5 adds the group itself), then TxnOffsetCommit
        with the group's generation and member (KIP-447)."""
        self.require_transaction("send offsets")
        if self.transaction_version < 2:
            await self._request(ApiKey.ADD_OFFSETS_TO_TXN, lambda _v: add_offsets_to_txn.REQUEST(
                transactional_id=self.transactional_id, producer_id=self.identity.producer_id,
                producer_epoch=self.identity.producer_epoch, group_id=group.group_id), lambda r: r.error_code)
        self._offsets_added = True
        by_topic: dict[str, list[Any]] = {}
        for tp, offset in offsets.items():
            by_topic.setdefault(tp.topic, []).append(txn_offset_commit.RequestPartition(
                partition_index=tp.partition, committed_offset=offset.offset,
                committed_leader_epoch=offset.leader_epoch, committed_metadata=offset.metadata))
        request = txn_offset_commit.REQUEST(
            transactional_id=self.transactional_id, group_id=group.group_id,
            producer_id=self.identity.producer_id, producer_epoch=self.identity.producer_epoch,
            generation_id_or_member_epoch=group.generation_id, member_id=group.member_id,
            group_instance_id=group.group_instance_id,
            topics=[txn_offset_commit.RequestTopic(name=n, partitions=p) for n, p in by_topic.items()])
        # The whole request goes again while any partition answers a retriable code (a commit of the
        # same offsets is idempotent), as the Java client re-enqueues it for its pending partitions.
        response = await self._request(ApiKey.TXN_OFFSET_COMMIT, lambda _v: request, lambda r: first_retriable(
            p.error_code for t in r.topics for p in t.partitions), coordinator=Coordinator(GROUP, group.group_id),
            raise_error=False)
        for topic in response.topics:
            for answer in topic.partitions:
                if answer.error_code:
                    raise self.fail(classify(ApiKey.TXN_OFFSET_COMMIT, answer.error_code),
                                    txn_error(ApiKey.TXN_OFFSET_COMMIT, answer.error_code,
                                              f"{topic.name}-{answer.partition_index}"))

    # ------------------------------------------------------------------ the sender's calls

    async def add_partitions(self, partitions: set[TopicPartition]) -> bool:
        """One AddPartitionsToTxn for every partition a send round needs; False if it failed
        (the transaction is then in an error state and the batches fail with its error). At version 2
        none: their first Produce adds them."""
        if self.transaction_version >= 2:
            self.partitions |= partitions
            return True
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)

        def first_error(response: Any) -> int:
            codes = [p.partition_error_code for t in response.results_by_topic_v3_and_below
                     for p in t.results_by_partition]
            retriable = [c for c in codes if c and error_for(c).retriable]
            return retriable[0] if retriable else next((c for c in codes
                                                        if c and c != E.OPERATION_NOT_ATTEMPTED), E.NONE)
        # The Java client's ADD_PARTITIONS_RETRY_BACKOFF_MS: a transaction's first AddPartitionsToTxn
        # answered CONCURRENT_TRANSACTIONS waits on the previous one's markers, which take milliseconds.
        backoff = None if self.partitions else min(self.cluster.retry_backoff, _ADD_PARTITIONS_RETRY_BACKOFF)
        try:
            await self._request(ApiKey.ADD_PARTITIONS_TO_TXN, lambda _v: add_partitions_to_txn.REQUEST(
                v3_and_below_transactional_id=self.transactional_id,
                v3_and_below_producer_id=self.identity.producer_id,
                v3_and_below_producer_epoch=self.identity.producer_epoch,
                v3_and_below_topics=[add_partitions_to_txn.Topic(name=n, partitions=p)
                                     for n, p in by_topic.items()]), first_error, retry_backoff=backoff)
        except KafkaException as exc:
            if self.state not in (S.ABORTABLE_ERROR, S.FATAL_ERROR):
                self.fail(Outcome.ABORTABLE, exc)  # timed out: nothing more can be sent in this transaction
            return False
        self.partitions |= partitions
        return True

    def sendable(self, ready: list[TopicPartition]) -> list[TopicPartition]:
        """The ready partitions that may be sent with no request first: at version 1 those already added,
        at version 2 all (Produce v12 adds them)."""
        if self.transaction_version >= 2:
            self.partitions.update(ready)
            return ready
        return [tp for tp in ready if tp in self.partitions]

    def batch_failed(self, error: BaseException) -> None:
        """A batch of this transaction could not be delivered: the transaction must abort."""
        code = getattr(error, "code", E.UNKNOWN_SERVER_ERROR)
        self.fail(classify(ApiKey.PRODUCE, code), error)

    # ------------------------------------------------------------------ plumbing

    async def _init_producer_id(self, *, bump: bool) -> None:
        connection = await self.cluster.any_connection()
        self.can_bump_epoch = connection.version_for(ApiKey.INIT_PRODUCER_ID,
                                                     transaction_version=self.transaction_version) >= 3
        expected = (self.identity.producer_id, self.identity.producer_epoch) if bump else (-1, -1)
        response = await self._request(ApiKey.INIT_PRODUCER_ID, lambda _v: init_producer_id.REQUEST(
            transactional_id=self.transactional_id, transaction_timeout_ms=self.transaction_timeout_ms,
            producer_id=expected[0], producer_epoch=expected[1]), lambda r: r.error_code)
        self.identity.producer_id, self.identity.producer_epoch = response.producer_id, response.producer_epoch
        self.epoch_bump_required = False
        self._on_epoch_bump()  # new id or epoch: every partition's sequence starts at 0
        if not bump:
            self.read_transaction_version(initializing=True)  # as the Java client's initTransactions
        self.transition_to(S.READY)
        log.info("transactional id %s: producer id %d, epoch %d", self.transactional_id,
                 response.producer_id, response.producer_epoch)

    async def _request(self, api_key: ApiKey, build: Callable[[int], Any], error_of: Callable[[Any], int], *,
                       coordinator: Coordinator | None = None, retry_backoff: float | None = None,
                       raise_error: bool = True) -> Any:
        """A request to the transaction coordinator (or ``coordinator``) through the call path, which retries
        until max_block_ms; an error answer moves the state as ``classify`` says and is raised."""
        target = coordinator or Coordinator(TRANSACTION, self.transactional_id)
        try:
            response = await self.cluster.call(target, api_key, build, error_of=error_of,
                                               deadline=time.monotonic() + self.max_block,
                                               transaction_version=self.transaction_version,
                                               retry_backoff=retry_backoff)
        except KafkaTimeoutError:
            if api_key in (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN) and self.can_bump_epoch:
                # The coordinator may have begun the transaction without our hearing of it: the
                # epoch bump after the abort ends it there (no EndTxn is sent for a transaction
                # we never saw begin).
                self.epoch_bump_required = True
            raise
        except BrokerResponseError as exc:  # FindCoordinator's own answer (the FindCoordinatorHandler's rules)
            raise self.fail(classify(ApiKey.FIND_COORDINATOR, exc.code), exc) from None
        code = error_of(response)
        if code and raise_error:
            raise self.fail(classify(api_key, code), txn_error(api_key, code))
        return response
