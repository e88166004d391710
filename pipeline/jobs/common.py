"""What the pipeline's jobs share: their command line, their Spark session and their topics.

Each job runs both as ``spark-submit pipeline/jobs/NAME.py ...`` (spark-submit
starts the JVM and gives the master, jars and confs) and as
``python -m weir.pipeline.jobs.NAME ...`` (the job starts a local JVM itself and
applies ``--master``, ``--jars`` and ``--conf``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from weir.client.cluster import Cluster

from ..decisions import ensure_topic



def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", required=True, help="the brokers, host:port[,host:port]")
    parser.add_argument("--master", help="Spark master when not run by spark-submit, e.g. local[2]")
    parser.add_argument("--jars", default="", help="comma-separated jars for spark.jars (e.g. Spark's Kafka "
                                                   "connector for --source-format/--sink-format kafka)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting; repeatable")
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the topics the job creates")
    parser.add_argument("--kafka-option", action="append", default=[], metavar="NAME=VALUE",
                        help="a kafka.* option for the source and the sink (without the kafka. prefix)")


def kafka_options(args) -> dict[str, str]:
    options = {"kafka.bootstrap.servers": args.bootstrap_servers}
    for item in args.kafka_option:
        name, _, value = item.partition("=")
        options[f"kafka.{name}"] = value
    return options


def spark_session(app: str, args):
    """The session spark-submit configured, or a new one built from ``--master``/``--jars``/``--conf``."""
    # Python workers run this interpreter, which has weir installed with the pipeline's dependencies
    # (a JVM this process starts passes its environment on to them).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from weir import pipeline
    builder = SparkSession.builder.appName(app)
    if args.master:
        builder = builder.master(args.master)
    if args.jars:
        builder = builder.config("spark.jars", args.jars)
    for item in args.conf:
        name, _, value = item.partition("=")
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    pipeline.register(spark)
    return spark


def create_topics(bootstrap: str, topics: dict[str, dict[str, str]], partitions: int) -> None:
    """Create each missing topic with its configs (an existing topic is left as it is)."""
    async def create():
        cluster = Cluster(bootstrap)
        try:
            for topic, configs in topics.items():
                await ensure_topic(cluster, topic, partitions, configs)
        finally:
            await cluster.close()
    asyncio.run(create())


def duration_ms(text: str) -> int:
    """``500ms``, ``10s``, ``2min`` or a bare number of milliseconds."""
    text = text.strip().lower().replace(" ", "")
    for suffix, scale in (("ms", 1), ("min", 60000), ("s", 1000), ("m", 60000)):
        if text.endswith(suffix):
            return int(float(text[:-len(suffix)]) * scale)
    return int(text)
