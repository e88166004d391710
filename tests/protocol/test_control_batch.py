"""Reading a marker in place (``read_control_batch``) agrees with decoding it."""

from hypothesis import given, strategies as st

from weir.protocol import records as rec


@given(commit=st.booleans(), epoch=st.integers(0, 2**31 - 1), pid=st.integers(0, 2**63 - 1),
       timestamp=st.integers(0, 2**50))
def test_read_in_place_equals_decoded(commit, epoch, pid, timestamp):
    batch = rec.encode_control_batch(commit=commit, producer_id=pid, producer_epoch=3, coordinator_epoch=epoch,
                                     timestamp=timestamp)
    _header, records = rec.decode_batch(batch)
    assert rec.read_control_batch(memoryview(batch)) == rec.decode_control_record(records[0]) == (
        rec.CONTROL_COMMIT if commit else rec.CONTROL_ABORT, epoch)
