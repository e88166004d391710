"""ApiVersions and UpdateFeatures sent raw through Weir's codec to either broker."""

from __future__ import annotations

import socket
import time

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import api_versions, update_features

TV = "transaction.version"


def ask(broker, api_key: int, version: int, body, timeout: float = 30.0):
    codec = ClientConnection("weir-features-test")
    with socket.create_connection(("127.0.0.1", broker.port), timeout=timeout) as sock:
        sock.sendall(codec.send_request(api_key, version, body))
        while True:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError(f"{broker.kind} closed the connection")
            answers = codec.receive_data(data)
            if answers:
                return answers[0]


def features(broker, version: int = 4):
    """(supported transaction.version range or None, finalized level or 0, epoch) from ApiVersions."""
    answer = ask(broker, ApiKey.API_VERSIONS, version, api_versions.REQUEST(
        client_software_name="weir-features-test", client_software_version="1"))
    supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in answer.finalized_features}
    low, high = finalized.get(TV, (0, 0))
    assert low == high, "Kafka finalizes one level: min and max are the same"
    return supported.get(TV), high, answer.finalized_features_epoch


def wait_for_level(broker, level: int, deadline: float = 30.0):
    """Kafka answers UpdateFeatures once its controller commits; its brokers' ApiVersions follow
    when they apply the metadata record, a moment later. Weir's answer is at once."""
    end = time.monotonic() + deadline
    while True:
        seen = features(broker)
        if seen[1] == level or time.monotonic() > end:
            return seen
        time.sleep(0.05)  # poll interval of a deadline-bounded wait


def update(broker, version: int, *updates, validate_only: bool = False):
    """UpdateFeatures of (feature, level, upgrade type) triples; (error code, message, results)."""
    return _outcome(ask(broker, ApiKey.UPDATE_FEATURES, version, update_features.REQUEST(
        validate_only=validate_only, feature_updates=[
            update_features.FeatureUpdate(feature=name, max_version_level=level, upgrade_type=kind)
            for name, level, kind in updates])))


def update_v0(broker, name: str, level: int, allow_downgrade: bool):
    """UpdateFeatures v0, whose updates carry allow_downgrade instead of an upgrade type."""
    return _outcome(ask(broker, ApiKey.UPDATE_FEATURES, 0, update_features.REQUEST(feature_updates=[
        update_features.FeatureUpdate(feature=name, max_version_level=level, allow_downgrade=allow_downgrade)])))


def _outcome(answer):
    return answer.error_code, answer.error_message, [(r.feature, r.error_code, r.error_message) for r in answer.results]
