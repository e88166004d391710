"""Weir in its users' test suites: no Docker, no JVM, a broker in milliseconds.

- ``Broker``: ``async with Broker(settings) as broker:`` serves in the caller's event loop;
- ``run_broker()`` / ``ProcessBroker``: a broker in a child process, with ``kill()`` (kill -9)
  and ``restart()`` for crash-recovery tests;
- ``WeirContainer``: the API of testcontainers' ``KafkaContainer``, without Docker;
- the pytest plugin (``weir.testing.plugin``, loaded by pytest through the ``pytest11``
  entry point): fixtures ``weir_broker`` and ``weir_topic``, marker ``weir(settings=...)``.
"""

from importlib import import_module

_HOMES = {"Broker": "embedded", "BrokerStartError": "process", "ProcessBroker": "process",
          "WeirContainer": "container", "run_broker": "process"}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    # Imported on first use: pytest imports this package for the plugin in every session, and a
    # session that never asks for a broker should pay for nothing more than the plugin module.
    if name in _HOMES:
        return getattr(import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
