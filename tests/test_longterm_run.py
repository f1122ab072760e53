"""End to end: a second run of the same task starts with the first run's matured lessons
(scripted model, through ima.runs.runner)."""

from __future__ import annotations

import json
from pathlib import Path

from ima.core.settings import RunContext
from ima.models.scripted import ScriptedChatModel

LESSON = "Storage format: Parquet on object storage for raw sensor logs"


class LessonModel(ScriptedChatModel):
    """The scripted model, whose memory rewrites also record a decision the team reached."""

    def _memory(self, prompt, edit):
        answer = json.loads(super()._memory(prompt, edit))
        if edit:
            answer["edits"].append({"to": "decisions_current", "add": LESSON})
        else:
            notes = [n for n in answer["notes"] if n["section"] != "decisions_current"]
            answer["notes"] = [*notes, {"section": "decisions_current", "note": LESSON}]
        return json.dumps(answer)


def test_a_second_run_starts_with_the_first_runs_matured_lessons(
    tmp_path, monkeypatch, task, db_target
):
    """On both backends: long-term memory lives in the runs database (PostgreSQL) or
    beside it (memory.sqlite next to a SQLite file)."""
    from ima.runs.runner import create_run, execute

    model = LessonModel()
    policy = tmp_path / "policy.toml"
    policy.write_text("[default]\nmin_support = 1\n")  # one finalized run matures a lesson
    db = db_target

    def run(principal: str, **settings) -> tuple[dict, dict, dict]:
        """One run; returns its final values, the setup node's starting memories, run.json."""
        context = RunContext(  # rewrites: the lesson stays the decision until the end
            model="scripted",
            principal=principal,
            long_term_policy=str(policy),
            memory_update="rewrite",
            **settings,
        )
        record = create_run(
            task_ref="data-pipeline",
            memory_mode="intrinsic",
            settings=context,
            db=db,
            out_root=tmp_path / "runs",
        )
        starts: dict[str, str] = {}

        def listener(node: str, update: dict) -> None:
            if node == "setup":  # lessons sit beside the (empty) starting memory
                starts.update(
                    {r: s.get("lessons", "") for r, s in update["intrinsic_memory"].items()}
                )
                assert not any(s["text"] for s in update["intrinsic_memory"].values())

        values = execute(record, db, listener, model=model)
        return values, starts, json.loads((Path(record.out_dir) / "run.json").read_text())

    values, starts, first = run("alice")
    assert values["status"] == "finalized"
    assert not any(starts.values())  # nothing learned yet
    assert first["long_term"]["learned"]["learned"] is True, first["long_term"]
    if "://" not in db:
        assert (Path(db).parent / "memory.sqlite").exists()  # beside the runs database

    _, starts, second = run("alice")
    speakers = [r for r in task.speakers if r in values["intrinsic_memory"]]
    for role in speakers:
        assert f"- {LESSON}" in starts[role]
    loaded = second["long_term"]["start"]
    assert loaded["available"] and loaded["loaded"]["private"] >= len(speakers)
    assert LESSON not in json.dumps(second["long_term"])  # the record holds ids, not text

    _, starts, _ = run("bob")  # another principal starts from nothing
    assert not any(starts.values())
    _, starts, off = run("alice", long_term=False)  # --no-long-term
    assert not any(starts.values()) and off["long_term"]["start"] == {"enabled": False}

    monkeypatch.setenv("IMA_DB", db)  # `ima memory` finds the same memory through IMA_DB
    monkeypatch.setenv("IMA_PRINCIPAL", "alice")
    from typer.testing import CliRunner

    from ima.cli.memory import memory_app

    listed = CliRunner().invoke(memory_app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert LESSON in {i["text"] for i in json.loads(listed.output)}


def test_an_unusable_store_lets_the_run_go_on_and_says_so(tmp_path, monkeypatch):
    from ima.runs.runner import create_run, execute

    (tmp_path / "blocker").write_text("a file where a directory should be")
    context = RunContext(model="scripted", memory_store=str(tmp_path / "blocker" / "m.sqlite"))
    db = tmp_path / "ima.sqlite"
    record = create_run(
        task_ref="data-pipeline",
        memory_mode="intrinsic",
        settings=context,
        db=db,
        out_root=tmp_path / "runs",
    )
    values = execute(record, db)
    assert values["status"] == "finalized"
    run_json = json.loads((Path(record.out_dir) / "run.json").read_text())
    for part in ("start", "learned"):
        assert run_json["long_term"][part]["available"] is False
        assert "cannot open long-term memory store" in run_json["long_term"][part]["reason"]
        assert "goes on without it" in run_json["long_term"][part]["note"]
