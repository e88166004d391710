"""Offset planning and option parsing, without Spark or a broker."""

import pytest

from weir.client import TopicPartition
from weir.pipeline import options as opt
from weir.pipeline.planner import DataLossError, OffsetRange, _explicit, ranges, rate_limited

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)


def test_explicit_offsets_resolve_earliest_latest_and_data_loss():
    earliest, latest = {A0: 10, A1: 0}, {A0: 50, A1: 7}
    spec = opt.offset_spec('{"a": {"0": -2, "1": -1}}', "earliest", option="startingOffsets")
    assert _explicit([A0, A1], spec, earliest, latest, option="s", fail_on_data_loss=True) == {A0: 10, A1: 7}
    gone = {A0: 3, A1: 0}  # offsets 3..9 of a-0 were deleted
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        _explicit([A0, A1], gone, earliest, latest, option="s", fail_on_data_loss=True)
    assert _explicit([A0, A1], gone, earliest, latest, option="s", fail_on_data_loss=False) == {A0: 10, A1: 0}
    with pytest.raises(opt.OptionError, match="does not match"):
        _explicit([A0, A1], {A0: 3}, earliest, latest, option="s", fail_on_data_loss=True)


def test_min_partitions_splits_ranges_by_their_share_of_the_data():
    pieces = ranges({A0: 0, A1: 0}, {A0: 90, A1: 10}, min_partitions=5)
    assert len(pieces) >= 5
    assert sum(p.size for p in pieces if p.partition == 0) == 90 and sum(p.size for p in pieces) == 100
    assert [p for p in pieces if p.partition == 1] == [OffsetRange("a", 1, 0, 10)]
    covered = sorted((p.start, p.end) for p in pieces if p.partition == 0)
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:], strict=False))  # contiguous, no overlap
    assert ranges({A0: 5, A1: 7}, {A0: 5, A1: 9}) == [OffsetRange("a", 1, 7, 9)]  # empty ranges dropped


def test_max_offsets_per_trigger_is_shared_by_what_each_partition_has():
    end = rate_limited({A0: 0, A1: 100}, {A0: 300, A1: 200}, 40)
    assert end == {A0: 30, A1: 110}
    assert rate_limited({A0: 0}, {A0: 5}, 40) == {A0: 5}


def test_kafka_options_reach_the_client_and_refused_ones_are_refused():
    settings = opt.client_settings({"kafka.bootstrap.servers": "h:1", "kafka.fetch.max.wait.ms": "100",
                                    "kafka.group.id": "ignored"})
    assert settings == {"isolation_level": "read_committed", "fetch_max_wait_ms": 100}
    with pytest.raises(opt.OptionError, match="offsets live in Spark's checkpoint"):
        opt.client_settings({"kafka.enable.auto.commit": "true"})
    with pytest.raises(opt.OptionError, match="subscribe, subscribePattern, assign"):
        opt.subscription({"subscribe": "a", "assign": '{"a": [0]}'})
    assert opt.subscription({"assign": '{"a": [1, 0]}'}).partitions == (A1, A0)
    assert opt.offsets_from_json(opt.offsets_json({A0: 4, A1: 9})) == {A0: 4, A1: 9}


def test_streaming_queries_refuse_ending_offsets():
    from weir.pipeline.stream import StreamReader
    with pytest.raises(opt.OptionError, match="not valid in streaming queries"):
        StreamReader({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "endingoffsets": "latest"})
    assert StreamReader({"kafka.bootstrap.servers": "h:1", "subscribe": "a"}).starting == "latest"


def test_max_records_per_partition_splits_before_min_partitions():
    pieces = ranges({A0: 0, A1: 0}, {A0: 25, A1: 4}, max_records=10)
    assert pieces == [OffsetRange("a", 0, 0, 9), OffsetRange("a", 0, 9, 17), OffsetRange("a", 0, 17, 25),
                      OffsetRange("a", 1, 0, 4)]
    assert len(ranges({A0: 0}, {A0: 25}, min_partitions=6, max_records=10)) >= 6


def test_min_offsets_per_trigger_waits_at_most_max_trigger_delay():
    from weir.pipeline.stream import StreamReader
    reader = StreamReader({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "minoffsetspertrigger": "50",
                           "maxtriggerdelay": "2s"})
    assert reader.max_trigger_delay_ms == 2000
    assert not reader._delay(3, now=1_000_000)  # the first trigger of a run goes ahead
    assert reader._delay(49, now=1_001_000)  # too few, too soon
    assert not reader._delay(50, now=1_001_500)  # enough
    assert reader._delay(1, now=1_003_000)
    assert not reader._delay(1, now=1_003_500)  # maxTriggerDelay since the last batch
    with pytest.raises(opt.OptionError, match="duration"):
        opt.duration_ms({"maxtriggerdelay": "soon"}, "maxTriggerDelay", "15m")
    assert opt.duration_ms({}, "maxTriggerDelay", "15m") == 900_000
    with pytest.raises(opt.OptionError, match="error or latest"):
        opt.by_timestamp_strategy({"startingoffsetsbytimestampstrategy": "earliest"})
