"""The LLM judge: the paper's five quality scores (1-10), each with a rationale.

The verdict comes through structured output (see `ima.models.structured`), at temperature 0
with a fixed seed. An unusable verdict is retried with the problem named; after the last
attempt it is recorded as failed, and failed verdicts are left out of the statistics.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, NotRequired, TypedDict

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from ima import prompts
from ima.core.state import CallUsage
from ima.measures.design_quality import is_structured
from ima.models.structured import AnswerError, ask_structured, extract_json, prompt_parts

METRICS = ("scalability", "reliability", "usability", "cost_effectiveness", "documentation")
LABELS = {
    "scalability": "Scalability",
    "reliability": "Reliability",
    "usability": "Usability",
    "cost_effectiveness": "Cost-effectiveness",
    "documentation": "Documentation",
}
RATIONALE_MAX_CHARS = 300  # bounds constrained output; longer text is cut, not rejected
MAX_ATTEMPTS = 3  # the first answer and two retries


class MetricScore(BaseModel):
    rationale: str = Field(description="One or two sentences naming strengths or gaps.")
    score: int = Field(ge=1, le=10, description="Integer score from 1 to 10.")


class JudgeVerdict(BaseModel):
    """The judge's answer: each criterion's rationale and 1-10 score."""

    scalability: MetricScore
    reliability: MetricScore
    usability: MetricScore
    cost_effectiveness: MetricScore
    documentation: MetricScore


class Verdict(TypedDict):
    """A judged design, as stored: usable ("ok") or not ("failed", with the reason)."""

    status: Literal["ok", "failed"]
    scores: dict[str, int]  # criterion -> 1..10 (empty when failed)
    rationales: dict[str, str]
    attempts: int
    error: str
    warnings: list[str]  # signs the verdict is not a real assessment (verdict_warnings)
    answers: list[str]  # the unusable answers of a failed verdict, cut to stay readable
    usage: CallUsage | None
    seconds: NotRequired[float]  # set by the caller that timed it
    model: NotRequired[str]
    seed: NotRequired[int]


def failed_verdict(error: str, attempts: int = 0) -> Verdict:
    """A verdict that could not be had (no design, a model error): left out of the scores."""
    return Verdict(
        status="failed",
        scores={},
        rationales={},
        attempts=attempts,
        error=error,
        warnings=[],
        answers=[],
        usage=None,
    )


def verdict_schema() -> dict[str, Any]:
    """JSON Schema of a verdict, inlined (no $ref) so every backend's grammar accepts it."""
    item = {
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "maxLength": RATIONALE_MAX_CHARS},
            "score": {"type": "integer", "minimum": 1, "maximum": 10},
        },
        "required": ["rationale", "score"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {m: item for m in METRICS},
        "required": list(METRICS),
        "additionalProperties": False,
    }


_ALIASES = {
    "cost": "cost_effectiveness",
    "costeffectiveness": "cost_effectiveness",
    "cost_efficiency": "cost_effectiveness",
    "cost_effective": "cost_effectiveness",
    "scalable": "scalability",
    "reliable": "reliability",
    "usable": "usability",
    "docs": "documentation",
}
_RATIONALE_KEYS = ("rationale", "reason", "reasoning", "justification", "explanation", "comment")
_SCORE_KEYS = ("score", "rating", "value", "grade")


def _norm(key: str) -> str:
    key = re.sub(r"[^a-z]+", "_", key.lower()).strip("_")
    return _ALIASES.get(key, key)


def _score(value: Any, metric: str) -> int:
    if isinstance(value, bool):
        raise AnswerError(f"the score of {metric} is not a number")
    if isinstance(value, int | float) and float(value).is_integer():
        number = int(value)
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.0+)?)\s*(?:/\s*10)?\s*", str(value))
        if not match:
            raise AnswerError(f"the score of {metric} is {value!r}, not an integer from 1 to 10")
        number = int(float(match.group(1)))
    if not 1 <= number <= 10:
        raise AnswerError(f"the score of {metric} is {number}, outside 1 to 10")
    return number


def parse_verdict(text: str) -> JudgeVerdict:
    """A verdict from a model's answer, tolerating fences, prose, key spellings and
    `"7/10"`-style scores; AnswerError names what is missing or wrong."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise AnswerError("the answer is JSON but not an object")
    data = {_norm(k): v for k, v in data.items()}
    if not set(METRICS) & set(data) and len(data) == 1:  # {"scores": {...}} or {"verdict": ...}
        (inner,) = data.values()
        if isinstance(inner, dict):
            data = {_norm(k): v for k, v in inner.items()}
    found: dict[str, MetricScore] = {}
    missing = []
    for metric in METRICS:
        entry = data.get(metric)
        if isinstance(entry, dict):
            entry = {_norm(k): v for k, v in entry.items()}
            score = next((entry[k] for k in _SCORE_KEYS if k in entry), None)
            rationale = next((entry[k] for k in _RATIONALE_KEYS if k in entry), None)
        else:  # flat: {"scalability_score": 7, "scalability_rationale": "..."}
            score = next(
                (data[f"{metric}_{k}"] for k in _SCORE_KEYS if f"{metric}_{k}" in data), None
            )
            rationale = next(
                (data[f"{metric}_{k}"] for k in _RATIONALE_KEYS if f"{metric}_{k}" in data), None
            )
            if score is None and entry is not None:
                score = entry
        if score is None:
            missing.append(metric)
            continue
        if not isinstance(rationale, str) or not rationale.strip():
            raise AnswerError(f"{metric} has no rationale")
        found[metric] = MetricScore(
            rationale=rationale.strip()[:RATIONALE_MAX_CHARS], score=_score(score, metric)
        )
    if missing:
        raise AnswerError(f"missing criteria: {', '.join(missing)}")
    return JudgeVerdict(**found)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{3,}", text.lower()))


def verdict_warnings(rationales: dict[str, str], prompt: str) -> list[str]:
    """Signs that a parsed verdict is not a real assessment (small models do this): the
    rationales restate the criteria's definitions from the prompt, or repeat each other.
    Such verdicts are still scored; the report counts them so readers can discount them."""
    warnings = []
    definitions = dict(re.findall(r"^- (\w+): (.+)$", prompt, re.MULTILINE))
    restated = []
    for metric, rationale in rationales.items():
        words, definition = _words(rationale), _words(definitions.get(metric, ""))
        if definition and words and len(words & definition) / len(words) >= 0.7:
            restated.append(metric)
    if restated:
        warnings.append(f"rationales restate the criterion definitions ({', '.join(restated)})")
    distinct = {" ".join(r.lower().split()) for r in rationales.values()}
    if len(rationales) > 2 and len(distinct) <= len(rationales) // 2:
        warnings.append("rationales repeat each other")
    return warnings


def specification_section(specification: Any) -> str:
    """The design's JSON specification as a section of a reader's prompt; empty for a
    structured design, which design.md renders whole (twice the same would not fit a small
    model's context)."""
    if specification is None or is_structured(specification):
        return ""
    spec = json.dumps(specification, indent=2)
    return prompts.render("specification", specification=spec) + "\n\n"


def judge_design(
    model: BaseChatModel,
    *,
    brief: str,
    design: str,
    specification: Any,
    subject: str,
    max_attempts: int = MAX_ATTEMPTS,
) -> Verdict:
    """Score one design: its verdict, JSON-ready, usage accounted under kind "judge"."""
    if not design.strip():
        return failed_verdict("the run produced no design to judge")
    schema = verdict_schema()
    prompt, retry = prompt_parts(
        "judge",
        brief=brief.strip(),
        design=design.strip(),
        specification=specification_section(specification),
        schema=json.dumps(schema, indent=2),
    )
    outcome = ask_structured(
        model,
        schema,
        prompt,
        retry,
        parse_verdict,
        {"ima_kind": "judge", "ima_role": "judge", "ima_subject": subject},
        max_attempts,
    )
    verdict: JudgeVerdict | None = outcome.value
    if verdict is None:
        failed = failed_verdict(outcome.error, outcome.attempts)
        return failed | {"answers": [a[:2000] for a in outcome.answers], "usage": outcome.usage}
    rationales = {m: getattr(verdict, m).rationale for m in METRICS}
    return Verdict(
        status="ok",
        scores={m: getattr(verdict, m).score for m in METRICS},
        rationales=rationales,
        attempts=outcome.attempts,
        error="",
        warnings=verdict_warnings(rationales, prompt),
        answers=[],
        usage=outcome.usage,
    )
