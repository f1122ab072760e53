"""Smoke test of the benchmark suite: quick mode runs end to end, and what it prints is what
it measured. Each PASS/FAIL line must state the figure the measured rows give and agree with
its own target; the tables must show the rows' numbers. Whether a timing target passes on a
busy machine is not asserted; the deterministic guarantees (same transcript in both graphs,
every prompt within the budget, no 'database is locked') are.
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


def figure(pattern: str, text: str) -> list[float]:
    """The numbers a verdict line states, in order (thousands separators dropped)."""
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in {text!r}"
    return [float(g.replace(",", "")) for g in found.groups()]


def table_rows(out: str, title: str) -> dict[str, list[str]]:
    """The body rows of the printed table whose title starts with `title`, by first cell."""
    section = out[out.index(title) :]
    body = section[section.index("┡") : section.index("└")]
    rows = [[c.strip() for c in line.strip("│ ").split("│")] for line in body.splitlines()[1:]]
    return {row[0]: row[1:] for row in rows}


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    figures = tmp_path_factory.mktemp("bench") / "figures.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--json", str(figures)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, json.loads(figures.read_text())


def test_benchmark_smoke_prints_every_figure_and_one_verdict_per_target(benchmark):
    out, data = benchmark
    for title in FIGURES:
        assert title in out, f"missing figure {title!r}"
    verdicts = data["verdicts"]
    assert len(verdicts) == 8  # same transcripts; figures 1, 3, 5, 6, 7 one each; figure 2 two
    flat = " ".join(out.split())  # the console wraps long lines
    for v in verdicts:
        assert f"{'PASS' if v['pass'] else 'FAIL'} {' '.join(v['text'].split())}" in flat
    assert len(re.findall(r"^(?:PASS|FAIL) ", out, re.M)) == len(verdicts)
    passed = sum(v["pass"] for v in verdicts)
    assert f"{passed} of {len(verdicts)} targets pass" in out

    assert data["sizes"] == [50, 200]
    assert {(r["variant"], r["turns"]) for r in data["runs"]} == {
        (v, n) for v in ("ours", "naive") for n in (50, 200)
    }
    assert all(r["status"] == "turn_cap" for r in data["runs"])
    assert [r["history"] for r in data["context"]] == [100, 1000, 10000]
    assert len(data["concurrency"]["shared"]["results"]) == 4


def test_benchmark_smoke_verdicts_state_the_measured_figures(benchmark):
    _, data = benchmark
    runs = {(r["variant"], r["turns"]): r for r in data["runs"]}
    small, large = data["sizes"]
    ours, ours_small = runs[("ours", large)], runs[("ours", small)]
    text = [v["text"] for v in data["verdicts"]]
    passed = [v["pass"] for v in data["verdicts"]]

    # Deterministic guarantees: these must pass on any machine.
    same = all(runs[("ours", n)]["transcript_sha1"] == runs[("naive", n)]["transcript_sha1"]
               for n in data["sizes"])  # fmt: skip
    assert same and passed[0]
    assert all(r["max_prompt_tokens"] <= r["budget"] for r in data["runs"])
    shared = data["concurrency"]["shared"]
    assert shared["all_finished"] and not shared["locked"]
    assert all(r["returncode"] == 0 for r in shared["results"])

    # 1. time per turn: CPU median over the last turns, largest run against the smallest
    growth, last_ms, first_ms, target = figure(
        r"is ([\d.]+)x the time at \d+ turns: ([\d.]+) vs ([\d.]+) ms CPU \(target <= ([\d.]+)x",
        text[1],
    )
    ratio = ours["cpu_ms_median_last"] / ours_small["cpu_ms_median_last"]
    assert growth == round(ratio, 2) and last_ms == round(ours["cpu_ms_median_last"], 2)
    assert first_ms == round(ours_small["cpu_ms_median_last"], 2)
    assert passed[1] == (ratio <= target)

    # 2. checkpoint bytes on disk against the raw bytes, and bytes per turn
    factor, target = figure(r"is ([\d.]+)x the raw transcript.*\(target <= ([\d.]+)x", text[2])
    ratio = ours["db_bytes"] / ours["raw_bytes"]
    assert factor == round(ratio, 1) and passed[2] == (ratio <= target)
    per_turn, target = figure(r"are ([\d.]+)x those at \d+ \(target <= ([\d.]+)x", text[3])
    ratio = (ours["live_bytes"] / large) / (ours_small["live_bytes"] / small)
    assert per_turn == round(ratio, 2) and passed[3] == (ratio <= target)

    # 3. context construction: no growth with history, prompt within the budget
    growth, prompt, budget, target = figure(
        r"takes ([\d.]+)x .*\(([\d,]+) <= ([\d,]+)\) \(target <= ([\d.]+)x", text[4]
    )
    longest = data["context"][-1]
    assert growth == round(longest["ours_prompt_growth"], 2)
    assert prompt == longest["prompt_tokens"] <= budget
    assert passed[4] == (longest["ours_prompt_growth"] <= target)

    # 5. prompt tokens per turn, largest run against the smallest
    growth, target, largest, budget = figure(
        r"([\d.]+)x those at \d+ \(target <= ([\d.]+)x.*largest prompt ([\d,]+) <= budget ([\d,]+)",
        text[5],
    )
    ratio = (ours["prompt_tokens"] / large) / (ours_small["prompt_tokens"] / small)
    assert growth == round(ratio, 2) and largest == ours["max_prompt_tokens"]
    assert passed[5] == (ratio <= target and largest <= budget)

    # 6. concurrent runs on one database
    assert passed[6] == (shared["all_finished"] and not shared["locked"] and shared["overlapping"])

    # 7. memory formation beside the next turn against before it, on a server
    formation = data["memory_formation"]
    sequential, concurrent = formation["runs"]
    assert (sequential["concurrency"], concurrent["concurrency"]) == (1, 2)
    assert sequential["turns"] == concurrent["turns"]
    ratio, target = figure(r"([\d.]+)x the wall time per turn .*\(target <= ([\d.]+)\)", text[7])
    measured = concurrent["seconds_per_turn"] / sequential["seconds_per_turn"]
    assert ratio == round(measured, 2) and ratio == round(formation["ratio"], 2)
    assert passed[7] == (formation["ratio"] <= target)


def test_benchmark_smoke_tables_show_the_measured_rows(benchmark):
    out, data = benchmark
    runs = {(r["variant"], r["turns"]): r for r in data["runs"]}
    times = table_rows(out, "1. Framework time per turn")
    tokens = table_rows(out, "5. Prompt tokens per run")
    for n in data["sizes"]:
        ours, naive = runs[("ours", n)], runs[("naive", n)]
        assert times[f"{n:,}"][0] == f"{ours['cpu_ms_median_last']:.2f}"
        assert times[f"{n:,}"][3] == f"{naive['cpu_ms_median_last']:.2f}"
        row = tokens[f"{n:,}"]
        assert row[0] == f"{ours['prompt_tokens']:,}" and row[2] == f"{ours['max_prompt_tokens']:,}"
        assert row[3] == f"{ours['naive_prompt_tokens']:,}"
        # the naive figure is every prompt with the whole history: never less than ours
        assert ours["naive_prompt_tokens"] >= ours["prompt_tokens"]
    context = table_rows(out, "3. Context construction per call")
    for r in data["context"]:
        assert context[f"{r['history']:,}"][:3] == [
            f"{r['history_tokens']:,}",
            str(r["kept_turns"]),
            f"{r['prompt_tokens']:,}",
        ]


def test_embedded_run_compares_variants_on_their_own_code(tmp_path):
    """`benchmarks.embedded_run` (here on the scripted model): every variant runs in its own
    process, the "today" variant on the old commit's code, and each printed row is measured."""
    from benchmarks.embedded_run import KINDS, VARIANTS

    old = next(v.commit for v in VARIANTS if v.commit)
    known = subprocess.run(["git", "cat-file", "-e", f"{old}^{{commit}}"], cwd=ROOT, check=False)
    names = [v.name for v in VARIANTS if not v.commit or known.returncode == 0]
    saved = tmp_path / "figures.json"
    options = ["--model", "scripted", "--turn-cap", "6", "--save", str(saved)]
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.embedded_run", *options, "--variants", ",".join(names)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = {f["variant"]: f for f in json.loads(saved.read_text())}
    assert list(figures) == names
    for variant in VARIANTS:
        if variant.name not in figures:
            continue
        shown = f"{variant.name}: {' '.join(variant.flags) or 'defaults'}, ima from "
        source = proc.stderr.split(shown, 1)[1].split("\n", 1)[0]
        assert (f"src-{variant.commit}" in source) == bool(variant.commit), source
        f = figures[variant.name]
        # a turn that says nothing new to its memory is not rewritten (IntrinsicMemory.is_news)
        assert f["turns"] == 6 and 1 <= f["memory_updates"] <= 6
        assert f["generated"] == sum(f[f"generated {k}"] for k in KINDS)
        assert f["stored_cut_off"] == 0 and f["retention_end"] is not None
    row = next(line for line in proc.stdout.splitlines() if line.startswith("memory updates"))
    counts = [str(figures[name]["memory_updates"]) for name in names]
    assert row.split()[2 : 2 + len(names)] == counts, row
