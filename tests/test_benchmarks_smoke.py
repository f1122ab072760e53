"""The benchmark suite runs end to end in quick mode and prints every figure.

Nothing timing-based is asserted: the targets are the benchmark's PASS/FAIL lines.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

FIGURES = (
    "1. Framework time per turn",
    "2. Checkpoint database after N turns",
    "3. Context construction per call",
    "4. Peak memory of a run",
    "5. Prompt tokens per run",
    "6. 4 `ima run` processes at once on one SQLite file",
    "7. Memory formation on a server",
)


def test_quick_benchmark_prints_every_figure_and_verdict(tmp_path):
    figures = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--json", str(figures)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    for title in FIGURES:
        assert title in out, f"missing figure {title!r}"
    verdicts = re.findall(r"^(PASS|FAIL) (.+)$", out, re.M)
    assert len(verdicts) == 8, out
    assert re.search(r"\d+ of 8 targets pass", out)
    assert "naive" in out

    data = json.loads(figures.read_text())
    assert data["sizes"] == [50, 200]
    assert {(r["variant"], r["turns"]) for r in data["runs"]} == {
        (v, n) for v in ("ours", "naive") for n in (50, 200)
    }
    assert all(r["status"] == "turn_cap" for r in data["runs"])
    assert [r["history"] for r in data["context"]] == [100, 1000, 10000]
    assert len(data["concurrency"]["shared"]["results"]) == 4
