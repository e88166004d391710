"""Log compaction on one partition in a tmp dir, on a manual clock."""

import pytest

from weir.broker.log import partition_txns
from weir.broker.clock import ManualClock
from weir.broker.log import log_start, time_lookup
from weir.protocol import records as rec
from weir.protocol.compression import Compression
from weir.protocol.errors import Errors, KafkaError
from tests.log.cleaner_helpers import DAY_MS, batches, clean, latest, make_cleaner, open_compacted, put, records, reopen


async def test_latest_value_per_key_is_kept_with_its_offset(tmp_path):
    p = open_compacted(tmp_path / "t-0")
    await put(p, (b"k1", b"a"), (b"k2", b"b"))
    await put(p, (b"k1", b"c"))
    await put(p, (b"k3", b"d"))
    p.roll()
    await put(p, (b"k1", b"active"))  # the active segment is never cleaned
    result = await clean(p)
    assert result.stats.records_read == 4
    assert records(p) == [(1, b"k2", b"b"), (2, b"k1", b"c"), (3, b"k3", b"d"), (4, b"k1", b"active")]
    p = reopen(p)
    assert records(p) == [(1, b"k2", b"b"), (2, b"k1", b"c"), (3, b"k3", b"d"), (4, b"k1", b"active")]
    assert p.log_end_offset == 5


async def test_reads_cope_with_the_gaps_compaction_leaves(tmp_path):
    p = open_compacted(tmp_path / "t-0")
    for i in range(10):
        await put(p, (b"same", b"v%d" % i))
    await put(p, (b"other", b"x"))
    p.roll()
    for i in range(5):
        await put(p, (b"same", b"w%d" % i))
    p.roll()
    await put(p, (b"tail", b"t"))
    await clean(p)
    # offsets 0-9 and 11-14 were overwritten; a fetch in a gap gets the next batch there is
    assert [(o, v) for o, _k, v in records(p)] == [(10, b"x"), (15, b"w4"), (16, b"t")]
    first = next(rec.decode_batches(p.read(3, 10**9).records))
    assert first[0].base_offset == 10
    first = next(rec.decode_batches(p.read(12, 10**9).records))
    assert first[0].base_offset == 15, "a gap at the end of a segment continues in the next"
    assert time_lookup.offset_for_timestamp(p, 0) == (10, 1000)
    with pytest.raises(KafkaError) as err:
        p.read(18, 100)
    assert err.value.error == Errors.OFFSET_OUT_OF_RANGE


async def test_segments_are_merged_and_bounded_by_segment_bytes(tmp_path):
    p = open_compacted(tmp_path / "t-0")
    for i in range(6):
        await put(p, (b"k", b"v%d" % i), (b"u%d" % i, b"x"))
        p.roll()
    await put(p, (b"k", b"last"))
    assert len(p.segments) == 7
    await clean(p)
    assert len(p.segments) == 2, "six small cleaned segments become one"
    assert latest(p) == {b"k": b"last", **{b"u%d" % i: b"x" for i in range(6)}}


async def test_tombstones_stay_until_the_delete_horizon_and_it_survives_a_restart(tmp_path):
    clock = ManualClock()
    p = open_compacted(tmp_path / "t-0", **{"delete.retention.ms": DAY_MS})
    await put(p, (b"gone", b"v"))
    await put(p, (b"gone", None))
    await put(p, (b"kept", b"x"))
    p.roll()
    await put(p, (b"active", b"y"))
    await clean(p, clock)
    tombstone = [(h, r) for h, recs in batches(p) for r in recs if r.key == b"gone"]
    assert [r.value for _h, r in tombstone] == [None], "the value goes, its tombstone stays"
    header = tombstone[0][0]
    assert rec.delete_horizon_ms(header) == clock.now_ms() + DAY_MS
    assert tombstone[0][1].timestamp == 1000, "record timestamps survive the new base timestamp"
    p = reopen(p)
    clock.advance(DAY_MS - 1)
    await clean(p, clock)
    assert (1, b"gone", None) in records(p), "still inside delete.retention.ms"
    clock.advance(1)
    await clean(p, clock)
    assert records(p) == [(2, b"kept", b"x"), (3, b"active", b"y")]


async def test_aborted_transactions_and_their_markers_go_commits_stay(tmp_path):
    clock = ManualClock()
    p = open_compacted(tmp_path / "t-0", **{"delete.retention.ms": 1000})
    await put(p, (b"a", b"aborted"), pid=7, epoch=0, seq=0, transactional=True)
    await p.append_marker(7, 0, 0, False, 1000)
    await put(p, (b"b", b"committed"), pid=8, epoch=0, seq=0, transactional=True)
    await p.append_marker(8, 0, 0, True, 1000)
    await put(p, (b"a", b"plain"))
    p.roll()
    await put(p, (b"z", b"active"))
    p.producers.expire(10**14, 1)  # no active producer: nothing is kept for producer state

    def shape():
        return [(h.base_offset, h.is_control, [r.value for r in recs]) for h, recs in batches(p)]

    await clean(p, clock)
    assert shape() == [(1, True, [b"\x00\x00\x00\x00\x00\x00"]), (2, False, [b"committed"]),
                       (3, True, [b"\x00\x00\x00\x00\x00\x00"]), (4, False, [b"plain"]), (5, False, [b"active"])]
    assert [t.first_offset for t in partition_txns.aborted_between(p, 0, 5)] == [0], \
        "the retained ABORT keeps its entry"
    await clean(p, clock)  # the aborted data is gone now: its marker gets a delete horizon
    abort = batches(p)[0][0]
    assert abort.is_control and rec.delete_horizon_ms(abort) == clock.now_ms() + 1000
    clock.advance(1000)
    await clean(p, clock)
    assert [b[0] for b in shape()] == [2, 3, 4, 5], "the ABORT marker is gone past its horizon"
    assert partition_txns.aborted_between(p, 0, 6) == []
    # overwrite the committed value: its batch goes, then its COMMIT marker after a horizon
    await put(p, (b"b", b"new"))
    p.roll()
    await put(p, (b"z", b"active2"))
    for _ in range(2):
        await clean(p, clock)
    clock.advance(1000)
    await clean(p, clock)
    assert shape() == [(4, False, [b"plain"]), (5, False, [b"active"]), (6, False, [b"new"]),
                       (7, False, [b"active2"])]


async def test_last_batch_of_an_active_producer_survives_as_an_empty_batch(tmp_path):
    p = open_compacted(tmp_path / "t-0")
    await put(p, (b"k", b"idempotent"), pid=9, epoch=3, seq=0)
    await put(p, (b"k", b"overwritten"))
    p.roll()
    await put(p, (b"x", b"active"))
    await clean(p)
    kept = [h for h, _r in batches(p) if h.producer_id == 9]
    assert len(kept) == 1 and kept[0].records_count == 0, "header only: epoch and sequence, no records"
    assert (kept[0].base_offset, kept[0].producer_epoch, kept[0].base_sequence) == (0, 3, 0)
    assert records(p) == [(1, b"k", b"overwritten"), (2, b"x", b"active")]
    p.close()
    for snapshot in p.directory.glob("*.snapshot"):
        snapshot.unlink()  # producer state must come back from the compacted log alone
    p = open_compacted(p.directory)
    with pytest.raises(KafkaError) as err:
        await put(p, (b"k", b"gap"), pid=9, epoch=3, seq=5)
    assert err.value.error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert await put(p, (b"k", b"next"), pid=9, epoch=3, seq=1) == 3


async def test_compressed_batches_are_rewritten_with_their_codec(tmp_path):
    p = open_compacted(tmp_path / "t-0")
    await put(p, (b"a", b"1"), (b"b", b"2"), (b"c", b"3"), compression=Compression.GZIP)
    await put(p, (b"b", b"new"))
    p.roll()
    await put(p, (b"x", b"active"))
    await clean(p)
    header, recs = batches(p)[0]
    assert header.compression == Compression.GZIP
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (0, 2, 2)
    assert [(r.offset, r.value) for r in recs] == [(0, b"1"), (2, b"3")]  # decode_batches checked the CRC


async def test_uncleanable_range_lso_active_segment_and_min_lag(tmp_path):
    clock = ManualClock()
    p = open_compacted(tmp_path / "t-0")
    await put(p, (b"k", b"1"))
    p.roll()
    await put(p, (b"k", b"2"), pid=5, epoch=0, seq=0, transactional=True)  # open: holds the LSO
    p.roll()
    await put(p, (b"k", b"3"))
    p.roll()
    cleaner = make_cleaner(p, clock)
    target = cleaner.log_to_clean(p, clock.now_ms())
    assert target.first_uncleanable == 1, "nothing at or past the LSO is cleaned"
    await p.append_marker(5, 0, 0, True, 1000)
    assert cleaner.log_to_clean(p, clock.now_ms()).first_uncleanable == p.active.base_offset
    p.config["min.compaction.lag.ms"] = 10_000
    p.segments[2].max_timestamp = clock.now_ms()  # written just now: too young to clean
    assert cleaner.log_to_clean(p, clock.now_ms()).first_uncleanable == 2


async def test_dirty_ratio_decides_and_the_checkpoint_moves_the_dirty_start(tmp_path):
    clock = ManualClock()
    p = open_compacted(tmp_path / "t-0")
    for i in range(4):
        await put(p, (b"k", b"%d" % i))
    p.roll()
    await put(p, (b"k", b"active"))
    cleaner = make_cleaner(p, clock)
    assert cleaner.log_to_clean(p, clock.now_ms()).ratio == 1.0
    assert await cleaner.clean_filthiest()
    assert cleaner.checkpoint.offsets[("t", 0)] == 4
    again = make_cleaner(p, clock)  # a restart reads the checkpoint
    target = again.log_to_clean(p, clock.now_ms())
    assert (target.first_dirty, target.cleanable_bytes) == (4, 0)
    assert not await again.clean_filthiest()


async def test_segment_ms_rolls_by_time(tmp_path):
    p = open_compacted(tmp_path / "t-0", **{"segment.ms": 1000})
    await put(p, (b"k", b"1"), timestamp=10_000)
    await put(p, (b"k", b"2"), timestamp=11_000)
    assert len(p.segments) == 1, "exactly segment.ms later: not yet"
    await put(p, (b"k", b"3"), timestamp=11_001)
    assert [s.base_offset for s in p.segments] == [0, 2]


async def test_time_and_size_retention_apply_only_with_the_delete_policy(tmp_path):
    for policy, deleted in (("compact", 0), ("compact,delete", 1), ("delete", 1)):
        p = open_compacted(tmp_path / policy / "t-0", **{"cleanup.policy": policy, "retention.ms": 1})
        await put(p, (b"k", b"old"))
        p.roll()
        await put(p, (b"k", b"new"))
        assert log_start.apply_retention(p, 10**13) == deleted, policy


def test_cleanup_policy_and_cleaner_settings_parse_as_kafka_names_them():
    from weir.broker.config import BrokerConfig, ConfigError, parse_topic_config
    assert parse_topic_config("cleanup.policy", " delete, compact") == "delete,compact"  # as given, as Kafka reports it
    assert parse_topic_config("min.cleanable.dirty.ratio", "0.25") == 0.25
    with pytest.raises(ConfigError):
        parse_topic_config("cleanup.policy", "shred")
    with pytest.raises(ConfigError):
        parse_topic_config("min.cleanable.dirty.ratio", "1.5")
    defaults = BrokerConfig().topic_defaults()
    assert (defaults["cleanup.policy"], defaults["min.cleanable.dirty.ratio"], defaults["delete.retention.ms"],
            defaults["segment.ms"], defaults["min.compaction.lag.ms"]) == ("delete", 0.5, 86400000, 604800000, 0)
    broker = BrokerConfig()
    assert (broker["offsets.topic.segment.bytes"], broker["transaction.state.log.segment.bytes"],
            broker["offsets.retention.minutes"], broker["log.cleaner.enable"]) == (104857600, 104857600, 10080, True)


async def test_a_full_offset_map_cleans_in_several_passes(tmp_path):
    """log.cleaner.dedupe.buffer.size bounds the keys one pass maps; the checkpoint carries on."""
    clock = ManualClock()
    p = open_compacted(tmp_path / "t-0", **{"min.cleanable.dirty.ratio": 0.0})
    for _round in range(2):
        for i in range(10):
            await put(p, (b"k%d" % i, b"r%d" % _round))
    p.roll()
    await put(p, (b"x", b"active"))
    cleaner = make_cleaner(p, clock, **{"log.cleaner.dedupe.buffer.size": 24 * 4 * 10 // 9 + 1})  # 3 keys
    ends = []
    while await cleaner.clean_filthiest():
        ends.append(cleaner.checkpoint.offsets[("t", 0)])
    assert ends == [3, 6, 9, 12, 15, 18, 20], "three keys per pass, then the rest of the segment"
    assert records(p) == [(10 + i, b"k%d" % i, b"r1") for i in range(10)] + [(20, b"x", b"active")]


async def test_the_broker_file_budget_is_touched_on_the_event_loop_thread_only(tmp_path):
    """The cleaned segment is opened and loaded in a worker thread; the broker's SegmentFiles (an
    OrderedDict the loop iterates to close idle files) must not be changed from there."""
    import threading

    from weir.broker.log.open_files import SegmentFiles
    from weir.broker.log.partition import Partition

    off_loop: list[str] = []
    loop_thread = threading.get_ident()

    class LoopOnlyFiles(SegmentFiles):
        def opened(self, segment):
            if threading.get_ident() != loop_thread:
                off_loop.append(f"opened {segment.base_offset}")
            super().opened(segment)

        def closed(self, segment):
            if threading.get_ident() != loop_thread:
                off_loop.append(f"closed {segment.base_offset}")
            super().closed(segment)

    config = open_compacted(tmp_path / "t-0").config
    files = LoopOnlyFiles(64)
    p = Partition("t", 0, tmp_path / "t-0", config, files)
    p.open()
    await put(p, (b"k1", b"a"), (b"k2", b"b"))
    await put(p, (b"k1", b"c"))
    p.roll()
    await put(p, (b"k1", b"active"))
    await clean(p)
    assert records(p)[:2] == [(1, b"k2", b"b"), (2, b"k1", b"c")]
    assert not off_loop
    cleaned = p.segments[0]  # counted in the broker's budget exactly while its file is open
    assert (cleaned in files._open) == (cleaned._fd is not None)
