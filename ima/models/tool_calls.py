"""Tool calling and structured output for a model without native tool calls (the embedded
llama.cpp model): the tools are described in the system message and the answer is JSON
constrained by a grammar to either one call of a listed tool with valid arguments, or a
plain answer; a structured answer is JSON constrained by a grammar from its schema."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import ToolCall
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough

from ima import prompts


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("function", tool)


def answer_schema(tools: Sequence[dict[str, Any]], tool_choice: Any = None) -> dict[str, Any]:
    """The JSON Schema of an answer: a call of one of `tools`, or (unless `tool_choice`
    requires a tool) a plain answer."""
    functions = [_function(t) for t in tools]
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "any", "required", "none"):
        functions = [f for f in functions if f["name"] == tool_choice]
    calls = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": f["name"]},
                "args": f.get("parameters") or {"type": "object"},
            },
            "required": ["tool", "args"],
            "additionalProperties": False,
        }
        for f in functions
    ]
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    if tool_choice == "none":
        return answer
    required = tool_choice in ("any", "required") or (isinstance(tool_choice, str) and calls)
    return {"anyOf": calls if required and tool_choice != "auto" else [*calls, answer]}


def with_tools(messages: list[BaseMessage], tools: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """`messages` with the tools described in the system message, and earlier calls and
    their results written as the text the model answers with and reads."""
    described = prompts.render(
        "tool_use",
        tools="\n".join(
            json.dumps(
                {k: _function(t).get(k) for k in ("name", "description", "parameters")},
                ensure_ascii=False,
            )
            for t in tools
        ),
    )
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            call = message.tool_calls[0]
            out.append(AIMessage(json.dumps({"tool": call["name"], "args": call["args"]})))
        elif isinstance(message, ToolMessage):  # chat templates differ on tool roles
            out.append(HumanMessage(f"Result of {message.name or 'the tool'}: {message.text}"))
        else:
            out.append(message)
    if out and isinstance(out[0], SystemMessage):
        out[0] = SystemMessage(f"{out[0].text}\n\n{described}")
    else:
        out.insert(0, SystemMessage(described))
    return out


def read_answer(text: str) -> tuple[str, list[ToolCall]]:
    """The plain answer, or the tool call, in a constrained answer (text as is otherwise)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text, []
    if isinstance(value, dict) and "tool" in value:
        call = ToolCall(
            name=str(value["tool"]),
            args=value.get("args") or {},
            id=f"call_{uuid.uuid4().hex[:12]}",
        )
        return "", [call]
    if isinstance(value, dict) and "answer" in value:
        return str(value["answer"]), []
    return text, []


def json_answers(bound: Runnable, include_raw: bool) -> Runnable:
    """`with_structured_output`'s result for a model bound to answer in JSON: the parsed
    answer, or with `include_raw` the message, the parsed value (None when the answer does
    not parse) and the parsing error."""
    parse = JsonOutputParser()
    if not include_raw:
        return bound | parse
    parsed = RunnablePassthrough.assign(
        parsed=lambda out: parse.invoke(out["raw"]), parsing_error=lambda _: None
    )
    fallback = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=bound) | parsed.with_fallbacks([fallback], exception_key="parsing_error")
