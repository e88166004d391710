"""The batch job over a topic (pipeline/jobs/topic_batch.py) as its own driver process: per-key
summaries and inventory totals from update records, read_committed (an aborted transaction never counts)."""

import json
import os
import subprocess
import sys

import pytest
from confluent_kafka import Producer as CKProducer

from tests.broker_process import REPO
from tests.support.topics import create_topic
from tests.pipeline.test_orders_job import SPARK_CONF
from tests.pipeline.test_source import ck_read


@pytest.mark.timeout(600)
def test_topic_batch_sums_committed_updates_per_key(weir_process, topic_name, tmp_path):
    bootstrap = weir_process.bootstrap
    source, target = f"{topic_name}-updates", f"{topic_name}-totals"
    create_topic(bootstrap, source, 2)
    plain = CKProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    expected = {}
    for number in range(50):
        item, delta = f"item-{number % 4}", -(1 + number % 3)
        plain.produce(source, json.dumps({"order_id": number, "item": item, "delta": delta}).encode(), item.encode())
        records, total = expected.get(item, (0, 0))
        expected[item] = (records + 1, total + delta)
    plain.flush()
    aborted = CKProducer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic_name}-aborted"})
    aborted.init_transactions()
    aborted.begin_transaction()
    aborted.produce(source, json.dumps({"order_id": 999, "item": "item-0", "delta": -1000}).encode(), b"item-0")
    aborted.flush()
    aborted.abort_transaction()

    command = [sys.executable, "-m", "weir.pipeline.jobs.topic_batch", "--bootstrap-servers", bootstrap,
               "--master", "local[2]", "--topic", source, "--sum-field", "delta", "--output-topic", target,
               "--partitions", "2"]
    for setting in SPARK_CONF:
        command += ["--conf", setting]
    with open(tmp_path / "job.log", "w") as log:
        result = subprocess.run(command, cwd=REPO, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT,
                                timeout=400)
    assert result.returncode == 0, (tmp_path / "job.log").read_text()[-4000:]

    summaries = {key.decode(): json.loads(value) for _p, _o, key, value, _h, _t in ck_read(bootstrap, target)}
    assert {key: (s["records"], s["total"]) for key, s in summaries.items()} == expected
    assert all(s["partitions"] == [s["partitions"][0]] for s in summaries.values())  # a key stays on one partition
