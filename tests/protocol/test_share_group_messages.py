"""The share group APIs (76-79, 90-92) match Apache Kafka 4.4.0's wire schemas, version by version.

kafka-python ships no JSON for them. ``share_schemas_kafka_4_4_0.txt`` is what Kafka 4.4.0's
kafka-clients jar prints for each message's ``SCHEMAS[v]`` (``Schema.toString``); our declarations
are rendered the same way and compared, so a field's name, order, type, nullability or version
range that differs from Kafka's fails here.
"""

from pathlib import Path

import pytest

from weir.protocol.messages import (alter_share_group_offsets, delete_share_group_offsets,
                                    describe_share_group_offsets, share_acknowledge, share_fetch,
                                    share_group_describe, share_group_heartbeat)
from weir.protocol.schema import Array, Struct

DUMP = Path(__file__).with_name("share_schemas_kafka_4_4_0.txt")
MODULES = [share_group_heartbeat, share_group_describe, share_fetch, share_acknowledge,
           describe_share_group_offsets, alter_share_group_offsets, delete_share_group_offsets]

_SCALARS = {"int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "bool": "BOOLEAN",
            "uuid": "UUID"}
_LENGTH_PREFIXED = {"string": "STRING", "bytes": "BYTES"}


def _kafka_schemas() -> dict[tuple[str, int], str]:
    found = {}
    for line in DUMP.read_text().splitlines():
        head, _, schema = line.partition(": ")
        name, version = head.rsplit(" v", 1)
        found[(name.removesuffix("Data"), int(version))] = schema
    return found


def _render_type(kind, version: int, nullable: bool) -> str:
    if isinstance(kind, Array):
        inner = _render_type(kind.element, version, False)
        return f"COMPACT_{'NULLABLE_' if nullable else ''}ARRAY({inner})"
    if isinstance(kind, Struct):
        return _render_struct(kind, version)
    if kind.name in _SCALARS:
        return _SCALARS[kind.name]
    if kind.name == "records":
        return "COMPACT_RECORDS"  # Kafka's one records type, null or not
    return f"COMPACT_{'NULLABLE_' if nullable else ''}{_LENGTH_PREFIXED[kind.name]}"


def _render_struct(struct: Struct, version: int) -> str:
    fields = [f"{field.name}:{_render_type(field.type, version, field.is_nullable(version))}"
              for field in struct.fields if field.present(version) and not field.is_tagged(version)]
    return "{" + ",".join([*fields, "_tagged_fields:TAGGED_FIELDS_TYPE_NAME()"]) + "}"


CASES = [(message, version) for module in MODULES for message in (module.REQUEST, module.RESPONSE)
         for version in range(message.versions[0], message.versions[1] + 1)]


@pytest.mark.parametrize("message,version", CASES, ids=[f"{m.name}-v{v}" for m, v in CASES])
def test_declaration_matches_kafka_4_4_0(message, version):
    assert message.flexible[0] == 0  # every share API is flexible from its first version
    assert _render_struct(message, version) == _kafka_schemas()[(message.name, version)]


def test_the_served_ranges_are_kafka_4_4_0s():
    served = {(name, version) for name, version in _kafka_schemas()}
    assert served == {(message.name, version) for message, version in CASES}
