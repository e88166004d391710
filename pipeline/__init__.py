"""Weir's Spark pipeline: the ``weir`` PySpark data source (batch and streaming source, exactly-once sink)."""

from .source import WeirDataSource


def register(spark) -> None:
    """Make ``format("weir")`` available in this Spark session."""
    spark.dataSource.register(WeirDataSource)


__all__ = ["WeirDataSource", "register"]
