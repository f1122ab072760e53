"""The documentation node (the finaliser role, DJE in the case study): the final design's
required sections (`ima.meeting.final_design`), then a JSON specification validated against
the task's schema. Both are asked through the models layer's ask/parse/repair loop: an
answer that misses a section or fails validation is asked for once more, showing the
problem; what still misses is marked missing, never left silently empty."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import jsonschema
from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.core.state import FinalOutput, State, add_call_usage
from ima.meeting.agent_context import build_question_prompt
from ima.meeting.final_design import DESIGN_SECTIONS, design_schema, design_tokens, read_design
from ima.models import Models
from ima.models.structured import AnswerError, answers_in_json, ask_structured, prompt_parts
from ima.tasks import Task


def parse_spec(text: str, schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The JSON object in `text` and '' if it validates, else (None or object, the problem)."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    start, end = body.find("{"), body.rfind("}")
    try:
        spec = json.loads(body[start : end + 1] if start >= 0 else body)
    except json.JSONDecodeError as exc:
        return None, f"not parseable JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(spec, dict):
        return None, "the answer is JSON but not an object"
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(spec)
    )
    if error is None:
        return spec, ""
    where = "/".join(str(p) for p in error.absolute_path) or "top level"
    return spec, f"at {where}: {error.message}"


# Bounds a Markdown design and each specification answer (the data-pipeline schema fits well
# within); a design in JSON gets room for the fullest answer its schema allows.
DOCUMENT_TOKENS = 900
ATTEMPTS = 2  # an unusable answer is asked for once more


def make_documentation_node(task: Task, models: Models) -> Callable[..., dict[str, Any]]:
    role_id = task.schedule.finalizer
    schema_text = json.dumps(task.output_schema, indent=2)
    spec_schema = {"title": "specification", **task.output_schema}
    titles = {s.key: s.title for s in DESIGN_SECTIONS}

    def parse_design(text: str) -> Any:
        design = read_design(text)
        if design.missing:
            named = ", ".join(f'"{titles[key]}"' for key in design.missing)
            raise AnswerError(f"it leaves {named} missing or empty")
        return design

    def parse_valid_spec(text: str) -> Any:
        spec, error = parse_spec(text, task.output_schema)
        if error:
            raise AnswerError(error)
        return spec

    def documentation(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        model = models.agent(settings)
        ending = (
            "all agents accepted" if state["consensus"] else "turn cap reached without consensus"
        )
        in_json = answers_in_json(model)  # else Markdown headings, read the same way
        question, retry = prompt_parts(
            "documentation_json" if in_json else "documentation", ending=ending, finalizer=role_id
        )
        # The recent turns in the run's prompt layout; the specification opens the same way.
        prompt = build_question_prompt(task, role_id, state, settings, question)
        system, asked = (m.text for m in prompt.messages)
        meta = {"ima_role": role_id}
        written = ask_structured(
            model,
            design_schema(),
            asked,
            retry,
            parse_design,
            {**meta, "ima_kind": "documentation"},
            ATTEMPTS,
            system=system,
            max_tokens=design_tokens() if in_json else DOCUMENT_TOKENS,
        )
        if written.ok:
            design = written.value
        else:  # the complete sections of the last answer; the others are marked missing
            design = read_design(written.answers[-1], cut_off=written.cut_off)
        markdown = design.render()

        ask_spec, fix_spec = prompt_parts("specification", schema=schema_text, design=markdown)
        specified = ask_structured(
            model,
            spec_schema,
            ask_spec,
            fix_spec,
            parse_valid_spec,
            {**meta, "ima_kind": "specification"},
            ATTEMPTS,
            system=system,
            max_tokens=DOCUMENT_TOKENS,
        )
        spec = specified.value
        if not specified.ok:  # keep the invalid object, if any, for people to see
            spec, _ = parse_spec(specified.answers[-1], task.output_schema)

        error = specified.error
        status = "failed" if error else ("finalized" if state["consensus"] else "turn_cap")
        final = FinalOutput(
            markdown=markdown, spec=spec, valid=not error, error=error, missing=design.missing
        )
        usage = add_call_usage(written.usage, specified.usage)  # both are the documentation's calls
        return {"final": final, "status": status, "usage": {role_id: {"documentation": usage}}}

    return documentation
