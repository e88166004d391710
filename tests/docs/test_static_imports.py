"""weir.* resolves from the source tree for a static checker, with no install hook and no build step.

pyright (pinned in the test extra) runs from the repository root, as an editor runs it, over the
folders [tool.pyright] names; every ``import weir...`` it cannot resolve fails this test. It sees
the packages through weir/'s committed symlinks (weir/broker -> ../broker, ...).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pyright_resolves_every_weir_import():
    run = subprocess.run([sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = json.loads(run.stdout)
    assert report["summary"]["filesAnalyzed"] > 250  # the tree, not an empty selection
    unresolved = [f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']}"
                  for d in report["generalDiagnostics"]
                  if d.get("rule") in ("reportMissingImports", "reportAttributeAccessIssue")
                  and '"weir' in d["message"]]
    assert unresolved == []


def test_weir_links_point_at_the_top_level_folders():
    for name in ("broker", "protocol", "client", "pipeline"):
        link = ROOT / "weir" / name
        assert link.is_symlink() and link.readlink() == Path("..") / name
