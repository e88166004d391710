"""UpdateFeatures (key 57), v0-2; flexible from v0 (Kafka 4.3.1's schema).

v1 replaces ``allow_downgrade`` with ``upgrade_type`` and adds ``validate_only``;
v2 answers without per-feature results.
"""

from ._dsl import BOOL, INT8, INT16, INT32, STRING, Array, Field, Message, Struct

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # FeatureUpdate.UpgradeType codes

FeatureUpdate = Struct(
    "FeatureUpdateKey",
    Field("feature", STRING),
    Field("max_version_level", INT16),
    Field("allow_downgrade", BOOL, "0"),
    Field("upgrade_type", INT8, "1+", default=UPGRADE),
)

REQUEST = Message(
    "UpdateFeaturesRequest", 57, "0-2", "0+",
    Field("timeout_ms", INT32, default=60000),
    Field("feature_updates", Array(FeatureUpdate)),
    Field("validate_only", BOOL, "1+"),
)

FeatureResult = Struct(
    "UpdatableFeatureResult",
    Field("feature", STRING),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

RESPONSE = Message(
    "UpdateFeaturesResponse", 57, "0-2", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("results", Array(FeatureResult), "0-1"),
)
