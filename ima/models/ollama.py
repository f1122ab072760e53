"""Ollama through langchain-ollama: host resolution, a pre-flight check, readable errors."""

from __future__ import annotations

import httpx
import ollama
from langchain_ollama import ChatOllama

from ima.core.errors import UserError


def check_ollama_model(name: str, timeout: float = 5.0) -> str:
    """Fail early, in one line, when the server is unreachable or lacks the model.

    Uses the ollama client itself, so OLLAMA_HOST is read exactly as ChatOllama reads it.
    Returns the server's address for the run header.
    """
    client = ollama.Client(timeout=timeout)
    host = str(client._client.base_url).rstrip("/")
    try:
        listed = client.list()
    except (ConnectionError, httpx.HTTPError, ollama.ResponseError) as exc:
        raise UserError(
            f"cannot reach Ollama at {host} ({type(exc).__name__}): start it with `ollama serve` "
            "or point OLLAMA_HOST at your server"
        ) from None
    models = [m.model or "" for m in listed.models]
    wanted = name if ":" in name else f"{name}:latest"
    if wanted not in models and name not in models:
        have = ", ".join(sorted(models)) or "none"
        raise UserError(
            f"Ollama at {host} has no model {name!r} (it has: {have}): run `ollama pull {name}`"
        )
    return host


def chat_ollama(
    name: str, *, seed: int, temperature: float, top_p: float = 1.0, timeout: float
) -> ChatOllama:
    if not name:
        raise UserError("ollama model name missing: write ollama:NAME, e.g. ollama:qwen2.5:7b")
    host = check_ollama_model(name)
    return ChatOllama(
        model=name,
        base_url=host,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        client_kwargs={"timeout": timeout},
    )
