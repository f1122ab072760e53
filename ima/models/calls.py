"""One accounted model call of the app (agent turns, documentation, judges): the library's
accounting (backend counts or marked estimates, cut off at the cap or not), with transient
failures retried and the call labelled by its kind."""

from __future__ import annotations

from typing import Any

from intrinsic_memory import Reply, ainvoke, invoke, limit_output
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from ima.core.state import CallUsage
from ima.models.errors import TRANSIENT

__all__ = ["Reply", "ainvoke_model", "call_model", "invoke_model"]


def _prepare(model: BaseChatModel | Runnable, max_tokens: int | None) -> Runnable:
    if max_tokens and isinstance(model, BaseChatModel):
        model = limit_output(model, max_tokens)
    return model.with_retry(
        retry_if_exception_type=TRANSIENT, stop_after_attempt=3, wait_exponential_jitter=True
    )


def invoke_model(
    model: BaseChatModel | Runnable,
    messages: list[BaseMessage],
    metadata: dict[str, Any],
    max_tokens: int | None = None,
) -> Reply:
    """Invoke `model` (retrying transient failures); `metadata` labels the call for tracing
    and must name its kind (`ima_kind`). The call streams like any conversation turn."""
    return invoke(
        _prepare(model, max_tokens),
        messages,
        metadata=metadata,
        tags=[metadata["ima_kind"]],
        max_tokens=max_tokens,
        stream=True,
    )


async def ainvoke_model(
    model: BaseChatModel | Runnable,
    messages: list[BaseMessage],
    metadata: dict[str, Any],
    max_tokens: int | None = None,
) -> Reply:
    """`invoke_model` for async callers."""
    return await ainvoke(
        _prepare(model, max_tokens),
        messages,
        metadata=metadata,
        tags=[metadata["ima_kind"]],
        max_tokens=max_tokens,
        stream=True,
    )


def call_model(
    model: BaseChatModel | Runnable,
    messages: list[BaseMessage],
    metadata: dict[str, Any],
    max_tokens: int | None = None,
) -> tuple[str, CallUsage]:
    """Invoke `model`; return its text and usage."""
    reply = invoke_model(model, messages, metadata, max_tokens)
    return reply.text, reply.usage
