"""`ima bench pddl`: episodes run here or by workers, resumed after an interruption with
the same results, workers on a shared database, the report and its pages, and bad input
refused in one line. Scripted models only (the scripted walker reads the valid actions the
environment lists, so episodes are real and differ by seed); one short embedded-model test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest
from conftest import md_table

from ima.cli.app import run_command
from ima.evals.bench import episode as episode_module
from ima.evals.bench.bench import Bench
from ima.evals.bench.plan import BenchPlan
from ima.models.scripted import ScriptedChatModel
from ima.planning import SolverSettings
from ima.runs.database import open_database

PLAN = dict(
    env="pddl",
    model="scripted",
    arms=("none", "summary", "intrinsic-generic"),
    tasks=("blocksworld-02", "gripper-01"),
    seeds=2,
    settings=SolverSettings(step_limit=8, summary_every=3),
)
# What must not depend on how a benchmark was run (interrupted or not, where).
SAME = (
    "key",
    "arm",
    "task",
    "seed",
    "reward",
    "success",
    "steps",
    "valid_steps",
    "input_tokens",
    "output_tokens",
    "calls",
    "status",
)


def _essentials(rows: list[dict]) -> dict[str, dict]:
    out = {}
    for row in rows:
        steps = [
            {k: s[k] for k in ("agent", "action", "valid", "observation", "progress")}
            for s in row["episode"]["steps"]
        ]
        calls = {
            a: {k: (u["input_tokens"], u["output_tokens"], u["calls"]) for k, u in ks.items()}
            for a, ks in row["usage"].items()
        }
        out[row["key"]] = {
            **{k: row[k] for k in SAME},
            "trace": steps,
            "usage": calls,
            "memories": row["episode"]["memories"],
        }
    return out


def _run(directory: Path, notify=lambda kind, episode, detail: None) -> Bench:
    bench = Bench("pddl", directory)
    plan = BenchPlan(**PLAN)
    bench.prepare(plan)
    _, todo = bench.pending(plan)
    bench.run_here(todo, notify)
    return bench


class Interrupting(ScriptedChatModel):
    """The scripted model, with a Ctrl-C at the N-th call of the process."""

    calls_before_interrupt: int = 10**9

    def _generate(self, *args, **kwargs):
        Interrupting.count = getattr(Interrupting, "count", 0) + 1
        if Interrupting.count == self.calls_before_interrupt:
            raise KeyboardInterrupt
        return super()._generate(*args, **kwargs)


def test_an_interrupted_benchmark_resumes_to_the_same_results(tmp_path, monkeypatch):
    reference = _essentials(_run(tmp_path / "straight").rows())
    assert len(reference) == 12 and any(r["success"] for r in reference.values())

    def interrupting(plan):
        return lambda seed: Interrupting(
            seed=seed, temperature=plan.temperature, calls_before_interrupt=70
        )

    Interrupting.count = 0
    monkeypatch.setattr(episode_module, "plan_model", interrupting)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "stopped")
    bench = Bench("pddl", tmp_path / "stopped")
    stored = bench.rows()
    assert 0 < len(stored) < 12  # interrupted mid-benchmark, mid-episode
    monkeypatch.undo()
    resumed = _run(tmp_path / "stopped").rows()
    assert sum(r["resumed"] for r in resumed) == 1  # the episode cut short went on
    assert _essentials(resumed) == reference
    # the same command once more runs nothing and changes nothing
    again = _run(tmp_path / "stopped", notify=lambda kind, e, d: pytest.fail(f"ran {e.key}"))
    assert _essentials(again.rows()) == reference


def test_workers_on_a_shared_database_run_the_queued_episodes(tmp_path, cli, pg_url):
    db = open_database(pg_url)
    bench = Bench("pddl", Path("benchmarks/pddl-small"), db)
    plan = BenchPlan(**PLAN)
    bench.prepare(plan)
    counts = bench.enqueue(bench.pending(plan)[1])
    assert counts["queued"] == 12
    code, out, err = cli("worker", "--db", pg_url, "--until-done")  # a plain `ima worker`
    assert code == 0 and "done: 12 job(s), 0 failed" in out, out + err
    rows = bench.rows()
    assert _essentials(rows) == _essentials(_run(tmp_path / "local").rows())
    assert all(r["thread_id"].startswith("benchmarks-pddl-small--pddl-") for r in rows)
    # an ended episode keeps its last checkpoint only (its row holds every step)
    with psycopg.connect(pg_url) as conn:
        kept = dict(conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id"))
    assert len(kept) == 12 and set(kept.values()) == {1}
    # the report says what the job table holds
    made = bench.report()
    assert made["jobs"]["counts"]["done"] == 12 and made["jobs"]["failures"] == []
    assert "From the job table: 12 done, 0 queued" in made["report"].read_text()


def _cli(*args: str) -> int:
    return run_command(["bench", "pddl", "--model", "scripted", *args])


def test_the_command_runs_reports_and_continues(tmp_path, capsys):
    out = tmp_path / "bench"
    args = [
        "--problems",
        "blocksworld-02,gripper-01",
        "--arms",
        "none,intrinsic-generic",
        "--seeds",
        "2",
        "--step-limit",
        "6",
        "--out",
        str(out),
    ]
    assert _cli(*args) == 0
    printed = capsys.readouterr().out
    assert "8 episodes" in printed and "report:" in printed and "Gemma3 12B" in printed
    report = (out / "report.md").read_text()
    assert re.search(r"^\| none \| 4 \| 2 \| \d\.\d{3} \| \d\.\d{3} \|", report, re.M)
    assert (
        "| Gemma3 12B | intrinsic memory, generic template | 0.260 | intrinsic-generic |" in report
    )
    assert (out / "pddl_reward.png").stat().st_size > 10_000
    oracle = md_table(report, "arm")["oracle"]  # the optimal plans, replayed
    assert (oracle["episodes"], oracle["reward"], oracle["success"]) == ("2", "1.000", "100%")
    assert md_table(report, "task")["blocksworld-02"]["oracle"] == "1.00 · 2 steps"
    pages = sorted((out / "episodes").glob("*.html"))
    assert len(pages) == 8
    link = re.search(r"\[s0\]\((episodes/[^)]*intrinsic-generic[^)]*)\)", report).group(1)
    page = (out / link).read_text()
    assert "Step by step" in page and "check valid actions" in page and "memory v1" in page
    assert "Content-Security-Policy" in page and "<script" not in page
    # the same command again: everything is stored, nothing runs
    assert _cli(*args) == 0
    assert "continuing: 8 of 8 episodes already stored" in capsys.readouterr().out
    # --report-only reads what is stored
    assert run_command(["bench", "pddl", "--report-only", "--out", str(out)]) == 0
    config = json.loads(json.dumps(Bench("pddl", out).shared.read_config()))
    assert config["settings"]["step_limit"] == 6 and config["kind"] == "pddl"


def test_a_benchmark_stored_before_the_harness_is_reported_and_continued(tmp_path):
    """Its configuration names its tasks `problems`, its rows `problem`, `domain` and
    `optimal_length`: both are read in today's terms."""
    new = _run(tmp_path / "new")
    old = Bench("pddl", tmp_path / "old")
    config = dict(new.shared.read_config())
    config["problems"] = config.pop("tasks")
    old.shared.write_config(config)
    renamed = {"task": "problem", "oracle_length": "optimal_length", "family": "domain"}
    for row in new.rows():
        row = {renamed.get(k, k): v for k, v in row.items() if k not in ("env", "after")}
        old.shared.append(row)
    assert _essentials(old.rows()) == _essentials(new.rows())
    made = old.report()
    assert len(made["pages"]) == 12 and "| blocksworld-02 |" in made["report"].read_text()
    plan = BenchPlan(**PLAN)
    old.prepare(plan)
    assert old.pending(plan)[1] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arms", "none,memgpt"], "unknown arm 'memgpt': choose from none, full"),
        (["--problems", "blocksworld-1"], "unknown PDDL problem 'blocksworld-1'"),
        (["--domains", "barman"], "unknown PDDL domain 'barman'"),
        (["--problems", "gripper-01", "--domains", "gripper"], "--problems or --domains"),
        (["--seeds", "0"], "--seeds 0: give 1 or more"),
        (["--step-limit", "0"], "step limit 0: give 1 or more"),
        (["--memory-update", "append"], "use edit or rewrite"),
        (["--temperature", "3"], "--temperature 3.0"),
        (["--seeds", "many"], "--seeds should be a valid integer"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    out = tmp_path / "bench"
    assert _cli(*args, "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not out.exists()  # nothing half-written


def test_a_bad_model_a_missing_report_and_changed_settings_are_refused(tmp_path, capsys):
    out = tmp_path / "bench"
    assert run_command(["bench", "pddl", "--model", "nosuch", "--out", str(out)]) == 2
    assert "unknown model spec 'nosuch'" in capsys.readouterr().err
    assert run_command(["bench", "pddl", "--report-only", "--out", str(out)]) == 2
    assert "no pddl benchmark" in capsys.readouterr().err
    assert not out.exists()
    small = ["--problems", "blocksworld-01", "--arms", "none", "--seeds", "1", "--out", str(out)]
    assert _cli(*small, "--step-limit", "3") == 0
    capsys.readouterr()
    assert _cli(*small, "--step-limit", "5") == 2
    err = capsys.readouterr().err
    assert "other settings" in err and "step_limit" in err and len(err.strip().splitlines()) == 1


@pytest.mark.model
def test_an_episode_on_the_embedded_model_is_accounted_and_has_its_page(tmp_path):
    out = tmp_path / "bench"
    args = [
        "bench",
        "pddl",
        "--model",
        "embedded",
        "--problems",
        "blocksworld-01",
        "--arms",
        "intrinsic-generic",
        "--seeds",
        "1",
        "--step-limit",
        "2",
        "--memory-tokens",
        "64",
        "--out",
        str(out),
    ]
    assert run_command(args) == 0
    (row,) = Bench("pddl", out).rows()
    assert 1 <= row["steps"] <= 2 and 0.0 <= row["reward"] <= 1.0
    turns = row["usage"]["planner"]["agent_turn"]
    assert turns["estimated_calls"] == 0 and turns["input_tokens"] > 100  # the backend's counts
    assert row["usage"]["planner"]["memory_update"]["calls"] == row["steps"]
    assert row["episode"]["memories"]["planner"]
    assert (out / "episodes" / "intrinsic-generic-blocksworld-01-s0.html").exists()
