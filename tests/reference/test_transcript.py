"""The differential harness itself: normalisation and judging, without a broker."""

from weir.protocol.messages import init_producer_id, list_offsets
from weir.protocol.records import Record, encode_batch, encode_control_batch
from tests.reference.differential import Deviation, judge, log_of
from tests.reference.transcript import Transcript, differences


def _offsets(*partitions):
    return list_offsets.RESPONSE(throttle_time_ms=7, topics=[list_offsets.TopicResponse(name="t", partitions=[
        list_offsets.PartitionResponse(partition_index=index, offset=offset) for index, offset in partitions])])


def test_masked_fields_say_why_and_producer_ids_become_symbols():
    transcript = Transcript()
    transcript.add("a", init_producer_id.RESPONSE(throttle_time_ms=3, producer_id=4711, producer_epoch=0))
    transcript.add("b", init_producer_id.RESPONSE(throttle_time_ms=9, producer_id=99, producer_epoch=1))
    transcript.add("c", init_producer_id.RESPONSE(producer_id=4711, producer_epoch=2))
    transcript.add("d", init_producer_id.RESPONSE(producer_id=-1, producer_epoch=-1))
    steps = transcript.steps
    assert steps["a"]["throttle_time_ms"] == steps["b"]["throttle_time_ms"]
    assert "quota" in steps["a"]["throttle_time_ms"]
    assert [steps[s]["producer_id"] for s in "abcd"] == ["producer_id#0", "producer_id#1", "producer_id#0", "-1"]


def test_per_partition_answers_compare_in_any_order():
    left, right = Transcript(), Transcript()
    left.add("offsets", _offsets((0, 5), (1, 6)))
    right.add("offsets", _offsets((1, 6), (0, 5)))
    assert differences(left.steps, right.steps) == {}
    right.steps["offsets"]["topics"][0]["partitions"][0]["offset"] = 4
    assert differences(left.steps, right.steps) == {"offsets.topics[0].partitions[0].offset": (5, 4)}


def test_records_are_decoded_and_marker_clocks_masked():
    transcript = Transcript()
    data = encode_batch([Record(b"v", timestamp=5)], producer_id=8, producer_epoch=0, base_sequence=0,
                        transactional=True)
    marker = encode_control_batch(commit=True, producer_id=8, producer_epoch=0, coordinator_epoch=0,
                                  timestamp=123456, base_offset=1)

    class Partition:
        FIELDS = ("records",)
        records = data + marker

    class Fetch:
        FIELDS = ("responses",)
        responses = [type("Topic", (), {"FIELDS": ("partitions",), "partitions": [Partition()]})()]

    steps = {"fetch": transcript.normalise(Fetch())}
    assert log_of(steps["fetch"]) == [b"v", "COMMIT"]
    batches = steps["fetch"]["responses"][0]["partitions"][0]["records"]
    assert batches[0]["timestamps"] == (5, 5) and "clock" in batches[1]["timestamps"]
    assert batches[0]["producer_id"] == batches[1]["producer_id"] == "producer_id#0"


def test_judge_reports_differences_unexplained_and_deviations_no_longer_seen():
    reference = {"step": {"error_code": 3, "offset": 7, "epoch": 2}}
    candidate = {"step": {"error_code": 0, "offset": 7, "epoch": 0}, "extra": 1}
    deviations = {"step.epoch": Deviation(lambda epoch: epoch > 0, 0, "single node"),
                  "step.offset": Deviation(7, 8, "fixed since")}
    unexpected, missing = judge(reference, candidate, deviations)
    assert unexpected == {"step.error_code": (3, 0), "extra": ("<absent>", 1)}
    assert missing == ["step.offset"]
    assert judge(reference, reference, {}) == ({}, [])
