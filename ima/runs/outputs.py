"""What a finished run leaves on disk: the design (Markdown, JSON) and its run record."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ima.core.state import CallUsage


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # never a half-written file


def usage_totals(usage: dict[str, dict[str, CallUsage]]) -> dict[str, Any]:
    """Usage per agent, per call kind and overall, from the state's per-role-and-kind sums."""
    by_kind: dict[str, dict[str, float]] = {}
    by_agent: dict[str, dict[str, float]] = {}
    keys = ("input_tokens", "output_tokens", "calls", "seconds", "estimated_calls")
    for role, kinds in usage.items():
        for kind, u in kinds.items():
            for bucket in (by_kind.setdefault(kind, {}), by_agent.setdefault(role, {})):
                for k in keys:
                    bucket[k] = bucket.get(k, 0) + u[k]  # type: ignore[literal-required]
    total = {k: sum(b.get(k, 0) for b in by_kind.values()) for k in keys}
    return {"total": total, "by_kind": by_kind, "by_agent": by_agent, "by_agent_and_kind": usage}


def run_record(record: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The reproducibility record: settings, task version, usage, turns, time, status."""
    final = values.get("final") or {}
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
        "wall_seconds": round(record.wall_seconds, 3),
        "usage": usage_totals(values.get("usage", {})),
        "spec_valid": final.get("valid", False),
        "spec_error": final.get("error", ""),
    }


def write_outputs(out_dir: Path, record: dict[str, Any], values: dict[str, Any]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    final = values.get("final") or {}
    if final:
        _write_atomic(out_dir / "design.md", final.get("markdown", "") + "\n")
        _write_atomic(out_dir / "design.json", json.dumps(final.get("spec"), indent=2) + "\n")
    _write_atomic(out_dir / "run.json", json.dumps(record, indent=2) + "\n")
    return out_dir
