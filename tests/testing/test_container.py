"""A test written for testcontainers' KafkaContainer runs unchanged on WeirContainer but for its import."""

import os
import subprocess
import sys
from pathlib import Path

SUITE = Path(__file__).with_name("kafkacontainer_suite.py")
THEIR_IMPORT = "from testcontainers.kafka import KafkaContainer"
OUR_IMPORT = "from weir.testing import WeirContainer as KafkaContainer"


def test_a_kafkacontainer_suite_runs_on_weir_with_one_import_changed(tmp_path):
    original = SUITE.read_text().splitlines()
    changed = [OUR_IMPORT if line == THEIR_IMPORT else line for line in original]
    assert [pair for pair in zip(original, changed, strict=False) if pair[0] != pair[1]] == [(THEIR_IMPORT, OUR_IMPORT)]
    (tmp_path / "test_kafkacontainer_suite.py").write_text("\n".join(changed) + "\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "test_kafkacontainer_suite.py"], cwd=tmp_path, capture_output=True, text=True,
                            env=dict(os.environ), timeout=240)
    assert result.stdout.strip().splitlines()[-1].startswith("3 passed"), result.stdout + result.stderr


def test_stop_removes_the_broker_and_its_directory():
    from weir.testing import WeirContainer

    container = WeirContainer().start()
    broker = container.broker
    assert broker.alive()
    container.stop()
    assert not broker.alive() and not broker.data_dir.exists()
