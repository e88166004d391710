"""bench/report.py and bench/charts.py without a broker: figures summarised, a results document
written, and charts drawn from a small sample (tests/bench/sample_results.json)."""

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

from bench import charts, report
from bench.throughput import summarise

SAMPLE = Path(__file__).with_name("sample_results.json")


def test_summarise_takes_medians_and_keeps_why_a_figure_is_missing():
    rounds = {"weir": [{"produce MB/s": 100.0, "start-up s": 2.0}, {"produce MB/s": 300.0, "start-up s": 1.0},
                       {"produce MB/s": 200.0, "start-up s": math.nan}],
              "tansu": [{"produce MB/s": 50.0, "start-up s": "memory storage: nothing to load"}]}
    summary = summarise(rounds, "sample")
    assert summary["medians"]["weir"] == {"produce MB/s": 200.0, "start-up s": 1.5}
    assert summary["spread"]["weir"]["produce MB/s"] == 1.0  # (300 - 100) / 200
    assert summary["medians"]["tansu"]["start-up s"] is None
    assert summary["notes"] == {"tansu": {"start-up s": "memory storage: nothing to load"}}
    assert summary["better"] == {"produce MB/s": "higher", "start-up s": "lower"}
    assert summary["rounds"] == 3
    json.dumps(summary, allow_nan=False)  # what report.write needs


def test_write_names_the_file_by_date(tmp_path):
    document = json.loads(SAMPLE.read_text())
    path = report.write(document, tmp_path / "results")
    assert path.name == f"{document['date'][:10]}.json"
    assert json.loads(path.read_text()) == document


def test_charts_of_the_sample_show_every_peer_and_figure(tmp_path):
    document = json.loads(SAMPLE.read_text())
    drawn = charts.draw(document, tmp_path)
    assert sorted(path.name for path in drawn) == ["fetch.svg", "latency.svg", "scale.svg", "throughput.svg"]
    for path in drawn:
        text = "".join(ET.parse(path).getroot().itertext())  # well-formed SVG whose labels are text
        for peer in ("weir", "tansu", "kafka"):
            assert peer in text, (path.name, peer)
        assert document["git"]["commit"][:10] in text
    scale_text = "".join(ET.parse(tmp_path / "scale.svg").getroot().itertext())
    assert "partitions: start-up s" in scale_text
    assert "n/a" in scale_text  # Tansu's start-up with partitions is n/a in the sample
    assert "1k rps p99" in "".join(ET.parse(tmp_path / "latency.svg").getroot().itertext())


def test_a_document_without_a_bench_draws_only_what_it_has(tmp_path):
    document = json.loads(SAMPLE.read_text())
    document["benches"] = {"scale": document["benches"]["scale"], "fetch": {"argv": [], "error": "RuntimeError: x"}}
    assert [path.name for path in charts.draw(document, tmp_path)] == ["scale.svg"]
