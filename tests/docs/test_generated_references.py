"""The generated reference pages (docs/generate.py) hold every setting, metric, API and weir-admin command."""

from __future__ import annotations

import argparse
import sys

from .examples import DOCS

sys.path.insert(0, str(DOCS))
import generate  # noqa: E402  (docs/ is not a package)

from weir.broker import config  # noqa: E402
from weir.client import cli  # noqa: E402


def test_the_configuration_page_lists_every_setting_with_its_default():
    page = generate.configuration_page()
    for name in config.SETTINGS:
        assert generate._name(name) in page, name
    for name in config.TOPIC_SETTINGS:
        assert generate._name(name) in page, name
    assert f"| {generate._name('log.segment.bytes')} | `1073741824` |" in page


def test_the_metrics_page_lists_what_a_broker_serves():
    page = generate.metrics_page()
    for name in ("kafka_network_requestmetrics_requests_total", "kafka_server_brokertopicmetrics_bytesin_total",
                 "weir_txn_open_transactions", "weir_event_loop_lag_ms_bucket", "process_open_fds"):
        assert generate._name(name, after="_") in page, name
    assert "NumGroups&lt;State&gt;" in page  # escaped, not swallowed as an HTML tag


def test_the_weir_admin_page_has_every_command():
    page = generate.weir_admin_page()
    nouns = generate._subcommands(cli.build_parser())
    assert set(nouns) >= {"topics", "groups", "transactions", "cluster", "acls", "users"}
    for noun, (noun_parser, _help) in nouns.items():
        for verb in generate._subcommands(noun_parser):
            assert f"### {noun} {verb}\n" in page
    assert "`--to-earliest`" in page and "`--execute`" in page


def test_the_apis_page_lists_every_served_api_key():
    from weir.broker.dispatcher import advertised_versions

    page = generate.apis_page()
    for api_key, lowest, highest in advertised_versions():
        assert f"| {api_key} | " in page and f" | {lowest}-{highest} | " in page
    assert "| Produce |" in page and "| EndTxn |" in page


def test_options_tables_show_defaults_and_choices():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["a", "b"], default="a", help="how")
    rows = "\n".join(generate._options_table(parser))
    assert "| `--mode` | how; one of `a`, `b`; default `a` |" in rows
