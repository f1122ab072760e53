"""Structured answers from any chat model, accounted, with tolerant parsing and retries.

The answer is asked as JSON following a schema, as the library's memory updates ask it:
the backend's JSON Schema mode where it has one (Ollama `format`, a llama.cpp grammar), else
its tool calling, else in text, the JSON found in it tolerantly. An answer that still cannot be used is retried with the
problem named, and after the last attempt the caller records a failure: never a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from intrinsic_memory import answers_in_json as answers_in_json
from intrinsic_memory import json_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable

from ima import prompts
from ima.core.state import CallUsage, add_call_usage, zero_usage
from ima.models.calls import invoke_model

RETRY_MARKER = "<!-- retry -->"
# llama.cpp's default completion limit is too short for a five-criteria verdict.
EMBEDDED_MAX_TOKENS = 1024

T = TypeVar("T")


class AnswerError(ValueError):
    """An answer that cannot be used, with the reason shown to the model on retry."""


def prompt_parts(name: str, **fields: object) -> tuple[str, Callable[[str], str]]:
    """The prompt file's main text, filled, and a filler for its retry part."""
    main, _, retry = prompts.load(name).partition(RETRY_MARKER)
    return main.strip().format_map(fields), lambda error: retry.strip().format_map(
        {**fields, "error": error}
    )


def structured_runnable(
    model: BaseChatModel, json_schema: dict[str, Any], max_tokens: int | None = None
) -> Runnable:
    """`model` set up to answer with JSON following the schema, as well as it supports (the
    library's `json_model`: the backend's JSON Schema mode, else tool calling, else plain
    text parsed tolerantly), capped at `max_tokens`."""
    return json_model(model, json_schema, max_tokens or EMBEDDED_MAX_TOKENS)


def extract_json(text: str) -> Any:
    """The JSON value in a model's answer: fenced, surrounded by prose, or with trailing commas."""
    body = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())
    if "{" not in body and "[" not in body:
        raise AnswerError("no JSON object found")
    candidates = [body]
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        candidates.append(body[start : end + 1])
    for candidate in list(candidates):
        candidates.append(re.sub(r",\s*([}\]])", r"\1", candidate))
    error = "no JSON object found"
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            error = f"not parseable JSON ({exc.msg} at character {exc.pos})"
    raise AnswerError(error)


@dataclass
class Outcome:
    """What a structured call produced: the parsed value, or the reason it failed."""

    value: Any = None
    attempts: int = 0
    error: str = ""
    answers: list[str] = field(default_factory=list)
    usage: CallUsage = field(default_factory=zero_usage)
    cut_off: bool = False  # the last answer stopped at the backend's output cap

    @property
    def ok(self) -> bool:
        return not self.error


def ask_structured(
    model: BaseChatModel,
    json_schema: dict[str, Any],
    prompt: str,
    retry_prompt: Callable[[str], str],
    parse: Callable[[str], T],
    metadata: dict[str, Any],
    max_attempts: int = 3,
    *,
    system: str = "",
    max_tokens: int | None = None,
    show_answer: bool = True,
) -> Outcome:
    """Ask, parse, and on an unusable answer ask again showing the problem.

    `system` opens the conversation as a system message; `max_tokens` caps each answer
    where the backend supports it. The retry shows the unusable answer before the problem
    (`show_answer`), or, when False, asks `retry_prompt(problem)` afresh: a small model at
    temperature 0 repeats an answer it is shown word for word. An answer the backend
    stopped at its output cap is incomplete, so it is unusable whatever it holds. Model failures (network, timeouts)
    propagate: they are not verdicts. Every attempt's tokens are accounted under
    `metadata["ima_kind"]`.
    """
    runnable = structured_runnable(model, json_schema, max_tokens)
    outcome = Outcome()
    opening: list[BaseMessage] = [SystemMessage(system)] if system else []
    messages: list[BaseMessage] = [*opening, HumanMessage(prompt)]
    for attempt in range(1, max_attempts + 1):
        reply = invoke_model(runnable, messages, {**metadata, "ima_attempt": attempt})
        text = reply.text
        outcome.attempts, outcome.usage = attempt, add_call_usage(outcome.usage, reply.usage)
        outcome.answers.append(text)
        outcome.cut_off = reply.cut_off
        try:
            if reply.cut_off:
                raise AnswerError("it stopped at the length limit before it was complete")
            outcome.value, outcome.error = parse(text), ""
            return outcome
        except AnswerError as exc:
            outcome.error = str(exc)
        shown: list[BaseMessage] = [HumanMessage(prompt), AIMessage(text)] if show_answer else []
        messages = [*opening, *shown, HumanMessage(retry_prompt(outcome.error))]
    return outcome


def ask_prompt_file(
    model: BaseChatModel,
    name: str,
    json_schema: dict[str, Any],
    parse: Callable[[str], T],
    metadata: dict[str, Any],
    max_attempts: int = 3,
    **fields: object,
) -> tuple[str, Outcome]:
    """`ask_structured` with the prompt file `name`, its fields filled and `{schema}` the
    JSON Schema shown to the model; the prompt asked, and the outcome."""
    prompt, retry = prompt_parts(name, **fields, schema=json.dumps(json_schema, indent=2))
    return prompt, ask_structured(model, json_schema, prompt, retry, parse, metadata, max_attempts)
