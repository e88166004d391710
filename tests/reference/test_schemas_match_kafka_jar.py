"""Every message we declare, at every version we declare, has the layout the reference Kafka's
own generated readers and writers use (kafka-clients from reference/pom.xml, dumped by
reference/src/main/java/dev/weir/reference/MessageSchemas.java). tests/protocol checks the same
against the JSON schemas kafka-python ships, which stop before Kafka 4.4; this check follows the
reference wherever it moves."""

import subprocess

import pytest

from reference.kafka import java_command, kafka_version
from weir.protocol import messages
from tests.protocol.test_schemas_match_kafka import ours_flat

#: Kafka's protocol type names to the schema JSON's names that our declarations use. The compact
#: and nullable forms are the same field type: flexibility and nullability are compared apart.
_TYPE_NAMES = {"BOOLEAN": "bool"}


def _type_name(java: str) -> str:
    array = java.startswith("[]")
    base = java.removeprefix("[]").removeprefix("COMPACT_").removeprefix("NULLABLE_")
    return ("[]" if array else "") + _TYPE_NAMES.get(base, base.lower())


@pytest.fixture(scope="module")
def kafka_layouts() -> dict[tuple[int, str, int], tuple[bool, list]]:
    dump = subprocess.run(java_command("dev.weir.reference.MessageSchemas"), capture_output=True, text=True,
                          timeout=120, check=True).stdout
    layouts = {}
    for line in dump.splitlines():
        key, kind, version, flexible, *fields = line.split("\t")
        flat = []
        for field in fields:
            path, java_type, nullable, tag = field.rsplit(":", 3)
            flat.append((path.replace("_", "").lower(), _type_name(java_type), nullable == "true",
                         None if tag == "-1" else int(tag)))
        layouts[int(key), kind, int(version)] = (flexible == "flexible", flat)
    return layouts


def _body_order(flat: list) -> list:
    """The fields written in the body, in order: not the tagged ones nor any field inside them
    (Kafka lists those after the body's, we where they are declared)."""
    tagged = [entry[0] + "." for entry in flat if entry[3] is not None]
    return [entry for entry in flat if entry[3] is None and not any(entry[0].startswith(t) for t in tagged)]


CASES = [(module.REQUEST.api_key, kind, message) for module in messages.BY_KEY.values()
         for kind, message in (("request", module.REQUEST), ("response", module.RESPONSE))]


@pytest.mark.parametrize("api_key,kind,message", CASES, ids=[m.name for _, _, m in CASES])
def test_declaration_matches_the_reference_kafka(kafka_layouts, api_key, kind, message):
    lo, hi = message.versions
    for version in range(lo, hi + 1):
        assert (api_key, kind, version) in kafka_layouts, \
            f"{message.name} v{version}: Kafka {kafka_version()} does not define it"
        flexible, kafka = kafka_layouts[api_key, kind, version]
        ours = ours_flat(message, version)
        assert message.is_flexible(version) == flexible, f"{message.name} v{version} flexibility"
        assert sorted(ours, key=repr) == sorted(kafka, key=repr), f"{message.name} v{version}"
        assert _body_order(ours) == _body_order(kafka), f"{message.name} v{version} field order"
