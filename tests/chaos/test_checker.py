"""The chaos checker finds every anomaly class in a history that has it, and none in one that does
not: no broker, histories written by hand (the share group's acknowledgement logs too)."""

from __future__ import annotations

import json

from chaos.checker import Anomalies, Read, check_inputs, check_outputs
from chaos.share import check_shares, key_of, read_logs


def record(partition: int, offset: int, writer: str, txn: int, seq: int) -> Read:
    return Read(partition, offset, 0, {"w": writer, "t": txn, "s": seq})


BEGUN = {("p", 1): {"first": 0, "count": 2, "partition": 0}, ("p", 2): {"first": 2, "count": 2, "partition": 0},
         ("p", 3): {"first": 4, "count": 1, "partition": 0}}
CLEAN = [record(0, 0, "p", 1, 0), record(0, 1, "p", 1, 1), record(0, 3, "p", 3, 4)]  # txn 2 aborted


def classify(reads, outcome) -> dict[str, int]:
    anomalies = Anomalies()
    check_inputs(reads, BEGUN, outcome, anomalies)
    return {name: count for name, count in anomalies.counts.items() if count}


def test_a_clean_history_has_no_anomaly():
    assert classify(CLEAN, {("p", 1): "commit", ("p", 2): "abort", ("p", 3): "commit"}) == {}


def test_an_in_doubt_transaction_may_have_either_outcome():
    assert classify(CLEAN, {("p", 1): "commit"}) == {}
    assert classify(CLEAN[:2], {("p", 1): "commit"}) == {}


def test_input_anomalies():
    outcome = {("p", 1): "commit", ("p", 2): "abort", ("p", 3): "commit"}
    assert classify(CLEAN[:1] + CLEAN[2:], outcome) == {"lost": 1}
    assert classify(CLEAN + [record(0, 4, "p", 3, 4)], outcome) == {"duplicate": 1}
    assert classify(CLEAN + [record(0, 2, "p", 2, 2), record(0, 4, "p", 2, 3)], outcome) == {"aborted_read": 2,
                                                                                               "out_of_order": 1}
    assert classify(CLEAN + [record(0, 5, "p", 2, 2)], {("p", 1): "commit", ("p", 3): "commit"}) == {
        "uncommitted_read": 1, "out_of_order": 1}
    assert classify([CLEAN[1], CLEAN[0], CLEAN[2]], outcome) == {"out_of_order": 1}


def test_output_anomalies():
    inputs = [record(0, offset, "p", 1, offset) for offset in range(4)]
    outputs = [Read(0, n, 0, {"src": [0, n]}) for n in range(3)]
    anomalies = Anomalies()
    check_outputs(inputs, outputs, {0: 3}, anomalies)
    assert anomalies.total == 0
    check_outputs(inputs, outputs[:2], {0: 3}, anomalies)
    assert anomalies.counts["offsets_without_outputs"] == 1
    check_outputs(inputs, outputs + [Read(0, 3, 0, {"src": [0, 3]})], {0: 3}, anomalies)
    assert anomalies.counts["outputs_without_offsets"] == 1
    check_outputs(inputs, outputs + [Read(0, 3, 0, {"src": [0, 1]})], {0: 3}, anomalies)
    assert anomalies.counts["duplicate"] == 1


def share_logs(run_dir, *lines_by_worker):
    """Acknowledgement logs written by hand, one file per worker (chaos/share.py's format)."""
    for n, lines in enumerate(lines_by_worker):
        (run_dir / f"share-{n}.shares").write_text("".join(json.dumps(line) + "\n" for line in lines))


def got(offset, count=1, txn=1):
    return {"e": "got", "p": 0, "o": offset, "n": count, "v": {"w": "p", "t": txn, "s": offset}}


def acks(batch, *offsets_and_kinds):
    return {"e": "ack", "b": batch, "acks": [[0, offset, kind] for offset, kind in offsets_and_kinds]}


def share_classes(run_dir, inputs, start, *, now=1000.0) -> tuple[dict[str, int], dict[str, int]]:
    anomalies = Anomalies()
    committed = {key_of(read.partition, read.offset) for read in inputs}
    figures = check_shares(inputs, read_logs(run_dir, committed, now), {0: start}, {("p", 2): "abort"}, anomalies)
    judged = {name: figures[name] for name in ("share_unjudged", "share_unprocessed")}
    return {name: count for name, count in anomalies.counts.items() if count}, judged


SHARED = [Read(0, offset, 500_000, {"w": "p", "t": 1, "s": offset}) for offset in range(3)]  # written at 500 s


def test_share_records_accepted_once_released_or_rejected_are_clean(tmp_path):
    share_logs(tmp_path, [{"e": "start", "at": 400.0}, got(0), got(1), got(2),
                          acks(1, (0, "accept"), (1, "release"), (2, "reject")), {"e": "acked", "b": 1},
                          got(1, 2), acks(2, (1, "accept")), {"e": "acked", "b": 2}])
    assert share_classes(tmp_path, SHARED, 3) == ({}, {"share_unjudged": 0, "share_unprocessed": 0})


def test_two_confirmed_terminal_acknowledgements_are_an_anomaly_unconfirmed_ones_are_not(tmp_path):
    first = [{"e": "start", "at": 400.0}, got(0), got(1), got(2), acks(1, (0, "accept"), (1, "accept"), (2, "accept")),
             {"e": "acked", "b": 1}]
    # a second member was handed record 0 and 1 again: its acceptance of 0 confirmed, of 1 never answered
    second = [{"e": "start", "at": 400.0}, got(0, 2), acks(1, (0, "accept")), {"e": "acked", "b": 1},
              got(1, 2), acks(2, (1, "reject"))]
    share_logs(tmp_path, first, second)
    assert share_classes(tmp_path, SHARED, 3)[0] == {"share_accepted_twice": 1}


def test_a_record_the_broker_finished_unasked_is_lost_unless_the_delivery_limit_could_explain_it(tmp_path):
    # record 2 below the start offset, never meant to be accepted or rejected, delivered once
    lines = [{"e": "start", "at": 400.0}, got(0), got(1), got(2), acks(1, (0, "accept"), (1, "accept")),
             {"e": "acked", "b": 1}]
    share_logs(tmp_path, lines)
    anomalies, figures = share_classes(tmp_path, SHARED, 3)
    assert anomalies == {"share_lost": 1} and figures["share_unjudged"] == 0
    # at or past the start offset it is not finished: liveness, not an anomaly
    assert share_classes(tmp_path, SHARED, 2) == ({}, {"share_unjudged": 0, "share_unprocessed": 1})
    # nine instances that ended after it was written could each have hidden one delivery of it
    share_logs(tmp_path, lines + [{"e": "start", "at": 600.0 + n} for n in range(8)])
    assert share_classes(tmp_path, SHARED, 3) == ({}, {"share_unjudged": 1, "share_unprocessed": 0})
    # ... but instances that ended before it was written could not
    share_logs(tmp_path, [{"e": "start", "at": 100.0 + n} for n in range(8)] + lines)
    assert share_classes(tmp_path, SHARED, 3)[0] == {"share_lost": 1}


def test_a_share_delivery_of_an_aborted_record_is_an_aborted_read(tmp_path):
    share_logs(tmp_path, [{"e": "start", "at": 400.0}, got(0), got(1), got(2), got(7, txn=2),
                          acks(1, (0, "accept"), (1, "accept"), (2, "accept"), (7, "accept")), {"e": "acked", "b": 1}])
    assert share_classes(tmp_path, SHARED, 8)[0] == {"aborted_read": 1}
