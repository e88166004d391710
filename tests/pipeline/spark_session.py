"""A small local Spark session for the pipeline tests (and the driver processes they start)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start_spark(app: str):
    # Python workers must run this interpreter (it has pyarrow and the client) and import this checkout.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    from pyspark.sql import SparkSession

    from weir import pipeline
    from tests.reference.spark_connector import connector_jars
    # Spark's own Kafka connector on every session: spark.jars reaches the driver's classpath only when
    # the JVM starts, and one JVM serves every session of a pytest process.
    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.jars", ",".join(connector_jars()))
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.default.parallelism", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "512m")
             .config("spark.sql.streaming.pollingDelay", "50ms")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    pipeline.register(spark)
    return spark
