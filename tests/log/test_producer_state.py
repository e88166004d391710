"""Idempotent-producer sequence and epoch rules, case by case (PROTOCOL.md 4.1)."""

import pytest

from weir.broker.log.producer_state import ProducerStateManager
from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError


def header(epoch, first_seq, count=1, pid=1):
    batch = rec.encode_batch([rec.Record(b"v")] * count, producer_id=pid, producer_epoch=epoch,
                             base_sequence=first_seq)
    return rec.read_header(batch)


@pytest.fixture
def state(tmp_path):
    manager = ProducerStateManager(tmp_path)
    manager.record_batch(header(epoch=2, first_seq=0, count=5), base_offset=100)  # seqs 0-4, offsets 100-104
    return manager


@pytest.mark.parametrize("epoch,first_seq,count,outcome", [
    (2, 5, 1, None),                                  # next in sequence
    (2, 0, 5, 100),                                   # exact duplicate: its original first offset
    (2, 6, 1, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER),   # gap
    (2, 3, 1, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER),   # overlap that is no cached batch
    (1, 5, 1, Errors.INVALID_PRODUCER_EPOCH),         # stale epoch
    (3, 0, 1, None),                                  # new epoch starts at 0
    (3, 5, 1, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER),   # new epoch must start at 0
])
def test_sequence_rules(state, epoch, first_seq, count, outcome):
    batch = header(epoch, first_seq, count)
    if isinstance(outcome, Errors):
        with pytest.raises(KafkaError) as err:
            state.check_client_batch(batch)
        assert err.value.error == outcome
    else:
        duplicate = state.check_client_batch(batch)
        assert (duplicate.first_offset if duplicate else None) == outcome


def test_unknown_producer_accepts_any_sequence(state):
    assert state.check_client_batch(header(epoch=0, first_seq=77, pid=2)) is None


def test_only_the_last_five_batches_are_remembered(tmp_path):
    manager = ProducerStateManager(tmp_path)
    for seq in range(7):
        manager.record_batch(header(0, seq), base_offset=seq)
    assert manager.check_client_batch(header(0, 6)).first_offset == 6
    assert manager.check_client_batch(header(0, 2)).first_offset == 2
    with pytest.raises(KafkaError):
        manager.check_client_batch(header(0, 1))  # evicted: no longer recognisable as a duplicate


def test_sequence_wraps_at_int32_max(tmp_path):
    manager = ProducerStateManager(tmp_path)
    manager.record_batch(header(0, 2**31 - 2, count=2), base_offset=0)
    assert manager.check_client_batch(header(0, 0)) is None


def test_snapshot_round_trip_and_expiry(tmp_path):
    manager = ProducerStateManager(tmp_path)
    manager.record_batch(header(4, 0, count=3, pid=9), base_offset=50)
    manager.write_snapshot(53)
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load_snapshot(max_offset=53) == 53
    assert loaded.producers == manager.producers
    assert loaded.load_snapshot(max_offset=10) == -1, "a snapshot past the log end is discarded"
    manager.expire(now_ms=10**12, expiration_ms=1000)
    assert manager.producers == {}
