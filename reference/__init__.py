"""The reference implementations Weir is checked against, for the tests and the benchmarks alike:
Apache Kafka as a child process (kafka.py, the version pinned in pom.xml) and a local Spark with
Spark's own Kafka connector (spark.py, spark/pom.xml). Not part of the installed package."""
