"""Model-backend failures during a run, as one readable line (the run itself is resumable)."""

from __future__ import annotations

import httpx
from ollama import ResponseError

# Failures worth retrying with backoff: the network or the server hiccuped (Ollama answers
# 5xx while a model loads or its runner restarts; unknown models are caught before a run).
TRANSIENT = (httpx.TransportError, ConnectionError, ResponseError)


def describe(exc: BaseException) -> str | None:
    """A one-line explanation for known backend failures, None for anything else."""
    if isinstance(exc, httpx.TimeoutException):
        return "a model call timed out (raise IMA_CALL_TIMEOUT or use a faster model)"
    if isinstance(exc, httpx.TransportError | ConnectionError):
        return f"the model server is unreachable ({type(exc).__name__}: {exc}); check it is running"
    if isinstance(exc, ResponseError):
        return f"Ollama answered {exc.status_code}: {exc.error}"
    return None
