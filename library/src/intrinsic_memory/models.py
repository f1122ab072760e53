"""Calling the memory's chat model: given as an object or a "provider:model" string,
answering in JSON as well as the backend can, its output capped, every call accounted, and
kept out of `stream_mode="messages"` (what a chat UI shows) while tracing still sees it.

JSON is asked for, in order: the backend's own JSON Schema mode
(`with_structured_output(schema, method="json_schema")`: Ollama `format`, llama.cpp
grammars, OpenAI structured outputs), else its tool calling (other providers' default of
`with_structured_output`), else in the prompt alone, the answer read tolerantly. The last
is logged once per model class: the update still works, only less reliably.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel
from typing_extensions import TypedDict

from intrinsic_memory.tokens import count_tokens

log = logging.getLogger("intrinsic_memory")

# Finish reasons that mean "stopped at the output cap" (llama.cpp, Ollama, OpenAI-style,
# Anthropic-style).
_CAP_REASONS = {"length", "max_tokens", "MAX_TOKENS"}
# The fields through which chat models cap their output (most providers; Ollama).
_CAP_FIELDS = ("max_tokens", "num_predict", "max_output_tokens")
_warned: set[type] = set()


class CallUsage(TypedDict):
    """What model calls cost: tokens in and out, calls, seconds."""

    input_tokens: int
    output_tokens: int
    calls: int
    seconds: float
    estimated_calls: int  # calls whose counts are tiktoken estimates, not the backend's
    cached_tokens: NotRequired[int]  # input tokens the backend served from its prompt cache


def zero_usage() -> CallUsage:
    """The usage of no call."""
    return CallUsage(
        input_tokens=0, output_tokens=0, calls=0, seconds=0.0, estimated_calls=0, cached_tokens=0
    )


def add_call_usage(a: CallUsage, b: CallUsage) -> CallUsage:
    """The usage of two calls together."""
    return {k: a.get(k, 0) + b.get(k, 0) for k in dict.fromkeys([*a, *b])}  # type: ignore[return-value,misc]


@dataclass(frozen=True)
class Reply:
    """A model's answer: its text, what it cost, and whether it stopped at the cap."""

    text: str
    usage: CallUsage
    cut_off: bool


def resolve_model(model: BaseChatModel | str) -> BaseChatModel:
    """A chat model from an object or a "provider:model" string (`init_chat_model`);
    ValueError in one line when the string cannot be loaded."""
    if isinstance(model, BaseChatModel):
        return model
    if not isinstance(model, str):
        raise TypeError(
            f"model must be a LangChain chat model or a 'provider:model' string, not "
            f"{type(model).__name__}"
        )
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(model)
    except ImportError as exc:
        raise ValueError(f"model {model!r} needs a package that is not installed: {exc}") from None
    except Exception as exc:  # providers raise many kinds for bad names or missing keys
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"cannot load model {model!r}: {reason}") from None


def limit_output(model: BaseChatModel, max_tokens: int) -> BaseChatModel:
    """A copy of `model` that stops after `max_tokens` output tokens, where the model has a
    field for it (small local models can ramble to their context limit)."""
    fields = type(model).model_fields
    for field in _CAP_FIELDS:
        if field in fields:
            return model.model_copy(update={field: max_tokens})
    return model


def _as_message(out: dict[str, Any]) -> AIMessage:
    """`with_structured_output(include_raw=True)` output -> a message with its usage."""
    raw, parsed = out.get("raw"), out.get("parsed")
    text = getattr(raw, "content", "")
    if isinstance(text, str) and text.strip():
        content = text  # the answer as written (read tolerantly, like any answer)
    elif isinstance(raw, AIMessage) and raw.tool_calls:
        content = json.dumps(raw.tool_calls[0]["args"], ensure_ascii=False)
    elif isinstance(parsed, BaseModel):
        content = parsed.model_dump_json()
    elif parsed is not None:
        content = json.dumps(parsed, ensure_ascii=False)
    else:
        content = str(text or "")
    usage = getattr(raw, "usage_metadata", None)
    meta = getattr(raw, "response_metadata", None) or {}
    return AIMessage(content=content, usage_metadata=usage, response_metadata=meta)


def _structured(model: BaseChatModel, schema: dict[str, Any]) -> Runnable | None:
    # Tool calling names the function after the schema's title: an untitled one is refused.
    titled = schema if "title" in schema else {"title": "answer", **schema}
    for options in ({"method": "json_schema"}, {}):
        try:
            return model.with_structured_output(titled, include_raw=True, **options)
        except (NotImplementedError, ValueError, TypeError):
            continue
    return None


def answers_in_json(model: BaseChatModel) -> bool:
    """Whether the backend itself answers in JSON (a JSON Schema mode or tool calling),
    rather than JSON being asked in the prompt and found in free text."""
    return _structured(model, {"type": "object", "properties": {}}) is not None


def json_model(model: BaseChatModel, schema: dict[str, Any], max_tokens: int) -> Runnable:
    """`model` set up to answer with JSON following `schema` as well as it supports: its own
    JSON Schema mode, else tool calling, else the prompt alone (the answer then read
    tolerantly, logged once per model class); its output capped at `max_tokens`. Call it
    with `invoke`, whose `Reply.text` is the JSON."""
    limited = limit_output(model, max_tokens)
    structured = _structured(limited, schema)
    if structured is not None:
        return structured | RunnableLambda(_as_message)
    if type(model) not in _warned:
        _warned.add(type(model))
        log.warning(
            "%s has no JSON Schema mode or tool calling: JSON is asked for in the prompt "
            "alone and the answer read tolerantly",
            type(model).__name__,
        )
    return limited


def _config(metadata: dict[str, Any], tags: Sequence[str], stream: bool) -> dict[str, Any]:
    # TAG_NOSTREAM: left out of stream_mode="messages", still seen by callbacks and tracing.
    return {"metadata": metadata, "tags": [*tags, *([] if stream else [TAG_NOSTREAM])]}


def _reply(reply: Any, messages: Sequence[BaseMessage], seconds: float, cap: int | None) -> Reply:
    text = reply.content if isinstance(reply.content, str) else str(reply.content)
    counts = getattr(reply, "usage_metadata", None)
    if counts:
        details = counts.get("input_token_details") or {}
        usage = CallUsage(
            input_tokens=counts["input_tokens"],
            output_tokens=counts["output_tokens"],
            calls=1,
            seconds=seconds,
            estimated_calls=0,
            cached_tokens=int(details.get("cache_read") or 0),
        )
    else:  # the backend reports nothing: estimate with tiktoken and say so
        usage = CallUsage(
            input_tokens=sum(count_tokens(str(m.content)) for m in messages),
            output_tokens=count_tokens(text),
            calls=1,
            seconds=seconds,
            estimated_calls=1,
            cached_tokens=0,
        )
    meta = getattr(reply, "response_metadata", None) or {}
    reason = meta.get("finish_reason") or meta.get("done_reason") or meta.get("stop_reason")
    at_cap = bool(cap) and not usage["estimated_calls"] and usage["output_tokens"] >= cap
    return Reply(text.strip(), usage, reason in _CAP_REASONS or at_cap)


def invoke(
    runnable: Runnable,
    messages: list[BaseMessage],
    *,
    metadata: dict[str, Any],
    tags: Sequence[str] = (),
    max_tokens: int | None = None,
    stream: bool = False,
) -> Reply:
    """One accounted call of `runnable` (a chat model, `limit_output` or `json_model`) on
    `messages`: its `Reply` (text, `CallUsage`, whether it was cut off). `metadata` and
    `tags` label the call for tracing; `max_tokens` is the cap the runnable was given (an
    answer of that length is cut off). Unless `stream`, the call is kept out of
    `stream_mode="messages"` (memory work is not conversation)."""
    started = time.perf_counter()
    reply = runnable.invoke(messages, config=_config(metadata, tags, stream))  # type: ignore[arg-type]
    return _reply(reply, messages, time.perf_counter() - started, max_tokens)


async def ainvoke(
    runnable: Runnable,
    messages: list[BaseMessage],
    *,
    metadata: dict[str, Any],
    tags: Sequence[str] = (),
    max_tokens: int | None = None,
    stream: bool = False,
) -> Reply:
    """`invoke` for async callers: the same arguments and `Reply`."""
    started = time.perf_counter()
    reply = await runnable.ainvoke(messages, config=_config(metadata, tags, stream))  # type: ignore[arg-type]
    return _reply(reply, messages, time.perf_counter() - started, max_tokens)
