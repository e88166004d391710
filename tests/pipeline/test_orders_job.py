"""The orders job (pipeline/jobs/orders.py) as a whole Spark driver process, killed with -9 at points
of its micro-batches and restarted from its checkpoint, and its broker killed with -9 once.

With the weir sink (against Weir and against Apache Kafka): exactly one confirmation and one inventory
update per order under read_committed, so exact per-product totals. With Spark's own Kafka sink, for
contrast: only what it guarantees (at least one confirmation per order); how many duplicates it wrote is printed."""

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from confluent_kafka import TopicPartition as CKTopicPartition

from weir.client import Consumer, TopicPartition
from weir.pipeline.exactly_once import HOLD_AFTER_DECISION, HOLD_FROM_BATCH
from tests.broker_process import REPO
from tests.support.topics import create_topic
from tests.pipeline.test_source import ck_read

FIRST_ORDERS, LATER_ORDERS = 240, 40  # the later ones arrive after the broker's restart
PER_BATCH = 40
OUTPUT_PARTITIONS = 3
# A driver start (JVM, Python workers, recovery) takes 15-30 s on an idle machine, minutes on a loaded one.
PROGRESS_TIMEOUT = 400
SPARK_CONF = ["spark.ui.enabled=false", "spark.sql.shuffle.partitions=2", "spark.default.parallelism=2",
              "spark.driver.memory=512m", "spark.sql.streaming.pollingDelay=50ms",
              # a busy CI machine may take more than the default 15 s to start a Python worker
              "spark.python.authenticate.socketTimeout=120s"]


def order(number):
    customer = f"customer-{number % 10}"
    return customer.encode(), json.dumps({"order_id": number, "customer": customer, "item": f"item-{number % 7}",
                                          "quantity": 1 + number % 3}).encode()


def write_orders(bootstrap, topic, numbers):
    producer = CKProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for number in numbers:
        key, value = order(number)
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0


class Job:
    """One run of the orders job: ``python -m weir.pipeline.jobs.orders`` in its own process group."""

    def __init__(self, bootstrap, names, checkpoint, log_path, sink_format="weir", jars=(), **env):
        command = [sys.executable, "-m", "weir.pipeline.jobs.orders", "--bootstrap-servers", bootstrap,
                   "--checkpoint", checkpoint, "--master", "local[2]", "--orders", names["orders"],
                   "--confirmations", names["confirmations"], "--inventory", names["inventory"],
                   "--partitions", str(OUTPUT_PARTITIONS), "--trigger-interval", "0s",
                   "--max-offsets-per-trigger", str(PER_BATCH), "--sink-format", sink_format, "--until-idle"]
        for setting in SPARK_CONF:
            command += ["--conf", setting]
        if jars:
            command += ["--jars", ",".join(jars)]
        self.log_path = log_path
        with open(log_path, "a") as log:
            self.process = subprocess.Popen(command, cwd=REPO, env={**os.environ, **env}, start_new_session=True,
                                            stdout=log, stderr=subprocess.STDOUT)

    def running(self):
        return self.process.poll() is None

    def log_tail(self):
        return open(self.log_path, errors="replace").read()[-4000:]

    def kill(self):
        """kill -9 of the whole group: the Python driver, its JVM and every Python worker at once."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(30)

    def wait(self, timeout):
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the job did not finish in {timeout} s:\n{self.log_tail()}") from None
        finally:
            self.kill()  # whatever of its group is left (a JVM outliving a failed driver)


async def end_offsets(bootstrap, topic, isolation):
    """{partition: end offset}: the last stable offset under read_committed, else the high watermark."""
    async with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation) as consumer:
        return await consumer.end_offsets([TopicPartition(topic, p) for p in range(OUTPUT_PARTITIONS)])


def written(bootstrap, topic):
    """Records (and, under transactions, markers) the topic holds so far: its high watermarks' sum."""
    consumer = CKConsumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return sum(consumer.get_watermark_offsets(CKTopicPartition(topic, p), timeout=5)[1]
                   for p in range(OUTPUT_PARTITIONS))
    except Exception:  # the topic is not created yet, or the broker is restarting
        return 0
    finally:
        consumer.close()


def wait_until(condition, job, timeout, what):
    """Poll ``condition`` (the broker, or a file the driver writes) until it holds; False if the job
    finished first (no point left to kill it at)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if not job.running():
            return False
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout} s:\n{job.log_tail()}"
        time.sleep(0.1)  # another process's progress: polled with a deadline
    return True


def kill_mid_batch(bootstrap, names, job, rng, reached):
    """kill -9 once the job has written a random number more output records: usually mid-batch."""
    target = written(bootstrap, names["confirmations"]) + rng.randint(1, PER_BATCH * 2)
    if wait_until(lambda: written(bootstrap, names["confirmations"]) >= target, job, PROGRESS_TIMEOUT, "progress"):
        job.kill()
        reached.append(f"mid-batch kill at {target} output offsets")


def run_scenario(broker, tmp_path, sink_format, jars=()):
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    print(f"\n{broker.kind} broker, {sink_format} sink, seed {seed}")
    bootstrap = broker.bootstrap
    names = {kind: f"{kind}-{sink_format}-{tmp_path.name}"[:100] for kind in ("orders", "confirmations", "inventory")}
    create_topic(bootstrap, names["orders"], 2)
    write_orders(bootstrap, names["orders"], range(FIRST_ORDERS))
    checkpoint = str(tmp_path / "checkpoint")
    log = str(tmp_path / "job.log")
    kills, jobs = [], []

    def job(**env):
        jobs.append(Job(broker.bootstrap, names, checkpoint, log, sink_format, jars, **env))
        return jobs[-1]

    try:
        scenario(broker, sink_format, names, job, rng, kills, tmp_path)
    finally:
        for started in jobs:  # a failed assertion leaves no driver behind
            started.kill()
    print(f"kills: {kills}")
    return names


def scenario(broker, sink_format, names, job, rng, kills, tmp_path):
    bootstrap = broker.bootstrap

    if sink_format == "weir":
        # 1. Between the decision record of a batch and the EndTxn commits of its transactions.
        marker = tmp_path / "decided"
        hold_from = rng.randint(0, 2)  # 0: the first batch, decided before any checkpoint commit
        first = job(**{HOLD_AFTER_DECISION: str(marker), HOLD_FROM_BATCH: str(hold_from)})
        assert wait_until(lambda: marker.exists() and marker.read_text(), first, PROGRESS_TIMEOUT, "a decision"), \
            first.log_tail()
        first.kill()
        kills.append(f"between decision and commits of batch {marker.read_text()}")
        # Decided but not committed: the batch's open transactions keep it from read_committed readers.
        committed = asyncio.run(end_offsets(bootstrap, names["confirmations"], "read_committed"))
        uncommitted = asyncio.run(end_offsets(bootstrap, names["confirmations"], "read_uncommitted"))
        assert sum(committed.values()) < sum(uncommitted.values())

    # 2. At a random point of a micro-batch.
    kill_mid_batch(bootstrap, names, job(), rng, kills)

    # 3. The broker, at a random point, while the job runs; more orders arrive once it is back.
    third = job()
    target = written(bootstrap, names["confirmations"]) + rng.randint(1, PER_BATCH)
    wait_until(lambda: written(bootstrap, names["confirmations"]) >= target, third, PROGRESS_TIMEOUT, "progress")
    broker.kill()
    kills.append("broker")
    broker.start()
    write_orders(bootstrap, names["orders"], range(FIRST_ORDERS, FIRST_ORDERS + LATER_ORDERS))
    # The driver either rides out the restart or fails; both are allowed.
    rode_out = third.wait(PROGRESS_TIMEOUT) == 0

    # 4. A clean run from the checkpoint to the end, unless the driver that rode out the restart has
    # confirmed every order (the later ones too: it may have gone idle before they were written).
    confirmed = {confirmation["order_id"] for confirmation in outputs(bootstrap, names)[0]}
    if not rode_out or confirmed != set(range(FIRST_ORDERS + LATER_ORDERS)):
        kills.append("a last run to the end")
        last = job()
        assert last.wait(PROGRESS_TIMEOUT) == 0, last.log_tail()


def outputs(bootstrap, names):
    """(confirmations, inventory updates) under read_committed, as JSON."""
    return tuple([json.loads(r[3]) for r in ck_read(bootstrap, names[kind])]
                 for kind in ("confirmations", "inventory"))


def totals(updates):
    per_item = defaultdict(int)
    for update in updates:
        per_item[update["item"]] += update["delta"]
    return dict(per_item)


def expected_totals(count):
    per_item = defaultdict(int)
    for number in range(count):
        placed = json.loads(order(number)[1])
        per_item[placed["item"]] -= placed["quantity"]
    return dict(per_item)


@pytest.mark.timeout(1800)
def test_orders_job_killed_repeatedly_confirms_each_order_once_with_exact_totals(any_broker_to_kill, tmp_path):
    broker = any_broker_to_kill
    names = run_scenario(broker, tmp_path, "weir")
    total = FIRST_ORDERS + LATER_ORDERS
    confirmations, updates = outputs(broker.bootstrap, names)
    assert Counter(c["order_id"] for c in confirmations) == Counter(range(total))  # every order exactly once
    assert all(c["status"] == "confirmed" for c in confirmations)
    assert Counter(u["order_id"] for u in updates) == Counter(range(total))
    assert totals(updates) == expected_totals(total)
    # Nothing left open: no lingering transaction holds a last stable offset back.
    for topic in (names["confirmations"], names["inventory"]):
        assert asyncio.run(end_offsets(broker.bootstrap, topic, "read_committed")) == \
            asyncio.run(end_offsets(broker.bootstrap, topic, "read_uncommitted"))


@pytest.mark.timeout(1800)
def test_spark_kafka_sink_in_the_same_scenario_is_at_least_once(weir_broker_to_kill, tmp_path):
    from reference.spark import connector_jars
    broker = weir_broker_to_kill
    names = run_scenario(broker, tmp_path, "kafka", jars=connector_jars())
    total = FIRST_ORDERS + LATER_ORDERS
    confirmations, updates = outputs(broker.bootstrap, names)
    per_order = Counter(c["order_id"] for c in confirmations)
    assert set(per_order) == set(range(total))  # at least once: no order lost
    assert set(u["order_id"] for u in updates) == set(range(total))
    duplicates = sum(per_order.values()) - total
    print(f"Spark's Kafka sink: {duplicates} duplicate confirmations "
          f"({sum(1 for n in per_order.values() if n > 1)} orders confirmed more than once), "
          f"{len(updates) - total} duplicate inventory updates; totals summed from the updates exact: "
          f"{totals(updates) == expected_totals(total)}")
