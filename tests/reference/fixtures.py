"""One Apache Kafka and one Weir per test session, each started on first use, and
``any_broker``: the same scenario run once against each. Scenarios that kill -9 a broker
get a pair of their own (``any_broker_to_kill``), so the shared ones keep their history.

A pytest plugin (named in tests/conftest.py) rather than a conftest, so that every suite
(reference, client, pipeline) shares the one Kafka JVM a session starts."""

import pytest

from tests.broker_process import BrokerProcess
from tests.reference.kafka import SHARED_TEST_SETTINGS, KafkaProcess, kafka_version

_started: list[KafkaProcess] = []


def _kafka(tmp_path_factory, name):
    process = KafkaProcess(tmp_path_factory.mktemp(name)).start()
    _started.append(process)
    return process


def _weir(tmp_path_factory, name):
    return BrokerProcess(tmp_path_factory.mktemp(name) / "data", overrides=SHARED_TEST_SETTINGS).start()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    process = _kafka(tmp_path_factory, "kafka")
    yield process
    process.stop()


# Not weir_broker: that is the fixture of Weir's pytest plugin (weir.testing.plugin), which
# pytest loads in this venv too; the suites here want the process tests.broker_process runs.
@pytest.fixture(scope="session")
def weir_process(tmp_path_factory):
    process = _weir(tmp_path_factory, "weir")
    yield process
    process.stop()


@pytest.fixture(params=["weir", "kafka"])
def any_broker(request):
    return request.getfixturevalue({"weir": "weir_process", "kafka": "kafka_broker"}[request.param])


@pytest.fixture(scope="module")
def kafka_broker_to_kill(tmp_path_factory):
    process = _kafka(tmp_path_factory, "kafka-to-kill")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def weir_broker_to_kill(tmp_path_factory):
    process = _weir(tmp_path_factory, "weir-to-kill")
    yield process
    process.stop()


@pytest.fixture(params=["weir", "kafka"])
def any_broker_to_kill(request):
    return request.getfixturevalue(f"{request.param}_broker_to_kill")


def pytest_terminal_summary(terminalreporter):
    for process in _started:
        starts = ", ".join(f"{seconds:.1f} s" for seconds in process.startup_seconds)
        terminalreporter.write_line(
            f"reference Apache Kafka {kafka_version()} ({process.run_dir.name}): storage formatted in "
            f"{process.format_seconds:.1f} s, ready in {starts}")
