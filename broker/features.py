"""Finalized feature levels (KIP-584): what ApiVersions v3+ advertises and UpdateFeatures changes.

Kafka keeps them as FeatureLevelRecords in its metadata log; one process keeps them in
``<data-dir>/finalized-features.json`` with an epoch that grows by one at every change
(Kafka's epoch is the metadata log offset: clients only compare it, keeping the
features of the highest epoch they have seen, so it must grow and survive restarts).

A new data directory starts at ``DEFAULT_LEVELS``, or at the levels given with
``weir --feature name=level`` (the flag ``kafka-storage format`` takes); from then on
the persisted levels win and the flag is ignored with a log line, as Kafka formats a
directory only once.

Weir has features only where it means them: ``transaction.version``, ``group.version``,
``share.version`` and ``streams.version``. No
``metadata.version`` or ``kraft.version``: there is no KRaft quorum to describe, and
neither Kafka's clients nor kafka-features need them. A feature Weir does not know
is "not found" even where Kafka knows it (eligible.leader.replicas.version, ...), and a
level of 0 removes the feature from the finalized set, as Kafka's replay does.

Weir's transaction coordinator behaves the same at transaction.version 0 and 1
(Kafka's level 1 changes only the version of its own __transaction_state values);
at 2 the aborts it starts itself (timeouts, a re-initialised id) bump the epoch
as version 2 ends do, and clients that read the level switch to version 2.

group.version 1 (KIP-848, finalized by default as Kafka 4.x formats a directory) enables the
consumer group protocol: at 0 ConsumerGroupHeartbeat answers UNSUPPORTED_VERSION, as Kafka does.
share.version 1 (KIP-932) enables share groups: at 0 the share group APIs answer
UNSUPPORTED_VERSION, as Kafka's do. streams.version 1 (KIP-1071, supported 0-1 and finalized 1 by
Kafka 4.4 at format, as asked of the reference) enables streams groups the same way.

A data directory made before Weir knew group.version keeps its persisted levels (without it),
as a Kafka directory keeps them until ``kafka-features upgrade``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages.update_features import SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE

from .config import ConfigError
from .log.disk import replace_durably

log = logging.getLogger(__name__)

FILE_NAME = "finalized-features.json"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"

# The one place of the supported ranges and of a new data directory's levels: transaction.version
# 2 (KIP-890 part 2) by default, as Kafka 4 formats it. A Java 4.x producer that sees it finalized
# at 2 runs its transactions that way (Produce v12, TxnOffsetCommit v5, EndTxn v5); librdkafka and
# the Python clients speak version 1 whatever the level, and the coordinator serves both.
# share.version 1 enables share groups (KIP-932); 2 adds their dead-letter queue (KIP-1191), which
# Weir does not serve: Kafka 4.4 finalizes 2 at format, Weir 1.
SUPPORTED: dict[str, tuple[int, int]] = {TRANSACTION_VERSION: (0, 2), GROUP_VERSION: (0, 1), SHARE_VERSION: (0, 1),
                                         STREAMS_VERSION: (0, 1)}
DEFAULT_LEVELS: dict[str, int] = {TRANSACTION_VERSION: 2, GROUP_VERSION: 1, SHARE_VERSION: 1, STREAMS_VERSION: 1}

_UPGRADE_TYPES = (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE)


def parse_feature_flag(text: str) -> tuple[str, int]:
    """``name=level`` of ``--feature``, checked against what this broker supports."""
    name, sep, level_text = text.partition("=")
    name = name.strip()
    try:
        level = int(level_text.strip())
    except ValueError:
        raise ConfigError(f"--feature expects name=level, got {text!r}") from None
    if not sep or not name:
        raise ConfigError(f"--feature expects name=level, got {text!r}")
    if name not in SUPPORTED:
        raise ConfigError(f"unsupported feature {name!r}; supported: {', '.join(sorted(SUPPORTED))}")
    low, high = SUPPORTED[name]
    if not low <= level <= high:
        raise ConfigError(f"{name}={level} is outside the supported range {_range_text(low, high)}")
    return name, level


def _range_text(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"  # as Kafka's VersionRange prints


class FinalizedFeatures:
    """The finalized levels and their epoch; the one owner of both."""

    def __init__(self, data_dir: Path, node_id: int, initial: dict[str, int] | None = None):
        self.path = Path(data_dir) / FILE_NAME
        self.node_id = node_id
        if self.path.exists():
            self.levels, self.epoch = self._read()
            if initial:
                log.warning("--feature %s ignored: %s already holds finalized features %s", initial,
                            self.path, self.levels)
        else:
            levels = {**DEFAULT_LEVELS, **(initial or {})}
            self.levels = {name: level for name, level in levels.items() if level > 0}
            self.epoch = 0
            self._write()

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def update(self, updates: list[tuple[str, int, int]], validate_only: bool) -> None:
        """Apply (feature, level, upgrade type) updates all or none; raises INVALID_UPDATE_VERSION
        with Kafka's message for the first one refused. The change is on disk before it is visible."""
        proposed = dict(self.levels)
        for name, level, upgrade_type in updates:
            self._check(name, level, upgrade_type)
            proposed[name] = level
        proposed = {name: level for name, level in proposed.items() if level > 0}
        if validate_only or proposed == self.levels:
            return
        previous = (self.levels, self.epoch)
        self.levels, self.epoch = proposed, self.epoch + 1
        try:
            # Synchronous on purpose: a rare admin request, and no other update may start from
            # the old levels while this one is being written.
            self._write()
        except OSError:
            self.levels, self.epoch = previous
            raise
        log.info("finalized features now %s (epoch %d)", self.levels, self.epoch)

    def _check(self, name: str, level: int, upgrade_type: int) -> None:
        """FeatureControlManager.updateFeature's checks, in its order."""
        if upgrade_type not in _UPGRADE_TYPES:
            self._refuse(name, level, "The controller does not support the given upgrade type.")
        current = self.level(name)
        if level < 0:
            self._refuse(name, level, "A feature version cannot be less than 0.")
        low, high = SUPPORTED.get(name, (0, 0))  # Kafka's QuorumFeatures.DISABLED for an unknown name
        if not low <= level <= high:
            who = f"Local controller {self.node_id}"  # one node: the controller Kafka asks first
            self._refuse(name, level, f"{who} does not support this feature." if high == 0
                         else f"{who} only supports versions {_range_text(low, high)}")
        if level < current and upgrade_type == UPGRADE:
            self._refuse(name, level, "Can't downgrade the version of this feature without setting the "
                                      "upgrade type to either safe or unsafe downgrade.")
        if level > current and upgrade_type != UPGRADE:
            self._refuse(name, level, "Can't downgrade to a newer version.")
        if name not in SUPPORTED:  # level 0 of an unknown feature gets this far, as in Kafka
            self._refuse(name, level, f"Feature {name} not found.")

    @staticmethod
    def _refuse(name: str, level: int, reason: str) -> None:
        raise KafkaError(Errors.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. {reason}")

    def _read(self) -> tuple[dict[str, int], int]:
        try:
            stored = json.loads(self.path.read_text())
            levels = {str(name): int(level) for name, level in stored["features"].items()}
            epoch = int(stored["epoch"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{self.path}: unreadable finalized features ({exc})") from None
        for name, level in levels.items():
            low, high = SUPPORTED.get(name, (0, 0))
            if not low <= level <= high:  # Kafka too refuses to run below a finalized level
                raise ConfigError(f"{self.path}: {name} is finalized at {level}, which this broker does not "
                                  f"support ({_range_text(low, high)})")
        return levels, epoch

    def _write(self) -> None:
        replace_durably(self.path, json.dumps({"version": 1, "epoch": self.epoch, "features": self.levels},
                                              sort_keys=True).encode())
