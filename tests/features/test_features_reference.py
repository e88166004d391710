"""Features on Weir and on Apache Kafka 4.4.0, both started at transaction.version=1 (Kafka formatted
with ``kafka-storage format --feature transaction.version=1``, Weir with the same ``--feature``), asked
the same things: raw ApiVersions and UpdateFeatures through our codec, and Kafka's own kafka-features
tool. Both support 0-2.

Where the two must differ, and how the assertions allow for it:
- OTHER_FEATURES: Kafka lists metadata.version, kraft.version, eligible.leader.replicas.version and
  more; Weir has only transaction.version, group.version, share.version and streams.version, so only
  their rows are compared, and Kafka's other names are unknown to Weir.
- SHARE_VERSION: Kafka 4.4 supports share.version 0-2 and finalizes 2 (level 2 is the share
  groups' dead-letter queue, KIP-1191); Weir serves share groups without it: 0-1, finalized 1.
- EPOCH: Kafka's epoch is its metadata log offset, Weir's counts changes; both only grow.

Each broker is this module's own (the session's shared Kafka runs at transaction.version 2, which
these tests would change under other tests' feet).
"""

from __future__ import annotations

import re

import pytest

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import api_versions
from weir.protocol.messages.update_features import SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE
from tests.broker_process import BrokerProcess
from tests.features.raw import TV, ask, features, update, update_v0, wait_for_level
from reference.kafka import SHARED_TEST_SETTINGS, KafkaProcess
from tests.tools.tools import run_tool

FEATURES = "org.apache.kafka.tools.FeatureCommand"
FAILED_ALL = "The update failed for all features since the following feature had an error: "


@pytest.fixture(scope="module")
def weir(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("weir-features") / "data", overrides=SHARED_TEST_SETTINGS,
                            args=["--feature", f"{TV}=1"]).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    process = KafkaProcess(tmp_path_factory.mktemp("kafka-features"), features={TV: 1}).start()
    yield process
    process.stop()


@pytest.fixture
def both(weir, kafka):
    """Both brokers, each back at transaction.version=1 whatever a failed test left behind."""
    for broker in (weir, kafka):
        if features(broker)[1] != 1:
            kind = UPGRADE if features(broker)[1] < 1 else SAFE_DOWNGRADE
            assert update(broker, 2, (TV, 1, kind))[0] == 0
            assert wait_for_level(broker, 1)[1] == 1
    return weir, kafka


def test_api_versions_advertises_transaction_version(both):
    weir, kafka = both
    for broker in both:
        answer = ask(broker, ApiKey.API_VERSIONS, 4, api_versions.REQUEST(client_software_name="weir-features-test",
                                                                      client_software_version="1"))
        assert [(k.min_version, k.max_version) for k in answer.api_keys if k.api_key == ApiKey.UPDATE_FEATURES] == \
            [(0, 2)]
        assert answer.zk_migration_ready is False
    assert features(weir, 4)[:2] == features(kafka, 4)[:2] == ((0, 2), 1)
    # v3 leaves out supported ranges that start at 0 (KAFKA-17492); the finalized level is there
    assert features(weir, 3)[:2] == features(kafka, 3)[:2] == (None, 1)
    assert features(weir, 3)[2] >= 0 and features(kafka, 3)[2] >= 0


def test_update_features_answers_as_kafka(both):
    weir, kafka = both
    epochs = {broker.kind: features(broker)[2] for broker in both}
    steps = [
        lambda b: update(b, 1, (TV, 1, UPGRADE)),                      # unchanged: per-feature NONE results
        lambda b: update(b, 2, (TV, 1, UPGRADE)),                      # v2: no results
        lambda b: update(b, 1, (TV, 1, 7)),                            # unknown upgrade type
        lambda b: update(b, 1, (TV, -1, SAFE_DOWNGRADE)),
        lambda b: update(b, 1, (TV, 3, UPGRADE)),
        lambda b: update(b, 1, ("foo", 1, UPGRADE)),
        lambda b: update(b, 1, ("foo", 0, UPGRADE)),
        lambda b: update(b, 1, (TV, 0, UPGRADE)),                      # a downgrade needs a downgrade type
        lambda b: update(b, 1, (TV, 0, SAFE_DOWNGRADE), ("foo", 1, UPGRADE)),  # all or nothing
        lambda b: update_v0(b, TV, 0, allow_downgrade=True),           # v0: allow_downgrade is not read
        lambda b: update(b, 1, (TV, 0, SAFE_DOWNGRADE), validate_only=True),
        lambda b: wait_for_level(b, 1)[1],                             # nothing above changed the level
        lambda b: update(b, 2, (TV, 0, SAFE_DOWNGRADE)),
        lambda b: wait_for_level(b, 0)[1],
        lambda b: update(b, 1, (TV, 1, UNSAFE_DOWNGRADE)),             # a downgrade type cannot raise
        lambda b: update(b, 0, (TV, 1, UPGRADE)),
        lambda b: wait_for_level(b, 1)[1],
    ]
    on_weir = [step(weir) for step in steps]
    on_kafka = [step(kafka) for step in steps]
    assert on_weir[0] == (0, None, [(TV, 0, "NONE")]) and on_weir[1] == (0, None, [])
    assert on_weir[4] == (Errors.INVALID_UPDATE_VERSION, FAILED_ALL + f"Invalid update version 3 for feature {TV}. "
                          "Local controller 1 only supports versions 0-2", [])
    assert on_weir[6] == (Errors.INVALID_UPDATE_VERSION,
                          FAILED_ALL + "Invalid update version 0 for feature foo. Feature foo not found.", [])
    assert on_weir[-6:] == [1, (0, None, []), 0, (Errors.INVALID_UPDATE_VERSION, FAILED_ALL + "Invalid update "
                            f"version 1 for feature {TV}. Can't downgrade to a newer version.", []),
                            (0, None, [(TV, 0, "NONE")]), 1]
    assert on_weir == on_kafka
    # EPOCH: two changes (1 -> 0 -> 1); Weir counts them, Kafka's metadata offset moved on
    assert features(weir)[2] == epochs["weir"] + 2 and features(kafka)[2] > epochs["kafka"]


def test_an_upgrade_to_2_and_back(both):
    weir, _kafka = both
    epoch = features(weir)[2]
    for broker in both:
        assert update(broker, 2, (TV, 2, UPGRADE)) == (0, None, [])
        assert wait_for_level(broker, 2)[1] == 2
        assert update(broker, 2, (TV, 1, SAFE_DOWNGRADE)) == (0, None, [])
        assert wait_for_level(broker, 1)[1] == 1
    assert features(weir) == ((0, 2), 1, epoch + 2)


ROW = re.compile(r"Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)\s+"
                 r"FinalizedVersionLevel: (\S+)\s+Epoch: (\S+)")


def described(broker) -> dict[str, tuple[str, ...]]:
    result = run_tool(FEATURES, "--bootstrap-server", broker.bootstrap, "describe")
    assert result.returncode == 0, result.stderr[-2000:]
    return {match.group(1): match.groups()[1:] for match in map(ROW.match, result.stdout.splitlines()) if match}


def tool(broker, *args) -> tuple[int, str]:
    result = run_tool(FEATURES, "--bootstrap-server", broker.bootstrap, *args)
    last_error = [line for line in result.stderr.splitlines() if "WARN" not in line][-1:]
    return result.returncode, "\n".join(filter(None, [result.stdout.strip(), *last_error]))


def wait_for_described(broker, level: int) -> tuple[str, ...]:
    wait_for_level(broker, level)  # Kafka's brokers follow their controller a moment later
    return described(broker)[TV]


def test_kafka_features_tool(both):
    weir, kafka = both
    rows = {broker.kind: described(broker) for broker in both}
    assert set(rows["weir"]) == {TV, "group.version", "share.version", "streams.version"}  # OTHER_FEATURES
    assert rows["weir"]["streams.version"][:3] == rows["kafka"]["streams.version"][:3] == ("0", "1", "1")
    assert (rows["weir"]["share.version"][:3], rows["kafka"]["share.version"][:3]) == (
        ("0", "1", "1"), ("0", "2", "2"))  # SHARE_VERSION
    assert rows["weir"][TV][:3] == rows["kafka"][TV][:3] == ("0", "2", "1")
    assert rows["weir"]["group.version"][:3] == rows["kafka"]["group.version"][:3] == ("0", "1", "1")
    assert int(rows["weir"][TV][3]) >= 0 and int(rows["kafka"][TV][3]) >= 0

    script = [
        ("upgrade", "--feature", f"{TV}=3"),
        ("downgrade", "--feature", f"{TV}=0", "--dry-run"),
        ("upgrade", "--feature", "foo=1"),
        ("upgrade", "--feature", f"{TV}=0"),             # refused by the tool itself
        ("upgrade", "--feature", f"{TV}=-1"),            # likewise
        ("downgrade", "--feature", f"{TV}=1"),           # the same level
        ("downgrade", "--feature", f"{TV}=0"),
        ("downgrade", "--feature", f"{TV}=1"),           # now newer than the finalized 0
        ("upgrade", "--feature", f"{TV}=1"),
        ("downgrade", "--feature", f"{TV}=0", "--unsafe"),
        ("upgrade", "--feature", f"{TV}=1"),
        ("disable", "--feature", TV),
        ("upgrade", "--feature", f"{TV}=1", "--dry-run"),
        ("upgrade", "--feature", f"{TV}=1"),
    ]
    levels_after = [1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1]
    answers = {}
    for broker in both:
        answers[broker.kind] = []
        for args, level in zip(script, levels_after, strict=False):
            answers[broker.kind].append(tool(broker, *args))
            assert wait_for_described(broker, level)[2] == str(level), (broker.kind, args)
    expected = [
        (1, f"Could not upgrade {TV} to 3. {FAILED_ALL}Invalid update version 3 for feature {TV}. "
            "Local controller 1 only supports versions 0-2\n1 out of 1 operation(s) failed."),
        (0, f"{TV} can be downgraded to 0."),
        (1, f"Could not upgrade foo to 1. {FAILED_ALL}Invalid update version 1 for feature foo. "
            "Local controller 1 does not support this feature.\n1 out of 1 operation(s) failed."),
        (1, "The upgradeType flag should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE when the provided "
            "maxVersionLevel:0 is < 1."),
        (1, "Cannot specify a negative version level."),
        (0, f"{TV} was downgraded to 1."),
        (0, f"{TV} was downgraded to 0."),
        (1, f"Could not downgrade {TV} to 1. {FAILED_ALL}Invalid update version 1 for feature {TV}. "
            "Can't downgrade to a newer version.\n1 out of 1 operation(s) failed."),
        (0, f"{TV} was upgraded to 1."),
        (0, f"{TV} was downgraded to 0."),
        (0, f"{TV} was upgraded to 1."),
        (0, f"{TV} was disabled."),
        (0, f"{TV} can be upgraded to 1."),
        (0, f"{TV} was upgraded to 1."),
    ]
    assert answers["weir"] == answers["kafka"] == expected
