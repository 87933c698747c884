"""Chart and search helpers, no app needed."""
from datetime import date, datetime, timezone

from gpu_troubleshooter.web.charts import daily_counts, stacked_bars
from gpu_troubleshooter.web.kbview import search


def test_daily_counts_bucket_and_other():
    start = date(2024, 1, 1)
    rows = [(datetime(2024, 1, 2, 5, tzinfo=timezone.utc), f"c{i}") for i in range(10)]
    rows.append((datetime(2024, 1, 2, 6), ""))  # naive = UTC (SQLite)
    dates, series, totals = daily_counts(rows, start, 3)
    assert len(dates) == 3 and "other" in series and len(series) == 8
    assert sum(totals.values()) == 11


def test_svg_escapes_names():
    svg = stacked_bars("t", [date(2024, 1, 1)], {"<b>": [1]})
    assert "<b>" not in svg and "&lt;b&gt;" in svg and svg.startswith("<svg")


def test_search_ranks_typo():
    entries = [{"id": "cuda-oom", "title": "The GPU ran out of memory", "summary": "",
                "phrases": ["CUDA out of memory. Tried to allocate"], "tags": ["pytorch"], "fixes": []},
               {"id": "nccl", "title": "NCCL failed", "summary": "", "phrases": ["NCCL error"], "tags": [], "fixes": []}]
    found = search(entries, "cuda out of memmory")
    assert found[0][1]["id"] == "cuda-oom"
    assert all(d["id"] != "nccl" for _, d in found)
