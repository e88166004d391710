import itertools
import os

import pytest

from tests.broker_process import FAST_ONLY, BrokerProcess

pytest_plugins = ["tests.reference.fixtures"]

_names = itertools.count()


def pytest_sessionstart(session):
    # The zygote that forks warm broker children imports the broker while tests are collected.
    if not os.environ.get(FAST_ONLY):
        from weir.testing.process import start_zygote
        start_zygote()


@pytest.fixture
def broker(tmp_path):
    """A fresh broker process per test, stopped (or already killed) afterwards."""
    process = BrokerProcess(tmp_path / "data").start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory):
    """One broker for a module of tests that each use their own topics."""
    process = BrokerProcess(tmp_path_factory.mktemp("shared") / "data").start()
    yield process
    process.stop()


@pytest.fixture
def topic_name(request):
    base = "".join(ch if ch.isalnum() else "-" for ch in request.node.name)[:80]
    return f"{base}-{next(_names)}"
