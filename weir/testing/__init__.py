"""Weir in its users' test suites: no Docker, no JVM, a broker in milliseconds.

- ``Broker``: ``async with Broker(settings) as broker:`` serves in the caller's event loop;
- ``run_broker()`` / ``ProcessBroker``: a broker in a child process, with ``kill()`` (kill -9)
  and ``restart()`` for crash-recovery tests;
- ``WeirContainer``: the API of testcontainers' ``KafkaContainer``, without Docker;
- the pytest plugin (``weir.testing.plugin``, loaded by pytest through the ``pytest11``
  entry point): fixtures ``weir_broker`` and ``weir_topic``, marker ``weir(settings=...)``.
"""

from .container import WeirContainer
from .embedded import Broker
from .process import BrokerStartError, ProcessBroker, run_broker

__all__ = ["Broker", "BrokerStartError", "ProcessBroker", "WeirContainer", "run_broker"]
