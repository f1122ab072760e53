"""Requirement coverage: the share of a task's key requirements the final design addresses.

Primary: a deterministic evidence check. Each requirement in the task file lists keyword
groups; the design (design.md plus the values of design.json) covers the requirement when
every group has at least one keyword in it. No model's taste is involved, and the report
says which keywords matched.

Secondary, optional (`ima eval --llm-coverage`): a yes/no question per requirement to the
judge model, with structured output, retried like the judge; a failed check is left out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from ima.core.state import add_call_usage, zero_usage
from ima.evals.judge import specification_section
from ima.measures.design_quality import own_text
from ima.models.structured import AnswerError, ask_structured, extract_json, prompt_parts
from ima.tasks import Task
from ima.tasks.evidence import matched_keywords, normalise


def _flatten(value: Any, key: str = "") -> list[str]:
    """Leaf values of a specification; numbers and booleans keep their key ("retention days:
    30"), strings are kept alone so the schema's own key names never count as evidence."""
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _flatten(v, str(k))]
    if isinstance(value, list):
        return [line for v in value for line in _flatten(v, key)]
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    label = key.replace("_", " ").strip()
    return [f"{label}: {json.dumps(value)}" if label else json.dumps(value)]


def design_text(markdown: str, specification: Any) -> str:
    """The text the evidence check reads, normalised (case, dashes, spaces): a structured
    design's own words (`ima.measures.design_quality.own_text`: never the requirements it restates),
    else the Markdown and the specification's values."""
    own = own_text(specification) if isinstance(specification, dict) else ""
    if own:
        return normalise(own)
    return normalise("\n".join([markdown, *_flatten(specification)]))


def evidence_coverage(task: Task, markdown: str, specification: Any) -> dict[str, Any]:
    """Per requirement: covered or not, and which keyword matched each group.

    `score` is covered / checked; requirements without evidence groups are `unchecked` and
    left out of the share (None when no requirement has evidence)."""
    text = design_text(markdown, specification)
    details: dict[str, Any] = {}
    for req in task.requirements:
        if not req.evidence:
            continue
        matched = matched_keywords(req, text)
        details[req.id] = {
            "covered": all(m is not None for m in matched),
            "matched": matched,
            "missing": [
                " | ".join(g) for g, m in zip(req.evidence, matched, strict=True) if m is None
            ],
        }
    covered = [rid for rid, d in details.items() if d["covered"]]
    return {
        "score": len(covered) / len(details) if details else None,
        "covered": covered,
        "checked": len(details),
        "total": len(task.requirements),
        "unchecked": [r.id for r in task.requirements if not r.evidence],
        "details": details,
    }


class RequirementCheck(BaseModel):
    evidence: str = Field(description="The part of the design that addresses it, or 'none'.")
    addressed: bool


def check_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "evidence": {"type": "string", "maxLength": 300},
            "addressed": {"type": "boolean"},
        },
        "required": ["evidence", "addressed"],
        "additionalProperties": False,
    }


_YES = ("yes", "true", "addressed", "covered")
_NO = ("no", "false", "not addressed", "not covered", "none")


def parse_check(text: str) -> RequirementCheck:
    """A yes/no verdict: JSON as asked, or a bare answer that starts with yes or no."""
    try:
        data = extract_json(text)
    except AnswerError:
        first = re.sub(r"[^a-z ]", "", text.strip().lower().split("\n", 1)[0])
        for words, value in ((_NO, False), (_YES, True)):  # "not addressed" before "addressed"
            if any(first.startswith(w) for w in words):
                return RequirementCheck(evidence=text.strip()[:300], addressed=value)
        raise
    if not isinstance(data, dict):
        raise AnswerError("the answer is JSON but not an object")
    data = {str(k).lower(): v for k, v in data.items()}
    value = next((data[k] for k in ("addressed", "covered", "answer", "met") if k in data), None)
    if isinstance(value, str) and value.strip().lower() in _YES + _NO:
        value = value.strip().lower() in _YES
    if not isinstance(value, bool):
        raise AnswerError('"addressed" must be true or false')
    evidence = data.get("evidence") or data.get("quote") or ""
    return RequirementCheck(evidence=str(evidence)[:300], addressed=value)


def llm_coverage(
    model: BaseChatModel,
    task: Task,
    markdown: str,
    specification: Any,
    subject: str,
    max_attempts: int = 3,
) -> dict[str, Any]:
    """Ask the model, one requirement at a time, whether the design addresses it."""
    details: dict[str, Any] = {}
    usage = zero_usage()
    schema = check_schema()
    for req in task.requirements:
        if not markdown.strip():
            details[req.id] = {"addressed": False, "evidence": "", "attempts": 0, "error": ""}
            continue
        prompt, retry = prompt_parts(
            "requirement_check",
            design=markdown.strip(),
            specification=specification_section(specification),
            requirement=f"{req.id}: {' '.join(req.text.split())}",
            schema=json.dumps(schema, indent=2),
        )
        outcome = ask_structured(
            model,
            schema,
            prompt,
            retry,
            parse_check,
            {
                "ima_kind": "requirement_check",
                "ima_role": "judge",
                "ima_subject": subject,
                "ima_requirement": req.id,
            },
            max_attempts,
        )
        usage = add_call_usage(usage, outcome.usage)
        check: RequirementCheck | None = outcome.value
        details[req.id] = {
            "addressed": check.addressed if check else None,
            "evidence": check.evidence if check else "",
            "attempts": outcome.attempts,
            "error": outcome.error,
        }
    decided = {rid: d for rid, d in details.items() if d["addressed"] is not None}
    covered = [rid for rid, d in decided.items() if d["addressed"]]
    return {
        "score": len(covered) / len(decided) if decided else None,
        "covered": covered,
        "checked": len(decided),
        "failed": sorted(set(details) - set(decided)),
        "total": len(task.requirements),
        "details": details,
        "usage": usage,
    }
