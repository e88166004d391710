"""Charts of a results document (bench/report.py): SVG files that README.md shows.

- ``throughput.svg``: produce, fetch and transactional MB/s per peer (bench.throughput,
  bench.transactions), and commits and pipeline records per second (log scale);
- ``latency.svg``: end-to-end and acknowledgement p50/p99/p99.9/max per rate, one panel per
  mode (plain, transactional) and kind, per peer (bench.latency; log scale);
- ``fetch.svg``: MB/s per client, one panel per partition count and isolation level (bench.fetch);
- ``scale.svg``: one panel per figure of bench.scale;
- ``client.svg``: per client (ours, ours-fast, confluent, aiokafka, confluent-aio) produce and
  consume MB/s and the client's CPU seconds per GB, one panel per figure with a bar group per
  record size (log scale), and the import milliseconds (bench.client);
- ``share.svg``: share-group records/s per case (members on partitions) and end-to-end p50/p99
  latency, Weir next to Kafka (bench.share);
- ``spark.svg``: the Spark data source's and sink's rows/s, ``weir`` next to Spark's own Kafka
  connector (bench.spark).

Every chart is titled with the run's date, profile, commit and load average, since figures
from a busy machine are not a quiet machine's. A figure a peer could not give is marked n/a.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

Document = dict[str, Any]  # a results document (bench/report.py)
Summary = dict[str, Any]  # one bench's figures (bench.throughput.summarise)

COLOURS = {"weir": "#1f77b4", "tansu": "#ff7f0e", "kafka": "#2ca02c",
           # bench.client's clients (ours in Weir's blues, librdkafka's in Kafka's greens) and bench.spark's connector
           "ours": "#1f77b4", "ours-fast": "#aec7e8", "confluent": "#2ca02c", "confluent-aio": "#98df8a",
           "aiokafka": "#ff7f0e", "spark-kafka": "#2ca02c"}
OTHER_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
plt.rcParams.update({"svg.fonttype": "none", "font.size": 8})  # text stays text: small files


def colour(peer: str, peers: list[str]) -> str:
    return COLOURS.get(peer) or OTHER_COLOURS[peers.index(peer) % len(OTHER_COLOURS)]


def caption(document: Document) -> str:
    loads = [entry[key][0] for entry in document["benches"].values() for key in ("load before", "load after")
             if key in entry]
    load = f"load {min(loads):.1f}-{max(loads):.1f}" if loads else "load unknown"
    return (f"{document['date'][:16].replace('T', ' ')} UTC, profile {document['profile']}, "
            f"commit {document['git']['commit'][:10]}, {document['machine']['cpus']} cores, {load} (1-minute average)")


def grouped(ax: Axes, summary: Summary, labels: list[str], metrics: list[str], title: str, log: bool = False) -> None:
    """Bars of ``metrics`` (x labels ``labels``), one bar per peer in each group; n/a where missing."""
    peers = summary["peers"]
    width = 0.8 / len(peers)
    for number, peer in enumerate(peers):
        offsets = [x + (number - (len(peers) - 1) / 2) * width for x in range(len(metrics))]
        values = [summary["medians"][peer].get(metric) for metric in metrics]
        ax.bar(offsets, [value or 0 for value in values], width, label=peer, color=colour(peer, peers))
        for x, value in zip(offsets, values, strict=True):
            if value is None:
                ax.text(x, 0, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(metrics)), labels, rotation=30 if max(map(len, labels), default=0) > 12 else 0,
                  ha="right" if max(map(len, labels), default=0) > 12 else "center")
    ax.set_title(title)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def _summary(document: Document, bench: str) -> Summary | None:
    summary: Summary | None = document["benches"].get(bench, {}).get("summary")
    return summary


def _save(figure: Figure, document: Document, path: Path) -> Path:
    figure.suptitle(caption(document), fontsize=7)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def throughput(document: Document, path: Path) -> Path | None:
    panels = [(name, summary) for name in ("throughput", "transactions", "pipeline")
              if (summary := _summary(document, name))]
    if not panels:
        return None
    figure, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6), squeeze=False)
    for ax, (name, summary) in zip(axes[0], panels, strict=True):
        metrics = [m for m in summary["metrics"] if "/s" in m]
        grouped(ax, summary, metrics, metrics, f"bench.{name} (higher is better)",
                log=any("MB/s" not in m for m in metrics))
    axes[0][0].legend()
    return _save(figure, document, path)


@dataclass
class Panel:
    """One panel of a chart: a bar group per metric (x labels ``labels``), a bar per peer."""
    title: str
    labels: list[str]
    metrics: list[str]
    log: bool = False


def _panels(summary: Summary, pattern: str, panel: str, label: str, title: Callable[[re.Match[str]], str],
            log: bool = False) -> list[Panel]:
    """One panel per value of the ``panel`` template over the metrics that ``pattern`` matches, in
    the order of their first metric, each bar group labelled by the ``label`` template (both
    ``str.format`` over the match's groups); ``title`` of the panel's first match."""
    groups: dict[str, list[tuple[re.Match[str], str]]] = {}
    for metric in summary["metrics"]:
        if match := re.fullmatch(pattern, metric):
            groups.setdefault(panel.format(**match.groupdict()), []).append((match, metric))
    return [Panel(title(chosen[0][0]), [label.format(**match.groupdict()) for match, _ in chosen],
                  [metric for _, metric in chosen], log) for chosen in groups.values()]


def _chart(document: Document, path: Path, summary: Summary, panels: list[Panel], columns: int) -> Path | None:
    """The panels, ``columns`` a row, the first with the legend; None when there is none."""
    if not panels:
        return None
    columns = min(columns, len(panels))
    rows = -(-len(panels) // columns)
    # at least 8 inches wide: the caption's width
    figure, axes = plt.subplots(rows, columns, figsize=(max(4 * columns, 8), 3.4 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        grouped(ax, summary, panel.labels, panel.metrics, panel.title, log=panel.log)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    axes[0][0].legend()
    return _save(figure, document, path)


def _by_pattern(document: Document, path: Path, bench: str, pattern: str, panel: str, label: str,
                title: Callable[[re.Match[str]], str], log: bool = False) -> Path | None:
    """``_panels`` of one bench's figures, in one row."""
    summary = _summary(document, bench)
    if not summary:
        return None
    panels = _panels(summary, pattern, panel, label, title, log)
    return _chart(document, path, summary, panels, len(panels))


def latency(document: Document, path: Path) -> Path | None:
    return _by_pattern(document, path, "latency", r"(?P<mode>\w+) (?P<rate>\S+ rps) (?P<kind>e2e|ack) (?P<q>\S+) ms",
                       "{mode} {kind}", "{rate} {q}", lambda match: f"{match['mode']} " + (
                           "end-to-end" if match["kind"] == "e2e" else "acknowledgement") + " ms (lower is better)",
                       log=True)


def fetch(document: Document, path: Path) -> Path | None:
    return _by_pattern(document, path, "fetch", r"(?P<client>\S+) (?P<panel>\d+p \w+) MB/s", "{panel}", "{client}",
                       lambda match: f"fetch MB/s, {match['panel']} (higher is better)")


def scale(document: Document, path: Path) -> Path | None:
    summary = _summary(document, "scale")
    if not summary:
        return None
    metrics = [metric for metric in summary["metrics"] if not metric.startswith("load")]
    if not metrics:
        return None
    columns = 4
    rows = -(-len(metrics) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3 * columns, 2.4 * rows), squeeze=False)
    for ax, metric in zip(axes.flat, metrics, strict=False):
        grouped(ax, summary, [""], [metric], "")
        ax.set_xticks([])
        ax.set_title(f"{metric}\n({summary['better'][metric]} is better)", fontsize=7)
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    axes[0][0].legend(fontsize=6)
    return _save(figure, document, path)


#: bench.client's charted figures after the record size, in panel order: throughput left, CPU right
CLIENT_FIGURES = ("produce MB/s", "produce CPU s/GB", "consume MB/s", "consume CPU s/GB", "txn produce MB/s",
                  "pipeline records/s")


def client_panels(summary: Summary) -> list[Panel]:
    """A panel per figure of ``CLIENT_FIGURES`` the summary has (bar groups: record sizes; log scale,
    since 100 B and 10 KiB records differ tenfold), then the import milliseconds."""
    panels = [panel for figure in CLIENT_FIGURES
              for panel in _panels(summary, rf"(?P<size>\d+ (?:B|KiB)) {re.escape(figure)}", figure, "{size}",
                                   lambda _, figure=figure: f"{figure.replace('CPU', 'client CPU')} "
                                   f"({'lower' if 'CPU' in figure else 'higher'} is better)", log=True)]
    imports = [metric for metric in ("import wall ms", "import CPU ms") if metric in summary["metrics"]]
    if imports:
        panels.append(Panel("import ms of the client's module (lower is better)",
                            [metric.split()[1] for metric in imports], imports))
    return panels


def client(document: Document, path: Path) -> Path | None:
    summary = _summary(document, "client")
    return _chart(document, path, summary, client_panels(summary), columns=2) if summary else None


def share_panels(summary: Summary) -> list[Panel]:
    """Records/s per case (members on partitions), then the end-to-end latency quantiles (log scale)."""
    return [*_panels(summary, r"(?P<members>\d+) member\(s\) (?P<partitions>\d+)p records/s", "records/s",
                     "{members} on {partitions}p", lambda _: "share group records/s, members on partitions "
                                                             "(higher is better)"),
            *_panels(summary, r"e2e (?P<q>p\d+) ms", "latency", "{q}",
                     lambda _: "share group end-to-end ms (lower is better)", log=True)]  # Weir's ~1 ms, Kafka's ~10


def share(document: Document, path: Path) -> Path | None:
    summary = _summary(document, "share")
    return _chart(document, path, summary, share_panels(summary), columns=2) if summary else None


#: bench.spark's figures: (metric, panel title, bar group label)
SPARK_FIGURES = (("source rows/s", "Spark source: a batch read, rows/s\n(higher is better)", "source"),
                 ("sink rows/s", "Spark sink: a streaming copy, rows/s (higher is better)\n"
                                 "weir exactly-once, spark-kafka at-least-once", "sink"))


def spark(document: Document, path: Path) -> Path | None:
    """Rows/s of the Spark source and sink, ``weir`` next to Spark's own kafka connector."""
    summary = _summary(document, "spark")
    if not summary:
        return None
    panels = [Panel(title, [label], [metric]) for metric, title, label in SPARK_FIGURES if metric in summary["metrics"]]
    return _chart(document, path, summary, panels, columns=2)


def draw(document: Document, directory: Path) -> list[Path]:
    """The charts the document has figures for, written into ``directory``; their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    drawn = [chart(document, directory / f"{chart.__name__}.svg")
             for chart in (throughput, latency, fetch, scale, client, share, spark)]
    return [path for path in drawn if path is not None]
