"""The benchmark harness on BabyAI and TextWorld Commonsense (`ima bench babyai|twc`), and
the cross-task arm on any benchmark: its chains start each task from the memory the
previous one ended with, are queued as they go (each episode's job queues the next), and
resume after an interruption (or a killed worker) to exactly the uninterrupted result.
Scripted models, real graphs and real checkpoints (SQLite, and the private PostgreSQL for
the workers); TWC on Java. (`ima bench pddl` itself: tests/test_pddl_bench.py.)
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import psycopg
import pytest
from conftest import md_table, start_ima

from ima.cli.app import run_command
from ima.core.errors import UserError
from ima.evals.bench import episode as episode_module
from ima.evals.bench.bench import Bench
from ima.evals.bench.plan import BenchPlan, Episode
from ima.models.scripted import ScriptedChatModel
from ima.planning import SolverSettings
from ima.runs.database import open_database

LEVEL = ("babyai-gotolocal-s0", "babyai-gotolocal-s1", "babyai-gotolocal-s2")


@pytest.fixture(scope="module", autouse=True)
def no_java_left_behind():
    yield
    from ima.environments import jvm

    jvm.shutdown()


def _cli(env: str, *args: str) -> int:
    return run_command(["bench", env, "--model", "scripted", *args])


@pytest.mark.parametrize(
    ("env", "tasks"),
    [
        ("babyai", "babyai-gotolocal-s1,babyai-gotolocal-s0"),
        ("twc", "twc-rooms1-items1-s20001,twc-rooms1-items1-s20000"),
    ],
)
def test_the_command_runs_reports_with_the_oracle_and_continues(tmp_path, capsys, env, tasks):
    out = tmp_path / "bench"
    args = ["--tasks", tasks, "--arms", "none,intrinsic-cross", "--seeds", "1", "--out", str(out)]
    assert _cli(env, *args) == 0
    printed = capsys.readouterr().out
    assert "4 episodes" in printed and "oracle" in printed and "Gemma3" not in printed
    report = (out / "report.md").read_text()
    arms = md_table(report, "arm")
    assert set(arms) == {"none", "intrinsic-cross", "oracle"}
    assert arms["oracle"]["reward"] == "1.000" and arms["oracle"]["success"] == "100%"
    first, second = tasks.split(",")[1], tasks.split(",")[0]  # the catalog's order
    per_task = md_table(report, "task")
    assert list(per_task) == [first, second]
    assert re.match(r"1\.00 · \d+ steps", per_task[first]["oracle"])
    pages = sorted(p.name for p in (out / "episodes").glob("*.html"))
    assert pages == sorted(
        f"{a}-{t}-s0.html" for a in ("none", "intrinsic-cross") for t in (first, second)
    )
    assert (out / f"{env}_reward.png").stat().st_size > 10_000
    crossed = (out / "episodes" / f"intrinsic-cross-{second}-s0.html").read_text()
    assert "Memory carried over" in crossed and f"intrinsic-cross/{first}/s0" in crossed
    assert _cli(env, *args) == 0  # again: everything is stored, nothing runs
    assert "continuing: 4 of 4 episodes already stored" in capsys.readouterr().out
    assert run_command(["bench", env, "--report-only", "--out", str(out)]) == 0
    other = "twc" if env == "babyai" else "babyai"
    assert run_command(["bench", other, "--report-only", "--out", str(out)]) == 2
    assert f"holds a {env} benchmark" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("env", "args", "message"),
    [
        ("babyai", ["--levels", "GoToMoon"], "unknown BabyAI level 'GoToMoon': choose one of"),
        ("babyai", ["--tasks", "babyai-gotolocal-s9"], "unknown text-environment task"),
        (
            "babyai",
            ["--tasks", "babyai-gotolocal-s0", "--levels", "GoToLocal"],
            "--tasks or --levels",
        ),
        ("babyai", ["--step-limit", "0"], "step limit 0: give 1 or more"),
        ("babyai", ["--arms", "none,memgpt"], "unknown arm 'memgpt'"),
        ("twc", ["--settings", "rooms9"], "unknown TextWorld Commonsense setting 'rooms9'"),
        ("twc", ["--tasks", "babyai-gotolocal-s0"], "is a babyai task, not TextWorld Commonsense"),
        ("twc", ["--seeds", "0"], "--seeds 0: give 1 or more"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, env, args, message):
    out = tmp_path / "bench"
    assert _cli(env, *args, "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def _plan(**changes) -> BenchPlan:
    fields = dict(
        env="babyai",
        model="scripted",
        arms=("intrinsic-cross",),
        tasks=LEVEL,
        seeds=2,
        settings=SolverSettings(step_limit=6),
    )
    return BenchPlan(**(fields | changes))


def _run(bench: Bench, plan: BenchPlan, concurrency: int = 1) -> list[dict]:
    bench.prepare(plan)
    bench.run_here(bench.pending(plan)[1], lambda kind, episode, detail: None, concurrency)
    return bench.rows()


def test_each_task_of_a_chain_starts_from_the_memory_the_previous_one_ended_with(tmp_path):
    rows = {r["key"]: r for r in _run(Bench("babyai", tmp_path / "b"), _plan())}
    assert len(rows) == 6
    for seed in (0, 1):
        chain = [rows[f"intrinsic-cross/{task}/s{seed}"] for task in LEVEL]
        assert [r["after"] for r in chain] == ["", *(r["key"] for r in chain[:-1])]
        first_steps = [r["episode"]["steps"][0]["context"] for r in chain]
        assert first_steps[0]["memory_version"] == 0 and chain[0]["episode"]["start_memory"] == {}
        for before, after, seen in zip(chain, chain[1:], first_steps[1:], strict=False):
            ended = before["episode"]["end_memory"]
            assert after["episode"]["start_memory"] == ended
            assert seen["memory_version"] == ended["planner"]["version"] > 0
            assert seen["memory"] == ended["planner"]["text"]
    # the chains differ by seed: the model samples with the seed
    assert (
        rows["intrinsic-cross/babyai-gotolocal-s2/s0"]["episode"]["end_memory"]
        != (rows["intrinsic-cross/babyai-gotolocal-s2/s1"]["episode"]["end_memory"])
    )


def test_a_chain_is_queued_as_it_goes_for_workers_on_a_shared_database(cli, pg_url):
    db = open_database(pg_url)
    bench = Bench("babyai", Path("evals/cross"), db)
    plan = _plan(arms=("none", "intrinsic-cross"))
    bench.prepare(plan)
    counts = bench.enqueue(bench.pending(plan)[1])
    assert (counts["queued"], counts["waiting"]) == (8, 4)  # 6 none + 2 chain starts
    code, out, err = cli("worker", "--db", pg_url, "--until-done")  # a plain `ima worker`
    assert code == 0 and "done: 12 job(s), 0 failed" in out, out + err
    assert len(bench.rows()) == 12
    assert [r["after"] for r in bench.rows() if r["arm"] == "intrinsic-cross"][:3] == [
        "",
        f"intrinsic-cross/{LEVEL[0]}/s0",
        f"intrinsic-cross/{LEVEL[1]}/s0",
    ]


def test_episodes_at_once_in_this_process_end_as_one_at_a_time(tmp_path):
    """--concurrency on one machine: chains still run in order (each next episode starts
    once its previous one is stored), and every episode ends as it does alone."""
    plan = _plan(arms=("none", "intrinsic-cross"))
    alone = _essentials(_run(Bench("babyai", tmp_path / "one"), plan))
    together = _essentials(_run(Bench("babyai", tmp_path / "three"), plan, concurrency=3))
    assert together == alone and len(alone) == 12


def test_growing_a_family_whose_chains_exist_is_refused(tmp_path):
    bench = Bench("babyai", tmp_path / "b")
    bench.prepare(_plan(tasks=LEVEL[:2]))
    with pytest.raises(UserError, match="would change them"):
        bench.prepare(_plan(tasks=LEVEL))
    bench.prepare(_plan(tasks=("babyai-pickuploc-s0",)))  # another family: a chain of its own


def _essentials(rows: list[dict]) -> dict:
    keep = ("reward", "success", "steps", "input_tokens", "output_tokens", "calls", "after")
    return {
        r["key"]: {
            **{k: r[k] for k in keep},
            "trace": [(s["agent"], s["action"], s["observation"]) for s in r["episode"]["steps"]],
            "start": r["episode"]["start_memory"],
            "end": r["episode"]["end_memory"],
        }
        for r in rows
    }


class Interrupting(ScriptedChatModel):
    """The scripted model, with a Ctrl-C at the N-th call of the process."""

    calls_before_interrupt: int = 10**9

    def _generate(self, *args, **kwargs):
        Interrupting.count += 1
        if Interrupting.count == self.calls_before_interrupt:
            raise KeyboardInterrupt
        return super()._generate(*args, **kwargs)


def test_a_chain_interrupted_mid_way_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    plan = _plan(seeds=1)
    reference = _essentials(_run(Bench("babyai", tmp_path / "straight"), plan))
    calls = [reference[f"intrinsic-cross/{t}/s0"]["calls"] for t in LEVEL]
    stop_at = calls[0] + calls[1] // 2  # half-way through the chain's second task

    Interrupting.count = 0
    monkeypatch.setattr(
        episode_module,
        "plan_model",
        lambda p: (
            lambda seed: Interrupting(
                seed=seed, temperature=p.temperature, calls_before_interrupt=stop_at
            )
        ),
    )
    stopped = Bench("babyai", tmp_path / "stopped")
    with pytest.raises(KeyboardInterrupt):
        _run(stopped, plan)
    assert [r["task"] for r in stopped.rows()] == [LEVEL[0]]
    monkeypatch.undo()
    resumed = _run(Bench("babyai", tmp_path / "stopped"), plan)
    assert [r["resumed"] for r in resumed] == [False, True, False]
    assert _essentials(resumed) == reference


@pytest.mark.slow
def test_a_worker_killed_mid_chain_is_replaced_and_the_chain_ends_as_uninterrupted(
    tmp_path, pg_url
):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env |= {"IMA_CONFIG": os.devnull, "IMA_JOB_STALL_SECONDS": "2"}
    model = "scripted:delay=0.05"
    args = ["--model", model, "--tasks", ",".join(LEVEL), "--arms", "intrinsic-cross"]
    args += ["--seeds", "1", "--step-limit", "8"]
    assert run_command(["bench", "babyai", *args, "--out", str(tmp_path / "straight")]) == 0
    reference = _essentials(Bench("babyai", tmp_path / "straight").rows())

    queued = start_ima(
        "bench", "babyai", *args, "--out", "ev", "--db", pg_url, cwd=tmp_path, env=env
    )
    assert queued.wait(120) == 0, queued.communicate()
    shared = Bench("babyai", Path("ev"), open_database(pg_url)).shared
    victim = start_ima("worker", "--db", pg_url, cwd=tmp_path, env=env)
    second = Episode("intrinsic-cross", LEVEL[1], 0).thread_id("ev", "babyai")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _checkpoints(pg_url, second) < 4:
        time.sleep(0.05)  # a few steps into the chain's second task
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert len(shared.keys()) == 1, "killed mid-chain"
    rescuer = start_ima("worker", "--db", pg_url, "--until-done", cwd=tmp_path, env=env)
    out, err = rescuer.communicate(timeout=300)
    assert rescuer.returncode == 0, err
    assert "done: 2 job(s), 0 failed" in out  # the cut task, then the one queued after it
    rows = Bench("babyai", Path("ev"), open_database(pg_url)).rows()
    assert [r["resumed"] for r in rows] == [False, True, False]
    assert _essentials(rows) == reference


def _checkpoints(url: str, thread: str) -> int:
    with psycopg.connect(url) as conn:
        if conn.execute("SELECT to_regclass('checkpoints')").fetchone()[0] is None:
            return 0
        return conn.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE thread_id = %s", (thread,)
        ).fetchone()[0]
