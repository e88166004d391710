"""One Apache Kafka and one Weir per test session, each started on first use, and
``any_broker``: the same scenario run once against each."""

import pytest

from tests.broker_process import BrokerProcess
from tests.reference.kafka import SHARED_TEST_SETTINGS, KafkaProcess, kafka_version

_started: list[KafkaProcess] = []


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    process = KafkaProcess(tmp_path_factory.mktemp("kafka")).start()
    _started.append(process)
    yield process
    process.stop()


@pytest.fixture(scope="session")
def weir_broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("weir") / "data", overrides=SHARED_TEST_SETTINGS).start()
    yield process
    process.stop()


@pytest.fixture(params=["weir", "kafka"])
def any_broker(request):
    return request.getfixturevalue(f"{request.param}_broker")


def pytest_terminal_summary(terminalreporter):
    for process in _started:
        terminalreporter.write_line(
            f"reference Apache Kafka {kafka_version()}: storage formatted in {process.format_seconds:.1f} s, "
            f"ready in {process.startup_seconds:.1f} s")
