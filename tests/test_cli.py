"""The `ima` command line, as a user drives it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import remembered_turns, stored_state, turns_to_finalize

from ima.meeting.design.document import Design
from ima.tasks import TASKS_DIR


def test_run_writes_design_and_run_record(cli, tmp_path, task):
    code, out, err = cli("run", "--model", "scripted", "--thread", "t1", "--json", "--seed", "4")
    assert code == 0, err
    record = json.loads(out)
    turns = turns_to_finalize(task)
    assert record["status"] == "finalized" and record["turns"] == turns
    assert record["task"] == {
        "id": "data-pipeline",
        "version": task.version,
        "fingerprint": task.fingerprint,
    }
    assert record["settings"]["seed"] == 4 and record["settings"]["model"] == "scripted"
    assert record["memory_mode"] == "intrinsic"
    kinds = record["usage"]["by_kind"]
    assert set(kinds) == {"agent_turn", "memory_update", "documentation"}
    run_dir = tmp_path / "runs" / "t1"
    assert json.loads((run_dir / "run.json").read_text()) == record

    # the files hold the run's own design and usage, as the checkpoint has them
    shown = json.loads(cli("show", "t1", "--json")[1])
    remembered = len(remembered_turns(stored_state("t1")))  # a turn that is no news costs no update
    assert kinds["agent_turn"]["calls"] == turns and kinds["memory_update"]["calls"] == remembered
    assert (run_dir / "design.md").read_text() == shown["final"]["markdown"] + "\n"
    spec = json.loads((run_dir / "design.json").read_text())
    assert spec == shown["final"]["spec"]
    jsonschema.validate(spec, Design.json_schema())
    assert shown["usage"] == record["usage"]
    dea_turns = [t["usage"] for t in shown["transcript"] if t["speaker"] == "DEA"]
    dea = record["usage"]["by_agent_and_kind"]["DEA"]["agent_turn"]
    assert dea["calls"] == len(dea_turns)
    assert dea["input_tokens"] == sum(u["input_tokens"] for u in dea_turns) > 0


def test_live_view_runs_and_renders_the_design(cli):
    code, out, err = cli("run", "--model", "scripted", "--memory", "none", "--turn-cap", "12")
    assert code == 0, err
    assert "thread data-pipeline-" in out
    assert "1. CDA" in out and "Final design" in out and "turn_cap" in out


def test_show_and_runs(cli):
    assert cli("run", "--model", "scripted", "--thread", "s1", "--json")[0] == 0
    code, out, _ = cli("show", "s1", "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["status"] == "finalized"
    first = shown["transcript"][0]
    assert {"turn", "speaker", "content", "flags"} <= set(first) and first["speaker"] == "CDA"
    assert {"text", "template", "version"} <= set(shown["memories"]["DEA"])
    assert shown["usage"]["by_kind"]["agent_turn"]["calls"] == len(shown["transcript"])
    # The scripted agents quote the brief verbatim: parroting is measured, not guessed.
    assert shown["content"]["parroting_turns_pct"] > 20
    assert shown["content"]["figures_in_design"].endswith("/24")
    code, out, _ = cli("show", "s1")
    assert code == 0 and "DEA memory" in out and "Token usage" in out and "parroting" in out
    code, out, _ = cli("runs", "--json")
    assert json.loads(out) == [
        {
            "thread_id": "s1",
            "task": "data-pipeline",
            "memory_mode": "intrinsic",
            "status": "finalized",
        }
    ]


def test_tasks_and_graph(cli, task):
    code, out, _ = cli("tasks")
    assert code == 0 and "data-pipeline" in out
    steps = {"__start__", "setup", "router", "documentation", "human_review", "__end__"}
    steps |= set(task.speakers)
    code, out, _ = cli("graph")
    nodes = set(re.findall(r"^\s+(\w+)\(", out, re.M))
    assert code == 0 and "graph TD" in out
    assert nodes == steps | {f"{r}_memory" for r in task.speakers} | {"learn"}
    for role in task.speakers:  # each agent followed by its own memory update
        assert f"{role} -.-> {role}_memory;" in out and f"{role}_memory --> router;" in out
    assert "documentation --> learn;" in out  # long-term learning inside the graph
    code, out, _ = cli("graph", "--memory", "none")
    assert code == 0 and set(re.findall(r"^\s+(\w+)\(", out, re.M)) == steps


def bad_task(tmp_path: Path, edit) -> str:
    data = yaml.safe_load((TASKS_DIR / "data_pipeline.yaml").read_text())
    edit(data)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--task", "missing.yaml"], "task file not found"),
        (["run", "--task", "nope"], "unknown task 'nope'"),
        (["run", "--model", "nonsense"], "unknown model spec"),
        (["run", "--model", "scripted:speed=3"], "unknown scripted option"),
        (["run", "--model", "scripted", "--budget", "300"], "token budget 300 is smaller"),
        (["run", "--model", "scripted", "--memory", "half"], "unknown memory mode"),
        (["run", "--model", "scripted", "--template", "fancy"], "template='fancy' is invalid"),
        (["run", "--model", "scripted", "--turn-cap", "0"], "turn_cap=0 is invalid"),
        (["show", "ghost"], "no runs database"),
        (["resume", "ghost"], "no runs database"),
    ],
)
def test_bad_input_gets_one_line_error(cli, args, message):
    code, out, err = cli(*args)
    assert code == 2
    assert message in err and "Traceback" not in err + out
    assert len(err.strip().splitlines()) == 1


def test_malformed_and_inconsistent_task_files(cli, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: x\nroles: [unclosed\n")
    code, _, err = cli("run", "--task", str(broken), "--model", "scripted")
    assert code == 2 and "not valid YAML" in err

    def unknown_role(d):
        d["schedule"]["workers"].append("CFO")

    code, _, err = cli("run", "--task", bad_task(tmp_path, unknown_role), "--model", "scripted")
    assert code == 2 and "unknown role 'CFO'" in err

    def no_description(d):
        del d["description"]

    code, _, err = cli("run", "--task", bad_task(tmp_path, no_description), "--model", "scripted")
    assert code == 2 and "description" in err

    def unknown_cost_line(d):
        d["design"]["estimates"][0]["cost_line"] = "Storage costs"

    code, _, err = cli(
        "run", "--task", bad_task(tmp_path, unknown_cost_line), "--model", "scripted"
    )
    assert code == 2 and "cost_line 'Storage costs' is not a cost line" in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*/run.json"))


def test_unknown_thread_and_existing_thread(cli):
    assert cli("run", "--model", "scripted", "--thread", "a", "--json")[0] == 0
    code, _, err = cli("show", "ghost")
    assert code == 2 and "unknown thread 'ghost'" in err
    code, _, err = cli("run", "--model", "scripted", "--thread", "a")
    assert code == 2 and "already exists" in err
    code, _, err = cli("resume", "a")
    assert code == 2 and "already ended" in err


def test_unusable_database_path(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, _, err = cli("run", "--model", "scripted", "--db", str(blocker / "ima.sqlite"))
    assert code == 2 and "cannot open database" in err
    not_a_db = tmp_path / "garbage.sqlite"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    code, _, err = cli("run", "--model", "scripted", "--db", str(not_a_db))
    assert code == 2 and "cannot open database" in err
    assert not_a_db.read_bytes() == b"this is not sqlite" * 100  # nothing corrupted


def test_every_run_setting_is_an_option_of_ima_run(cli, tmp_path, monkeypatch):
    """Settings are declared once (RunContext): each field is an `ima run` option whose help
    is the field's description; a value given there wins over IMA_<NAME> and the config
    file, and one not given leaves them to decide."""
    import typer.main

    from ima.cli.app import app
    from ima.core.settings import RunContext

    options = {p.name: p for p in typer.main.get_command(app).commands["run"].params}  # type: ignore[attr-defined]
    for name, field in RunContext.model_fields.items():
        assert options[name].help.startswith(field.description.rstrip(".")), name
        assert f"env IMA_{name.upper()}" in options[name].help
    assert options["token_budget"].opts == ["--budget"]  # its name before settings were derived
    assert options["long_term"].secondary_opts == ["--no-long-term"]

    (tmp_path / "ima.toml").write_text("max_turn_words = 20\nseed = 5\n")
    monkeypatch.setenv("IMA_SEED", "6")
    monkeypatch.setenv("IMA_TEMPERATURE", "0.3")
    args = ("run", "--model", "scripted", "--turn-cap", "4", "--no-long-term", "--json")
    given = ("--max-turn-words", "30", "--budget", "3000", "--temperature", "0", "--review")
    code, out, err = cli(*args, *given)  # the turn cap comes before any review
    assert code == 0, err
    settings = json.loads(out)["settings"]
    assert (settings["max_turn_words"], settings["token_budget"]) == (30, 3000)  # flags
    assert (settings["seed"], settings["temperature"]) == (6, 0.0)  # env over file; flag over env
    assert settings["long_term"] is False and settings["review"] is True
    code, out, err = cli(*args)
    assert code == 0 and json.loads(out)["settings"]["max_turn_words"] == 20  # the file
