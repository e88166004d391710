"""What ``import weir.client`` costs next to ``import aiokafka``: wall and CPU seconds of each in
fresh interpreters, alternating (``python -m bench.client --figures import``)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

_IMPORT = ("import time; began, cpu = time.perf_counter(), time.process_time(); import {}; "
           "print(time.perf_counter() - began, time.process_time() - cpu)")


def import_seconds(module: str) -> tuple[float, float]:
    """Wall and CPU seconds of ``import module`` in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # cached bytecode, as installed
    out = subprocess.run([sys.executable, "-c", _IMPORT.format(module)], capture_output=True, text=True,
                         check=True, env=env).stdout
    wall, cpu = out.split()
    return float(wall), float(cpu)


def import_figures(runs: int) -> None:
    modules = ("weir.client", "aiokafka")
    for module in modules:
        import_seconds(module)  # writes the bytecode caches, if missing
    samples: dict[str, list[tuple[float, float]]] = {m: [] for m in modules}
    for _ in range(runs):
        for module in modules:
            samples[module].append(import_seconds(module))
    print(f"import, median of {runs} alternating cold interpreters (load {os.getloadavg()[0]:.1f})")
    for what, index in (("wall", 0), ("CPU", 1)):
        ours, theirs = (statistics.median(s[index] for s in samples[m]) * 1e3 for m in modules)
        print(f"  {what:<5} weir.client {ours:6.1f} ms   aiokafka {theirs:6.1f} ms   "
              f"ours/aiokafka {ours / theirs:.2f}x")
