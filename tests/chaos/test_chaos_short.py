"""A shortened chaos campaign (``make chaos`` runs it for ten minutes): the fault kinds (power cuts
too) against librdkafka, Weir-client and Java transactional producers, at transaction version 1
and then 2, consume-transform-produce workers in a classic and a KIP-848 group and a share group
member, then the checker; every anomaly class must count zero, the workers must have copied every
input and the share group finished every one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_short_campaign_finds_no_anomaly(tmp_path):
    run = subprocess.run([sys.executable, "-m", "chaos.run", "--seconds", "40", "--out", str(tmp_path),
                          "--seed", "35", "--rdkafka", "1", "--weir", "1", "--java", "1", "--ctp", "1",
                          "--ctp848", "1", "--share", "1", "--fuse"],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    (report_file,) = tmp_path.glob("chaos-*.json")
    report = json.loads(report_file.read_text())
    assert run.returncode == 0, run.stdout + run.stderr[-5000:]
    assert set(report["anomalies"].values()) == {0}
    assert report["records"]["input"] > 0 and report["records"]["unprocessed_input"] == 0
    assert report["records"]["share_unprocessed"] == 0 and report["records"]["share_unjudged"] == 0
    # every kind, the slow disk and the power cut too (the data directory on the FUSE test filesystem)
    assert {fault["fault"] for fault in report["faults"]} == {"kill", "pause", "errors", "disk_full", "client_kill",
                                                              "slow_disk", "power_cut"}
    # Weir's producer ran transactions at version 1, then at 2 after the upgrade halfway
    assert [phase["transaction.version"] for phase in report["transaction_versions"]] == [1, 2]
    assert set(report["transactions_by_version"]["weir"]) == {"1", "2"}
    assert (tmp_path / report_file.with_suffix(".svg").name).stat().st_size > 0
