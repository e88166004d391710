"""What the client-level transaction flows (``test_flows_*.py``) share.

Each flow runs once per broker (``any_broker``) with the same assertions, written down
from what Apache Kafka does, so a Weir run that differs fails. The partition layouts the
flows build are spelled out here once, offsets included, because control records (one
marker per transaction and partition) take offsets that consumers never see as records.
"""

from __future__ import annotations

#: A stalled producer's transaction.timeout.ms: librdkafka's minimum. Both reference brokers
#: look for timed-out transactions every 500 ms, so the abort comes within ~1.5 s.
STALL_TIMEOUT_MS = 1000

#: How long a flow waits for something that must happen (a generous bound, never a pause).
DEADLINE_S = 20.0

#: How long a consumer keeps polling to show that records held behind the LSO stay there.
#: The librdkafka flows prove it by PARTITION_EOF at the LSO instead; the Python clients
#: have no such signal, so they watch for this long (each poll returns at once with data).
HELD_WINDOW_S = 1.0

# commit/abort visibility, per partition: c1 @0, its COMMIT @1, ab @2, its ABORT @3,
# c2 @4, its COMMIT @5.
VISIBILITY_COMMITTED = [(0, b"c1"), (4, b"c2")]
VISIBILITY_ALL = [(0, b"c1"), (2, b"ab"), (4, b"c2")]
VISIBILITY_END = 6

# LSO holding, one partition: "before" @0 (plain), the held transaction's h0 @1 and h1 @2,
# "plain" @3 (plain producer), "other" @4 with its COMMIT @5 (another transactional
# producer); the held transaction's marker then lands @6.
HELD_BEFORE = [(0, b"before")]
HELD_LSO = 1
HELD_END_OPEN = 6
HELD_AFTER = {"commit": [(1, b"h0"), (2, b"h1"), (3, b"plain"), (4, b"other")],
              "abort": [(3, b"plain"), (4, b"other")]}
HELD_END = 7



# Interleaved transactions, one partition, one batch per record: a0 @0, b0 @1, a1 @2, b1 @3 from
# transactions A and B, "plain" @4; then A aborts and B commits (their markers @5 and @6, in
# the order the brokers write them). A read_committed consumer starting anywhere, even inside
# A's transaction, gets B's records and "plain" only: Fetch must list A's transaction as
# aborted whenever it overlaps the fetched range, one batch per fetch or many.
INTERLEAVED_ALL = [(0, b"a0"), (1, b"b0"), (2, b"a1"), (3, b"b1"), (4, b"plain")]
INTERLEAVED_STARTS = [0, 2]
INTERLEAVED_END = 7


def interleaved_committed(start: int) -> list[tuple[int, bytes]]:
    return [(offset, value) for offset, value in INTERLEAVED_ALL
            if offset >= start and not value.startswith(b"a")]
