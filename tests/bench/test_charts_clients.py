"""client.svg, share.svg and spark.svg (bench/charts.py) from a small hand-made results document:
the summaries are built by ``summarise`` from rounds shaped as bench.client, bench.share and
bench.spark give them, so the charts are drawn from what report.py would write. No broker."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from bench import charts
from bench.client import size_label
from bench.throughput import summarise

CLIENTS = ("ours", "ours-fast", "confluent", "aiokafka", "confluent-aio")
SIZES = (100, 1024, 10240)


def client_rounds() -> dict[str, list[dict[str, float | str]]]:
    rounds: dict[str, list[dict[str, float | str]]] = {}
    for number, name in enumerate(CLIENTS, start=1):
        figures: dict[str, float | str] = {"import wall ms": 50.0 + number, "import CPU ms": 45.0 + number}
        for size in SIZES:
            prefix = size_label(size)
            figures.update({f"{prefix} produce records/s": 1000.0 * number, f"{prefix} produce MB/s": 10.0 * number,
                            f"{prefix} produce CPU s/GB": 5.0 / number, f"{prefix} consume MB/s": 20.0 * number,
                            f"{prefix} consume CPU s/GB": 3.0 / number})
        rounds[name] = [figures]
    rounds["aiokafka"][0]["10 KiB consume MB/s"] = "timed out"  # a figure a client could not give: n/a
    return rounds


def document(benches: dict[str, dict]) -> dict:
    return {"date": "2026-11-28T10:30:00+00:00", "profile": "make",
            "git": {"commit": "fedcba9876543210fedcba9876543210fedcba98", "branch": "main", "changed": False},
            "machine": {"cpus": 2, "memory GiB": 7.8, "platform": "Linux", "python": "3.11.2"},
            "benches": {name: {"argv": [], "load before": [0.5, 0.4, 0.3], "summary": summary, "seconds": 60.0,
                               "load after": [0.9, 0.5, 0.3]} for name, summary in benches.items()}}


def sample() -> dict:
    share = summarise({peer: [{"1 member(s) 1p records/s": 850.0 * factor, "16 member(s) 6p records/s": 6000.0 * factor,
                               "e2e p50 ms": 0.8, "e2e p99 ms": 1.5 * factor, "load (1 min)": 0.4}]
                       for peer, factor in (("weir", 1.0), ("kafka", 1.1))}, "share")
    spark = summarise({"weir": [{"source rows/s": 145_000.0, "sink rows/s": 173_000.0}],
                       "spark-kafka": [{"source rows/s": 273_000.0, "sink rows/s": 145_000.0}]}, "spark")
    return document({"client": summarise(client_rounds(), "clients"), "share": share, "spark": spark})


def svg_text(path: Path) -> str:
    return "".join(ET.parse(path).getroot().itertext())  # well-formed SVG whose labels are text


def test_the_client_chart_has_a_panel_per_figure_and_a_bar_group_per_size():
    summary = sample()["benches"]["client"]["summary"]
    panels = charts.client_panels(summary)
    assert [panel.title for panel in panels] == [
        "produce MB/s (higher is better)", "produce client CPU s/GB (lower is better)",
        "consume MB/s (higher is better)", "consume client CPU s/GB (lower is better)",
        "import ms of the client's module (lower is better)"]
    assert [panel.labels for panel in panels] == [["100 B", "1 KiB", "10 KiB"]] * 4 + [["wall", "CPU"]]
    assert panels[2].metrics == ["100 B consume MB/s", "1 KiB consume MB/s", "10 KiB consume MB/s"]
    assert all(panel.log for panel in panels[:4]) and not panels[4].log
    assert summary["medians"]["aiokafka"]["10 KiB consume MB/s"] is None  # drawn as n/a


def test_share_panels_are_cases_then_latency():
    panels = charts.share_panels(sample()["benches"]["share"]["summary"])
    assert [panel.labels for panel in panels] == [["1 on 1p", "16 on 6p"], ["p50", "p99"]]
    assert panels[1].metrics == ["e2e p50 ms", "e2e p99 ms"]  # the load figure is not charted
    assert panels[1].log and not panels[0].log


def test_the_new_charts_are_drawn_with_every_contender_label_and_caption(tmp_path):
    results = sample()
    json.dumps(results, allow_nan=False)  # what report.write needs
    drawn = charts.draw(results, tmp_path)
    assert sorted(path.name for path in drawn) == ["client.svg", "share.svg", "spark.svg"]
    client = svg_text(tmp_path / "client.svg")
    for expected in (*CLIENTS, "100 B", "1 KiB", "10 KiB", "produce MB/s", "consume client CPU s/GB", "import ms",
                     "n/a", "profile make", "commit fedcba9876", "load 0.5-0.9"):
        assert expected in client, expected
    share = svg_text(tmp_path / "share.svg")
    for expected in ("weir", "kafka", "16 on 6p", "p99", "end-to-end ms", "commit fedcba9876"):
        assert expected in share, expected
    spark = svg_text(tmp_path / "spark.svg")
    for expected in ("weir", "spark-kafka", "source", "sink", "rows/s", "commit fedcba9876"):
        assert expected in spark, expected
    assert "n/a" not in spark and "n/a" not in share  # every figure of those was given


def test_a_client_document_without_the_import_figure_draws_the_client_figures_alone(tmp_path):
    rounds = client_rounds()
    for figures in (runs[0] for runs in rounds.values()):
        del figures["import wall ms"], figures["import CPU ms"]
    panels = charts.client_panels(summarise(rounds, "clients"))
    assert len(panels) == 4 and not any("import" in panel.title for panel in panels)
    assert [path.name for path in charts.draw(document({"client": summarise(rounds, "c")}), tmp_path)] == ["client.svg"]
