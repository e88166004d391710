"""Every message declaration matches Apache Kafka's JSON schema, version by version.

kafka-python ships Kafka's message JSON files unchanged; we read them only here,
as the reference our own declarations are checked against.
"""

import importlib.resources
import json
import re

import pytest

from weir.protocol import messages
from weir.protocol.schema import Array, Struct, parse_versions


def _load_kafka_schema(name: str) -> dict:
    root = importlib.resources.files("kafka.protocol.schemas") / "resources"
    text = (root / f"{name}.json").read_text()
    return json.loads(re.sub(r"//.*$", "", text, flags=re.M))


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def _within(spec, version):
    rng = parse_versions(spec)
    return rng is not None and rng[0] <= version <= rng[1]


def _kafka_flat(fields, common, version, prefix=""):
    out = []
    for field in fields:
        if not _within(field.get("versions"), version):
            continue
        path = prefix + _norm(field["name"])
        kind = field["type"]
        is_array = kind.startswith("[]")
        base = kind[2:] if is_array else kind
        nested = field.get("fields") or common.get(base)
        tag = field["tag"] if "tag" in field and _within(field.get("taggedVersions"), version) else None
        type_name = ("[]" if is_array else "") + ("struct" if nested is not None else base)
        out.append((path, type_name, _within(field.get("nullableVersions"), version), tag))
        if nested is not None:
            out.extend(_kafka_flat(nested, common, version, path + "."))
    return out


def ours_flat(struct: Struct, version, prefix=""):
    out = []
    for field in struct.fields:
        if not field.present(version):
            continue
        path = prefix + _norm(field.name)
        kind = field.type
        is_array = isinstance(kind, Array)
        base = kind.element if is_array else kind
        nested = base if isinstance(base, Struct) else None
        type_name = ("[]" if is_array else "") + ("struct" if nested else base.name)
        tag = field.tag if field.is_tagged(version) else None
        out.append((path, type_name, field.is_nullable(version), tag))
        if nested is not None:
            out.extend(ours_flat(nested, version, path + "."))
    return out


# kafka-python ships no JSON for the KIP-848 APIs; test_consumer_group_messages.py checks those
# against Kafka's field lists written out there.
# Nor for delegation tokens, client telemetry, share groups (KIP-932) or streams groups (KIP-1071).
# Every API is checked against the reference Kafka's own schemas in
# tests/reference/test_schemas_match_kafka_jar.py.
NOT_SHIPPED_BY_KAFKA_PYTHON = {38, 39, 40, 41, 68, 69, 71, 72, 76, 77, 78, 79, 88, 89, 90, 91, 92, 93}

CASES = [(module.REQUEST.api_key, message)
         for module in messages.BY_KEY.values() for message in (module.REQUEST, module.RESPONSE)
         if module.REQUEST.api_key not in NOT_SHIPPED_BY_KAFKA_PYTHON]


#: Fields Kafka renamed after the schemas kafka-python ships (the wire is the same): ours -> theirs.
RENAMED_SINCE = {("TxnOffsetCommitRequest", "generationidormemberepoch"): "generationid"}


def _as_kafka_python_names(message, flat):
    return [(RENAMED_SINCE.get((message.name, path), path), *rest) for path, *rest in flat]


# Versions past the ones kafka-python ships (Kafka 4.4's ApiVersions v5, DeleteGroups v3, ...) are
# checked against the reference Kafka's own jars in tests/reference/test_schemas_match_kafka_jar.py.
@pytest.mark.parametrize("api_key,message", CASES, ids=[m.name for _, m in CASES])
def test_declaration_matches_kafka_json(api_key, message):
    kafka = _load_kafka_schema(message.name)
    assert kafka["apiKey"] == api_key
    common = {s["name"]: s["fields"] for s in kafka.get("commonStructs", [])}
    lo, hi = message.versions
    kafka_lo, kafka_hi = parse_versions(kafka["validVersions"])
    assert kafka_lo <= lo, "we serve versions Kafka does not define"
    kafka_flexible = parse_versions(kafka["flexibleVersions"])  # None: never flexible
    assert (message.flexible and message.flexible[0]) == (kafka_flexible and kafka_flexible[0])
    for version in range(lo, min(hi, kafka_hi) + 1):
        assert _as_kafka_python_names(message, ours_flat(message, version)) == \
            _kafka_flat(kafka["fields"], common, version), f"{message.name} v{version}"


def test_the_admin_apis_are_checked_too():
    checked = {api_key for api_key, _message in CASES}
    # DeleteRecords, AlterConfigs, CreatePartitions, IncrementalAlterConfigs, DescribeCluster,
    # DescribeProducers, DescribeTransactions, ListTransactions, and DescribeConfigs up to v4
    assert {21, 32, 33, 37, 44, 60, 61, 65, 66} <= checked
    assert messages.BY_KEY[32].REQUEST.versions == (1, 4)
