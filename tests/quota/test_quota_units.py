"""The quota manager without sockets: Kafka's eight-level precedence and whose use is measured
together (DefaultQuotaCallback), and the sampled rate and throttle time (Rate, QuotaUtils)."""

from __future__ import annotations

import pytest

from weir.broker.config import BrokerConfig
from weir.broker.quota.manager import PRODUCE, QuotaManager
from weir.broker.quota.rate import SampledRate
from weir.broker.quota.store import QuotaStore

LEVELS = [  # most specific first, with the measured rate's (user, client-id) key
    ([("user", "alice"), ("client-id", "app")], ("alice", "app")),
    ([("user", "alice"), ("client-id", None)], ("alice", "app")),
    ([("user", "alice")], ("alice", "")),
    ([("user", None), ("client-id", "app")], ("alice", "app")),
    ([("user", None), ("client-id", None)], ("alice", "app")),
    ([("user", None)], ("alice", "")),
    ([("client-id", "app")], ("", "app")),
    ([("client-id", None)], ("", "app")),
]


@pytest.fixture
def manager(tmp_path):
    return QuotaManager(QuotaStore(tmp_path), BrokerConfig({}))


def _set(manager, entity, value):
    assert manager.store.alter([(entity, [(PRODUCE, value, False)])], False) == [(0, None)]


def test_each_level_wins_over_the_less_specific_ones(manager):
    for level, (entity, _tags) in reversed(list(enumerate(LEVELS))):
        _set(manager, entity, 1000.0 + level)  # set from the least specific up: each must take over
        assert manager.quota_for(PRODUCE, "alice", "app") == (1000.0 + level, LEVELS[level][1])
    for level, (entity, _tags) in enumerate(LEVELS[:-1]):  # removed from the most specific down
        assert manager.store.alter([(entity, [(PRODUCE, 0.0, True)])], False) == [(0, None)]
        assert manager.quota_for(PRODUCE, "alice", "app") == (1000.0 + level + 1, LEVELS[level + 1][1])
    assert manager.quota_for(PRODUCE, "bob", "other") == (1007.0, ("", "other"))  # the default client's
    assert manager.quota_for("consumer_byte_rate", "alice", "app") == (None, ("alice", "app"))


def test_a_default_applies_to_each_client_on_its_own(manager):
    _set(manager, [("client-id", None)], 1000.0)
    now = 1_000_000
    assert manager.record(PRODUCE, "User:ANONYMOUS", "one", 10_000, now) == 0  # 1000 B/s over the 10 s window
    assert manager.record(PRODUCE, "User:ANONYMOUS", "two", 10_000, now) == 0  # its own rate, not one's
    assert manager.record(PRODUCE, "User:ANONYMOUS", "one", 1_000, now) == 1000  # 11000 B over 10 s: 10 % over


def test_the_rate_counts_at_least_the_samples_but_one_as_its_window():
    rate = SampledRate(11, 1000, now_ms=0)
    rate.record(5000, 0)
    assert rate.window_ms(0) == 10_000 and rate.per_second(0) == 500
    rate.record(5000, 5_500)  # a second window; 5.5 s elapsed is padded to 10 whole windows
    assert rate.window_ms(5_500) == 10_500 and round(rate.per_second(5_500), 2) == 952.38
    assert rate.window_ms(10_999) == 10_999 and round(rate.per_second(10_999), 2) == 909.17
    # 11 s after the first window began it is reset: only the second one's bytes are left
    assert rate.window_ms(11_000) == 10_500 and round(rate.per_second(11_000), 2) == 476.19


def test_quotas_are_kept_across_a_new_store(tmp_path):
    store = QuotaStore(tmp_path)
    assert store.alter([([("user", "alice")], [("request_percentage", 25.0, False)])], False) == [(0, None)]
    again = QuotaStore(tmp_path)
    again.load()
    assert again.get((("user", "alice"),)) == {"request_percentage": 25.0}


def test_a_request_percentage_throttle_is_bounded_by_one_window(manager):
    assert manager.store.alter([([("client-id", "busy")], [("request_percentage", 1.0, False)])], False) \
        == [(0, None)]
    # 5 s of handler time is 500 % of a thread for a second: 50 times the 1 % quota over the 10 s window
    assert manager.record("request_percentage", "User:ANONYMOUS", "busy", 500.0, 1_000) == 1_000
