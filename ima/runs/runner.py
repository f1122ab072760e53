"""Starting, resuming and inspecting runs: the layer between the CLI and the graph."""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot

from ima.core.errors import UserError
from ima.core.settings import MEMORY_MODES, RunContext
from ima.longterm import check_settings
from ima.meeting.agent_context import check_budget
from ima.meeting.builder import compile_graph
from ima.models import agent_model, memory_model, weights_files
from ima.runs import leases
from ima.runs.checkpoints import compact_thread, compact_while_running
from ima.runs.database import using
from ima.runs.leases import Lease, ThreadBusy
from ima.runs.outputs import check_output_dir, run_record, write_outputs
from ima.runs.registry import RunRecord, RunRegistry
from ima.runs.session import FINISHED, RunEnded, RunSession, Target, Waiting, run_session
from ima.tasks import Task, load_task

Listener = Callable[[str, dict[str, Any]], None]


def validate_settings(task: Task, memory_mode: str, settings: RunContext, brief: str) -> None:
    if memory_mode not in MEMORY_MODES:
        raise UserError(f"unknown memory mode {memory_mode!r}: use intrinsic or none")
    if settings.template == "manual" and not task.manual_template.strip():
        raise UserError(f"task {task.id} has no manual_template: use --template generic or llm")
    check_budget(task, brief, settings, memory_mode == "intrinsic")
    check_settings(settings)  # a bad principal or policy file fails before a run exists
    agent_model(settings)  # a bad model spec fails before a run exists
    memory_model(settings)


# A thread id names the run's output folder: one path component, never a way out of --out.
THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_thread_id(thread_id: str) -> None:
    if not THREAD_ID.fullmatch(thread_id) or ".." in thread_id:
        shown = thread_id if len(thread_id) <= 40 else thread_id[:40] + "..."
        raise UserError(
            f"invalid thread id {shown!r}: use 1-100 letters, digits, '.', '-' or '_', starting "
            "with a letter or digit (it names the run's output folder)"
        )


def new_thread_id(task: Task) -> str:
    # Date and time joined by a dot: as 14 digits with a dash, one id in ten passed a card
    # number's checksum, and long-term memory's screen refused to learn from that run.
    return f"{task.id}-{datetime.now():%Y%m%d.%H%M%S}-{secrets.token_hex(2)}"


def create_run(
    *,
    task_ref: str,
    memory_mode: str,
    settings: RunContext,
    db: Target,
    out_root: Path,
    thread_id: str | None = None,
    brief: str = "",
    keep_history: bool = False,
) -> RunRecord:
    """Validate everything and register a new run; nothing is written if anything is wrong."""
    task = load_task(task_ref)
    validate_settings(task, memory_mode, settings, brief or task.description)
    leases.lease_settings()  # a bad IMA_LEASE_SECONDS fails before the run exists
    thread_id = thread_id or new_thread_id(task)
    check_thread_id(thread_id)
    check_output_dir(out_root / thread_id)  # no conversation is spent on unwritable results
    ref = task_ref if Path(task_ref).suffix in {".yaml", ".yml"} else task.id
    record = RunRecord(
        thread_id=thread_id,
        task_ref=str(Path(ref).resolve()) if ref != task.id else ref,
        task_id=task.id,
        task_version=task.version,
        task_fingerprint=task.fingerprint,
        memory_mode=memory_mode,
        # which weights files ran (the `weights` setting's may fall back to the bundled one)
        settings={**settings.to_dict(), "brief_override": bool(brief), **weights_files(settings)},
        out_dir=str((out_root / thread_id).resolve()),
        pid=os.getpid(),
        keep_history=keep_history,
        brief=brief,
    )
    with RunRegistry(db) as registry:
        added = registry.add(record)  # atomic: of two processes naming one thread, one wins
    if not added:
        raise UserError(
            f"thread {thread_id!r} already exists: continue it with `ima resume {thread_id}` "
            "or choose another --thread"
        )
    return record


Reviewer = Callable[[dict[str, Any]], dict[str, Any]]


def execute(
    record: RunRecord,
    db: Target,
    listener: Listener | None = None,
    reviewer: Reviewer | None = None,
    answer: dict[str, Any] | None = None,
    *,
    wait: bool = False,
    on_wait: Waiting | None = None,
    lease: Lease | None = None,
    model: BaseChatModel | None = None,
    memory_model: BaseChatModel | None = None,
) -> dict[str, Any]:
    """Run (or continue) the thread until it ends or waits for a review nobody can give.

    Only the holder of the thread's lease advances it: ThreadBusy if another process holds
    it (or, with `wait`, after it is free); a run that ended meanwhile raises RunEnded and
    is never run twice (`run_session`). `answer` resumes a pending review; `reviewer` is
    asked whenever the graph pauses for one. Checkpoints are synced after every step, so a
    killed process loses at most one step. `model`, `memory_model`: chat models to use
    instead of those the run's settings name (`compile_graph`).
    """
    task = load_task(record.task_ref)
    with run_session(db, record, lease=lease, wait=wait, on_wait=on_wait) as run:
        if run.long_term.note and listener:
            listener("long_term", {"note": run.long_term.note})
        graph = compile_graph(
            task,
            record.memory_mode,  # type: ignore[arg-type]
            checkpointer=run.saver,
            store=run.long_term.store,
            model=model,
            memory_model=memory_model,
        )
        values, paused = _drive(graph, run, listener, reviewer, answer)
        if paused:
            record.status = "awaiting_review"
            return values
        long_term = run.long_term.run_record(values)
        if values.get("status") in FINISHED and not record.keep_history:
            compact_thread(run.saver, graph, run.config)  # nothing left to resume: keep the end
        record.status = values.get("status", "running")
    write_outputs(
        Path(record.out_dir), run_record(record, values, task) | {"long_term": long_term}, values
    )
    return values


def _drive(
    graph: CompiledStateGraph,
    run: RunSession,
    listener: Listener | None,
    reviewer: Reviewer | None,
    answer: dict[str, Any] | None,
) -> tuple[dict[str, Any], bool]:
    """Stream the graph step by step until it ends; (its values, whether it is paused
    for a review nobody here can give)."""
    snapshot = graph.get_state(run.config)
    # The brief is part of the record, so a run interrupted before its first checkpoint
    # still starts with it.
    start = {"brief": run.record.brief} if run.record.brief else {}
    payload: Any = None if snapshot.values else start
    if answer is not None and _questions(snapshot):
        payload = Command(resume=answer)
    steps = 0
    while True:
        for chunk in graph.stream(
            payload, run.config, context=run.settings, stream_mode="updates", durability="sync"
        ):
            run.save()  # the time spent, step by step
            steps += 1
            if not run.record.keep_history:
                compact_while_running(run.saver, graph, run.config, steps)
            for node, update in chunk.items():
                if listener and isinstance(update, dict):
                    listener(node, update)
        snapshot = graph.get_state(run.config)
        pending = _questions(snapshot)
        if not pending or reviewer is None:
            return dict(snapshot.values), bool(pending)
        payload = Command(resume=reviewer(pending[0]))


def _questions(snapshot: StateSnapshot) -> list[Any]:
    return [i.value for t in snapshot.tasks for i in t.interrupts]


def pending_review(record: RunRecord, db: Target) -> dict[str, Any] | None:
    """The question a paused run is waiting on, if any."""
    snapshot = _snapshot(record, db)
    return next(iter(_questions(snapshot)), None) if snapshot else None


def resumable(record: RunRecord, db: Target | None = None, *, wait: bool = False) -> None:
    """Refuse at once a run that ended, or (without `wait`) one another process holds;
    `execute` checks both again under the lease."""
    if record.status in FINISHED:
        raise RunEnded(record)
    if db is None or wait:
        return
    with using(db) as database:
        holder = leases.holders(database, [record.thread_id]).get(record.thread_id)
    if holder is not None:
        raise ThreadBusy(holder)


def load_state(record: RunRecord, db: Target) -> dict[str, Any]:
    snapshot = _snapshot(record, db)
    return dict(snapshot.values) if snapshot else {}


def _snapshot(record: RunRecord, db: Target) -> StateSnapshot | None:
    """The thread's latest state, read through the graph it was built with (a SQLite file
    is only read); None when no run in this database has written a checkpoint yet."""
    with using(db, read_only=True) as database, database.checkpointer() as saver:
        graph = compile_graph(load_task(record.task_ref), record.memory_mode, checkpointer=saver)  # type: ignore[arg-type]
        try:
            return graph.get_state({"configurable": {"thread_id": record.thread_id}})
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise


def export_outputs(record: RunRecord, db: Target, out_dir: Path | None = None) -> Path:
    """Write a run's design and run record again from its checkpoint (atomically), to its
    own output folder or to `out_dir`/THREAD."""
    values = load_state(record, db)
    if not values:
        raise UserError(f"run {record.thread_id} has no checkpoint yet: nothing to export")
    target = out_dir / record.thread_id if out_dir else Path(record.out_dir)
    long_term = dict(values.get("long_term") or {})
    block = {"start": long_term.get("start", {}), "learned": long_term.get("learned", {})}
    summary = run_record(record, values, load_task(record.task_ref))
    return write_outputs(target, summary | {"long_term": block}, values)
