"""In-process chat model on llama.cpp's server (the prebuilt ``xllamacpp`` wheel).

One llama.cpp server per process and model file is shared by every agent. After each call
the server's cache is saved under the call's stream (agent and kind of call, from the
call's metadata); a new prompt starts from the saved state that shares the longest prefix
with it (usually that stream's previous call), so only the rest is evaluated.

Outputs depend only on the prompt, never on what ran before: llama.cpp's floats for a
token depend on the batch it was evaluated in, so reusing a cached prefix of arbitrary
length can flip a greedy near-tie. Prompts are therefore evaluated in ``BLOCK``-token
batches at positions that are multiples of ``BLOCK``, and reuse stops at such a boundary:
every prompt token is computed exactly as in a fresh evaluation.

One file of about 500 lines on purpose: the engine's block-aligned cache reuse and the chat
model whose calls rely on it (streams, saved states, token counts) change together.
"""

from __future__ import annotations

import atexit
import http.client
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.base import LangSmithParams, LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import InputTokenDetails, UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import Field

from ima.core.processes import process_alive
from ima.core.settings import DEFAULT_WEIGHTS, EmbeddedWeights
from ima.models.tool_calls import answer_schema, json_answers, read_answer, with_tools
from ima.models.weights import ModelSetupError, check_gguf, ensure_weights, install_hint

if TYPE_CHECKING:
    from langchain_core.callbacks import CallbackManagerForLLMRun

__all__ = ["EmbeddedChatModel", "LlamaCppError", "ModelSetupError", "load_embedded"]

log = logging.getLogger(__name__)

# Prompt batch size (n_ubatch: the tokens computed together) and the unit of prefix reuse.
BLOCK = 64
# Tokens handed to llama.cpp per decode call (n_batch): it computes them BLOCK at a time.
BATCH = BLOCK
# llama.cpp's flash attention: "auto" (its choice), "on" or "off".
FLASH_ATTENTION = "auto"
# Type of the KV cache's keys and values (a ggml type name: f16, q8_0).
KV_CACHE = "f16"
# Context size. An agent prompt is at most the token budget (2,048 by default) plus its
# answer; documentation prompts are longer.
CONTEXT = 4096
# Saved prompt states (files of ~12 KB per token, ~15 MB for an agent prompt): one per call
# stream, least recently used dropped first. The bundled task has 16 streams.
SAVED_STATES = 32
# Call metadata naming a call stream: an agent and a kind of call (turn, memory update), as
# the app labels its calls or, failing that, as the intrinsic-memory library labels its own.
STREAM_KEYS = (("ima_role", "agent"), ("ima_kind", "call_kind"))
# llguidance's JSON option (llama.cpp builds its grammars with llguidance).
COMPACT_JSON = {"whitespace_flexible": False}


class LlamaCppError(RuntimeError):
    """llama.cpp refused or failed a request (the message is the server's)."""


def _require_xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise ModelSetupError(f"xllamacpp is not importable ({exc}); {install_hint()}") from exc
    return xllamacpp


def _cpu_count() -> int:
    # Respect CPU affinity (containers, taskset) when the platform exposes it.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_DIRECTORY_PREFIX = "ima-llama-"
_STALE_SECONDS = 600


def _private_directory() -> str:
    """A new private temporary directory for the server's socket and saved states.

    First removes those left by processes that died without cleaning up (a killed run
    leaves a few hundred MB of saved states): the owner's PID is in the name, and a live
    engine touches its directory at every call.
    """
    cutoff = time.time() - _STALE_SECONDS
    for old in Path(tempfile.gettempdir()).glob(f"{_DIRECTORY_PREFIX}*-*"):
        pid = old.name.removeprefix(_DIRECTORY_PREFIX).split("-", 1)[0]
        try:
            stale = pid.isdigit() and not process_alive(int(pid)) and old.stat().st_mtime < cutoff
        except OSError:
            continue
        if stale:
            shutil.rmtree(old, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{_DIRECTORY_PREFIX}{os.getpid()}-")


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost")
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.socket_path)


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _reusable(cached: list[int], tokens: list[int]) -> int:
    """Tokens of a cache built from the prompt `cached` that a fresh evaluation of
    `tokens` would compute identically: whole blocks of the common prefix, leaving at
    least one token to evaluate (for fresh logits). Generated tokens never count: they
    were evaluated one by one, not in prompt blocks."""
    keep = min(_common_prefix(cached, tokens), len(tokens) - 1)
    return keep - keep % BLOCK


def _check(reply: dict[str, Any]) -> dict[str, Any]:
    if "choices" in reply:
        return reply
    error = reply.get("error", reply)
    raise LlamaCppError(
        f"llama.cpp refused the request ({error.get('code', '?')}): {error.get('message', error)}"
    )


class _Engine:
    """A llama.cpp server in this process, what its slot holds, and saved slot states."""

    def __init__(self, model_path: str, n_ctx: int, n_threads: int) -> None:
        xllamacpp = _require_xllamacpp()
        # The server always serves HTTP too: on a socket in a private directory, so it
        # takes no port and no other user can reach it. It also holds the saved states.
        self.directory = _private_directory()
        params = xllamacpp.CommonParams()
        params.model.path = model_path
        params.hostnames = [os.path.join(self.directory, "llama.sock")]
        # One slot: requests run one at a time anyway (see `lock`), and saved states give
        # each call stream its own cache at the size it uses (a slot costs n_ctx x 12 KB).
        params.n_parallel = 1
        params.n_ctx = n_ctx
        params.n_batch, params.n_ubatch = BATCH, BLOCK
        flash = {"auto": "AUTO", "on": "ENABLED", "off": "DISABLED"}[FLASH_ATTENTION]
        attention = xllamacpp.llama_flash_attn_type
        params.flash_attn_type = getattr(attention, f"LLAMA_FLASH_ATTN_TYPE_{flash}")
        kv_type = getattr(xllamacpp.ggml_type, f"GGML_TYPE_{KV_CACHE.upper()}")
        params.cache_type_k = params.cache_type_v = kv_type
        params.cache_ram_mib = 0  # no state swapping behind our back: the slot holds what we sent
        params.slot_save_path = self.directory + os.sep
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        params.warmup = False
        params.verbosity = 0
        try:
            self.server = xllamacpp.Server(params)
        except RuntimeError as exc:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise ModelSetupError(
                f"llama.cpp failed to load {model_path} ({exc}); the file may be truncated "
                "or of an unsupported architecture"
            ) from exc
        self.socket_path = params.hostnames[0]
        # One request at a time: concurrent requests would be decoded in shared batches,
        # which changes their floats (and so their outputs), and on a CPU they are not faster.
        self.lock = threading.Lock()
        self.current: list[int] = []  # prompt tokens behind the slot's cache
        # Saved states, least recently used first: key -> (file name, prompt tokens).
        self.saved: OrderedDict[str, tuple[str, list[int]]] = OrderedDict()
        self.files = 0

    def close(self) -> None:
        self.server = None  # stops the server's threads
        shutil.rmtree(self.directory, ignore_errors=True)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        # A connection per request (a local socket: microseconds), so an idle keep-alive
        # connection closed by the server can never fail a call.
        connection = _UnixHTTPConnection(self.socket_path)
        try:
            headers = {"Content-Type": "application/json"}
            connection.request("POST", path, json.dumps(body), headers)
            response = connection.getresponse()
            data = json.loads(response.read())
        finally:
            connection.close()
        if response.status != 200:
            error = data.get("error", data)
            raise LlamaCppError(f"llama.cpp {path} failed: {error.get('message', error)}")
        return data

    def tokenize(self, messages: list[dict[str, Any]]) -> list[int]:
        """The prompt tokens of `messages` under the model's chat template."""
        prompt = self._post("/apply-template", {"messages": messages})["prompt"]
        body = {"content": prompt, "add_special": True, "parse_special": True}
        return self._post("/tokenize", body)["tokens"]

    def _restore_best(self, tokens: list[int]) -> None:
        """Load the saved state sharing the most reusable tokens with `tokens`, if it
        beats what the slot holds."""
        best, best_keep = None, _reusable(self.current, tokens)
        for key, (_, saved) in self.saved.items():
            keep = _reusable(saved, tokens)
            if keep > best_keep:
                best, best_keep = key, keep
        if best is None:
            return
        name, saved = self.saved[best]
        self.saved.move_to_end(best)
        self.current = []  # unknown if the restore fails
        try:
            self._post("/slots/0?action=restore", {"filename": name})
        except (LlamaCppError, OSError) as exc:  # costs speed, not the call
            log.warning("cannot restore a saved llama.cpp prompt state (%s)", exc)
            del self.saved[best]
            return
        self.current = saved

    def _save(self, key: str) -> None:
        if key in self.saved:
            name = self.saved.pop(key)[0]
        else:
            if len(self.saved) >= SAVED_STATES:
                Path(self.directory, self.saved.popitem(last=False)[1][0]).unlink(missing_ok=True)
            self.files += 1
            name = f"state-{self.files}.bin"
        try:
            os.utime(self.directory)  # in use: see _private_directory
            self._post("/slots/0?action=save", {"filename": name})
        except (LlamaCppError, OSError) as exc:  # a full disk costs speed, not the run
            log.warning("cannot save the llama.cpp prompt state (%s); continuing without", exc)
            Path(self.directory, name).unlink(missing_ok=True)
            return
        self.saved[key] = (name, self.current)

    def _cut_to_block(self, tokens: list[int]) -> int:
        """Cut the slot's cache back to a block boundary; return how many tokens it keeps."""
        previous = self.current
        common = _common_prefix(previous, tokens)
        keep = _reusable(previous, tokens)
        if keep == 0:
            return 0
        if keep == common and keep < len(previous):
            return keep  # the cache already diverges right at the boundary
        # Evaluate one different token at position `keep`: the server drops everything
        # after the common prefix, so the real request resumes exactly at the boundary.
        for filler in (0, 1, 2):
            if filler == tokens[keep] or (keep < len(previous) and filler == previous[keep]):
                continue
            probe = {"prompt": [*tokens[:keep], filler], "max_tokens": 1, "id_slot": 0}
            cached = _check(self.server.handle_completions(probe))["timings"]["cache_n"]
            if cached == keep:
                return keep
        return 0  # unexpected cache contents: evaluate from scratch

    def complete(
        self, messages: list[dict[str, Any]], params: dict[str, Any], key: str | None
    ) -> dict[str, Any]:
        """Run one completion and keep its state under `key` (None: not kept)."""
        with self.lock:
            tokens = self.tokenize(messages)
            self._restore_best(tokens)
            keep = self._cut_to_block(tokens)
            request = {**params, "prompt": tokens, "id_slot": 0, "cache_prompt": keep > 0}
            self.current = []  # unknown until the request succeeded
            reply = _check(self.server.handle_completions(request))
            self.current = tokens
            if reply["timings"]["cache_n"] != keep:
                raise LlamaCppError(
                    f"llama.cpp reused {reply['timings']['cache_n']} cached tokens, expected {keep}"
                )
            if key is not None:
                self._save(key)
        return reply


_ENGINES: dict[tuple[str, int], _Engine] = {}
_ENGINES_LOCK = threading.Lock()


@atexit.register
def _close_engines() -> None:
    # Stop the servers while the interpreter is whole, and remove their socket directories.
    with _ENGINES_LOCK:
        for engine in _ENGINES.values():
            if engine.lock.acquire(timeout=5):  # a daemon thread may still be mid-call
                engine.close()
        _ENGINES.clear()


def _engine(model_path: str, n_ctx: int, n_threads: int | None) -> _Engine:
    # Loading costs ~0.6 GB RSS and a second or two: one server per model file and
    # context size in the process, shared by all agents. n_threads of the first loader wins.
    key = (str(Path(model_path).resolve()), n_ctx)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            _require_xllamacpp()
            check_gguf(Path(key[0]))
            engine = _ENGINES[key] = _Engine(key[0], n_ctx, n_threads or _cpu_count())
        return engine


def _to_message(message: BaseMessage) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        role = "system"
    elif isinstance(message, HumanMessage):
        role = "user"
    elif isinstance(message, AIMessage):
        role = "assistant"
    elif isinstance(message, ToolMessage):
        return {"role": "tool", "content": message.text, "tool_call_id": message.tool_call_id}
    elif isinstance(message, ChatMessage):
        role = message.role
    else:
        raise ValueError(f"unsupported message type for the embedded model: {message.type}")
    return {"role": role, "content": message.text}


def _completion_params(params: dict[str, Any]) -> dict[str, Any]:
    """OpenAI chat request options -> llama.cpp completion options."""
    params = dict(params)
    response_format = params.pop("response_format", None)
    if response_format:
        kind = response_format.get("type")
        if kind == "json_object":  # any JSON object unless a schema narrows it
            params["json_schema"] = response_format.get("schema") or {"type": "object"}
        elif kind == "json_schema":
            params["json_schema"] = (response_format.get("json_schema") or {}).get("schema", {})
        elif kind != "text":
            raise ValueError(f"unsupported response_format type {kind!r}")
        if "json_schema" in params:
            # No whitespace between JSON tokens: a pretty-printed answer costs a generated
            # token per line break and indent, and says nothing more.
            params["json_schema"] = {"x-guidance": COMPACT_JSON, **params["json_schema"]}
    return params


class EmbeddedChatModel(BaseChatModel):
    """Chat model running a GGUF file in-process on llama.cpp's server.

    Extra call kwargs (``response_format``, ``top_p``, ``temperature``, ``seed``...) go
    into the request, so ``model.bind(response_format={"type": "json_object", "schema":
    {...}})`` yields JSON constrained by a grammar built from the schema.
    """

    model_path: str
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 400
    n_ctx: int = CONTEXT
    seed: int = 0
    # Small models loop without it; 1.1 is Ollama's default too.
    repeat_penalty: float = 1.1
    n_threads: int | None = Field(default_factory=_cpu_count)

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-embedded"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "n_ctx": self.n_ctx,
            "seed": self.seed,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "llama-cpp"
        params["ls_model_name"] = Path(self.model_path).name
        return params

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Tool calling through a grammar: the answer is one call of a listed tool with
        valid arguments, or a plain answer (see ima/models/tool_calls.py)."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(ima_tools=formatted, ima_tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: str = "json_schema",
        **kwargs: Any,
    ) -> Runnable:
        """JSON Schema mode (the default): the answer is constrained by a llama.cpp grammar
        built from `schema`; `method="function_calling"` goes through `bind_tools`."""
        if method != "json_schema":
            return super().with_structured_output(schema, include_raw=include_raw, **kwargs)
        shape = schema if isinstance(schema, dict) else convert_to_json_schema(schema)
        # A title or description names the schema; a grammar needs neither.
        grammar = {k: v for k, v in shape.items() if k not in ("title", "description")}
        bound = self.bind(response_format={"type": "json_object", "schema": grammar}, **kwargs)
        return json_answers(bound, include_raw)

    def load(self) -> None:
        """Load the weights now instead of at the first call (surfaces errors early)."""
        _engine(self.model_path, self.n_ctx, self.n_threads)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        engine = _engine(self.model_path, self.n_ctx, self.n_threads)
        tools = kwargs.pop("ima_tools", None)
        tool_choice = kwargs.pop("ima_tool_choice", None)
        if tools:
            messages = with_tools(messages, tools)
            schema = answer_schema(tools, tool_choice)
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            # Always pass the seed: sampled (temperature > 0) output stays reproducible.
            "seed": self.seed,
            "repeat_penalty": self.repeat_penalty,
            **kwargs,
        }
        if stop:
            params["stop"] = stop
        labels = run_manager.metadata if run_manager else {}
        stream = [
            str(labels.get(app, labels.get(library)))
            for app, library in STREAM_KEYS
            if app in labels or library in labels
        ]
        reply = engine.complete(
            [_to_message(m) for m in messages],
            _completion_params(params),
            "/".join(stream) if stream else None,
        )
        choice = reply["choices"][0]
        usage = reply.get("usage") or {}
        metadata: dict[str, Any] = {
            "model_name": Path(self.model_path).name,
            "finish_reason": choice.get("finish_reason"),
            "timings": reply.get("timings", {}),
        }
        if choice.get("logprobs"):  # asked for with logprobs=N
            metadata["logprobs"] = choice["logprobs"]
        text = choice.get("text") or ""
        content, tool_calls = read_answer(text) if tools else (text, [])
        message = AIMessage(
            content=content,
            tool_calls=tool_calls,
            usage_metadata=UsageMetadata(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                total_tokens=usage.get("total_tokens", 0),
                input_token_details=InputTokenDetails(cache_read=reply["timings"]["cache_n"]),
            ),
            response_metadata=metadata,
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def load_embedded(
    path: str | None = None, weights: EmbeddedWeights = DEFAULT_WEIGHTS, **kwargs: Any
) -> EmbeddedChatModel:
    """Build an embedded chat model; ``path=None`` means the bundled model, with the
    `weights` the run chose (made on first use: see ima/models/weights.py).

    Loads the weights eagerly so a bad file or a missing extra fails here, with a
    ModelSetupError, rather than at the first agent turn.
    """
    _require_xllamacpp()
    if path is None:
        model_path = ensure_weights(weights)
    else:
        model_path = Path(path).expanduser()
        check_gguf(model_path)
    model = EmbeddedChatModel(model_path=str(model_path), **kwargs)
    model.load()
    return model
