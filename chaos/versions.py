"""Transaction versions 1 and 2 in the chaos campaign (KIP-890), on one broker.

The broker's data directory is formatted at ``transaction.version`` 1; halfway through the run the
campaign upgrades it to 2 with UpdateFeatures, as ``kafka-features upgrade`` does, and restarts the
broker (kill -9). The Java client and ours read the finalized level from ApiVersions when they
connect and run their next transactions at it; librdkafka 2.16 has no KIP-890
(confluentinc/librdkafka#5423) and runs version 1 throughout. So every producer kind the issue
lists runs version 1, and the two that can run version 2 run it, with the upgrade itself under the
faults too. One broker, one checker: simpler than a broker per version, and half the load on a
shared machine.

What each half ran is measured, not assumed: the broker's request counters (its metrics listener)
by API version, where each client shows: EndTxn v1 with Produce v10 is librdkafka, v3 with Produce
v10 ours at version 1, v4 with Produce v11 the Java client at version 1, v5 with Produce v12 the
Java client or ours at version 2; and the journals of Weir's producers, which note each
transaction's version. The counters start again at each broker restart, so they show what ran
since the last one (in the first half, up to the upgrade; in the second, up to the drain).
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from weir.broker.features import TRANSACTION_VERSION
from weir.testing import ProcessBroker

FIRST, SECOND = 1, 2
WATCHED = ("EndTxn", "AddPartitionsToTxn", "Produce", "TxnOffsetCommit", "InitProducerId")
REQUESTS = re.compile(r'^kafka_network_requestmetrics_requests_total\{request="(\w+)",version="(\d+)"\} (\S+)$',
                      re.MULTILINE)


def broker_args() -> list[str]:
    return ["--feature", f"{TRANSACTION_VERSION}={FIRST}"]


def upgrade(broker: ProcessBroker) -> None:
    from weir.protocol.errors import Errors
    from weir.protocol.messages.update_features import UPGRADE

    from tests.features.raw import update, wait_for_level

    target = SimpleNamespace(port=broker.port, kind="weir")
    outcome = update(target, 1, (TRANSACTION_VERSION, SECOND, UPGRADE))
    if outcome[0] != Errors.NONE or any(code for _name, code, _message in outcome[2]):
        raise RuntimeError(f"UpdateFeatures {TRANSACTION_VERSION}={SECOND}: {outcome}")
    wait_for_level(target, SECOND)


def requests_by_version(metrics: str) -> dict[str, dict[str, int]]:
    """The transactional requests the broker served since it last started, by API and version."""
    try:
        with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=30) as answer:
            text = answer.read().decode()
    except OSError as exc:
        return {"error": {repr(exc): 0}}
    counts: dict[str, dict[str, int]] = {}
    for api, version, count in REQUESTS.findall(text):
        if api in WATCHED and float(count):
            counts.setdefault(api, {})[version] = int(float(count))
    return counts


def journal_versions(run_dir: Path) -> dict[str, dict[int, int]]:
    """Transactions ended per producer kind and transaction version, from the journals that say."""
    ended: dict[str, Counter[int]] = {}
    for path in sorted(run_dir.glob("*.journal")):
        kind = path.stem.rsplit("-", 1)[0]
        for line in path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut by kill -9
            if "tv" in entry:
                ended.setdefault(kind, Counter())[entry["tv"]] += 1
    return {kind: dict(sorted(counts.items())) for kind, counts in ended.items()}
