import pytest

from tests.broker_process import BrokerProcess
from tests.compat.groups import GROUP_SETTINGS, Member


@pytest.fixture
def group_broker(tmp_path):
    process = BrokerProcess(tmp_path / "data", overrides=GROUP_SETTINGS).start()
    yield process
    process.stop()
    assert not process.log_contains("Traceback"), "".join(process.lines[-40:])


@pytest.fixture
def members():
    started: list[Member] = []
    yield started
    for member in started:
        member.kill()
