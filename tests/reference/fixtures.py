"""One Apache Kafka and one Weir per test session, each started on first use, and
``any_broker``: the same scenario run once against each. Scenarios that kill -9 a broker
get a pair of their own (``any_broker_to_kill``), so the shared ones keep their history.

Both finalize transaction.version 2, as Kafka 4 formats its storage. The transaction scenarios
also run on a second pair finalizing version 1 (Kafka formatted with ``--feature
transaction.version=1``, Weir started with the same ``--feature``): ``broker_at_level`` and
``kafka_at_level`` pick the pair by ``finalized_transaction_version``. On the pair finalizing 2
they run twice, their producers speaking each version (``client_transaction_version``).

A pytest plugin (named in tests/conftest.py) rather than a conftest, so that every suite
(reference, client, pipeline) shares the one Kafka JVM a session starts."""

import pytest

from tests.broker_process import BrokerProcess
from reference.kafka import SHARED_TEST_SETTINGS, KafkaProcess, kafka_version

TRANSACTION_VERSION = "transaction.version"
_started: list[KafkaProcess] = []


def _kafka(tmp_path_factory, name, transaction_version: int = 2):
    features = {} if transaction_version == 2 else {TRANSACTION_VERSION: transaction_version}
    process = KafkaProcess(tmp_path_factory.mktemp(name), features=features).start()
    _started.append(process)
    return process


def _weir(tmp_path_factory, name, transaction_version: int = 2):
    args = [] if transaction_version == 2 else ["--feature", f"{TRANSACTION_VERSION}={transaction_version}"]
    return BrokerProcess(tmp_path_factory.mktemp(name) / "data", overrides=SHARED_TEST_SETTINGS, args=args).start()


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


@pytest.fixture(scope="session")
def kafka_broker_tv1(tmp_path_factory):
    process = _kafka(tmp_path_factory, "kafka-tv1", transaction_version=1)
    yield process
    process.stop()


@pytest.fixture(scope="session")
def weir_process_tv1(tmp_path_factory):
    process = _weir(tmp_path_factory, "weir-tv1", transaction_version=1)
    yield process
    process.stop()


@pytest.fixture(params=[(2, 2), (2, 1), (1, 1)], ids=["tv2", "tv1-client-tv2-finalized", "tv1"])
def transaction_versions(request):
    """(version the brokers finalize, version the scenario's producers speak): a Java 4 client
    on a broker finalizing 2 speaks 2; librdkafka speaks 1 everywhere; at 1 everyone speaks 1."""
    return request.param


@pytest.fixture
def finalized_transaction_version(transaction_versions):
    return transaction_versions[0]


@pytest.fixture
def client_transaction_version(transaction_versions):
    return transaction_versions[1]


_AT_LEVEL = {("weir", 2): "weir_process", ("kafka", 2): "kafka_broker",
             ("weir", 1): "weir_process_tv1", ("kafka", 1): "kafka_broker_tv1"}


@pytest.fixture(params=["weir", "kafka"])
def broker_at_level(request, finalized_transaction_version):
    """``any_broker`` among the brokers finalizing ``finalized_transaction_version``."""
    return request.getfixturevalue(_AT_LEVEL[request.param, finalized_transaction_version])


@pytest.fixture
def kafka_at_level(request, finalized_transaction_version):
    return request.getfixturevalue(_AT_LEVEL["kafka", finalized_transaction_version])


@pytest.fixture(scope="module", params=[2, 1], ids=["tv2-finalized", "tv1-finalized"])
def kill_pair_level(request):
    return request.param


@pytest.fixture(scope="module")
def kafka_to_kill_at_level(tmp_path_factory, kill_pair_level):
    process = _kafka(tmp_path_factory, f"kafka-to-kill-tv{kill_pair_level}", kill_pair_level)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def weir_to_kill_at_level(tmp_path_factory, kill_pair_level):
    process = _weir(tmp_path_factory, f"weir-to-kill-tv{kill_pair_level}", kill_pair_level)
    yield process
    process.stop()


@pytest.fixture(params=["weir", "kafka"])
def broker_to_kill_at_level(request):
    return request.getfixturevalue(f"{request.param}_to_kill_at_level")


def pytest_terminal_summary(terminalreporter):
    for process in _started:
        starts = ", ".join(f"{seconds:.1f} s" for seconds in process.startup_seconds)
        terminalreporter.write_line(
            f"reference Apache Kafka {kafka_version()} ({process.run_dir.name}): storage formatted in "
            f"{process.format_seconds:.1f} s, ready in {starts}")
