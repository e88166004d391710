"""``weir-admin`` (``python -m weir.client.cli``) run as a subprocess, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.broker_process import REPO


def run_cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "weir.client.cli", "--bootstrap-server", bootstrap, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def cli(bootstrap: str, *args: str, expect: int = 0) -> subprocess.CompletedProcess:
    """The finished command; its exit code must be ``expect``."""
    result = run_cli(bootstrap, *args)
    assert result.returncode == expect, result.stdout + result.stderr
    return result


def cli_json(bootstrap: str, *args: str) -> Any:
    return json.loads(cli(bootstrap, "--json", *args).stdout)
