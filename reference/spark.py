"""A small local Spark session with Spark's own Kafka connector (spark-sql-kafka-0-10, resolved by
reference/spark/pom.xml) and the ``weir`` data source, as the pipeline tests, the driver processes
they start and the pipeline benchmark run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

REPO = Path(__file__).resolve().parents[1]

POM = REPO / "reference" / "spark" / "pom.xml"
SETTINGS = REPO / "reference" / "spark" / "settings.xml"
CLASSPATH_FILE = REPO / "reference" / "spark" / "target" / "classpath.txt"
PYSPARK_JARS = Path(pyspark.__file__).parent / "jars"


def _artifact(jar: Path) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients``."""
    return jar.name.rsplit("-", 1)[0]


def connector_jars() -> list[str]:
    """The connector and the jars it needs that PySpark does not ship already (Scala, slf4j,
    Hadoop and Spark's own come from PySpark's jars directory, so no second copy of a class
    reaches the classpath)."""
    if not _resolved():
        subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-s", str(SETTINGS), "-f", str(POM),
                        "dependency:build-classpath", f"-Dmdep.outputFile={CLASSPATH_FILE}"],
                       check=True, timeout=600)
        CLASSPATH_FILE.touch()  # the plugin leaves an unchanged file's time as it was
    shipped = {_artifact(jar) for jar in PYSPARK_JARS.glob("*.jar")}
    jars = [Path(jar) for jar in CLASSPATH_FILE.read_text().strip().split(os.pathsep)]
    return [str(jar) for jar in jars if _artifact(jar) not in shipped]


def _resolved() -> bool:
    if not CLASSPATH_FILE.exists() or CLASSPATH_FILE.stat().st_mtime < POM.stat().st_mtime:
        return False
    jars = CLASSPATH_FILE.read_text().strip().split(os.pathsep)
    return bool(jars) and all(Path(jar).is_file() for jar in jars)


def start_spark(app: str):
    # Python workers must run this interpreter (it has pyarrow and the client) and import this checkout.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    from pyspark.sql import SparkSession

    from weir import pipeline
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
