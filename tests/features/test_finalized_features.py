"""The finalized-feature store and the ApiVersions / UpdateFeatures handlers, without a broker
process: Kafka's checks in Kafka's order and words, all-or-nothing updates, the epoch, and the
file that keeps them (written whole or not at all)."""

import errno
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

import weir.broker.log.disk
import weir.broker.features
from weir.broker import handlers  # noqa: F401  (registers the handlers)
from weir.broker.acl.authorizer import Authorizer
from weir.broker.acl.store import AclStore
from weir.broker.config import BrokerConfig, ConfigError
from weir.broker.dispatcher import HANDLERS
from weir.broker.features import (DEFAULT_LEVELS, FILE_NAME, GROUP_VERSION, SHARE_VERSION, STREAMS_VERSION, SUPPORTED,
                                  TRANSACTION_VERSION,
                                  FinalizedFeatures,
                                  parse_feature_flag)
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import api_versions, update_features
from weir.protocol.messages.update_features import SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE

TV = TRANSACTION_VERSION
GV = GROUP_VERSION
SV = SHARE_VERSION
STV = STREAMS_VERSION
PREFIX = "Invalid update version"


def stored(data_dir):
    return json.loads((data_dir / FILE_NAME).read_text())


def refusal(features, *updates, validate_only=False) -> str:
    with pytest.raises(KafkaError) as caught:
        features.update(list(updates), validate_only=validate_only)
    assert caught.value.error == Errors.INVALID_UPDATE_VERSION
    return caught.value.message


def test_transaction_and_group_versions_are_supported_and_finalized_as_kafka_4_formats_them():
    # A Java 4.x producer runs its transactions at version 2 (KIP-890 part 2) when it sees 2 finalized;
    # group.version 1 is the consumer group protocol (KIP-848).
    assert SUPPORTED == {TV: (0, 2), GV: (0, 1), SV: (0, 1), STV: (0, 1)}
    assert DEFAULT_LEVELS == {TV: 2, GV: 1, SV: 1, STV: 1}


def test_a_new_data_directory_starts_at_the_defaults_and_writes_them(tmp_path):
    features = FinalizedFeatures(tmp_path, node_id=1)
    assert (features.levels, features.epoch) == ({TV: 2, GV: 1, SV: 1, STV: 1}, 0)
    assert stored(tmp_path) == {"version": 1, "epoch": 0, "features": {TV: 2, GV: 1, SV: 1, STV: 1}}
    assert [p.name for p in tmp_path.iterdir()] == [FILE_NAME]  # no temp file left behind


def test_initial_levels_apply_to_a_new_directory_only(tmp_path):
    first = FinalizedFeatures(tmp_path, node_id=1, initial={TV: 0})
    assert (first.levels, first.level(TV)) == ({GV: 1, SV: 1, STV: 1}, 0)  # level 0: not finalized, as Kafka removes it
    again = FinalizedFeatures(tmp_path, node_id=1, initial={TV: 1})
    assert (again.levels, again.epoch) == ({GV: 1, SV: 1, STV: 1}, 0)  # the persisted levels win


def test_updates_bump_the_epoch_and_persist(tmp_path):
    features = FinalizedFeatures(tmp_path, node_id=1)
    features.update([(TV, 0, SAFE_DOWNGRADE)], validate_only=False)
    assert (features.levels, features.epoch) == ({GV: 1, SV: 1, STV: 1}, 1)
    features.update([(TV, 1, UPGRADE)], validate_only=False)
    features.update([(TV, 0, UNSAFE_DOWNGRADE)], validate_only=False)
    assert (features.levels, features.epoch) == ({GV: 1, SV: 1, STV: 1}, 3)
    reopened = FinalizedFeatures(tmp_path, node_id=1)
    assert (reopened.levels, reopened.epoch) == ({GV: 1, SV: 1, STV: 1}, 3)


def test_validate_only_and_unchanged_levels_change_nothing(tmp_path):
    features = FinalizedFeatures(tmp_path, node_id=1)
    features.update([(TV, 0, SAFE_DOWNGRADE)], validate_only=True)
    features.update([(TV, 2, UPGRADE)], validate_only=False)  # already 2
    features.update([], validate_only=False)
    assert (features.levels, features.epoch) == ({TV: 2, GV: 1, SV: 1, STV: 1}, 0)
    assert stored(tmp_path)["epoch"] == 0


@pytest.mark.parametrize("update,reason", [
    ((TV, 1, 0), "The controller does not support the given upgrade type."),
    ((TV, 1, 4), "The controller does not support the given upgrade type."),
    ((TV, -1, SAFE_DOWNGRADE), "A feature version cannot be less than 0."),
    ((TV, 3, UPGRADE), "Local controller 7 only supports versions 0-2"),
    ((TV, 4, UPGRADE), "Local controller 7 only supports versions 0-2"),
    ((TV, 0, UPGRADE), "Can't downgrade the version of this feature without setting the upgrade type to "
                       "either safe or unsafe downgrade."),
    (("foo", 1, UPGRADE), "Local controller 7 does not support this feature."),
    (("foo", 0, UPGRADE), "Feature foo not found."),
    (("metadata.version", 0, SAFE_DOWNGRADE), "Feature metadata.version not found."),
])
def test_refusals_carry_kafkas_messages(tmp_path, update, reason):
    features = FinalizedFeatures(tmp_path, node_id=7)
    name, level, _ = update
    assert refusal(features, update) == f"{PREFIX} {level} for feature {name}. {reason}"
    assert refusal(features, update, validate_only=True) == f"{PREFIX} {level} for feature {name}. {reason}"
    assert (features.levels, features.epoch) == ({TV: 2, GV: 1, SV: 1, STV: 1}, 0)


def test_a_downgrade_type_cannot_raise_a_level(tmp_path):
    features = FinalizedFeatures(tmp_path, node_id=1, initial={TV: 0})
    for kind in (SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        assert refusal(features, (TV, 1, kind)) == f"{PREFIX} 1 for feature {TV}. Can't downgrade to a newer version."


def test_one_refused_update_refuses_them_all(tmp_path):
    features = FinalizedFeatures(tmp_path, node_id=1)
    assert "feature foo" in refusal(features, (TV, 0, SAFE_DOWNGRADE), ("foo", 1, UPGRADE))
    assert (features.levels, features.epoch) == ({TV: 2, GV: 1, SV: 1, STV: 1}, 0)


def test_a_failed_write_leaves_the_levels_as_they_were(tmp_path, monkeypatch):
    features = FinalizedFeatures(tmp_path, node_id=1)

    def full_disk(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(weir.broker.features, "replace_durably", full_disk)
    with pytest.raises(OSError):
        features.update([(TV, 0, SAFE_DOWNGRADE)], validate_only=False)
    assert (features.levels, features.epoch) == ({TV: 2, GV: 1, SV: 1, STV: 1}, 0)
    assert stored(tmp_path)["features"] == {TV: 2, GV: 1, SV: 1, STV: 1}


@pytest.mark.parametrize("contents,complaint", [
    ("{not json", "unreadable finalized features"),
    ('{"version": 1, "epoch": 2}', "unreadable finalized features"),
    ('{"version": 1, "epoch": 2, "features": {"transaction.version": 3}}',
     "transaction.version is finalized at 3, which this broker does not support (0-2)"),
    ('{"version": 1, "epoch": 2, "features": {"group.version": 2}}',
     "group.version is finalized at 2, which this broker does not support (0-1)"),
    ('{"version": 1, "epoch": 2, "features": {"share.version": 2}}',
     "share.version is finalized at 2, which this broker does not support (0-1)"),
    ('{"version": 1, "epoch": 2, "features": {"streams.version": 2}}',
     "streams.version is finalized at 2, which this broker does not support (0-1)"),
    ('{"version": 1, "epoch": 2, "features": {"eligible.leader.replicas.version": 1}}',
     "eligible.leader.replicas.version is finalized at 1, which this broker does not support (0)"),
])
def test_a_file_that_cannot_be_served_stops_start_up(tmp_path, contents, complaint):
    (tmp_path / FILE_NAME).write_text(contents)
    with pytest.raises(ConfigError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        FinalizedFeatures(tmp_path, node_id=1)


def test_feature_flag():
    assert parse_feature_flag("transaction.version=0") == (TV, 0)
    assert parse_feature_flag(" transaction.version = 1 ") == (TV, 1)
    assert parse_feature_flag("group.version=0") == (GV, 0)
    for text, complaint in [("transaction.version", "expects name=level"), ("=1", "expects name=level"),
                            ("transaction.version=x", "expects name=level"),
                            ("eligible.leader.replicas.version=1", "unsupported feature"),
                            ("streams.version=2", "outside the supported range 0-1"),
                            ("transaction.version=3", "outside the supported range 0-2")]:
        with pytest.raises(ConfigError, match=complaint):
            parse_feature_flag(text)


def call(api_key, version, request, features):
    authorizer = Authorizer(BrokerConfig({}), AclStore(Path(".")))  # off (never writes): UpdateFeatures asks it
    context = SimpleNamespace(features=features, authorizer=authorizer)
    return HANDLERS[api_key].fn(context, SimpleNamespace(api_version=version), request)


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_carries_the_features(tmp_path, version):
    features = FinalizedFeatures(tmp_path, node_id=1)
    features.update([(TV, 0, SAFE_DOWNGRADE)], validate_only=False)
    features.update([(TV, 1, UPGRADE)], validate_only=False)
    answer = call(ApiKey.API_VERSIONS, version, api_versions.REQUEST(), features)
    # below v4 a supported range that starts at 0 is left out, as Kafka does (KAFKA-17492)
    assert [(f.name, f.min_version, f.max_version) for f in answer.supported_features] == \
        ([] if version == 3 else [(GV, 0, 1), (SV, 0, 1), (STV, 0, 1), (TV, 0, 2)])
    assert answer.finalized_features_epoch == 2
    finalized = [(f.name, f.min_version_level, f.max_version_level) for f in answer.finalized_features]
    assert finalized == [(GV, 1, 1), (SV, 1, 1), (STV, 1, 1), (TV, 1, 1)]
    encoded = api_versions.RESPONSE.encode(version, answer)
    assert api_versions.RESPONSE.decode(version, encoded) == answer


def test_api_versions_below_v3_has_no_features(tmp_path):
    answer = call(ApiKey.API_VERSIONS, 2, api_versions.REQUEST(), FinalizedFeatures(tmp_path, node_id=1))
    decoded = api_versions.RESPONSE.decode(2, api_versions.RESPONSE.encode(2, answer))
    assert (decoded.supported_features, decoded.finalized_features, decoded.finalized_features_epoch) == ([], [], -1)


def update_request(*updates, validate_only=False):
    return update_features.REQUEST(validate_only=validate_only, feature_updates=[
        update_features.FeatureUpdate(feature=name, max_version_level=level, upgrade_type=kind)
        for name, level, kind in updates])


@pytest.mark.parametrize("version,results", [(0, [(TV, 0, "NONE")]), (1, [(TV, 0, "NONE")]), (2, [])])
def test_update_features_answers_per_feature_results_up_to_v1(tmp_path, version, results):
    features = FinalizedFeatures(tmp_path, node_id=1)
    answer = call(ApiKey.UPDATE_FEATURES, version, update_request((TV, 1, SAFE_DOWNGRADE)), features)
    assert (answer.error_code, answer.error_message) == (0, None)
    assert [(r.feature, r.error_code, r.error_message) for r in answer.results] == results


def test_update_features_refusal_is_top_level(tmp_path):
    features = FinalizedFeatures(tmp_path, node_id=1)
    answer = call(ApiKey.UPDATE_FEATURES, 1, update_request((TV, 3, UPGRADE)), features)
    assert answer.error_code == Errors.INVALID_UPDATE_VERSION and answer.results == []
    assert answer.error_message == ("The update failed for all features since the following feature had an error: "
                                    f"{PREFIX} 3 for feature {TV}. Local controller 1 only supports versions 0-2")


def test_update_features_v0_is_always_an_upgrade(tmp_path):
    # Kafka 4.3.1's controller reads the upgrade type, which v0 lacks: allow_downgrade changes nothing
    features = FinalizedFeatures(tmp_path, node_id=1)
    request = update_features.REQUEST(feature_updates=[
        update_features.FeatureUpdate(feature=TV, max_version_level=0, allow_downgrade=True)])
    decoded = update_features.REQUEST.decode(0, update_features.REQUEST.encode(0, request))
    answer = call(ApiKey.UPDATE_FEATURES, 0, decoded, features)
    assert answer.error_code == Errors.INVALID_UPDATE_VERSION and "Can't downgrade" in answer.error_message
    assert features.level(TV) == 2


def test_update_features_validate_only(tmp_path):
    features = FinalizedFeatures(tmp_path, node_id=1)
    answer = call(ApiKey.UPDATE_FEATURES, 2, update_request((TV, 0, SAFE_DOWNGRADE), validate_only=True), features)
    assert answer.error_code == 0 and (features.level(TV), features.epoch) == (2, 0)


def test_update_features_that_cannot_be_written_answers_storage_error(tmp_path, monkeypatch):
    features = FinalizedFeatures(tmp_path, node_id=1)

    def broken_disk(path, data):
        raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(weir.broker.features, "replace_durably", broken_disk)
    answer = call(ApiKey.UPDATE_FEATURES, 2, update_request((TV, 0, SAFE_DOWNGRADE)), features)
    assert answer.error_code == Errors.KAFKA_STORAGE_ERROR and "Input/output error" in answer.error_message
    assert (features.level(TV), features.epoch) == (2, 0)


def test_the_file_is_replaced_durably(tmp_path, monkeypatch):
    """Temp file synced before the rename, directory synced after it: a power loss leaves the old
    levels or the new ones, never an empty or missing file."""
    features = FinalizedFeatures(tmp_path, node_id=1)
    calls = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(source, target):
        calls.append(("rename", str(source), str(target)))
        real_replace(source, target)
    monkeypatch.setattr(weir.broker.log.disk.os, "fsync", fsync)
    monkeypatch.setattr(weir.broker.log.disk.os, "replace", replace)
    features.update([(TV, 0, SAFE_DOWNGRADE)], validate_only=False)
    path = str(tmp_path / FILE_NAME)
    assert calls == [("fsync", path + ".tmp"), ("rename", path + ".tmp", path), ("fsync", str(tmp_path))]
    assert stored(tmp_path) == {"version": 1, "epoch": 1, "features": {GV: 1, SV: 1, STV: 1}}
