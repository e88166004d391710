"""Runs a scenario on a broker and judges Weir's transcript against Kafka's.

A scenario is ``async def scenario(wire, transcript)``: it sends requests through ``wire``
and records the answers it judges in ``transcript``. Each runs once per broker per session
(Kafka's transcript is kept for the Weir run to be compared with), under the same names
on both brokers so that topic and transactional ids compare as they are.

On Kafka a test asserts the facts that make the scenario worth running (so it cannot
pass by both brokers answering the same nonsense); on Weir every field of every answer
must equal Kafka's, except the known deviations the test lists with their reasons.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.reference.transcript import Transcript, differences
from tests.reference.wire import Wire

#: (scenario, Kafka's port, client transaction version) -> Kafka's transcript: one per scenario,
#: reference Kafka (one finalizing each transaction version) and version its producers speak.
_kafka_transcripts: dict[tuple[str, int, int], dict] = {}


@dataclass(frozen=True)
class Deviation:
    """Where Weir knowingly answers differently from Kafka, and why.

    ``kafka`` is Kafka's value, or a predicate on it where Kafka's value depends on its
    history (a leader epoch counts restarts); ``weir`` is always Weir's exact value.
    """
    kafka: object
    weir: object
    reason: str

    def matches(self, kafka_value, weir_value) -> bool:
        kafka_ok = self.kafka(kafka_value) if callable(self.kafka) else self.kafka == kafka_value
        return kafka_ok and self.weir == weir_value


async def transcript_of(broker, scenario, client_transaction_version: int = 1) -> dict:
    wire = await Wire.open(broker, client_transaction_version)
    transcript = Transcript()
    try:
        await scenario(wire, transcript)
    finally:
        await wire.close()
    return transcript.steps


async def kafka_transcript(kafka_broker, scenario, client_transaction_version: int = 1) -> dict:
    key = (scenario.__name__, kafka_broker.port, client_transaction_version)
    if key not in _kafka_transcripts:
        _kafka_transcripts[key] = await transcript_of(kafka_broker, scenario, client_transaction_version)
    return _kafka_transcripts[key]


async def differential(any_broker, kafka_broker, scenario, *, facts, deviations=None,
                       client_transaction_version: int = 1) -> dict:
    """Kafka's run must show ``facts(steps)``; Weir's must match Kafka's but for ``deviations``.

    ``deviations`` maps ``"step.path"`` (as ``differences`` spells it) to a Deviation. The
    scenario's producers speak ``client_transaction_version`` (tests/reference/producer.py).
    """
    reference = await kafka_transcript(kafka_broker, scenario, client_transaction_version)
    if any_broker.kind == "kafka":
        facts(reference)
        return reference
    candidate = await transcript_of(any_broker, scenario, client_transaction_version)
    unexpected, missing = judge(reference, candidate, deviations or {})
    assert not unexpected and not missing, _explain(unexpected, missing)
    return candidate


def judge(reference: dict, candidate: dict, deviations: dict) -> tuple[dict, list]:
    """(differences no deviation explains, deviations no longer seen)."""
    found = differences(reference, candidate)
    unexpected = {path: diff for path, diff in found.items()
                  if path not in deviations or not deviations[path].matches(*diff)}
    missing = sorted(path for path in deviations if path not in found)
    return unexpected, missing


def _explain(unexpected: dict, missing: list) -> str:
    lines = [f"Weir differs from Kafka at {path}: kafka={kafka!r} weir={weir!r}"
             for path, (kafka, weir) in unexpected.items()]
    lines += [f"known deviation no longer seen (fixed? remove it from the table): {path}" for path in missing]
    return "\n".join(lines)


def codes(answer) -> list[int]:
    """Every error code in a normalised answer, in field order."""
    found = []
    if isinstance(answer, dict):
        for name, value in answer.items():
            if name in ("error_code", "partition_error_code") and isinstance(value, int):
                found.append(value)
            else:
                found += codes(value)
    elif isinstance(answer, list):
        for item in answer:
            found += codes(item)
    return found


def log_of(fetch_answer) -> list:
    """The fetched partition as values and marker kinds, in offset order."""
    batches = fetch_answer["responses"][0]["partitions"][0]["records"]
    return [record[1] if batch["control"] else record[2] for batch in batches for record in batch["records"]]
