"""One accounted model call: text out, usage recorded (backend counts, or marked estimates),
and whether the backend stopped at its output cap."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from ima.core.state import CallUsage
from ima.core.tokens import count_tokens
from ima.models import limit_output
from ima.models.errors import TRANSIENT

# Finish reasons that mean "stopped at the output cap" (llama.cpp, Ollama, OpenAI-style,
# Anthropic-style).
_CAP_REASONS = {"length", "max_tokens", "MAX_TOKENS"}


@dataclass(frozen=True)
class Reply:
    """A model's answer: its text, what it cost, and whether it was cut off at the cap."""

    text: str
    usage: CallUsage
    cut_off: bool


def _prepare(
    model: BaseChatModel | Runnable, metadata: dict[str, Any], max_tokens: int | None
) -> tuple[Runnable, dict[str, Any]]:
    if max_tokens and isinstance(model, BaseChatModel):
        model = limit_output(model, max_tokens)
    retrying = model.with_retry(
        retry_if_exception_type=TRANSIENT, stop_after_attempt=3, wait_exponential_jitter=True
    )
    return retrying, {"metadata": metadata, "tags": [metadata["ima_kind"]]}


def _reply(
    reply: Any, messages: list[BaseMessage], seconds: float, max_tokens: int | None
) -> Reply:
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
            cached_tokens=int(details.get("cache_read") or 0),  # served from a prompt cache
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
    at_cap = (
        bool(max_tokens) and not usage["estimated_calls"] and usage["output_tokens"] >= max_tokens
    )
    return Reply(text.strip(), usage, reason in _CAP_REASONS or at_cap)


def invoke_model(
    model: BaseChatModel | Runnable,
    messages: list[BaseMessage],
    metadata: dict[str, Any],
    max_tokens: int | None = None,
) -> Reply:
    """Invoke `model` (retrying transient failures); `metadata` labels the call for tracing
    and must name its kind (`ima_kind`)."""
    runnable, config = _prepare(model, metadata, max_tokens)
    started = time.perf_counter()
    reply = runnable.invoke(messages, config=config)  # type: ignore[arg-type]
    return _reply(reply, messages, time.perf_counter() - started, max_tokens)


async def ainvoke_model(
    model: BaseChatModel | Runnable,
    messages: list[BaseMessage],
    metadata: dict[str, Any],
    max_tokens: int | None = None,
) -> Reply:
    """`invoke_model` for async callers."""
    runnable, config = _prepare(model, metadata, max_tokens)
    started = time.perf_counter()
    reply = await runnable.ainvoke(messages, config=config)  # type: ignore[arg-type]
    return _reply(reply, messages, time.perf_counter() - started, max_tokens)


def call_model(
    model: BaseChatModel | Runnable,
    messages: list[BaseMessage],
    metadata: dict[str, Any],
    max_tokens: int | None = None,
) -> tuple[str, CallUsage]:
    """Invoke `model`; return its text and usage."""
    reply = invoke_model(model, messages, metadata, max_tokens)
    return reply.text, reply.usage
