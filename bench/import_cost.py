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


def import_figures(runs: int, modules: tuple[str, ...] = ("weir.client", "aiokafka")) -> dict[str, dict[str, float]]:
    """Per module the median wall and CPU milliseconds of ``runs`` imports, the modules alternating;
    printed with weir.client's ratio to each other module."""
    for module in modules:
        import_seconds(module)  # writes the bytecode caches, if missing
    samples: dict[str, list[tuple[float, float]]] = {m: [] for m in modules}
    for _ in range(runs):
        for module in modules:
            samples[module].append(import_seconds(module))
    medians = {module: {f"import {what} ms": statistics.median(s[index] for s in samples[module]) * 1e3
                        for what, index in (("wall", 0), ("CPU", 1))} for module in modules}
    print(f"import, median of {runs} alternating cold interpreters (load {os.getloadavg()[0]:.1f})")
    for module, figures in medians.items():
        ratios = "" if module == "weir.client" or "weir.client" not in medians else "   weir.client/this " + "  ".join(
            f"{medians['weir.client'][name] / value:.2f}x" for name, value in figures.items())
        print(f"  {module:<20}" + "  ".join(f"{name} {value:6.1f}" for name, value in figures.items()) + ratios)
    return medians
