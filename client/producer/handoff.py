"""Transactions written by one process and ended by another (KIP-939's shape, without broker 2PC).

A writer (a Spark task) runs a transactional Producer, sends, and calls
``prepare_transaction()``: everything is acknowledged, the transaction stays
open, and the returned ``PreparedTxnState`` names it. Whoever receives that
state (the driver, after recording its decision) ends the transaction with
``complete_prepared_transaction``, commit or abort. ``fence_transactional_id``
takes an id away from whoever held it, aborting what it left open, without
starting a producer: a restarted driver uses it to clear its tasks' ids.

All three go through the TransactionManager, so its retries and error rules
are the producer's own, and its transaction version: at version 2 the EndTxn
(v5) carries the epoch the transaction ran at and the coordinator bumps it; a
completion repeated after that (a driver retrying, or rolling a decided batch
forward after a crash) names the epoch one behind the bumped one, which Kafka's
coordinator answers as a retry: success for the same outcome, INVALID_TXN_STATE
for the other.
"""

from __future__ import annotations

from ..cluster import Cluster
from .sender import ProducerIdentity
from .transaction_manager import PreparedTxnState, TransactionManager

__all__ = ["PreparedTxnState", "complete_prepared_transaction", "fence_transactional_id"]


def _manager(cluster: Cluster, transactional_id: str, transaction_timeout_ms: int,
             max_block_ms: int) -> TransactionManager:
    return TransactionManager(cluster, ProducerIdentity(), transactional_id,
                              transaction_timeout_ms=transaction_timeout_ms, max_block_ms=max_block_ms)


async def complete_prepared_transaction(cluster: Cluster, transactional_id: str, prepared: PreparedTxnState, *,
                                        commit: bool, max_block_ms: int = 60000) -> None:
    """EndTxn for the transaction ``prepared`` names. Raises as ``commit_transaction`` would: fenced
    (ProducerFencedError) when the transaction is gone, because the coordinator aborted it on
    ``transaction.timeout.ms`` or a newer holder of the id fenced it. Committing a transaction that
    this call already committed succeeds again (Kafka's coordinator answers a retried EndTxn so)."""
    manager = _manager(cluster, transactional_id, 60000, max_block_ms)
    await cluster.any_connection()  # its ApiVersions tell the cluster's finalized transaction.version
    manager.read_transaction_version(initializing=True)
    manager.adopt(prepared)
    if commit:
        manager.begin_commit()
    else:
        manager.begin_abort()
    await manager.end(commit=commit)


async def fence_transactional_id(cluster: Cluster, transactional_id: str, *, transaction_timeout_ms: int = 60000,
                                 max_block_ms: int = 60000) -> PreparedTxnState:
    """InitProducerId for ``transactional_id``: every earlier holder is fenced and its open transaction
    aborted. Returns the new (producer id, epoch); epoch 0 means nobody held the id before."""
    manager = _manager(cluster, transactional_id, transaction_timeout_ms, max_block_ms)
    await manager.initialize()
    return PreparedTxnState(manager.identity.producer_id, manager.identity.producer_epoch)
