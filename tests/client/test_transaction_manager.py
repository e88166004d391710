"""The client's TransactionManager alone: its transition table swept state by state, error
outcomes as the Java client classifies them, and retries against a scripted coordinator."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from weir.client.cluster import Cluster
from weir.client.errors import IllegalStateError, KafkaTimeoutError, ProducerFencedError, error_for
from weir.client.producer.sender import ProducerIdentity
from weir.client.producer.transaction_manager import (Outcome, StaleGroupMetadataError, TransactionManager, TxnState,
                                                 classify)
from weir.client.types import TopicPartition
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors

S = TxnState
# Written out from the Java client's TransactionManager.State.isTransitionValid (kafka-clients 4.3.1, read
# with javap), pair by pair.
LEGAL = {
    (S.READY, S.UNINITIALIZED), (S.ABORTABLE_ERROR, S.UNINITIALIZED),
    (S.UNINITIALIZED, S.INITIALIZING), (S.COMMITTING_TRANSACTION, S.INITIALIZING),
    (S.ABORTING_TRANSACTION, S.INITIALIZING),
    (S.INITIALIZING, S.READY), (S.COMMITTING_TRANSACTION, S.READY), (S.ABORTING_TRANSACTION, S.READY),
    (S.READY, S.IN_TRANSACTION),
    (S.IN_TRANSACTION, S.PREPARED_TRANSACTION), (S.INITIALIZING, S.PREPARED_TRANSACTION),
    (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION), (S.PREPARED_TRANSACTION, S.COMMITTING_TRANSACTION),
    (S.IN_TRANSACTION, S.ABORTING_TRANSACTION), (S.ABORTABLE_ERROR, S.ABORTING_TRANSACTION),
    (S.PREPARED_TRANSACTION, S.ABORTING_TRANSACTION),
    (S.IN_TRANSACTION, S.ABORTABLE_ERROR), (S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR),
    (S.ABORTABLE_ERROR, S.ABORTABLE_ERROR), (S.INITIALIZING, S.ABORTABLE_ERROR),
    *((source, S.FATAL_ERROR) for source in TxnState),
}


def manager(cluster=None) -> TransactionManager:
    return TransactionManager(cluster, ProducerIdentity(7, 3), "tx", transaction_timeout_ms=60000, max_block_ms=2000)


@pytest.mark.parametrize("source,target", list(itertools.product(TxnState, TxnState)),
                         ids=lambda s: s.name)
def test_every_transition_is_allowed_exactly_when_the_java_client_allows_it(source, target):
    txn = manager()
    txn.state = source
    error = RuntimeError("cause") if target in (S.ABORTABLE_ERROR, S.FATAL_ERROR) else None
    if (source, target) in LEGAL:
        txn.transition_to(target, error)
        assert txn.state is target and txn.last_error is error
    else:
        with pytest.raises(IllegalStateError):
            txn.transition_to(target, error)
        assert txn.state is source


@pytest.mark.parametrize("api_key,code,outcome", [
    (ApiKey.END_TXN, Errors.PRODUCER_FENCED, Outcome.FATAL),
    (ApiKey.END_TXN, Errors.INVALID_PRODUCER_EPOCH, Outcome.FATAL),  # from a coordinator: fenced
    (ApiKey.PRODUCE, Errors.INVALID_PRODUCER_EPOCH, Outcome.ABORTABLE_WITH_BUMP),  # from a partition: abortable
    (ApiKey.PRODUCE, Errors.UNKNOWN_PRODUCER_ID, Outcome.ABORTABLE_WITH_BUMP),
    (ApiKey.PRODUCE, Errors.MESSAGE_TOO_LARGE, Outcome.ABORTABLE_WITH_BUMP),
    (ApiKey.PRODUCE, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Outcome.FATAL),
    (ApiKey.ADD_PARTITIONS_TO_TXN, Errors.UNKNOWN_PRODUCER_ID, Outcome.ABORTABLE_WITH_BUMP),
    (ApiKey.ADD_PARTITIONS_TO_TXN, Errors.TOPIC_AUTHORIZATION_FAILED, Outcome.ABORTABLE),
    (ApiKey.ADD_PARTITIONS_TO_TXN, Errors.INVALID_TXN_STATE, Outcome.FATAL),
    (ApiKey.END_TXN, Errors.INVALID_PRODUCER_ID_MAPPING, Outcome.ABORTABLE_WITH_BUMP),
    (ApiKey.END_TXN, Errors.INVALID_TXN_STATE, Outcome.FATAL),
    (ApiKey.INIT_PRODUCER_ID, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Outcome.ABORTABLE),
    (ApiKey.INIT_PRODUCER_ID, Errors.INVALID_TRANSACTION_TIMEOUT, Outcome.FATAL),
    (ApiKey.ADD_OFFSETS_TO_TXN, Errors.GROUP_AUTHORIZATION_FAILED, Outcome.ABORTABLE),
    (ApiKey.TXN_OFFSET_COMMIT, Errors.ILLEGAL_GENERATION, Outcome.ABORTABLE),
    (ApiKey.TXN_OFFSET_COMMIT, Errors.FENCED_INSTANCE_ID, Outcome.ABORTABLE),
    (ApiKey.TXN_OFFSET_COMMIT, Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, Outcome.FATAL),
])
def test_errors_are_fatal_or_abortable_as_the_java_client_has_them(api_key, code, outcome):
    assert classify(api_key, code) is outcome


class ScriptedCluster(Cluster):
    """Answers coordinator requests from a script; records lookups and forgotten coordinators. The call
    path (Cluster.call) is the real one; only its primitives are scripted."""

    def __init__(self, answers, features=None):
        super().__init__("localhost:1", retry_backoff_ms=1)
        self.answers = list(answers)
        self.finalized_features = features or {}  # as a broker's ApiVersions v3+ had them
        self.finalized_features_epoch = 0 if features else -1
        self.lookups = 0
        self.forgotten = 0
        self.sent = []

    async def find_coordinator_once(self, key_type, key):
        self.lookups += 1
        return 1

    def forget_coordinator(self, key_type, key):
        self.forgotten += 1

    async def send(self, node, api_key, build, **_):
        self.sent.append(build(0))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def any_connection(self):
        return SimpleNamespace(version_for=lambda key, highest=None, **_: 4)


def end_txn_answer(code, producer_id=-1, producer_epoch=-1):
    return SimpleNamespace(error_code=code, producer_id=producer_id, producer_epoch=producer_epoch)


async def test_end_txn_retries_concurrent_transactions_and_finds_a_moved_coordinator():
    cluster = ScriptedCluster([end_txn_answer(Errors.NOT_COORDINATOR), end_txn_answer(Errors.CONCURRENT_TRANSACTIONS),
                               end_txn_answer(Errors.COORDINATOR_LOAD_IN_PROGRESS), end_txn_answer(Errors.NONE)])
    txn = manager(cluster)
    txn.state = S.IN_TRANSACTION
    txn.partitions.add(TopicPartition("t", 0))
    txn.begin_commit()
    await txn.end(commit=True)
    assert txn.state is S.READY and not txn.partitions
    # Only NOT_COORDINATOR sends the client looking again; a loading coordinator is the right one (Java's rule).
    assert len(cluster.sent) == 4 and cluster.forgotten == 1 and cluster.lookups == 4


async def test_fenced_end_txn_is_fatal_and_unknown_producer_id_needs_an_epoch_bump():
    txn = manager(ScriptedCluster([end_txn_answer(Errors.INVALID_PRODUCER_EPOCH)]))
    txn.state = S.IN_TRANSACTION
    txn.partitions.add(TopicPartition("t", 0))
    txn.begin_commit()
    with pytest.raises(ProducerFencedError):
        await txn.end(commit=True)
    assert txn.state is S.FATAL_ERROR
    with pytest.raises(ProducerFencedError):
        txn.begin()

    bumped = SimpleNamespace(error_code=Errors.NONE, producer_id=7, producer_epoch=4)
    cluster = ScriptedCluster([end_txn_answer(Errors.UNKNOWN_PRODUCER_ID), end_txn_answer(Errors.NONE), bumped])
    txn = manager(cluster)
    txn.state = S.IN_TRANSACTION
    txn.partitions.add(TopicPartition("t", 0))
    txn.begin_commit()
    with pytest.raises(Exception) as raised:
        await txn.end(commit=True)
    assert raised.value.code == Errors.UNKNOWN_PRODUCER_ID and txn.state is S.ABORTABLE_ERROR
    assert txn.epoch_bump_required
    txn.begin_abort()
    await txn.end(commit=False)
    init = cluster.sent[-1]
    assert (init.producer_id, init.producer_epoch) == (7, 3)  # KIP-360: names the epoch it bumps
    assert txn.state is S.READY and (txn.identity.producer_id, txn.identity.producer_epoch) == (7, 4)


async def test_stale_generation_is_abortable_and_a_coordinator_that_never_answers_times_out():
    offsets_ok = SimpleNamespace(error_code=Errors.NONE)
    stale = SimpleNamespace(topics=[SimpleNamespace(name="t", partitions=[
        SimpleNamespace(partition_index=0, error_code=Errors.ILLEGAL_GENERATION)])])
    txn = manager(ScriptedCluster([offsets_ok, stale]))
    txn.state = S.IN_TRANSACTION
    group = SimpleNamespace(group_id="g", generation_id=1, member_id="m", group_instance_id=None)
    from weir.client.types import OffsetAndMetadata
    with pytest.raises(StaleGroupMetadataError):
        await txn.send_offsets({TopicPartition("t", 0): OffsetAndMetadata(5)}, group)
    assert txn.state is S.ABORTABLE_ERROR

    txn = manager(ScriptedCluster([end_txn_answer(Errors.CONCURRENT_TRANSACTIONS)] * 100000))
    txn.max_block = 0.05
    txn.state = S.IN_TRANSACTION
    txn.partitions.add(TopicPartition("t", 0))
    txn.begin_commit()
    with pytest.raises(KafkaTimeoutError):
        await txn.end(commit=True)
    assert txn.state is S.COMMITTING_TRANSACTION  # commit_transaction() may be called again


async def test_add_partitions_with_no_answer_ends_in_an_epoch_bump_not_an_end_txn():
    """The coordinator may have begun the transaction although no answer came: the abort bumps
    the epoch (which aborts it there) instead of skipping it as a transaction that never began."""
    from weir.client.errors import KafkaConnectionError
    cluster = ScriptedCluster([KafkaConnectionError("broker down")] * 100000)
    txn = manager(cluster)
    txn.max_block = 0.05
    txn.state = S.IN_TRANSACTION
    assert await txn.add_partitions({TopicPartition("t", 0)}) is False
    assert txn.state is S.ABORTABLE_ERROR and txn.epoch_bump_required and not txn.partitions
    cluster.answers = [SimpleNamespace(error_code=Errors.NONE, producer_id=7, producer_epoch=4)]
    cluster.sent.clear()
    txn.begin_abort()
    await txn.end(commit=False)
    assert [type(r).__name__ for r in cluster.sent] == ["InitProducerIdRequest"]
    assert txn.state is S.READY and txn.identity.producer_epoch == 4


TV2 = {"transaction.version": 2}


async def test_version_2_adds_nothing_itself_and_adopts_the_epoch_end_txn_bumped():
    ok = SimpleNamespace(topics=[SimpleNamespace(name="t", partitions=[
        SimpleNamespace(partition_index=0, error_code=Errors.NONE)])])
    cluster = ScriptedCluster([ok, end_txn_answer(Errors.NONE, 7, 4)], features=TV2)
    bumps = []
    txn = TransactionManager(cluster, ProducerIdentity(7, 3), "tx", transaction_timeout_ms=60000, max_block_ms=2000,
                             on_epoch_bump=lambda: bumps.append(True))
    txn.read_transaction_version(initializing=True)
    assert txn.transaction_version == 2 and not txn.epoch_bump_required
    txn.state = S.READY
    txn.begin()
    assert await txn.add_partitions({TopicPartition("t", 1)}) is True
    assert txn.sendable([TopicPartition("t", 2)]) == [TopicPartition("t", 2)]
    group = SimpleNamespace(group_id="g", generation_id=1, member_id="m", group_instance_id=None)
    from weir.client.types import OffsetAndMetadata
    await txn.send_offsets({TopicPartition("t", 0): OffsetAndMetadata(5)}, group)
    txn.begin_commit()
    await txn.end(commit=True)
    assert [type(r).__name__ for r in cluster.sent] == ["TxnOffsetCommitRequest", "EndTxnRequest"]
    assert (txn.identity.producer_id, txn.identity.producer_epoch) == (7, 4) and bumps == [True]
    assert txn.state is S.READY and not txn.partitions


async def test_a_failed_batch_at_version_2_needs_no_bump_of_its_own_but_an_upgrade_bumps_once():
    txn = manager(ScriptedCluster([], features=TV2))
    txn.read_transaction_version(initializing=True)
    txn.state = S.IN_TRANSACTION
    txn.batch_failed(error_for(Errors.UNKNOWN_PRODUCER_ID)("Produce"))
    assert txn.state is S.ABORTABLE_ERROR and not txn.epoch_bump_required  # the abort's EndTxn v5 bumps

    cluster = ScriptedCluster([end_txn_answer(Errors.NONE),  # a version-1 EndTxn: no id or epoch back
                               SimpleNamespace(error_code=Errors.NONE, producer_id=7, producer_epoch=4)])
    cluster.finalized_features, cluster.finalized_features_epoch = {"transaction.version": 1}, 0
    txn = manager(cluster)
    txn.read_transaction_version(initializing=True)
    assert txn.transaction_version == 1
    txn.state = S.IN_TRANSACTION
    txn.partitions.add(TopicPartition("t", 0))
    cluster.finalized_features, cluster.finalized_features_epoch = TV2, 1  # upgraded meanwhile
    txn.begin_commit()
    await txn.end(commit=True)
    init = cluster.sent[-1]
    assert [type(r).__name__ for r in cluster.sent] == ["EndTxnRequest", "InitProducerIdRequest"]
    assert (init.producer_id, init.producer_epoch) == (7, 3)
    assert txn.transaction_version == 2 and txn.identity.producer_epoch == 4 and txn.state is S.READY


async def test_an_exhausted_epoch_at_version_2_continues_under_the_producer_id_end_txn_answers():
    cluster = ScriptedCluster([end_txn_answer(Errors.NONE, 8, 0)], features=TV2)
    txn = TransactionManager(cluster, ProducerIdentity(7, 32766), "tx", transaction_timeout_ms=60000,
                             max_block_ms=2000)
    txn.read_transaction_version(initializing=True)
    txn.state = S.IN_TRANSACTION
    txn.partitions.add(TopicPartition("t", 0))
    txn.begin_abort()
    await txn.end(commit=False)
    assert (txn.identity.producer_id, txn.identity.producer_epoch) == (8, 0) and txn.state is S.READY
    assert len(cluster.sent) == 1  # no InitProducerId: the coordinator drew the new id itself
