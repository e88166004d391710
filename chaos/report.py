"""The chaos campaign's figures: committed records per second, and a chart of them with the faults."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .checker import Read

FAULT_COLOURS = {"kill": "#d62728", "pause": "#ff7f0e", "errors": "#9467bd", "disk_full": "#8c564b",
                 "client_kill": "#7f7f7f"}


def throughput(inputs: list[Read], outputs: dict[str, list[Read]], started_s: float) -> dict[str, list[int]]:
    """Committed records per second since the start (by record timestamp), per topic."""
    def per_second(reads: list[Read]) -> list[int]:
        seconds = Counter(int(read.timestamp_ms / 1000 - started_s) for read in reads)
        return [seconds.get(second, 0) for second in range(max(seconds, default=-1) + 1)]
    return {"chaos-in": per_second(inputs), **{topic: per_second(reads) for topic, reads in outputs.items()}}


def chart(report: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(10, 3.5))
    for (name, series), colour in zip(report["throughput"].items(), ("#1f77b4", "#2ca02c", "#17becf"), strict=False):
        ax.plot(range(len(series)), series, label=f"{name} (committed records/s)", linewidth=0.8, color=colour)
    for fault in report["faults"]:
        ax.axvline(fault["t"], color=FAULT_COLOURS.get(fault["fault"], "black"), linewidth=0.6, alpha=0.6)
    handles, labels = ax.get_legend_handles_labels()
    for kind, colour in FAULT_COLOURS.items():
        if any(f["fault"] == kind for f in report["faults"]):
            handles.append(plt.Line2D([], [], color=colour, linewidth=0.8))
            labels.append(kind)
    ax.legend(handles, labels, fontsize=7, loc="upper right", ncol=2)
    ax.set_xlabel("seconds")
    anomalies = sum(report["anomalies"].values())
    ax.set_title(f"Weir chaos {report['date']}, {report['seconds']:.0f} s, seed {report['seed']}: "
                 f"{len(report['faults'])} faults, {anomalies} anomalies", fontsize=9)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
