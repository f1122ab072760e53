"""One accounted model call: text out, usage recorded (backend counts, or marked estimates)."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from ima.core.state import CallUsage
from ima.core.tokens import count_tokens
from ima.models import limit_output
from ima.models.errors import TRANSIENT


def call_model(
    model: BaseChatModel | Runnable,
    messages: list[BaseMessage],
    metadata: dict[str, Any],
    max_tokens: int | None = None,
) -> tuple[str, CallUsage]:
    """Invoke `model`; return its text and usage. `metadata` labels the call for tracing."""
    if max_tokens and isinstance(model, BaseChatModel):
        model = limit_output(model, max_tokens)
    started = time.perf_counter()
    retrying = model.with_retry(
        retry_if_exception_type=TRANSIENT, stop_after_attempt=3, wait_exponential_jitter=True
    )
    config = {"metadata": metadata, "tags": [metadata["ima_kind"]]}
    reply = retrying.invoke(messages, config=config)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
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
    return text.strip(), usage
