"""The documentation node (the finaliser role, DJE in the case study): the final Markdown
design, then a JSON specification validated against the task's schema, repaired once."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import jsonschema
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ima import prompts
from ima.core.settings import RunContext
from ima.core.state import CallUsage, FinalOutput, State
from ima.core.state import add_usage as _add
from ima.method.agent_context import build_question_prompt
from ima.models import Models, json_constrained, limit_output
from ima.models.calls import call_model
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


DOCUMENT_TOKENS = 900  # bounds each documentation call; the specification fits well within


def make_documentation_node(task: Task, models: Models) -> Callable[..., dict[str, Any]]:
    role_id = task.schedule.finalizer
    schema_text = json.dumps(task.output_schema, indent=2)

    def documentation(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        ending = (
            "all agents accepted" if state["consensus"] else "turn cap reached without consensus"
        )
        question = prompts.render("documentation", ending=ending, finalizer=role_id)
        prompt = build_question_prompt(task, role_id, state, settings, question)
        system = prompt.messages[0].text  # the specification is asked with the same opening
        model = limit_output(models.agent(settings), DOCUMENT_TOKENS)
        usage: dict[str, dict[str, CallUsage]] = {}

        def call(runnable: Any, messages: list[Any], meta: dict[str, Any]) -> str:
            nonlocal usage
            text, call_usage = call_model(runnable, messages, {"ima_role": role_id, **meta})
            usage = _add(usage, {role_id: {"documentation": call_usage}})
            return text

        design = call(model, prompt.messages, {"ima_kind": "documentation"})
        spec_messages: list[Any] = [
            SystemMessage(system),
            HumanMessage(prompts.render("specification", schema=schema_text, design=design)),
        ]
        constrained = json_constrained(model, task.output_schema)
        answer = call(constrained, spec_messages, {"ima_kind": "specification", "ima_attempt": 1})
        spec, error = parse_spec(answer, task.output_schema)
        if error:  # one repair attempt, shown the validation problem
            spec_messages += [
                AIMessage(answer),
                HumanMessage(prompts.render("specification_repair", error=error, previous=answer)),
            ]
            answer = call(
                constrained, spec_messages, {"ima_kind": "specification", "ima_attempt": 2}
            )
            spec, error = parse_spec(answer, task.output_schema)

        status = "failed" if error else ("finalized" if state["consensus"] else "turn_cap")
        final = FinalOutput(markdown=design, spec=spec, valid=not error, error=error)
        return {"final": final, "status": status, "usage": usage}

    return documentation
