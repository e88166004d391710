"""Finalized features survive a clean restart and kill -9 (answered means on disk), and the
``--feature`` flag sets a new data directory's levels only, as ``kafka-storage format --feature``
formats a directory once."""

import subprocess
import sys

from weir.protocol.errors import Errors
from weir.protocol.messages.update_features import SAFE_DOWNGRADE, UPGRADE
from tests.broker_process import REPO, BrokerProcess, free_port
from tests.features.raw import TV, features, update


def test_levels_and_epoch_survive_restart_and_kill_9(broker):
    assert features(broker) == ((0, 2), 2, 0)
    assert update(broker, 2, (TV, 0, SAFE_DOWNGRADE))[0] == Errors.NONE
    assert features(broker) == ((0, 2), 0, 1)
    broker.stop()
    broker.start()
    assert features(broker) == ((0, 2), 0, 1)

    assert update(broker, 2, (TV, 2, UPGRADE))[0] == Errors.NONE
    broker.kill()  # right after the answer: it was on disk before it was answered
    broker.start()
    assert features(broker) == ((0, 2), 2, 2)

    assert update(broker, 2, (TV, 0, SAFE_DOWNGRADE), validate_only=True)[0] == Errors.NONE
    assert update(broker, 2, (TV, 3, UPGRADE))[0] == Errors.INVALID_UPDATE_VERSION
    broker.kill()
    broker.start()
    assert features(broker) == ((0, 2), 2, 2)  # neither a dry run nor a refusal wrote anything


def test_feature_flag_sets_a_new_directory_only(tmp_path):
    data = tmp_path / "data"
    first = BrokerProcess(data, args=["--feature", f"{TV}=0"]).start()
    try:
        assert features(first) == ((0, 2), 0, 0)
    finally:
        first.stop()
    again = BrokerProcess(data, args=["--feature", f"{TV}=1"]).start()
    try:
        assert features(again) == ((0, 2), 0, 0)  # the persisted level wins
        assert again.log_contains("--feature {'transaction.version': 1} ignored")
    finally:
        again.stop()


def test_a_feature_flag_this_broker_cannot_serve_stops_start_up(tmp_path):
    for flag, complaint in [(f"{TV}=3", "transaction.version=3 is outside the supported range 0-2"),
                            ("share.version=2", "share.version=2 is outside the supported range 0-1"),
                            ("streams.version=2", "streams.version=2 is outside the supported range 0-1"),
                            ("eligible.leader.replicas.version=1",
                             "unsupported feature 'eligible.leader.replicas.version'")]:
        result = subprocess.run([sys.executable, "-m", "weir.broker", "--port", str(free_port()),
                                 "--data-dir", str(tmp_path / "data"), "--feature", flag],
                                cwd=REPO, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and complaint in result.stderr, result.stderr
    assert not (tmp_path / "data").exists()
