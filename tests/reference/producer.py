"""A transactional producer's requests as a client sends them at a transaction version.

At version 1 (librdkafka, and the Java client on a broker finalizing 1): InitProducerId v4,
AddPartitionsToTxn / AddOffsetsToTxn before a partition or group joins the transaction,
Produce v9, TxnOffsetCommit v3, EndTxn v3; the epoch stays until the next InitProducerId.
At version 2 (the Java 4.x client on a broker finalizing 2, KIP-890 part 2): InitProducerId v5,
Produce v12 and TxnOffsetCommit v5 add implicitly (no AddPartitionsToTxn, no AddOffsetsToTxn),
EndTxn v5 answers the producer id and epoch the producer goes on with.

Scenarios name the epoch explicitly where a step is about a particular one (a retry of an
EndTxn is the same request, so at its epoch; a zombie's write, at the epoch it had).
"""

from __future__ import annotations

from weir.protocol.errors import Errors

#: (InitProducerId, Produce, TxnOffsetCommit, EndTxn) versions per client transaction version.
VERSIONS = {1: (4, 9, 3, 3), 2: (5, 12, 5, 5)}
#: A Produce v12 may meet the previous transaction still writing its markers; Kafka then answers
#: CONCURRENT_TRANSACTIONS and the Java producer retries (nothing was written).
AFTER_AN_END = frozenset({Errors.CONCURRENT_TRANSACTIONS})


class TransactionalProducer:
    def __init__(self, wire, txn_id: str):
        self.wire = wire
        self.txn_id = txn_id
        self.tv = wire.client_transaction_version
        self.init_version, self.produce_version, self.offsets_version, self.end_version = VERSIONS[self.tv]
        self.pid = self.epoch = -1

    async def init(self, **extra):
        answer = await self.wire.init_producer_id(self.txn_id, version=self.init_version, **extra)
        if answer.error_code == Errors.NONE:
            self.pid, self.epoch = answer.producer_id, answer.producer_epoch
        return answer

    async def add_partitions(self, topic, partitions=(0,), *, pid=None, epoch=None):
        """AddPartitionsToTxn's answer; None at version 2, where the Produce adds the partition."""
        if self.tv == 2:
            return None
        return await self.wire.add_partitions(self.txn_id, self._pid(pid), self._epoch(epoch), topic, partitions)

    async def add_offsets(self, group, *, pid=None, epoch=None):
        """AddOffsetsToTxn's answer; None at version 2, where TxnOffsetCommit adds the group."""
        if self.tv == 2:
            return None
        return await self.wire.add_offsets(self.txn_id, self._pid(pid), self._epoch(epoch), group)

    async def produce(self, topic, values, seq, *, pid=None, epoch=None, txn_id=None):
        return await self.wire.produce(topic, values, pid=self._pid(pid), epoch=self._epoch(epoch), seq=seq,
                                       txn_id=txn_id or self.txn_id, version=self.produce_version,
                                       retry=AFTER_AN_END if self.tv == 2 else frozenset())

    async def txn_offset_commit(self, group, topic, offset, *, pid=None, epoch=None, txn_id=None):
        return await self.wire.txn_offset_commit(txn_id or self.txn_id, group, self._pid(pid), self._epoch(epoch),
                                                 topic, offset, version=self.offsets_version)

    async def end(self, commit: bool, *, pid=None, epoch=None, txn_id=None, version=None):
        answer = await self.wire.end_txn(txn_id or self.txn_id, self._pid(pid), self._epoch(epoch), commit,
                                         version=self.end_version if version is None else version)
        if self.tv == 2 and answer.error_code == Errors.NONE and (txn_id or self.txn_id) == self.txn_id:
            self.pid, self.epoch = answer.producer_id, answer.producer_epoch
        return answer

    def _pid(self, pid):
        return self.pid if pid is None else pid

    def _epoch(self, epoch):
        return self.epoch if epoch is None else epoch
