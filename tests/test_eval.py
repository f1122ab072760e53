"""`ima eval` end to end with the scripted model: runs, judge, store, resume, report, plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import md_table
from typer.testing import CliRunner

from ima.cli.errors import Interrupted
from ima.core.errors import UserError
from ima.evals import runner as eval_runner
from ima.evals.judge import METRICS
from ima.evals.store import ResultsStore
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def ima_eval(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """`ima eval ARGS` in-process, as the `ima` app would run it; returns the result."""
    monkeypatch.chdir(tmp_path)  # no ./ima.toml from elsewhere
    monkeypatch.setenv("COLUMNS", "160")
    for name in ("IMA_MODEL", "IMA_TEMPLATE", "IMA_TOKEN_BUDGET", "IMA_TURN_CAP", "IMA_REVIEW"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("IMA_DB", raising=False)
    from ima.cli.app import app

    def run(*args: str):
        return CliRunner().invoke(app, ["eval", *args])

    return run


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def tokens_of(usage: dict) -> int:
    return usage["input_tokens"] + usage["output_tokens"]


def test_two_pair_eval_writes_store_report_and_plots(ima_eval, tmp_path, task):
    out = tmp_path / "ev"
    result = ima_eval("--model", "scripted", "--pairs", "2", "--turn-cap", "8", "--out", str(out))
    assert result.exit_code == 0, result.output

    stored = rows(out)
    assert sorted(r["key"] for r in stored) == [
        "intrinsic/generic/b2048/s0",
        "intrinsic/generic/b2048/s1",
        "none/b2048/s0",
        "none/b2048/s1",
    ]
    for row in stored:
        assert row["status"] == "turn_cap" and row["turns"] == 8
        assert row["settings"].get("long_term", False) is False  # runs stay independent
        assert row["settings"].get("review", False) is False
        assert row["judge"]["status"] == "ok" and row["judge"]["attempts"] == 1
        assert set(row["judge"]["scores"]) == set(METRICS)
        assert all(row["judge"]["rationales"][m] for m in METRICS)
        assert row["judge"]["usage"]["calls"] == 1  # accounted, kind "judge"
        coverage = row["coverage"]
        assert coverage["checked"] == len(task.requirements)
        assert coverage["score"] == len(coverage["covered"]) / coverage["checked"]
        run_dir = Path(row["out_dir"])  # the row holds the run's own record and verdict
        run_record = json.loads((run_dir / "run.json").read_text())
        assert run_record["usage"]["total"] == row["usage"]["total"]
        assert (
            json.loads((run_dir / "judge.json").read_text())["judge"]["scores"]
            == (row["judge"]["scores"])
        )
        kinds = set(row["usage"]["by_kind"])
        assert ("memory_update" in kinds) == (row["condition"]["memory_mode"] == "intrinsic")
        in_view = row["content"]["in_view"]  # both systems: memory and turns, or turns alone
        assert in_view == run_record["in_view_last_turn"] and in_view["mean"] is not None

    config = json.loads((out / "config.json").read_text())
    assert config["judge"]["model"] == "scripted" and config["settings"]["turn_cap"] == 8
    report = (out / "report.md").read_text()
    for text in (
        "Token ratio intrinsic/baseline",
        "p (rank-sum)",
        "Requirement coverage, evidence (%)",
        "Own items in view at the last turn (%)",
        "Memory retention of own items at the end (%)",
        "Cost-effectiveness",
        "data-pipeline-intrinsic-generic-b2048-s1",
        "| turn_cap |",
        "![Judge scores",
    ):
        assert text in report
    # the report shows the numbers the stored rows have
    runs = md_table(report, "Thread")
    for row in stored:
        shown = runs[f"`{row['thread_id']}`"]
        assert shown["Status"] == row["status"] and shown["Turns"] == str(row["turns"])
        assert shown["Tokens"] == f"{tokens_of(row['usage']['total']):,}"
        assert shown["Coverage"] == f"{len(row['coverage']['covered'])}/{len(task.requirements)}"
        assert shown["Judge S/R/U/C/D"] == "/".join(str(row["judge"]["scores"][m]) for m in METRICS)
    table = md_table(report, "Metric")
    for mode, column in (("none", "Baseline mean"), ("intrinsic", "Intrinsic mean")):
        mine = [r for r in stored if r["condition"]["memory_mode"] == mode]
        tokens = [tokens_of(r["usage"]["total"]) for r in mine]
        assert table["Tokens (total)"][column] == f"{sum(tokens) / len(tokens):,.0f}"
        means = [sum(r["judge"]["scores"].values()) / len(METRICS) for r in mine]
        assert table["Judge mean"][column] == f"{sum(means) / len(means):,.2f}"
    assert f"judge {sum(tokens_of(r['judge']['usage']) for r in stored):,} tokens" in report
    for png in ("judge_scores.png", "objective.png"):
        assert (out / png).read_bytes().startswith(PNG)
    for row in stored:  # every run links to its own HTML page
        link = f"(runs/{row['thread_id']}/view.html)"
        assert link in report and (out / link[1:-1]).read_text().startswith("<!doctype html>")
    assert "Intrinsic memory vs baseline" in result.output  # the terminal table
    assert "Judge mean" in result.output


def test_report_only_reanalyses_without_running(ima_eval, tmp_path, monkeypatch):
    out = tmp_path / "ev"
    assert (
        ima_eval(
            "--model", "scripted", "--pairs", "2", "--turn-cap", "4", "--out", str(out)
        ).exit_code
        == 0
    )
    (out / "report.md").unlink()
    (out / "judge_scores.png").unlink()
    older = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for row in older:  # stored before "in view at the last turn" existed
        del row["content"]["in_view"]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in older))

    def no_runs(*args, **kwargs):
        raise AssertionError("--report-only must not run anything")

    monkeypatch.setattr(eval_runner, "execute", no_runs)
    monkeypatch.setattr(eval_runner, "create_run", no_runs)
    monkeypatch.setattr(eval_runner, "judge_design", no_runs)
    result = ima_eval("--report-only", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "report.md").exists() and (out / "judge_scores.png").exists()
    in_view = md_table((out / "report.md").read_text(), "Metric")[
        "Own items in view at the last turn (%)"
    ]
    assert in_view["n (B/I)"] == "2/2"  # measured again from the runs' checkpoints
    from ima.cli import evaluate

    monkeypatch.setattr(evaluate.console, "width", 60)  # a narrow terminal wraps, never cuts
    narrow = ima_eval("--report-only", str(out)).output
    assert "Judge" in narrow and "…" not in narrow

    missing = ima_eval("--report-only", str(tmp_path / "nothing"))
    assert isinstance(missing.exception, UserError)


def test_interrupted_eval_reruns_only_the_missing_runs(ima_eval, tmp_path, monkeypatch):
    """Ctrl-C in the 4th run (mid-conversation): 3 runs are stored; the next invocation
    resumes the interrupted thread from its checkpoint and runs nothing else again."""
    out = tmp_path / "ev"
    args = ("--model", "scripted", "--pairs", "2", "--turn-cap", "8", "--out", str(out))
    real_execute = eval_runner.execute
    calls: list[str] = []

    def interrupting(record, db, listener=None, **kwargs):
        calls.append(record.thread_id)
        if len(calls) < 4:
            return real_execute(record, db, listener, **kwargs)

        def stop_at_turn_5(node, update):
            if any(t["index"] >= 5 for t in update.get("transcript", [])):
                raise KeyboardInterrupt

        return real_execute(record, db, stop_at_turn_5, **kwargs)

    monkeypatch.setattr(eval_runner, "execute", interrupting)
    first = ima_eval(*args)
    # `ima` prints this line and exits 130 (tests/test_interrupts.py runs the real program)
    assert isinstance(first.exception, Interrupted), first.output
    assert str(first.exception).startswith("interrupted: 3 runs are stored in ")
    assert len(rows(out)) == 3
    interrupted = calls[3]
    registry = RunRegistry(out / "ima.sqlite")
    record = registry.get(interrupted)
    registry.close()
    assert record.status == "interrupted"
    assert len(load_state(record, out / "ima.sqlite")["transcript"]) == 5

    calls.clear()
    monkeypatch.setattr(
        eval_runner,
        "execute",
        lambda *a, **k: (calls.append(a[0].thread_id), real_execute(*a, **k))[1],
    )
    second = ima_eval(*args)
    assert second.exit_code == 0, second.output
    assert calls == [interrupted]  # only the missing run, resumed
    assert "resuming: 3 of 4 runs already stored" in second.output
    stored = rows(out)
    assert len(stored) == 4 and len({r["key"] for r in stored}) == 4
    registry = RunRegistry(out / "ima.sqlite")
    transcript = load_state(registry.get(interrupted), out / "ima.sqlite")["transcript"]
    registry.close()
    assert [t["index"] for t in transcript] == list(range(1, 9))  # continued, not restarted

    calls.clear()
    third = ima_eval(*args)  # everything stored: nothing runs, the report is rewritten
    assert third.exit_code == 0 and calls == []


def test_a_run_whose_judging_crashed_is_judged_on_resume_without_rerunning(
    ima_eval, tmp_path, monkeypatch
):
    out = tmp_path / "ev"
    args = ("--model", "scripted", "--pairs", "1", "--turn-cap", "4", "--out", str(out))
    real_judge = eval_runner.judge_design

    def crash(*a, **k):
        raise RuntimeError("judge server went away")

    monkeypatch.setattr(eval_runner, "judge_design", crash)
    first = ima_eval(*args)
    assert first.exit_code == 1
    assert "judge server went away" in first.output
    assert not (out / "results.jsonl").exists()

    monkeypatch.setattr(eval_runner, "judge_design", real_judge)
    executed = []
    monkeypatch.setattr(eval_runner, "execute", lambda *a, **k: executed.append(a))
    second = ima_eval(*args)
    assert second.exit_code == 0, second.output
    assert executed == []  # both runs had finished: judged from their stored outputs
    assert len(rows(out)) == 2


def test_unparseable_verdicts_are_counted_and_excluded(ima_eval, tmp_path):
    out = tmp_path / "ev"
    result = ima_eval(  # a judge whose every answer is unusable
        "--model", "scripted", "--judge-model", "scripted:bad_judge=99", "--pairs", "1",
        "--turn-cap", "4", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for row in rows(out):
        assert row["judge"]["status"] == "failed"
        assert row["judge"]["attempts"] == 3 and row["judge"]["scores"] == {}
        assert row["judge"]["usage"]["calls"] == 3
        assert "no JSON object found" in row["judge"]["error"]
    report = (out / "report.md").read_text()
    assert "Failed judge verdicts (excluded from the judge rows): baseline 1, intrinsic 1" in report
    assert "| Scalability | n/a | n/a | n/a | n/a | n/a | n/a | 0/0 | n/a |" in report
    assert not (out / "judge_scores.png").exists()  # nothing to plot
    assert (out / "objective.png").exists()


def test_template_and_budget_ablation(ima_eval, tmp_path):
    out = tmp_path / "ev"
    result = ima_eval(
        "--model", "scripted", "--pairs", "1", "--turn-cap", "4", "--out", str(out),
        "--templates", "generic,manual", "--budgets", "2048,3000",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    keys = sorted(r["key"] for r in rows(out))
    assert keys == [
        "intrinsic/generic/b2048/s0",
        "intrinsic/generic/b3000/s0",
        "intrinsic/manual/b2048/s0",
        "intrinsic/manual/b3000/s0",
        "none/b2048/s0",
        "none/b3000/s0",
    ]  # one baseline per budget: it keeps no memory, so no template
    manual = next(r for r in rows(out) if r["key"] == "intrinsic/manual/b3000/s0")
    assert manual["settings"]["template"] == "manual" and manual["settings"]["token_budget"] == 3000
    report = (out / "report.md").read_text()
    assert "## Ablation: templates and budgets" in report
    assert "## Results: template manual · budget 3000" in report
    for png in ("ablation.png", "judge_scores-manual-b3000.png", "objective-generic-b2048.png"):
        assert (out / png).read_bytes().startswith(PNG)


def test_resuming_with_other_settings_is_refused(ima_eval, tmp_path):
    out = tmp_path / "ev"
    base = ("--pairs", "1", "--turn-cap", "4", "--out", str(out))
    assert ima_eval("--model", "scripted", *base).exit_code == 0
    other = ima_eval("--model", "scripted:delay=0", *base)
    assert isinstance(other.exception, UserError)
    assert "other settings" in str(other.exception) and "model" in str(other.exception)
    # more pairs with the same settings extends the evaluation
    more = ima_eval("--model", "scripted", "--pairs", "2", "--turn-cap", "4", "--out", str(out))
    assert more.exit_code == 0 and len(rows(out)) == 4


@pytest.mark.parametrize(
    "args, message",
    [
        (("--template", "fancy"), "template='fancy' is invalid"),
        (("--budget", "ten"), "bad budget list"),
        (("--budget", "10"), "token budget 10 is smaller"),
        (("--pairs", "0"), "at least 1"),
        (("--judge-model", "nonsense"), "unknown model spec"),
    ],
)
def test_bad_settings_fail_before_any_run(ima_eval, tmp_path, args, message):
    out = tmp_path / "ev"
    result = ima_eval("--model", "scripted", "--out", str(out), *args)
    assert isinstance(result.exception, UserError), result.output
    assert message in str(result.exception)
    assert not (out / "results.jsonl").exists() and not (out / "config.json").exists()


def test_llm_coverage_is_reported_beside_the_evidence_check(ima_eval, tmp_path, task):
    out = tmp_path / "ev"
    args = ("--model", "scripted", "--pairs", "1", "--turn-cap", "4", "--out", str(out))
    assert ima_eval(*args, "--llm-coverage").exit_code == 0
    requirements = [r.id for r in task.requirements]
    for row in rows(out):
        checked = row["coverage_llm"]
        assert list(checked["details"]) == requirements
        assert checked["usage"]["calls"] == len(requirements) == checked["checked"]
    report = (out / "report.md").read_text()
    assert "Requirement coverage, LLM check (%)" in report and "Intrinsic (LLM)" in report


def test_store_ignores_a_torn_last_line_and_appends_after_it(tmp_path):
    store = ResultsStore(tmp_path)
    store.append({"key": "a", "n": 1})
    with store.path.open("a") as f:
        f.write('{"key": "b", "n"')  # the process died mid-write
    assert [r["key"] for r in store.load()] == ["a"] and store.skipped_lines == 1
    store.append({"key": "c", "n": 3})
    assert [r["key"] for r in store.load()] == ["a", "c"]
    store.append({"key": "a", "n": 4})  # a repeated key: the latest line wins
    assert {r["key"]: r["n"] for r in store.load()} == {"a": 4, "c": 3}
