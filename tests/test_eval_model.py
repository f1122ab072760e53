"""Smoke test of a real evaluation with the embedded model: one pair, one turn each, the judge,
the report and the plots. Kept short for CI on 2 cores.

What the 0.5B model writes is not asserted (its verdict may be unusable, its specification
may fail validation); what ima does with it is: token counts are llama.cpp's own, a run ends
as a one-turn run may end, a verdict is scored or recorded as failed with its attempts, and
the report shows exactly the numbers the stored rows have. The task is the data pipeline with
two components and one estimate, so each write-up is a dozen calls, not forty.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import md_table, task_file
from typer.testing import CliRunner

from ima.cli.app import app
from ima.evals.judge import MAX_ATTEMPTS, METRICS
from ima.meeting.design.document import Design
from ima.meeting.design.parts import requirement_parts
from ima.tasks import load_task

pytestmark = pytest.mark.model


def tokens(usage: dict) -> int:
    return usage["input_tokens"] + usage["output_tokens"]


def two_components(data: dict) -> None:
    """The data-pipeline task's design cut to two components and one estimate."""
    design = data["design"]
    design["components"] = design["components"][:2]
    design["estimates"] = [e for e in design["estimates"] if e["id"] == "network"]
    design["cost_lines"] = ["Network"]


def test_embedded_eval_smoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xllamacpp")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IMA_DB", raising=False)
    out = tmp_path / "ev"
    path = task_file(tmp_path, two_components)
    task = load_task(str(path))
    args = ["--model", "embedded", "--task", str(path), "--pairs", "1", "--turn-cap", "1"]
    result = CliRunner().invoke(app, ["eval", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output

    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["condition"]["memory_mode"] for r in rows) == ["intrinsic", "none"]
    for row in rows:
        # one turn, then the write-up: a one-turn run cannot reach consensus
        assert row["turns"] == 1
        assert row["status"] == "turn_cap"
        assert row["design_checks"] is not None  # a structured design, its open parts named
        # every part is grammar-constrained JSON, so the design validates
        Design.model_validate_json((Path(row["out_dir"]) / "design.json").read_text())
        kinds = row["usage"]["by_kind"]
        assert kinds["agent_turn"]["calls"] == 1
        assert kinds.get("memory_update", {}).get("calls", 0) == (
            1 if row["condition"]["memory_mode"] == "intrinsic" else 0
        )
        # a call per component, estimate, cost line, the plan and the summary, and a how
        # per part of each requirement a usable component meets; each asked twice at most
        plan = task.design_plan
        parts = len(plan.components) + len(plan.estimates) + len(plan.cost_lines) + 2
        met = {rid for component in plan.components for rid in component.meets}
        hows = sum(len(requirement_parts(task, rid)) for rid in met)
        assert len(plan.components) + 4 <= kinds["documentation"]["calls"] <= 2 * (parts + hows)
        # every count is llama.cpp's own, none a tiktoken estimate
        assert row["usage"]["total"]["estimated_calls"] == 0
        assert all(k["estimated_calls"] == 0 and k["input_tokens"] > 0 for k in kinds.values())

        coverage = row["coverage"]
        assert coverage["checked"] == len(task.requirements)
        assert coverage["score"] == len(coverage["covered"]) / len(task.requirements)

        verdict = row["judge"]
        if not (Path(row["out_dir"]) / "design.md").read_text().strip():
            assert verdict["status"] == "failed" and verdict["attempts"] == 0  # nothing to judge
            continue
        assert verdict["usage"]["calls"] == verdict["attempts"]
        assert verdict["usage"]["estimated_calls"] == 0
        if verdict["status"] == "ok":  # scored: every criterion, from the last attempt
            assert set(verdict["scores"]) == set(METRICS)
            assert 1 <= verdict["attempts"] <= MAX_ATTEMPTS
        else:  # never a silent score: every attempt was used and each answer is kept
            assert verdict["status"] == "failed" and verdict["scores"] == {}
            assert verdict["attempts"] == MAX_ATTEMPTS == len(verdict["answers"])
            assert verdict["error"]

    report = (out / "report.md").read_text()
    runs = md_table(report, "Thread")
    for row in rows:
        shown = runs[f"`{row['thread_id']}`"]
        assert shown["Status"] == row["status"] and shown["Turns"] == "1"
        assert shown["Tokens"] == f"{tokens(row['usage']['total']):,}"
        if row["judge"]["status"] == "ok":
            scores = "/".join(str(row["judge"]["scores"][m]) for m in METRICS)
            assert shown["Judge S/R/U/C/D"].removesuffix(" ⚠") == scores
        else:
            assert shown["Judge S/R/U/C/D"] == f"failed ({row['judge']['attempts']} attempts)"
    failed = {
        mode: sum(
            r["judge"]["status"] != "ok" for r in rows if r["condition"]["memory_mode"] == mode
        )
        for mode in ("none", "intrinsic")
    }
    assert (
        f"Failed judge verdicts (excluded from the judge rows): baseline {failed['none']}, "
        f"intrinsic {failed['intrinsic']}." in report
    )
    by_mode = {r["condition"]["memory_mode"]: tokens(r["usage"]["total"]) for r in rows}
    ratio = by_mode["intrinsic"] / by_mode["none"]
    assert f"**Token ratio intrinsic/baseline: {ratio:.2f} ({(ratio - 1) * 100:+.0f}%)**" in report
    assert (out / "objective.png").stat().st_size > 0
    judged = any(r["judge"]["status"] == "ok" for r in rows)
    assert (out / "judge_scores.png").exists() == judged
