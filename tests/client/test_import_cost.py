"""``import weir.client`` stays quick (issue 32): what it loads, not how long it takes.

A wall-clock bound would fail on a loaded machine; the set of modules does not. The admin client,
SCRAM's asn1 stack, construct, lz4, importlib.metadata and the schemas of APIs a producer or consumer
never sends are imported on first use, not up front. ``python -m bench.client --figures import``
prints the time itself next to aiokafka's.
"""

import json
import subprocess
import sys

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import BY_KEY

#: Loaded on first use only: each costs milliseconds and most programs never need it.
FORBIDDEN = {"weir.client.admin", "weir.broker", "scramp", "asn1crypto", "construct", "lz4", "lz4.frame",
             "importlib.metadata", "argparse", "crc32c", "pyarrow"}
#: Schemas of the admin, ACL, SCRAM and config APIs: the Admin client's, never a producer's or consumer's.
ADMIN_SCHEMAS = {"create_topics", "delete_topics", "create_partitions", "delete_records", "describe_configs",
                 "alter_configs", "incremental_alter_configs", "create_acls", "delete_acls", "describe_acls",
                 "describe_user_scram_credentials", "alter_user_scram_credentials", "describe_client_quotas",
                 "describe_groups", "list_groups", "delete_groups", "offset_delete", "describe_cluster",
                 "describe_producers", "describe_transactions", "list_transactions", "write_txn_markers",
                 "update_features", "describe_topic_partitions", "consumer_group_describe", "sasl_handshake",
                 "sasl_authenticate"}


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(__import__('json').dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_import_weir_client_leaves_the_costly_modules_for_first_use():
    loaded = _modules_after("import weir.client")
    assert "weir.client.consumer" in loaded and "weir.client.producer" in loaded  # the check itself works
    assert {m for m in loaded if m.split(".")[0] in {"scramp", "asn1crypto", "construct", "lz4"}
            or m.startswith(("weir.client.admin", "weir.broker"))} | (loaded & FORBIDDEN) == set()
    schemas = {m.rsplit(".", 1)[1] for m in loaded if m.startswith("weir.protocol.messages.")}
    assert schemas & ADMIN_SCHEMAS == set()


def test_what_was_left_out_still_loads_on_use():
    loaded = _modules_after("import weir, weir.client; assert weir.client.Admin.__name__ == 'Admin'; "
                            "assert weir.__version__; "
                            "from weir.protocol.consumer_protocol import MemberSubscription, encode_subscription, "
                            "decode_subscription; s = MemberSubscription(['t'], rack_id='r'); "
                            "assert decode_subscription(encode_subscription(s)) == s")
    assert {"weir.client.admin", "construct", "importlib.metadata"} <= loaded


def test_schemas_by_api_key_load_on_first_use_and_cover_every_key():
    assert set(BY_KEY) == {int(key) for key in ApiKey}
    for key in ApiKey:
        assert BY_KEY[key].REQUEST.api_key == key == BY_KEY[key].RESPONSE.api_key
    assert BY_KEY.get(9999) is None and 9999 not in BY_KEY
