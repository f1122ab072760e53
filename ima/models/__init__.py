"""Model specs -> LangChain chat models.

Specs: `scripted[:key=value,...]` (deterministic offline test model), `embedded` (the
bundled llama.cpp model), `gguf:PATH`, `ollama:NAME`, or any `provider:model` that
LangChain's `init_chat_model` knows. Models are cached per process: an agent graph with
eight roles loads a local model once.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cache

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableBinding

from ima.core.errors import UserError
from ima.core.settings import DEFAULT_WEIGHTS, EmbeddedWeights, RunContext


def parse_options(text: str) -> dict[str, str]:
    options = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"bad model option {item!r}: write key=value, e.g. scripted:delay=0.5")
        options[key.strip()] = value.strip()
    return options


def _scripted(options: str, seed: int, temperature: float) -> BaseChatModel:
    from ima.models.scripted import ScriptedChatModel

    fields = ScriptedChatModel.model_fields
    opts = parse_options(options)
    known = {
        "delay",
        "reject_rounds",
        "rejecter",
        "bad_json",
        "bad_judge",
        "inject",
        "withhold_finalize",
    }
    unknown = sorted(set(opts) - known)
    if unknown:
        raise UserError(f"unknown scripted option {unknown[0]!r}: use {', '.join(sorted(known))}")
    try:
        values = {k: fields[k].annotation(v) for k, v in opts.items()}  # type: ignore[misc]
    except ValueError as exc:
        raise UserError(f"bad scripted option value: {exc}") from None
    return ScriptedChatModel(seed=seed, temperature=temperature, **values)


@dataclass(frozen=True)
class Models:
    """The chat models a graph's nodes call: objects given when the graph was built, else
    the models the run's settings name (`model`, `memory_model`: the CLI's and Studio's way).
    """

    agent_model: BaseChatModel | None = None
    memory_model: BaseChatModel | None = None

    def agent(self, settings: RunContext) -> BaseChatModel:
        """The model of agent turns, documentation and LLM-written templates."""
        return self.agent_model or agent_model(settings)

    def memory(self, settings: RunContext) -> BaseChatModel:
        """The model of memory updates: its own if given or named, else the agents'."""
        if self.memory_model is not None:
            return self.memory_model
        if settings.memory_model or self.agent_model is None:
            return memory_model(settings)
        return self.agent_model


def agent_model(settings: RunContext) -> BaseChatModel:
    """The model of agent turns, documentation and LLM-written templates."""
    return load_chat_model(
        settings.model,
        settings.seed,
        settings.temperature,
        settings.call_timeout,
        settings.top_p,
        settings.weights,
    )


def memory_model(settings: RunContext) -> BaseChatModel:
    """The model of memory updates: `memory_model` if set, else the agents' model."""
    spec = settings.memory_model or settings.model
    return load_chat_model(
        spec,
        settings.seed,
        settings.temperature,
        settings.call_timeout,
        settings.top_p,
        settings.weights,
    )


def weights_files(settings: RunContext) -> dict[str, str]:
    """The weights files a run's in-process models load, by name (a run's record keeps
    them, so figures from different weights are never mixed); none for other backends."""
    files = {"weights_file": _weights_file(agent_model(settings))}
    if settings.memory_model:
        files["memory_weights_file"] = _weights_file(memory_model(settings))
    return {key: name for key, name in files.items() if name}


def _weights_file(model: BaseChatModel) -> str:
    return os.path.basename(getattr(model, "model_path", "")) if is_backend(model, EMBEDDED) else ""


def load_chat_model(
    spec: str,
    seed: int = 0,
    temperature: float = 0.0,
    timeout: float = 600.0,
    top_p: float = 1.0,
    weights: EmbeddedWeights = DEFAULT_WEIGHTS,
) -> BaseChatModel:
    """A chat model for `spec`; raises UserError naming the problem for bad specs.
    `weights` chooses the embedded model's weights file (`embedded` only)."""
    # The server address is part of the key: a changed OLLAMA_HOST must not reuse a client.
    host = os.environ.get("OLLAMA_HOST", "")
    return _load(spec, seed, temperature, timeout, top_p, weights, host)


@cache
def _load(
    spec: str,
    seed: int,
    temperature: float,
    timeout: float,
    top_p: float,
    weights: EmbeddedWeights,
    _host: str,
) -> BaseChatModel:
    backend, _, rest = spec.strip().partition(":")
    if backend == "scripted":
        return _scripted(rest, seed, temperature)
    if backend in ("embedded", "gguf"):
        from ima.models.llamacpp import ModelSetupError, load_embedded

        if backend == "gguf" and not rest:
            raise UserError("gguf model path missing: write gguf:/path/to/model.gguf")
        try:
            return load_embedded(
                rest or None, weights, seed=seed, temperature=temperature, top_p=top_p
            )
        except ModelSetupError as exc:
            raise UserError(str(exc)) from None
    if backend == "ollama":
        from ima.models.ollama import chat_ollama

        return chat_ollama(rest, seed=seed, temperature=temperature, top_p=top_p, timeout=timeout)
    if not rest:
        raise UserError(
            f"unknown model spec {spec!r}: use embedded, gguf:PATH, ollama:NAME, scripted, "
            "or provider:model (e.g. openai:gpt-4o-mini)"
        )
    try:
        from langchain.chat_models import init_chat_model

        extra = {"top_p": top_p} if top_p < 1 else {}
        return init_chat_model(rest, model_provider=backend, temperature=temperature, **extra)
    except ImportError as exc:
        raise UserError(f"model {spec!r} needs a package that is not installed: {exc}") from None
    except Exception as exc:  # provider packages raise many kinds for bad names or keys
        raise UserError(f"cannot load model {spec!r}: {str(exc).splitlines()[0]}") from None


# Backends whose own options this module uses, as (module, class). A model can only be an
# instance of a class whose module is loaded, so recognising one imports nothing.
OLLAMA = ("langchain_ollama", "ChatOllama")
EMBEDDED = ("ima.models.llamacpp", "EmbeddedChatModel")
SCRIPTED = ("ima.models.scripted", "ScriptedChatModel")


def is_backend(model: Runnable, backend: tuple[str, str]) -> bool:
    """Whether `model`, also through `.bind(...)` wrappers, is an instance of `backend`'s
    class (or a subclass)."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    cls = getattr(sys.modules.get(backend[0]), backend[1], None)
    return isinstance(cls, type) and isinstance(model, cls)


def json_constrained(model: Runnable, schema: dict) -> Runnable:
    """`model` bound to emit JSON following `schema` where the backend can enforce it."""
    if is_backend(model, OLLAMA):
        return model.bind(format=schema)
    if is_backend(model, EMBEDDED):  # a llama.cpp grammar from the schema
        return model.bind(response_format={"type": "json_object", "schema": schema})
    return model


# In-process backends run one call at a time on the CPU: two model calls at once only slow
# each other (measured on 2 cores: 4 calls took 22.0 s at once vs 14.2 s in turn). Servers
# (Ollama, hosted APIs) serve several calls at once, so a memory update can run beside the
# next speaker's turn.
SEQUENTIAL_BACKENDS = ("embedded", "gguf", "scripted")


def parallel_calls(settings: RunContext) -> int:
    """Model calls a run may make at once by default: 1 in process, 2 on a server."""
    specs = {settings.model, settings.memory_model or settings.model}
    in_process = {spec.partition(":")[0] for spec in specs} & set(SEQUENTIAL_BACKENDS)
    return 1 if in_process else 2


def describe_model(model: BaseChatModel) -> str:
    """Backend, model and where it runs, for the header of every run."""
    if is_backend(model, OLLAMA):
        return f"Ollama · {getattr(model, 'model', '')} · at {getattr(model, 'base_url', '')}"
    if is_backend(model, EMBEDDED):
        path = getattr(model, "model_path", "")
        return f"llama.cpp embedded · {os.path.basename(path)} · in this process"
    if is_backend(model, SCRIPTED):
        return "scripted test model · deterministic · in this process"
    name = getattr(model, "model_name", None) or getattr(model, "model", "")
    return f"{type(model).__name__} · {name}"


def limit_output(model: BaseChatModel, max_tokens: int) -> BaseChatModel:
    """A copy of `model` that stops after `max_tokens` output tokens, where the backend
    supports it (small local models can ramble to their context limit)."""
    for backend, field in ((OLLAMA, "num_predict"), (EMBEDDED, "max_tokens")):
        if is_backend(model, backend):
            return model.model_copy(update={field: max_tokens})
    return model
