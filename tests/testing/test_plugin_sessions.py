"""The plugin in pytest sessions of its own (a user's suite, written to a temporary directory
and run by a child pytest): broker per marker settings, session fixtures on top of it, the
broker log in failure reports, data directories removed, pytest-xdist, nothing started for
a session that never asks for a broker."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

USERS_SUITE = '''
import json, os, pathlib
import aiokafka
import pytest

OUT = pathlib.Path(os.environ["WEIR_PLUGIN_OUT"])


def record(name, broker):
    (OUT / name).write_text(json.dumps({"bootstrap": broker.bootstrap_servers, "data_dir": str(broker.data_dir),
                                        "worker": os.environ.get("PYTEST_XDIST_WORKER", "")}))


@pytest.fixture(scope="session")
def session_topic(weir_broker):
    return weir_broker.create_topic("made-by-a-session-fixture", partitions=2)


def test_default(weir_broker, session_topic):
    record("default", weir_broker)


@pytest.mark.weir(settings={"transaction.max.timeout.ms": 2000})
def test_marked_a(weir_broker):
    record("marked_a", weir_broker)


@pytest.mark.weir(settings={"transaction.max.timeout.ms": 2000})
def test_marked_b(weir_broker):
    record("marked_b", weir_broker)


@pytest.mark.weir
def test_marker_without_settings(weir_broker):
    record("bare", weir_broker)


async def test_async(weir_broker, weir_topic):
    topic = weir_topic()
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=weir_broker.bootstrap_servers) as producer:
        await producer.send_and_wait(topic, b"x")
    record("async", weir_broker)


def test_fails(weir_broker, weir_topic):
    weir_topic(name="topic-of-the-failing-test")
    assert False, "failing on purpose"


def test_default_after_marked_ones(weir_broker, session_topic):
    """Runs before the marked tests (the plugin's order), so session_topic is made once."""
    record("default_again", weir_broker)
'''

NO_BROKER_SUITE = '''
import sys


def test_plugin_loaded_and_idle(request):
    assert request.config.pluginmanager.has_plugin("weir")
    assert "weir.testing.process" not in sys.modules  # the only way the plugin starts a broker
    assert "weir.broker" not in sys.modules


def test_plain():
    assert 1 + 1 == 2
'''

XDIST_SUITE = '''
import os, pathlib
import pytest

OUT = pathlib.Path(os.environ["WEIR_PLUGIN_OUT"])


@pytest.mark.parametrize("number", range(3))
def test_on_each_worker(weir_broker, weir_topic, number):
    weir_topic()
    worker = os.environ["PYTEST_XDIST_WORKER"]
    (OUT / f"{worker}-{number}").write_text(weir_broker.bootstrap_servers)
'''


def run_pytest(tmp_path: Path, suite: str, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    project = tmp_path / "users_project"
    project.mkdir()
    (project / "test_users_suite.py").write_text(suite)
    out = tmp_path / "out"
    out.mkdir()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function", *args],
                            cwd=project, capture_output=True, text=True,
                            env={**os.environ, "WEIR_PLUGIN_OUT": str(out)}, timeout=240)
    return result, out


def outcomes(result: subprocess.CompletedProcess) -> dict[str, int]:
    summary = result.stdout.strip().splitlines()[-1]
    return {word: int(count) for count, word in re.findall(r"(\d+) (passed|failed|error|errors|skipped)", summary)}


def test_brokers_per_settings_session_fixtures_and_failure_logs(tmp_path):
    result, out = run_pytest(tmp_path, USERS_SUITE)
    assert outcomes(result) == {"passed": 6, "failed": 1}, result.stdout + result.stderr
    seen = {path.name: json.loads(path.read_text()) for path in out.iterdir()}
    assert (seen["default"]["bootstrap"] == seen["bare"]["bootstrap"] == seen["async"]["bootstrap"]
            == seen["default_again"]["bootstrap"])
    assert seen["marked_a"]["bootstrap"] == seen["marked_b"]["bootstrap"] != seen["default"]["bootstrap"]
    for record in seen.values():
        assert not Path(record["data_dir"]).exists(), "the temporary data directory outlived the session"
    # the failing test's report carries the broker log written during it, and only that test's
    assert result.stdout.count("weir broker log") == 1, result.stdout
    section = result.stdout.split("weir broker log", 1)[1]
    assert "created topic topic-of-the-failing-test" in section
    assert "made-by-a-session-fixture" not in section


def test_a_session_that_asks_for_no_broker_starts_none(tmp_path):
    result, _ = run_pytest(tmp_path, NO_BROKER_SUITE)
    assert outcomes(result) == {"passed": 2}, result.stdout + result.stderr


def test_one_broker_per_xdist_worker(tmp_path):
    result, out = run_pytest(tmp_path, XDIST_SUITE, "-n", "2", "--dist", "each")
    assert outcomes(result) == {"passed": 6}, result.stdout + result.stderr
    by_worker: dict[str, set[str]] = {}
    for path in out.iterdir():
        by_worker.setdefault(path.name.split("-")[0], set()).add(path.read_text())
    assert sorted(by_worker) == ["gw0", "gw1"]
    assert all(len(bootstraps) == 1 for bootstraps in by_worker.values()), by_worker
    assert by_worker["gw0"] != by_worker["gw1"]
