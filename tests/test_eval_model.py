"""A small real evaluation with the embedded model: one pair, a low turn cap, the report
and the plots. Kept short for CI on 2 cores (model calls stop at 400 tokens)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ima.evals.cli import eval_command
from ima.evals.judge import METRICS

pytestmark = pytest.mark.model


def test_embedded_eval_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xllamacpp")
    monkeypatch.chdir(tmp_path)
    app = typer.Typer()
    app.command("eval")(eval_command)
    app.command("noop")(lambda: None)
    out = tmp_path / "ev"
    result = CliRunner().invoke(
        app,
        ["eval", "--model", "embedded", "--pairs", "1", "--turn-cap", "1", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output

    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["condition"]["memory_mode"] for r in rows) == ["intrinsic", "none"]
    for row in rows:
        assert row["status"] in ("finalized", "turn_cap", "failed")
        total = row["usage"]["total"]
        assert total["input_tokens"] > 0 and total["estimated_calls"] == 0  # llama.cpp counts
        assert 0 <= row["coverage"]["score"] <= 1
        verdict = row["judge"]
        assert verdict["status"] in ("ok", "failed")  # never a silent score
        if verdict["status"] == "ok":
            assert all(1 <= verdict["scores"][m] <= 10 for m in METRICS)
        else:
            assert verdict["attempts"] == 3 and verdict["error"]
    assert "Token ratio intrinsic/baseline" in (out / "report.md").read_text()
    assert (out / "objective.png").stat().st_size > 0
    judged = any(r["judge"]["status"] == "ok" for r in rows)
    assert (out / "judge_scores.png").exists() == judged
