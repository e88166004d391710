"""What becomes of a sent batch: acknowledged, failed for good, or queued again for a retry
under the sequence rules the sender's docstring sets out. A part of ``Sender`` (its base
class), kept apart to keep each module short; it shares the sender's state."""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors

from ..errors import KafkaConnectionError, KafkaException, KafkaTimeoutError, error_instance
from ..types import TopicPartition
from .batch import ProducerBatch
from .transaction_manager import TransactionAbortedError

if TYPE_CHECKING:
    from ..cluster import Cluster
    from .accumulator import Accumulator
    from .sender import ProducerIdentity
    from .transaction_manager import TransactionManager

log = logging.getLogger("weir.client.producer.sender")

# Leadership moved or metadata is stale: refresh before retrying.
_REFRESH_ON = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE,
                         Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.FENCED_LEADER_EPOCH,
                         Errors.UNKNOWN_LEADER_EPOCH, Errors.UNKNOWN_TOPIC_ID})

@dataclass
class PartitionSequence:
    next_sequence: int = 0
    in_flight: deque[ProducerBatch] = field(default_factory=deque)
    recovering: bool = False
    acknowledged: bool = False  # a batch of this epoch has been written


class BatchOutcomes:
    # The sender's state that settling reads and changes: ``Sender.__init__`` sets it all.
    cluster: Cluster
    accumulator: Accumulator
    idempotent: bool
    transactional_id: str | None
    identity: ProducerIdentity
    txn: TransactionManager | None
    delivery_timeout: float  # seconds
    retries: int
    in_flight: set[ProducerBatch]  # sent, not yet settled
    _sequences: dict[TopicPartition, PartitionSequence]
    _metadata_wanted: bool

    def _require_bump(self, why: str) -> None:
        """Stop new sends until the producer epoch is bumped (the sender's recovery, ``Sender._require_bump``)."""
        raise NotImplementedError

    def _fail_request(self, batches: list[ProducerBatch], error: KafkaException) -> None:
        self._metadata_wanted = True
        for batch in batches:
            self._retry(batch, error, sent=True)

    def _settle(self, response: Any, batches: list[ProducerBatch]) -> None:
        by_tp = {batch.tp: batch for batch in batches}
        for topic in response.responses:
            for answer in topic.partition_responses:
                batch = by_tp.pop(TopicPartition(topic.name, answer.index), None)
                if batch is not None:
                    self._settle_partition(batch, answer)
        for batch in by_tp.values():  # a broker that left a partition out of its answer
            self._retry(batch, KafkaConnectionError("partition missing from the Produce response"), sent=True)

    def _settle_partition(self, batch: ProducerBatch, answer: Any) -> None:
        code = answer.error_code
        if code in (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER):
            self._settle_success(batch, answer.base_offset, answer.log_append_time_ms)
            return
        error = error_instance(code, answer.error_message, request=ApiKey.PRODUCE)
        if code in _REFRESH_ON:
            self._metadata_wanted = True
        if code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and self.idempotent and self._predecessor_pending(batch):
            self._retry(batch, error, sent=True)  # an earlier batch is being retried: this one follows it
        elif code in (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.UNKNOWN_PRODUCER_ID) and self.idempotent \
                and self.transactional_id is None:
            # The broker lost this producer's sequence (or never had it): not written, so after
            # an epoch bump (new sequences) the batch can go again (KIP-360).
            self._require_bump(f"{error.name} on {batch.tp}")
            self._retry(batch, error, sent=True)
        elif error.retriable:
            self._retry(batch, error, sent=True)
        else:
            self._settle_failure(batch, error)

    def _predecessor_pending(self, batch: ProducerBatch) -> bool:
        """Is an earlier batch of this partition and epoch still unsettled (in flight or queued)?

        Simplification: sequences are compared without wrap-around (2^31 records a partition
        and epoch apart); a wrapped comparison only errs towards an epoch bump.
        """
        state = self._sequences.get(batch.tp)
        earlier = [*(state.in_flight if state else ()), *self.accumulator.queues.get(batch.tp, ())]
        return any(other is not batch and other.producer_epoch == batch.producer_epoch
                   and 0 <= other.base_sequence < batch.base_sequence for other in earlier)

    def _settle_success(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        self.in_flight.discard(batch)
        if self.idempotent:
            state = self._sequences.get(batch.tp)
            if state is not None:
                self._leave_flight(state, batch)
                if batch.producer_epoch == self.identity.producer_epoch:
                    state.acknowledged = True
        batch.complete(base_offset, log_append_time)
        self.accumulator.release(batch)

    def _settle_failure(self, batch: ProducerBatch, error: BaseException) -> None:
        self.in_flight.discard(batch)
        if self.idempotent:
            state = self._sequences.get(batch.tp)
            if state is not None:
                self._leave_flight(state, batch)
            if batch.base_sequence >= 0 and self.transactional_id is None:
                self._require_bump(f"batch of {batch.tp} failed with {error!r}")  # its sequence leaves a gap
        if self.txn is not None and not isinstance(error, TransactionAbortedError):
            self.txn.batch_failed(error)  # the transaction can only abort now
        batch.fail(error)
        self.accumulator.release(batch)

    def _retry(self, batch: ProducerBatch, error: BaseException, *, sent: bool) -> None:
        self.in_flight.discard(batch)
        if time.monotonic() - batch.created >= self.delivery_timeout:
            self._settle_failure(batch, KafkaTimeoutError(f"delivery.timeout.ms passed: {error}"))
            return
        if self.idempotent:
            state = self._sequences.setdefault(batch.tp, PartitionSequence())
            self._leave_flight(state, batch)
            state.recovering = True
        self.retries += sent
        log.debug("retrying a batch of %s after %r", batch.tp, error)
        # KIP-580: retry.backoff.ms doubling with the batch's attempts up to retry.backoff.max.ms, as the
        # Java Sender backs a batch off (the call path's policy; one batch is one request's worth).
        batch.retry_at = time.monotonic() + self.cluster.backoff_policy().backoff(max(batch.attempts - 1, 0))
        self.accumulator.requeue(batch)

    @staticmethod
    def _leave_flight(state: PartitionSequence, batch: ProducerBatch) -> None:
        try:
            state.in_flight.remove(batch)
        except ValueError:
            pass

    def _expire(self, now: float) -> None:
        """Batches still queued past delivery.timeout.ms fail (as in the Java client)."""
        for queue in self.accumulator.queues.values():
            while queue and now - queue[0].created >= self.delivery_timeout:
                batch = queue.popleft()
                self._settle_failure(batch, KafkaTimeoutError(
                    f"{batch.record_count} record(s) for {batch.tp} expired before delivery (delivery.timeout.ms)"))
