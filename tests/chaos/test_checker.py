"""The chaos checker finds every anomaly class in a history that has it, and none in one that does
not: no broker, histories written by hand."""

from __future__ import annotations

from chaos.checker import Anomalies, Read, check_inputs, check_outputs


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
