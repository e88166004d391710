"""SCRAM credentials: kafka-configs (--entity-type users) sets, lists and deletes them; they are
kept salted across restarts and a SCRAM login works after one."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient

from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_setup import confluent_config, sasl_settings
from tests.tools.tools import CONFIGS, run_tool


def configs(*args: str):
    return run_tool(CONFIGS, *args)


@pytest.fixture
def scram_broker(tmp_path):
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    settings.update(sasl_settings(["SASL_PLAINTEXT"]))
    broker = ConfiguredBroker(tmp_path, settings, ports).start()
    yield broker
    broker.stop()


def _login(broker, mechanism, user, password) -> bool:
    admin = AdminClient(confluent_config(broker.bootstrap_for("SASL_PLAINTEXT"), "SASL_PLAINTEXT", mechanism, user,
                                         password, log_level=0))
    try:
        admin.list_topics(timeout=4)
        return True
    except Exception:
        return False


def test_kafka_configs_manages_scram_users_and_they_survive_a_restart(scram_broker, tmp_path):
    bootstrap = scram_broker.bootstrap_for("PLAINTEXT")
    # As on Kafka 4.3.1 (checked by hand): both mechanisms in one --add-config name the user twice in
    # one AlterUserScramCredentials request, which is refused; one call per mechanism works.
    both = configs("--bootstrap-server", bootstrap, "--alter", "--entity-type", "users", "--entity-name", "carol",
                   "--add-config", "SCRAM-SHA-256=[password=carol-pw],SCRAM-SHA-512=[password=carol-pw]")
    assert "A user credential cannot be altered twice in the same request" in both.stderr
    added = configs("--bootstrap-server", bootstrap, "--alter", "--entity-type", "users", "--entity-name", "carol",
                    "--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-pw]")
    assert added.returncode == 0, added.stderr[-2000:]
    added = configs("--bootstrap-server", bootstrap, "--alter", "--entity-type", "users", "--entity-name", "carol",
                    "--add-config", "SCRAM-SHA-512=[password=carol-pw]")
    assert added.returncode == 0, added.stderr[-2000:]
    described = configs("--bootstrap-server", bootstrap, "--describe", "--entity-type", "users",
                        "--entity-name", "carol")
    assert described.returncode == 0, described.stderr[-2000:]
    assert ("SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=8192, "
            "SCRAM-SHA-512=iterations=4096") in described.stdout
    assert _login(scram_broker, "SCRAM-SHA-256", "carol", "carol-pw")
    assert not _login(scram_broker, "SCRAM-SHA-256", "carol", "not-carols")

    stored = (scram_broker.data_dir / "scram-credentials.json").read_text()
    assert "carol-pw" not in stored and set(json.loads(stored)["carol"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}

    scram_broker.stop()
    scram_broker.start()
    assert _login(scram_broker, "SCRAM-SHA-512", "carol", "carol-pw")

    deleted = configs("--bootstrap-server", bootstrap, "--alter", "--entity-type", "users", "--entity-name", "carol",
                      "--delete-config", "SCRAM-SHA-512")
    assert deleted.returncode == 0, deleted.stderr[-2000:]
    assert not _login(scram_broker, "SCRAM-SHA-512", "carol", "carol-pw")
    assert _login(scram_broker, "SCRAM-SHA-256", "carol", "carol-pw")
    assert "carol-pw" not in "".join(scram_broker.lines)
