"""Every benchmark the READMEs name, and each of its subcommands, runs on a tiny input: a
benchmark that no longer runs (an import that moved, an option renamed) fails here, not on
the day someone measures. Figures are not checked (tests/test_benchmarks_smoke.py checks
what `benchmarks.run --quick` prints and every `embedded_run` variant); the embedded-model
replay is a model test, and the fleet on PostgreSQL is tests/test_fleet.py (slow)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def bench(module: str, *args: str, cwd: Path = ROOT) -> str:
    """`python -m benchmarks.MODULE ARGS` in a process of its own; its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


def test_run_tiny_prints_every_figure_and_a_verdict_per_target(tmp_path):
    figures = tmp_path / "figures.json"
    out = bench("run", "--tiny", "--json", str(figures))
    data = json.loads(figures.read_text())
    assert data["sizes"] == [4, 8] and len(data["runs"]) == 4
    assert all(r["status"] == "turn_cap" for r in data["runs"])
    for figure in range(1, 8):
        assert re.search(rf"^\s*{figure}\. \S", out, re.M), f"figure {figure} missing"
    assert f"of {len(data['verdicts'])} targets pass" in out
    assert data["concurrency"]["shared"]["all_finished"]


def test_embedded_run_with_the_scripted_model():
    """One variant on today's code (tests/test_benchmarks_smoke.py runs them all, the old
    commit's too)."""
    out = bench(
        "embedded_run", "--model", "scripted", "--turn-cap", "2", "--variants", "shared-edit"
    )
    row = next(line for line in out.splitlines() if line.startswith("memory updates"))
    assert row.split()[2:] == ["2"], row
    assert re.search(r"^weights +-$", out, re.M)  # no weights file: not an in-process model


def test_memory_sweep_runs_resumes_and_reports_from_its_stored_runs(tmp_path):
    args = ["--out", str(tmp_path), "--model", "scripted", "--seeds", "0", "--temperatures", "0"]
    out = bench("memory_sweep", "run", "--configs", "baseline,m256-edit", *args)
    assert "| | baseline (1) | m256-edit (1) |" in out and "own items in view" in out
    assert re.search(
        r"^\| own items in view against the baseline \| - \| \d+\.\d\dx \|$", out, re.M
    )
    stored = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "states").iterdir()}
    assert sorted(stored) == ["baseline-t0-s0.json", "m256-edit-t0-s0.json"]
    again = bench("memory_sweep", "run", "--configs", "baseline,m256-edit", *args)
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "states").iterdir()} == stored
    assert again == out  # nothing ran again: the same table from the same stored runs
    assert bench("memory_sweep", "report", "--out", str(tmp_path)) == out

    other = tmp_path / "other"
    shutil.copytree(tmp_path / "states", other / "states")
    changed = other / "states" / "m256-edit-t0-s0.json"
    state = json.loads(changed.read_text(encoding="utf-8"))
    state["memory_log"][1]["text"] += " (changed)"
    changed.write_text(json.dumps(state), encoding="utf-8")
    lines = bench("memory_sweep", "compare", "--out", str(tmp_path), "--against", str(other))
    role, version = state["memory_log"][1]["role"], state["memory_log"][1]["version"]
    assert lines.splitlines()[0].startswith("baseline-t0-s0: identical (")
    assert lines.splitlines()[1] == (
        f"m256-edit-t0-s0: differs first at memory version {version} of {role}"
    )

    # runs on other weights get a table of their own, never a mean with these
    record = tmp_path / "records" / "m256-edit-t0-s0.json"
    moved = json.loads(record.read_text(encoding="utf-8"))
    moved["settings"]["weights_file"] = "qwen2.5-coder-0.5b-instruct-q4_0.gguf"
    record.write_text(json.dumps(moved), encoding="utf-8")
    titles = re.findall(
        r"^temperature .*$", bench("memory_sweep", "report", "--out", str(tmp_path)), re.M
    )
    assert titles == [
        "temperature 0, weights - (runs)",
        "temperature 0, weights q4_0.gguf (runs)",
    ]


def test_embedded_replay_records_a_run_and_compares_replays(tmp_path):
    from benchmarks import embedded_replay

    calls = tmp_path / "calls.jsonl"
    args = ["--model", "scripted", "--turn-cap", "2", "--no-long-term", "--json"]
    db = ["--db", str(tmp_path / "ima.sqlite"), "--out", str(tmp_path / "runs")]
    assert embedded_replay.main(["record", str(calls), "--", *args, *db]) == 0
    recorded = [json.loads(line) for line in calls.read_text().splitlines()]
    kinds = [c["meta"]["ima_kind"] for c in recorded]
    assert kinds.count("agent_turn") == 2 and "memory_update" in kinds
    assert all(c["messages"] and c["output"] for c in recorded)

    # two replays of the recorded agent turns, as `replay` writes them
    def replay(path: Path, outputs: list[str]) -> None:
        rows = [
            {
                "index": i,
                "kind": "agent_turn",
                "role": c["meta"]["ima_role"],
                "prompt_tokens": 100,
                "cached_tokens": 60,
                "output_tokens": 5,
                "seconds": 0.5,
                "first_token": [["A", -0.1]],
                "output": text,
                "same_as_recorded_run": text == c["output"],
            }
            for i, (c, text) in enumerate(zip(recorded[:2], outputs, strict=True))
        ]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    replay(tmp_path / "a.jsonl", [c["output"] for c in recorded[:2]])
    replay(tmp_path / "b.jsonl", [recorded[0]["output"], "something else"])
    assert (
        embedded_replay.main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]) == 0
    )


@pytest.mark.model
def test_embedded_replay_replays_recorded_calls_on_the_embedded_model(tmp_path):
    from benchmarks import embedded_replay

    call = {
        "meta": {"ima_kind": "agent_turn", "ima_role": "BOA"},
        "max_tokens": 4,
        "messages": [{"type": "human", "content": "Say hello."}],
        "output": "",
    }
    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps(call) + "\n" + json.dumps(call) + "\n")
    for order in ("fresh", "shuffled"):
        out = tmp_path / f"{order}.jsonl"
        assert embedded_replay.main(["replay", str(calls), str(out), "--order", order]) == 0
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == 2 and all(0 < r["output_tokens"] <= 4 for r in rows)


def test_embedded_run_scales_wall_time_to_the_reference_speed():
    from benchmarks.embedded_run import REFERENCE_SPEED, at_reference_speed

    run = {"wall_seconds": 100.0, "evaluated": 2000, "generated": 470}
    # a machine at exactly the reference speed keeps its wall time; one at half of it, halves
    assert at_reference_speed(run, REFERENCE_SPEED) == pytest.approx(100.0)
    half = (REFERENCE_SPEED[0] / 2, REFERENCE_SPEED[1] / 2)
    assert at_reference_speed(run, half) == pytest.approx(50.0)
    assert at_reference_speed(run, None) is None


def test_embedded_run_floor_counts_what_no_prefix_cache_can_avoid():
    from benchmarks.embedded_measures import evaluation_floor
    from ima.core.tokens import count_tokens

    def turn(index: int, speaker: str, content: str) -> dict:
        share = {"task": 700, "role": 80, "instruction": 100, "memory": 10 * index}
        return {
            "index": index,
            "speaker": speaker,
            "content": content,
            "tokens": 20 + index,
            "context": share,
        }

    state = {
        "transcript": [turn(1, "CDA", "Open the meeting."), turn(2, "BOA", "Budget first.")],
        "memory_log": [
            {"role": "CDA", "version": 0, "turn": 0, "text": ""},
            {"role": "BOA", "version": 0, "turn": 0, "text": "## Goal\n- a pipeline"},
            {"role": "CDA", "version": 1, "turn": 1, "text": "## Goal\n- opened"},
            {"role": "BOA", "version": 1, "turn": 2, "text": "## Goal\n- budget"},
        ],
    }
    shared = {"settings": {"prompt_layout": "shared"}}
    # the task once, each turn's own parts, each turn read later once (not the last one)
    own = (80 + 100 + 10) + (80 + 100 + 20)
    # each update reads the agent's previous memory and its latest turn
    updates = count_tokens("Open the meeting.") + count_tokens("## Goal\n- a pipeline")
    updates += count_tokens("Budget first.")
    assert evaluation_floor(shared, state) == {
        "agent_turn": 700 + own + 21,
        "memory_update": updates,
    }
    assert evaluation_floor({"settings": {"prompt_layout": "paper"}}, state) is None
    # a person's turn (a review) has no prompt of its own; the agents still read turn 2
    state["transcript"].append({"index": 3, "speaker": "HUMAN", "content": "OK", "tokens": 5})
    assert evaluation_floor(shared, state)["agent_turn"] == 700 + own + 21 + 22


@pytest.mark.model
def test_embedded_run_probes_the_machine_speed_on_the_embedded_model():
    from benchmarks.embedded_run import probe_speed
    from ima.models.weights import DEFAULT_MODEL_FILE

    speed = probe_speed("embedded", ("--weights", "q4_k_m"))
    assert speed is not None and speed[0] > 0 and speed[1] > 0
    assert speed[2] == DEFAULT_MODEL_FILE  # the weights measured, named
    assert probe_speed("scripted") is None


def test_memory_formation_on_a_fake_server(capsys):
    from benchmarks import memory_formation

    memory_formation.main(["--turns", "4", "--latency", "0.01"])
    out = capsys.readouterr().out
    assert "memory_concurrency 1: 4 turns" in out and "memory_concurrency 2: 4 turns" in out


def test_first_use_from_a_clone_with_this_interpreter():
    out = bench("first_use", "--python", sys.executable, "--model", "scripted")
    assert "git clone" in out and "pip install" not in out
    assert "first use, before the meeting starts" in out


def test_building_block_with_few_turns(capsys):
    from benchmarks import building_block

    building_block.main(["--turns", "10", "--repeats", "1"])
    out = capsys.readouterr().out
    for heading in ("1. lines added", "2. import time", "3. prompt tokens per agent call"):
        assert heading in out


def test_pddl_prompts_with_the_scripted_model(capsys):
    from benchmarks import pddl_prompts

    pddl_prompts.main(["--model", "scripted", "--step-limit", "6"])
    out = capsys.readouterr().out
    for arm in ("none", "full", "intrinsic-generic"):
        assert re.search(rf"^{arm}\s+6\s+\d+", out, re.M), out
    assert "step 5: full / intrinsic prompt tokens =" in out


def test_pddl_env(capsys):
    from benchmarks import pddl_env

    pddl_env.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if "steps)" in line]
    assert len(rows) >= 3  # one per domain


def test_env_speed_on_babyai(capsys):
    from benchmarks import env_speed
    from ima.environments import list_tasks

    assert env_speed.main(["babyai"]) == 0
    out = capsys.readouterr().out
    for task in list_tasks("babyai"):
        assert re.search(rf"^{task.id} +{task.oracle_length} +{task.step_limit} ", out, re.M)
    assert "babyai: median" in out


@pytest.mark.slow
def test_env_speed_on_twc_times_the_jvm_and_stops_it(capsys):
    from benchmarks import env_speed
    from ima.environments import jvm

    assert env_speed.main(["twc"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^JVM start \d+\.\d+ s; first TWC game", out, re.M)
    assert "twc: median" in out
    jvm.shutdown()


@pytest.mark.slow
def test_env_catalog_finds_the_task_files_up_to_date(capsys):
    """It regenerates both files in memory (BabyAI's bot, TWC's gold paths on Java) and
    compares them with the bundled ones, writing nothing."""
    from benchmarks import env_catalog
    from ima.environments import jvm

    code = env_catalog.main(["--check"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("up to date") == 2, out
    jvm.shutdown()


def stand_in_planner(path: Path, plans: dict[str, list[str]]) -> Path:
    """An executable answering like pyperplan (PROBLEM.soln beside the problem file) with
    the plan `plans` holds for that file's name."""
    path.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "problem = sys.argv[-1]\n"
        f"plan = {json.dumps(plans)}[problem.rsplit('/', 1)[-1]]\n"
        "open(problem + '.soln', 'w').write(''.join(f'({a})\\n' for a in plan))\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_pddl_optimal_checks_the_stored_lengths_with_a_planner(tmp_path, capsys):
    """With a stand-in for pyperplan (run as a command, like the real one) that answers the
    stored plans, every check passes; one that finds a shorter plan fails the check."""
    from benchmarks import pddl_optimal
    from ima.environments.pddl import list_problems

    problems = sorted(list_problems(), key=lambda p: p.optimal_length)[:2]
    ids = [p.id for p in problems]
    plans = {p.pddl_path.name: list(p.optimal_plan) for p in problems}
    planner = stand_in_planner(tmp_path / "pyperplan", plans)
    assert pddl_optimal.main(["--pyperplan", str(planner), *ids]) == 0
    assert capsys.readouterr().out.count(" ok") == 2

    plans[problems[0].pddl_path.name].pop()  # a planner that finds a shorter plan
    stand_in_planner(planner, plans)
    assert pddl_optimal.main(["--pyperplan", str(planner), *ids]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "1 failed" in out


EDIT_SCHEMA = {
    "type": "object",
    "properties": {
        "edits": {
            "type": "array",
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "to": {"enum": ["goal", "decisions"]},
                            "add": {"type": "string"},
                        },
                        "required": ["to", "add"],
                        "additionalProperties": False,
                    }
                ]
            },
            "minItems": 1,
        }
    },
    "required": ["edits"],
    "additionalProperties": False,
}


def test_engine_variants_tells_valid_usable_and_unusable_json_answers():
    from benchmarks.engine_variants import answer_quality

    valid = '{"edits": [{"to": "goal", "add": "Keep 30 days of raw data."}]}'
    assert answer_quality(valid, EDIT_SCHEMA) == (True, True)
    # a fenced answer with an extra field: invalid JSON for the grammar, usable after repair
    fenced = '```json\n{"edits": [{"to": "goal", "add": "Budget 900."}], "note": 1}\n```'
    assert answer_quality(fenced, EDIT_SCHEMA) == (False, True)
    assert answer_quality("I would add the budget.", EDIT_SCHEMA) == (False, False)


@pytest.mark.model
def test_engine_variants_replays_recorded_calls_per_variant(tmp_path):
    calls = [
        {
            "meta": {"ima_kind": "agent_turn", "ima_role": "BOA"},
            "max_tokens": 8,
            "response_format": None,
            "messages": [{"type": "human", "content": "Name one storage format."}],
        },
        {
            "meta": {"ima_kind": "memory_update", "ima_role": "BOA"},
            "max_tokens": 40,
            "response_format": {"type": "json_object", "schema": EDIT_SCHEMA},
            "messages": [
                {"type": "human", "content": 'Answer {"edits": [{"to": "goal", "add": "..."}]}'}
            ],
        },
    ]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in calls))
    out = bench(
        "engine_variants",
        str(path),
        "--variants",
        "default,default",
        "--weights",
        "q4_k_m",
        "--rounds",
        "2",
    )
    assert re.search(r"^outputs identical to default +2/2 +2/2$", out, re.M)
    assert re.search(r"^  and every round +2/2 +2/2$", out, re.M)
    assert re.search(r"^JSON valid \(%\) +100\.0 +100\.0$", out, re.M)
    assert re.search(r"^weights +q4_k_m\.gguf +q4_k_m\.gguf$", out, re.M)
