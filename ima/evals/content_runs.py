"""Content metrics of stored evaluation runs, from each run's checkpointed state (its
transcript) and its outputs (design.md, design.json).

New runs get them when they are judged; `ima eval --report-only` computes them for runs
stored before they existed. A run whose checkpoint is gone still gets its figure grounding
and the design's parroting against the brief and instructions; its turn metrics stay empty.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.evals.store import DB_FILE, RUNS_DIR
from ima.measures.content import content_metrics
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state
from ima.tasks import Task, load_task


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return ""


def read_design(out_dir: Path) -> tuple[str, Any]:
    """A run's design as its outputs hold it: the Markdown ("" if missing) and the JSON
    specification (None if missing or unreadable)."""
    try:
        spec = json.loads(_read(out_dir / "design.json") or "null")
    except json.JSONDecodeError:
        spec = None
    return _read(out_dir / "design.md"), spec


def run_content(task: Task, out_dir: Path, values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The content metrics of one run: the design as judged (its files) and, when the
    state is at hand, its transcript, brief and memory templates."""
    design, spec = read_design(out_dir)
    values = values or {}
    return content_metrics(
        task,
        design=design,
        spec=spec,
        turns=values.get("transcript"),
        brief=values.get("brief"),
        templates=values.get("templates"),
        memory_log=values.get("memory_log"),
        memories=values.get("memories"),
    )


def _outdated(row: dict[str, Any]) -> bool:
    """Stored before a metric existed: no content metrics, or none of a later kind."""
    return "content" not in row or "in_view" not in (row["content"] or {})


def fill_content(
    directory: Path, rows: list[dict[str, Any]], task_ref: str | None
) -> list[dict[str, Any]]:
    """`rows` with content metrics added where missing, and computed again for rows stored
    before some of them existed when their checkpoint is at hand (nothing is written
    back)."""
    missing = [r for r in rows if _outdated(r)]
    if not missing or not task_ref:
        return rows
    try:
        task = load_task(task_ref)
    except UserError:
        return rows  # the task file moved: the report shows the metrics as n/a
    db = directory / DB_FILE
    records = {}
    if db.exists():
        with RunRegistry(db) as registry:
            records = {r.thread_id: r for r in registry.all()}
    added: dict[str, dict[str, Any]] = {}
    for row in missing:
        values = None
        record = records.get(row["thread_id"])
        if record is not None:
            try:
                values = load_state(record, db)
            except Exception:  # an unreadable checkpoint: fall back to the outputs
                values = None
        if "content" in row and not values:
            continue  # what was measured then stays: without the state, less could be
        out = Path(row.get("out_dir") or "")
        if not (out / "design.md").exists():
            out = directory / RUNS_DIR / row["thread_id"]
        added[row["key"]] = run_content(task, out, values)
    return [{**r, "content": added[r["key"]]} if r["key"] in added else r for r in rows]
