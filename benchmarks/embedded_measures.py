"""The figures of one `benchmarks.embedded_run` variant, computed by this checkout's code from
the run's record and its state as the variant's own code stored it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ima.models.weights import DEFAULT_MODEL_FILE

KINDS = ("agent_turn", "memory_update", "template_generation", "documentation")


def model_outputs(state: dict[str, Any]) -> Any:
    """Everything the model wrote in a run: turns, memory versions, design, specification."""
    final = state.get("final") or {}
    return (
        [t["content"] for t in state.get("transcript") or []],
        [e["text"] for e in state.get("memory_log") or []],
        final.get("markdown"),
        final.get("spec"),
    )


def answers_at_cap(record: dict[str, Any], log: list[dict[str, Any]]) -> tuple[int, int]:
    """Memory-update answers that stopped at the output cap, and memories stored cut off:
    code that records repairs stores a cut answer only after repairing it (its complete
    sections kept, the rest carried over); older code stored every answer as it came."""
    settings = record.get("settings") or {}
    cap = 2 * settings["max_memory_words"] if "max_memory_words" in settings else None
    at_cap = stored = 0
    for entry in log:
        if not entry.get("version"):
            continue
        output = (entry.get("usage") or {}).get("output_tokens", 0)
        cut = entry["cut_off"] if "cut_off" in entry else bool(cap and output >= cap)
        repaired = entry.get("repairs") or {}
        at_cap += cut
        stored += cut and not (repaired.get("carried_sections") or repaired.get("unusable"))
    return at_cap, stored


def evaluation_floor(record: dict[str, Any], state: dict[str, Any]) -> dict[str, int] | None:
    """Prompt tokens that no prefix cache can avoid for the contexts a shared-layout run built
    (None for other layouts): every agent turn's own parts (role, question, memory: they
    follow the newest turn), each turn's text and the task once; every memory update's
    previous memory and latest turn. A lower bound: no window slides, no block edges, and
    documentation not counted. Token counts are the token budget's."""
    from ima.core.tokens import count_tokens

    if (record.get("settings") or {}).get("prompt_layout") != "shared":
        return None
    transcript = state.get("transcript") or []
    shares = [t["context"] for t in transcript if "context" in t]  # a person's turn has none
    turns = max(s["task"] for s in shares) if shares else 0
    turns += sum(s["role"] + s["instruction"] + s["memory"] for s in shares)
    turns += sum(t["tokens"] for t in transcript[:-1])  # the last turn is never read
    updates, memory = 0, {}
    for entry in state.get("memory_log") or []:
        if entry.get("version"):
            latest = transcript[entry["turn"] - 1]["content"]
            updates += count_tokens(memory.get(entry["role"], "")) + count_tokens(latest)
        memory[entry["role"]] = entry["text"]
    return {"agent_turn": turns, "memory_update": updates}


def weights_of(record: dict[str, Any]) -> str:
    """The weights file a run loaded: as its record names it; records from before name
    none, and their `embedded` model was the bundled Q4_K_M file. "-": not a weights file."""
    settings = record.get("settings") or {}
    model = settings.get("model", "")
    if settings.get("weights_file"):
        return settings["weights_file"]
    if model.startswith("gguf:"):
        return Path(model.removeprefix("gguf:")).name
    if model == "embedded" and "weights" not in settings:
        return DEFAULT_MODEL_FILE
    return "-"


def short_name(weights: str) -> str:
    """A weights file's name without what the bundled model's files share."""
    return weights.removeprefix(DEFAULT_MODEL_FILE.rsplit("-", 1)[0] + "-")


def measure(result: dict[str, Any]) -> dict[str, Any]:
    """Every printed figure of one variant's run."""
    from ima.evals.coverage import evidence_coverage
    from ima.measures.content import content_metrics
    from ima.measures.in_view import in_view_at_last_turn
    from ima.measures.memory_quality import (
        memory_prompt_sources,
        repair_totals,
        retention_by_agent,
        retention_summary,
    )
    from ima.tasks import load_task

    record, state = result["record"], result["state"]
    task = load_task(record["task"]["id"])
    log = state.get("memory_log") or []
    templates = state.get("templates") or {}
    sources = memory_prompt_sources(templates.values(), result["memory_prompts"])
    retention = retention_summary(retention_by_agent(task, log, templates, sources))
    final = state.get("final") or {}
    design, spec = final.get("markdown", ""), final.get("spec")
    content = content_metrics(
        task,
        design=design,
        spec=spec,
        turns=state.get("transcript") or [],
        brief=state.get("brief"),
        templates=templates,
        memories=state.get("memories"),
    )
    at_cap, stored = answers_at_cap(record, log)
    quality = content.get("design") or {}
    hygiene = content.get("memory_hygiene") or {}
    in_view = in_view_at_last_turn(task, state)
    usage = record["usage"]
    figures = {
        "wall_seconds": record["wall_seconds"],
        "turns": record["turns"],
        "generated": usage["total"]["output_tokens"],
        "evaluated": usage["total"]["input_tokens"] - usage["total"].get("cached_tokens", 0),
        "cached": usage["total"].get("cached_tokens", 0),
        "memory_updates": sum(1 for e in log if e.get("version")),
        "answers_at_cap": at_cap,
        "stored_cut_off": stored,
        "repairs": repair_totals(log),
        "retention_end": _pct(retention["end"]),
        "retention_over_run": _pct(retention["over_run"]),
        "own_retention_end": _pct(retention.get("own_end")),
        "in_view_last_turn": _pct(in_view["mean"]),
        "memory_parroting": _pct(retention["parroting"]),
        "figures_in_design": len(content["grounding"]["in_design"]),
        "figures_in_spec": len(content["grounding"]["in_spec"]),
        "coverage": _pct(evidence_coverage(task, design, spec)["score"]),
        "parroting_design": _pct(content["parroting"]["design"]),
        "design_bytes": len(design.encode()),
        "junk_lines": len(quality.get("junk_lines", [])),
        "components_justified": quality.get("components_justified"),
        "requirements_addressed": len(quality["addressed"]) if "addressed" in quality else None,
        "requirements_open": len(quality["requirements_open"]) if "addressed" in quality else None,
        "unit_errors": len(quality["unit_errors"]) if "addressed" in quality else None,
        "figure_conflicts": len(content["grounding"]["conflicts"]),
        "memory_restated_pairs": hygiene.get("restated_pairs"),
        "memory_notes": hygiene.get("notes"),
        "memory_foreign_script": hygiene.get("foreign_script"),
        "consensus": int(record["status"] == "finalized"),
        "design_missing": final.get("missing", []),
        "status": record["status"],
        "handoff": record.get("handoff", ""),
        "weights": weights_of(record),
    }
    floor = evaluation_floor(record, state) or {}
    figures["floor"] = sum(floor.values()) if floor else None
    for kind in KINDS:
        figures[f"floor {kind}"] = floor.get(kind)
        u = usage["by_kind"].get(kind) or {}
        figures[f"generated {kind}"] = u.get("output_tokens", 0)
        figures[f"evaluated {kind}"] = u.get("input_tokens", 0) - u.get("cached_tokens", 0)
        figures[f"cached {kind}"] = u.get("cached_tokens", 0)
        figures[f"seconds {kind}"] = u.get("seconds", 0.0)
    return figures


def _pct(value: float | None) -> float | None:
    return None if value is None else 100 * value
