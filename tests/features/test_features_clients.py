"""Real clients read Weir's ApiVersions answers with the feature tags: librdkafka asks v3 (and
would fall back to v0 if the tagged fields did not parse). Kafka's Java Admin reads them through
kafka-features describe (test_features_reference.py)."""

import logging
import time

from confluent_kafka.admin import AdminClient

from tests.features.raw import features


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_librdkafka_reads_the_v3_answer_with_features(broker):
    assert features(broker, 3)[1:] == (2, 0)  # finalized transaction.version=2 at epoch 0 in the v3 answer
    captured = Lines()
    logger = logging.getLogger(f"librdkafka-{broker.port}")
    logger.addHandler(captured)
    logger.setLevel(logging.DEBUG)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "debug": "protocol,feature", "logger": logger})
    assert admin.list_topics(timeout=10).brokers  # the answer was read: librdkafka went on to Metadata
    deadline = time.monotonic() + 10
    while not any("(57)" in line for line in captured.lines) and time.monotonic() < deadline:
        admin.poll(0.1)  # delivers queued log lines
    answers = [line for line in captured.lines if "Received ApiVersionResponse" in line]
    assert answers and all("(v3," in line for line in answers), answers
    assert any("ApiKey UpdateFeaturesRequest (57) Versions 0..2" in line for line in captured.lines)
    assert not any("ApiVersionRequest (v0" in line for line in captured.lines)  # no fallback
