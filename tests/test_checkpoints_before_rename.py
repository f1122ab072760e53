"""A run stored by the code from before the meeting kept its memory under the library's key
(`intrinsic_memory`; it was `memories`) resumes on today's code: what it stored is kept, and
it goes on to the end in today's schedule, as a run started today does (what today's agents
say after the stored turns may differ: the meeting's prompts have changed since). The
stored run (tests/fixtures/checkpoint_before_rename.sql, the SQL of its database, made by
tests/fixtures/make_checkpoint_before_rename.py) was killed mid-step: its newest checkpoint
holds a memory update's writes to `memories`, the next turn's still to come."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "checkpoint_before_rename.sql"
THREAD = "before-rename"
# the settings the stored run was started with
SETTINGS = ["--model", "scripted:delay=0.05", "--seed", "7", "--no-long-term"]
SETTINGS += ["--memory-concurrency", "2", "--memory-update", "edit"]


def test_a_run_stored_before_the_rename_resumes_to_the_end_of_a_run_started_now(cli, tmp_path):
    db = str(tmp_path / "before.sqlite")
    with sqlite3.connect(db) as conn:
        conn.executescript(FIXTURE.read_text(encoding="utf-8"))
        pending = conn.execute(
            "SELECT count(*) FROM writes WHERE channel = 'memories' AND checkpoint_id = "
            "(SELECT max(checkpoint_id) FROM checkpoints)"
        ).fetchone()[0]
    assert pending == 1, "the stored run stopped with a memory update written, its step not done"

    code, out, err = cli("show", THREAD, "--json", "--db", db)
    assert code == 0, err
    stored = json.loads(out)
    assert 10 <= len(stored["transcript"]) < 20 and stored["memories"]  # it loads, memories too

    code, out, err = cli("resume", THREAD, "--json", "--db", db)
    assert code == 0, err
    assert json.loads(out)["status"] == "finalized"
    code, _, err = cli("run", "--thread", "now", "--json", "--db", db, *SETTINGS)
    assert code == 0, err

    def shown(thread: str) -> dict:
        code, out, err = cli("show", thread, "--json", "--db", db)
        assert code == 0, err
        return json.loads(out)

    resumed, now = shown(THREAD), shown("now")
    turns = [(t["turn"], t["speaker"], t["content"]) for t in resumed["transcript"]]
    assert turns[: len(stored["transcript"])] == [
        (t["turn"], t["speaker"], t["content"]) for t in stored["transcript"]
    ]  # what it stored is kept as it was
    assert [t["speaker"] for t in resumed["transcript"]] == [
        t["speaker"] for t in now["transcript"]
    ]  # and it goes on to the end in today's schedule
    assert resumed["status"] == now["status"] == "finalized"
    assert resumed["memories"].keys() == now["memories"].keys()
    assert all(m["text"] for m in resumed["memories"].values())  # under today's key
    assert (tmp_path / "runs" / THREAD / "design.md").read_text()
