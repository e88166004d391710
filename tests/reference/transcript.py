"""What a scenario saw, normalised so two brokers' answers compare field by field.

Every field of every response is kept, except the ones listed in ``MASKED`` (replaced by
their reason, so a transcript says what was left out and why) and the ones in ``SYMBOLIC``
(broker-assigned numbers, renamed by order of first appearance). Lists keyed by partition
or name are sorted by that key (``ORDER_FREE_KEYS``). Record bytes are decoded into
batches, so offsets, producer ids, sequences, flags and records compare too.
"""

from __future__ import annotations

from weir.protocol.records import CONTROL_ABORT, decode_batches, decode_control_record

#: Fields whose values may differ between two correct brokers, each with the reason.
MASKED = {
    "throttle_time_ms": "quota throttling follows load, not semantics",
    "port": "each broker listens on its own port",
    "error_message": "free text; the error code carries the meaning",
    "cluster_id": "each cluster has its own random id",
}

#: Broker-assigned numbers: compared by identity (first one seen is #0), not by value.
SYMBOLIC = {"producer_id"}

#: Keys of list entries a broker may answer in any order (Kafka answers per-partition and per-group
#: results in hash-map order; clients match them by these keys). Such lists are sorted.
ORDER_FREE_KEYS = ("partition_index", "index", "partition", "name", "group_id")

#: Batch header fields set by the broker's clock for markers it writes itself.
CONTROL_BATCH_CLOCK = "control batch timestamps come from the broker's clock"


class Transcript:
    """Ordered ``step -> normalised answer``; scenarios add a step per request they judge."""

    def __init__(self):
        self.steps: dict[str, object] = {}
        self._symbols: dict[tuple[str, int], str] = {}

    def add(self, step: str, answer):
        """Record ``answer``; None is a request the scenario's client version does not send
        (AddPartitionsToTxn at transaction version 2), left out of the transcript."""
        if answer is None:
            return None
        if step in self.steps:
            raise ValueError(f"step {step!r} recorded twice")
        self.steps[step] = self.normalise(answer)
        return answer

    def symbol(self, kind: str, value: int) -> str:
        if value < 0:
            return str(value)  # -1 is "none" on the wire, the same on every broker
        key = (kind, value)
        if key not in self._symbols:
            self._symbols[key] = f"{kind}#{sum(1 for k, _ in self._symbols if k == kind)}"
        return self._symbols[key]

    def normalise(self, value, name: str | None = None):
        if name in MASKED:
            return f"<masked: {MASKED[name]}>"
        if name in SYMBOLIC and isinstance(value, int):
            return self.symbol(name, value)
        if name == "records" and isinstance(value, (bytes, bytearray, memoryview)):
            return self._batches(bytes(value))
        if hasattr(value, "FIELDS"):
            return {field: self.normalise(getattr(value, field), field) for field in value.FIELDS}
        if isinstance(value, (list, tuple)):
            return _sorted_if_order_free([self.normalise(item, name) for item in value])
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        return value

    def _batches(self, data: bytes) -> list[dict]:
        batches = []
        for header, records in decode_batches(data):
            batch = {
                "base_offset": header.base_offset,
                "last_offset_delta": header.last_offset_delta,
                "partition_leader_epoch": header.partition_leader_epoch,
                "producer_id": self.symbol("producer_id", header.producer_id),
                "producer_epoch": header.producer_epoch,
                "base_sequence": header.base_sequence,
                "transactional": header.is_transactional,
                "control": header.is_control,
                "timestamps": (header.base_timestamp, header.max_timestamp),
                "compression": int(header.compression),
            }
            if header.is_control:
                batch["timestamps"] = f"<masked: {CONTROL_BATCH_CLOCK}>"
                batch["records"] = [_control(record) for record in records]
            else:
                batch["records"] = [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in records]
            batches.append(batch)
        return batches


def _sorted_if_order_free(items: list) -> list:
    if len(items) < 2 or not all(isinstance(item, dict) for item in items):
        return items
    for key in ORDER_FREE_KEYS:
        if all(key in item for item in items):
            return sorted(items, key=lambda item: item[key])
    return items


def _control(record) -> tuple:
    kind, coordinator_epoch = decode_control_record(record)
    return (record.offset, "ABORT" if kind == CONTROL_ABORT else "COMMIT", coordinator_epoch)


def differences(reference: dict, candidate: dict, path: str = "") -> dict[str, tuple]:
    """``path -> (reference value, candidate value)`` for every leaf that differs."""
    found: dict[str, tuple] = {}
    if isinstance(reference, dict) and isinstance(candidate, dict):
        for key in list(reference) + [k for k in candidate if k not in reference]:
            found.update(differences(reference.get(key, "<absent>"), candidate.get(key, "<absent>"),
                                     f"{path}.{key}" if path else str(key)))
    elif isinstance(reference, list) and isinstance(candidate, list) and len(reference) == len(candidate):
        for index, (left, right) in enumerate(zip(reference, candidate, strict=False)):
            found.update(differences(left, right, f"{path}[{index}]"))
    elif reference != candidate:
        found[path] = (reference, candidate)
    return found
