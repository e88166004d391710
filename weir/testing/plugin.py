"""Weir's pytest plugin, loaded by pytest through the ``pytest11`` entry point of the ``weir`` package.

    def test_orders(weir_broker, weir_topic):
        topic = weir_topic(partitions=3, config={"cleanup.policy": "compact"})
        producer = confluent_kafka.Producer({"bootstrap.servers": weir_broker.bootstrap_servers})
        ...

    @pytest.mark.weir(settings={"transaction.max.timeout.ms": 5000})
    def test_timeouts(weir_broker): ...     # a broker of its own: settings are the broker's

- ``weir_broker`` (session scope): a ``weir.testing.ProcessBroker`` (``bootstrap_servers``,
  ``create_topic()``, ``kill()``, ``restart()``, ``log``) on a free port with a temporary data
  directory removed at the end. Started on first request: a session that never asks for it
  starts nothing. One per distinct ``weir`` marker settings (tests with equal settings share
  it, and run after the others, grouped by settings); under pytest-xdist each worker has its
  own. A test that killed it and left it dead gets it restarted by the next test that asks.
- ``weir_topic`` (function scope): ``weir_topic(partitions=1, config=None, name=None)``
  creates a topic with a name unique to the test and returns the name.
- A failing test that used ``weir_broker`` gets the broker's log lines written during the
  test in its report (section "weir broker log").
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .process import ProcessBroker  # imported when a test first asks for a broker

#: A broker's settings as the plugin keys them: sorted (name, value) pairs of its server.properties.
SettingsKey = tuple[tuple[str, str], ...]

MARKER = "weir"
LOG_SECTION = "weir broker log"
LOG_LINES_IN_REPORT = 500  # the last lines of a test's broker log a failure report shows

_log_mark = pytest.StashKey[int]()  # the broker's lines_logged when the test's setup finished
_topic_numbers = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(settings=None): run against a Weir broker with these Kafka broker settings "
                   "(its own broker, shared only with tests of equal settings)")


def _settings_key(settings: Mapping[str, object]) -> SettingsKey:
    from .settings import as_properties
    return tuple(sorted(as_properties(settings).items()))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test whose ``weir`` marker has settings asks ``weir_broker`` for a broker with them.

    Done as an indirect, session-scoped parametrization so that ``weir_broker`` stays a session
    fixture (session fixtures of the user can depend on it) and pytest groups tests by broker.
    """
    if "weir_broker" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker(MARKER)
    settings = marker.kwargs.get("settings") if marker is not None else None
    if not settings:
        return
    key = _settings_key(settings)
    metafunc.parametrize("weir_broker", [key], indirect=True, scope="session",
                         ids=[",".join(f"{name}={value}" for name, value in key)])


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on a marker's broker run after the others, grouped by settings.

    A session fixture that changes value (another broker) tears down the session fixtures
    built on it, as pytest does for any parametrized session fixture; run in this order, the
    default broker's dependents are set up once and each marker's broker's once. (Under
    pytest-xdist's load distribution a worker may still interleave them: such fixtures are
    then set up again.)
    """
    default: list[pytest.Item] = []
    by_settings: dict[SettingsKey, list[pytest.Item]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        key = callspec.params.get("weir_broker") if callspec is not None else None
        if key is None:
            default.append(item)
        else:
            by_settings.setdefault(key, []).append(item)
    if by_settings:
        items[:] = default + [item for group in by_settings.values() for item in group]


class BrokerPool:
    """The session's brokers, one per settings, started on first use and closed at the session's end."""

    def __init__(self) -> None:
        self._brokers: dict[SettingsKey, ProcessBroker] = {}

    def get(self, key: SettingsKey) -> ProcessBroker:
        from .process import ProcessBroker

        broker = self._brokers.get(key)
        if broker is None:
            broker = self._brokers[key] = ProcessBroker(dict(key))
        if not broker.alive():
            broker.start()  # first use, or a test killed it: same port and data directory
        return broker

    def close(self) -> None:
        for broker in self._brokers.values():
            broker.close()
        self._brokers.clear()


@pytest.fixture(scope="session")
def _weir_broker_pool() -> Iterator[BrokerPool]:
    pool = BrokerPool()
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def weir_broker(request: pytest.FixtureRequest, _weir_broker_pool: BrokerPool) -> ProcessBroker:
    """A Weir broker for the session (one per ``weir`` marker settings); see the plugin's docstring."""
    return _weir_broker_pool.get(getattr(request, "param", ()))


@pytest.fixture
def weir_topic(request: pytest.FixtureRequest, weir_broker: ProcessBroker) -> Callable[..., str]:
    """``weir_topic(partitions=1, config=None, name=None)``: a new topic's name, unique to the test."""
    def create(partitions: int = 1, config: dict | None = None, name: str | None = None) -> str:
        if name is None:
            legal = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")
            name = f"{legal[:200]}-{next(_topic_numbers)}"
        return weir_broker.create_topic(name, partitions, config)
    return create


def _broker_of(item: pytest.Item) -> ProcessBroker | None:
    funcargs = getattr(item, "funcargs", None) or {}
    return funcargs.get("weir_broker")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    broker = _broker_of(item)
    if broker is None:
        return report
    if report.when == "setup":
        item.stash[_log_mark] = broker.lines_logged
    if report.failed:
        logged_since = broker.lines_logged - item.stash.get(_log_mark, broker.lines_logged)
        lines = list(broker.log_lines)[-min(logged_since, LOG_LINES_IN_REPORT):] if logged_since else []
        header = f"{broker.bootstrap_servers}, data {broker.data_dir}; {logged_since} lines during the test"
        if logged_since > len(lines):
            header += f", the last {len(lines)} shown"
        report.sections.append((LOG_SECTION, header + "\n" + "".join(lines)))
    return report
