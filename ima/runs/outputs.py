"""What a finished run leaves on disk: the design (Markdown, JSON) and its run record."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.files import write_text_atomic
from ima.core.state import CallUsage
from ima.measures.in_view import in_view_at_last_turn
from ima.measures.memory_quality import repair_totals
from ima.tasks import Task


class OutputsNotWritten(Exception):
    """A run ended but its files could not be written; its checkpoint still holds them."""


def check_output_dir(path: Path) -> None:
    """Fail before a run starts when its outputs could not be written to `path`. Nothing is
    created: a probe file in the nearest folder that exists is written and removed."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(
            f"cannot write outputs to {path}: {existing} is a file, not a folder "
            "(choose another --out)"
        )
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise UserError(
            f"cannot write outputs to {path}: {exc.strerror or exc} (choose another --out)"
        ) from None


def usage_totals(usage: dict[str, dict[str, CallUsage]]) -> dict[str, Any]:
    """Usage per agent, per call kind and overall, from the state's per-role-and-kind sums."""
    by_kind: dict[str, dict[str, float]] = {}
    by_agent: dict[str, dict[str, float]] = {}
    keys = ("input_tokens", "output_tokens", "calls", "seconds", "estimated_calls", "cached_tokens")
    for role, kinds in usage.items():
        for kind, u in kinds.items():
            for bucket in (by_kind.setdefault(kind, {}), by_agent.setdefault(role, {})):
                for k in keys:  # cached_tokens: absent in runs made before it was recorded
                    bucket[k] = bucket.get(k, 0) + u.get(k, 0)  # type: ignore[misc]
    total = {k: sum(b.get(k, 0) for b in by_kind.values()) for k in keys}
    return {"total": total, "by_kind": by_kind, "by_agent": by_agent, "by_agent_and_kind": usage}


def design_checks(spec: Any) -> dict[str, Any] | None:
    """What the design leaves open and what the brief contradicts (None: no structured
    design, e.g. a run that has not finished)."""
    if not isinstance(spec, dict) or "requirements" not in spec:
        return None
    return {
        "open_components": [c["id"] for c in spec.get("components", []) if c["status"] == "open"],
        "open_requirements": [r["id"] for r in spec["requirements"] if r["status"] == "open"],
        "conflicts": spec.get("conflicts", []),
        "within_budget": (spec.get("costs") or {}).get("within_budget"),
    }


def run_record(record: Any, values: dict[str, Any], task: Task | None = None) -> dict[str, Any]:
    """The reproducibility record: settings, task version, usage, turns, time, status; with
    the run's `task`, what each agent's last turn had in view of its own key items."""
    final = values.get("final") or {}
    seen = {"in_view_last_turn": in_view_at_last_turn(task, values)} if task else {}
    return {
        "thread_id": record.thread_id,
        "status": values.get("status", record.status),
        "task": {
            "id": record.task_id,
            "version": record.task_version,
            "fingerprint": record.task_fingerprint,
        },
        "memory_mode": record.memory_mode,
        "settings": record.settings,
        "turns": len(values.get("transcript", [])),
        # how documentation started: the facilitator's FINALIZE, or the fallback after it
        # was asked twice without one, or the turn cap
        "handoff": values.get("handoff", ""),
        "wall_seconds": round(record.wall_seconds, 3),
        "usage": usage_totals(values.get("usage", {})),
        # parts of the design the documentation step could not fill, the components and
        # requirements it left open, and the figures the brief contradicts
        "design_missing": final.get("missing", []),
        "design_checks": design_checks(final.get("spec")),
        # what memory updates' answers needed before they were stored (see ima show)
        "memory_repairs": repair_totals(values.get("memory_log") or []),
        # per agent, the share of its own key items its last prompt held besides the brief
        **seen,
    }


def write_outputs(out_dir: Path, record: dict[str, Any], values: dict[str, Any]) -> Path:
    """design.md, design.json (when the run has a final design) and run.json, each written
    atomically; OutputsNotWritten names the folder and the reason."""
    final = values.get("final") or {}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        if final:
            write_text_atomic(out_dir / "design.md", final.get("markdown", "") + "\n")
            spec = json.dumps(final.get("spec"), indent=2) + "\n"
            write_text_atomic(out_dir / "design.json", spec)
        write_text_atomic(out_dir / "run.json", json.dumps(record, indent=2) + "\n")
    except OSError as exc:
        raise OutputsNotWritten(f"cannot write to {out_dir}: {exc.strerror or exc}") from None
    return out_dir


def outputs_missing(out_dir: Path, values: dict[str, Any]) -> bool:
    names = ["run.json"] + (["design.md", "design.json"] if values.get("final") else [])
    return not all((out_dir / name).exists() for name in names)
