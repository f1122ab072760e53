"""Run settings: the graph's context schema (LangGraph `context_schema`).

Each field has a description (shown by LangGraph Studio as a form) and an environment
variable fallback, so the CLI, the server and tests share one typed settings object.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ima.errors import UserError
from ima.longterm.namespaces import default_principal

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

TemplateKind = Literal["generic", "manual", "llm"]
MemoryMode = Literal["intrinsic", "none"]
DEFAULT_MODEL = "embedded"


CONFIG_FILE = "ima.toml"
_FIELD_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool}


@cache
def config_file() -> dict[str, Any]:
    """Settings from $IMA_CONFIG or ./ima.toml (keys are RunContext field names)."""
    path = Path(os.environ.get("IMA_CONFIG") or CONFIG_FILE)
    if not path.exists():
        if "IMA_CONFIG" in os.environ:
            raise UserError(f"config file {path} (IMA_CONFIG) does not exist")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"cannot read config file {path}: {exc}") from None
    known = {f.name for f in fields(RunContext)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UserError(
            f"config file {path}: unknown setting {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )
    return data


def _env(name: str, default: Any) -> Any:
    """Environment variable, else the config file, else the default."""
    raw = os.environ.get(name)
    if raw in (None, ""):
        raw = config_file().get(name.removeprefix("IMA_").lower(), default)
    if isinstance(default, bool) and isinstance(raw, str):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    try:
        return type(default)(raw)
    except ValueError:
        raise UserError(f"setting {name}={raw!r} is not a valid {type(default).__name__}") from None


@dataclass(kw_only=True)
class RunContext:
    model: str = field(
        default_factory=lambda: _env("IMA_MODEL", DEFAULT_MODEL),
        metadata={
            "description": "Model for agent turns: embedded, gguf:PATH, ollama:NAME, "
            "scripted, or any LangChain provider:model (env IMA_MODEL)."
        },
    )
    memory_model: str = field(
        default_factory=lambda: _env("IMA_MEMORY_MODEL", ""),
        metadata={"description": "Model for memory updates; empty means the agents' model."},
    )
    template: TemplateKind = field(
        default_factory=lambda: _env("IMA_TEMPLATE", "generic"),
        metadata={"description": "Memory template: generic, manual (from the task) or llm."},
    )
    token_budget: int = field(
        default_factory=lambda: _env("IMA_TOKEN_BUDGET", 2048),
        metadata={"description": "Maximum input tokens of each agent's context."},
    )
    turn_cap: int = field(
        default_factory=lambda: _env("IMA_TURN_CAP", 60),
        metadata={"description": "Maximum conversation turns before the run ends."},
    )
    seed: int = field(
        default_factory=lambda: _env("IMA_SEED", 0),
        metadata={"description": "Random seed passed to the model, for reproducible runs."},
    )
    max_turn_words: int = field(
        default_factory=lambda: _env("IMA_MAX_TURN_WORDS", 80),
        metadata={"description": "Word limit asked of each agent turn."},
    )
    max_memory_words: int = field(
        default_factory=lambda: _env("IMA_MAX_MEMORY_WORDS", 100),
        metadata={"description": "Word limit asked of each memory rewrite."},
    )
    review: bool = field(
        default_factory=lambda: _env("IMA_REVIEW", False),
        metadata={
            "description": "Pause for a human decision before FINALIZE: approve the agreed "
            "design, or send feedback back into the discussion (env IMA_REVIEW)."
        },
    )
    call_timeout: float = field(
        default_factory=lambda: _env("IMA_CALL_TIMEOUT", 600.0),
        metadata={"description": "Seconds before a model call is abandoned (then retried)."},
    )

    long_term: bool = field(
        default_factory=lambda: _env("IMA_LONG_TERM", True),
        metadata={
            "description": "Long-term memory across runs: start each agent with its mature "
            "lessons from earlier runs and learn from this one (env IMA_LONG_TERM; "
            "--no-long-term turns it off)."
        },
    )
    principal: str = field(
        default_factory=lambda: _env("IMA_PRINCIPAL", "") or default_principal(),
        metadata={
            "description": "Whose long-term memory the run uses: a user or project id "
            "(letters, digits, - and _); default the OS user (env IMA_PRINCIPAL)."
        },
    )
    memory_store: str = field(
        default_factory=lambda: _env("IMA_MEMORY_STORE", ""),
        metadata={
            "description": "SQLite file of long-term memory; empty: memory.sqlite beside the "
            "runs database (env IMA_MEMORY_STORE)."
        },
    )
    long_term_budget: int = field(
        default_factory=lambda: _env("IMA_LONG_TERM_BUDGET", 300),
        metadata={"description": "Tokens of long-term lessons each agent starts with, at most."},
    )
    long_term_policy: str = field(
        default_factory=lambda: _env("IMA_LONG_TERM_POLICY", ""),
        metadata={
            "description": "TOML file with maturation, decay and retention thresholds per role "
            "(env IMA_LONG_TERM_POLICY); empty: the defaults."
        },
    )

    def __post_init__(self) -> None:
        # Settings also arrive as JSON from Studio and the SDK: coerce and check them here,
        # so every entry point gets the same one-line errors.
        for f in fields(self):
            value, kind = getattr(self, f.name), _FIELD_TYPES.get(str(f.type), str)
            if kind is bool and isinstance(value, str):
                value = value.strip().lower() in ("1", "true", "yes", "on")
            try:
                setattr(self, f.name, kind(value))
            except (TypeError, ValueError):
                raise UserError(
                    f"setting {f.name}={value!r} is not a valid {kind.__name__}"
                ) from None
        if self.template not in ("generic", "manual", "llm"):
            raise UserError(f"unknown template {self.template!r}: use generic, manual or llm")
        if self.turn_cap < 1:
            raise UserError("turn cap must be at least 1 (--turn-cap)")
        if self.token_budget < 1:
            raise UserError("token budget must be positive (--budget)")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def chat_model(self, spec: str | None = None) -> BaseChatModel:
        """The (process-wide cached) chat model for `spec`, default the agents' model."""
        from ima.models import load_chat_model

        return load_chat_model(spec or self.model, self.seed, 0.0, self.call_timeout)

    def memory_chat_model(self) -> BaseChatModel:
        return self.chat_model(self.memory_model or self.model)
