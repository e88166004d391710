"""The transition table, and the hand-packed TransactionLogValue against its construct declaration."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weir.broker.coordinator import records
from weir.broker.txn.state import LEGAL_PREVIOUS, IllegalTransition, TxnMetadata, TxnState


@pytest.mark.parametrize("current", list(TxnState))
@pytest.mark.parametrize("target", list(TxnState))
def test_transition_to_follows_the_table(current, target):
    metadata = TxnMetadata("t", 1, state=current)
    if current in LEGAL_PREVIOUS[target]:
        assert metadata.transition_to(target).state == target
    else:
        with pytest.raises(IllegalTransition):
            metadata.transition_to(target)


def test_table_matches_kafka_for_the_states_clients_drive():
    S = TxnState
    assert LEGAL_PREVIOUS[S.PREPARE_COMMIT] == {S.ONGOING}
    assert LEGAL_PREVIOUS[S.COMPLETE_ABORT] == {S.PREPARE_ABORT}
    assert S.ONGOING not in LEGAL_PREVIOUS[S.DEAD]  # an open transaction never expires


@given(state=st.sampled_from([s for s in TxnState if s != TxnState.DEAD]),
       pid=st.integers(0, 2**63 - 1), epoch=st.integers(-1, 32767), timeout=st.integers(1, 2**31 - 1),
       partitions=st.frozensets(st.tuples(st.text(min_size=1, max_size=20), st.integers(0, 2**31 - 1)),
                                max_size=6),
       start=st.integers(-1, 2**62), update=st.integers(-1, 2**62))
def test_value_bytes_agree_with_the_declaration(state, pid, epoch, timeout, partitions, start, update):
    metadata = TxnMetadata("t", pid, epoch, timeout, state, partitions, start, update)
    parsed = records.TransactionLogValue.parse(metadata.value_bytes())
    assert (parsed.version, parsed.producer_id, parsed.producer_epoch, parsed.transaction_timeout_ms,
            parsed.transaction_status) == (0, pid, epoch, timeout, int(state))
    if state == TxnState.EMPTY:
        assert parsed.transaction_partitions is None
    restored = TxnMetadata.from_record("t", metadata.value_bytes())
    expected_partitions = frozenset() if state == TxnState.EMPTY else partitions
    assert (restored.partitions, restored.start_ms, restored.last_update_ms) == (expected_partitions, start, update)
