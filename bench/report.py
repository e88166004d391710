"""Every benchmark in one run: their figures in ``bench/results/<date>.json`` and charts beside it.

    python -m bench.report [--profile make|full] [--only throughput,latency,...] [--out bench/results]
    python -m bench.report --draw bench/results/2026-11-25.json   # charts again from a results file

Each bench module gives ``bench_results(argv)``: what ``bench.throughput.summarise`` returns
(peers, metrics, medians per peer, spreads, n/a reasons). This module runs them one after the
other, each in a process of its own, with a profile's arguments, and writes one JSON document: the date, the
git commit (and whether the tree had changes), the machine (cores, memory, the load average
before and after every bench), each bench's arguments, seconds and figures, or its error. The
charts (bench/charts.py) are drawn from that document alone.

Profiles: ``full`` runs each bench with its own defaults (three interleaved rounds; well over an
hour with Apache Kafka started for every round); ``make`` (``make bench``) one round each at
reduced sizes, under 15 minutes on a 2-core machine. The figures of a busy machine are not a
quiet machine's: the load is in the document and on every chart.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"

#: bench module -> its arguments, per profile
PROFILES: dict[str, dict[str, list[str]]] = {
    "full": {name: [] for name in ("throughput", "transactions", "pipeline", "fetch", "latency", "scale", "share",
                                   "client", "spark")},
    "make": {
        "throughput": ["--messages", "50000", "--rounds", "1"],
        "transactions": ["--messages", "50000", "--commits", "200", "--producers", "8", "--concurrent-commits", "30",
                         "--rounds", "1"],
        "pipeline": ["--records", "20000", "--rounds", "1"],
        "fetch": ["--records", "20000", "--clients", "librdkafka-fqb10,java,aiokafka,ours", "--partitions", "6",
                  "--isolation", "read_uncommitted,read_committed", "--rounds", "1"],
        "latency": ["--rates", "1000,10000", "--seconds", "2", "--rounds", "1"],
        # Kafka takes minutes per thousand partitions on a busy 2-core machine (create and start-up):
        # the partition counts are cut, and the clients' too
        "scale": ["--partitions", "1000", "--wide-partitions", "300", "--wide-records", "30000",
                  "--connections", "1000", "--members", "50", "--group-partitions", "100", "--txn-producers", "300",
                  "--deadline", "60", "--rounds", "1"],
        "share": ["--records", "2000", "--seconds", "2", "--rounds", "1"],
        # the charted figures only (produce and consume per client and size, import); the
        # transactional and pipeline figures are the full profile's
        "client": ["--records", "30000", "--figures", "import,clients", "--rounds", "1"],
        "spark": ["--records", "100000", "--rounds", "1"],
    },
}


def git_commit() -> dict[str, object]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False).stdout.strip()
    return {"commit": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "changed": bool(git("status", "--porcelain", "--untracked-files=no"))}


def machine() -> dict[str, object]:
    memory_kib = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal:")), 0)
    return {"cpus": os.cpu_count(), "memory GiB": round(memory_kib / 2**20, 1), "platform": platform.platform(),
            "python": platform.python_version()}


def load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def run_alone(name: str, argv: list[str]) -> dict[str, Any]:
    """``bench.<name>.bench_results(argv)`` in a process of its own (its output shown as it comes):
    clients a bench leaves behind (a librdkafka instance still dialling a stopped broker) end with
    it instead of loading the benches after it."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as scratch:
        out = Path(scratch) / "summary.json"
        code = (f"import json, sys; from bench import {name}; "
                f"json.dump({name}.bench_results(sys.argv[2:]), open(sys.argv[1], 'w'), allow_nan=False)")
        finished = subprocess.run([sys.executable, "-c", code, str(out), *argv], cwd=REPO, check=False)
        if finished.returncode or not out.exists():
            raise RuntimeError(f"bench.{name} exited with {finished.returncode}")
        summary: dict[str, Any] = json.loads(out.read_text())
        return summary


def collect(profile: str, only: list[str] | None = None) -> dict[str, Any]:
    """Run the profile's benches (those named in ``only``, if given) and gather their figures; a
    bench that fails is recorded with its error and the others still run."""
    began = time.monotonic()
    document: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                      "profile": profile, "git": git_commit(), "machine": machine(), "benches": {}}
    for name, argv in PROFILES[profile].items():
        if only and name not in only:
            continue
        entry: dict[str, Any] = {"argv": argv, "load before": load()}
        print(f"\n=== bench.{name} {' '.join(argv)} (load {entry['load before']})", flush=True)
        started = time.monotonic()
        try:
            entry["summary"] = run_alone(name, argv)
        except Exception as exc:  # recorded: one bench's failure must not lose the others' figures
            entry["error"] = f"{type(exc).__name__}: {exc}"[:1000]
        entry["seconds"] = round(time.monotonic() - started, 1)
        entry["load after"] = load()
        document["benches"][name] = entry
    document["seconds"] = round(time.monotonic() - began, 1)
    return document


def write(document: dict[str, Any], directory: Path) -> Path:
    """``<directory>/<date>.json`` (the run's UTC date; a second run that day replaces it)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{document['date'][:10]}.json"
    path.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="make")
    parser.add_argument("--only", help="comma-separated bench modules (default: all of the profile)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON and charts go")
    parser.add_argument("--draw", type=Path, help="draw the charts of an existing results file; run nothing")
    args = parser.parse_args(argv)
    from bench import charts
    if args.draw:
        document = json.loads(args.draw.read_text())
    else:
        document = collect(args.profile, args.only.split(",") if args.only else None)
        print(f"\nresults: {write(document, args.out)} ({document['seconds']:.0f} s)")
    for path in charts.draw(document, args.out):
        print(f"chart: {path}")
    failed = [name for name, entry in document["benches"].items() if "error" in entry]
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
