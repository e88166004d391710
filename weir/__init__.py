"""Weir: a Kafka-wire-compatible broker that gets exactly-once transactions right.

The installed package is one namespace, so a user's own ``client.py`` or
``pipeline/`` never shadows ours:

- ``weir.broker``: the broker (``python -m weir.broker``, or the ``weir`` command);
- ``weir.protocol``: the sans-IO Kafka wire codec;
- ``weir.client``: the async Kafka client (Producer, Consumer, Admin) and ``weir-admin``;
- ``weir.pipeline``: the ``weir`` PySpark data source (needs the ``pipeline`` extra);
- ``weir.testing``: brokers for tests (``weir.Broker``, ``weir.run_broker``, ``WeirContainer``)
  and the pytest plugin.

In the repository these live in the top-level folders ``broker/``, ``protocol/``,
``client/`` and ``pipeline/``; setup.py maps them under ``weir``.
"""

__all__ = ["Broker", "run_broker", "__version__"]


def __getattr__(name: str):
    # Imported on first use: ``import weir.client`` must not load the broker, nor importlib.metadata
    # (~20 ms) for a version nobody asked for.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("weir")
        except PackageNotFoundError:  # running from a checkout that was never installed
            return "0+unknown"
    if name in ("Broker", "run_broker"):
        from . import testing
        return getattr(testing, name)
    raise AttributeError(f"module 'weir' has no attribute {name!r}")
