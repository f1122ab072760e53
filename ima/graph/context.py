"""Run settings: the graph's context schema (LangGraph `context_schema`).

Each field has a description (shown by LangGraph Studio as a form) and an environment
variable fallback, so the CLI, the server and tests share one typed settings object.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Literal

TemplateKind = Literal["generic", "manual", "llm"]
MemoryMode = Literal["intrinsic", "none"]
DEFAULT_MODEL = "embedded"


def _env(name: str, default: Any) -> Any:
    raw = os.environ.get(name)
    return type(default)(raw) if raw not in (None, "") else default


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
        default=120, metadata={"description": "Word limit asked of each agent turn."}
    )
    max_memory_words: int = field(
        default=150, metadata={"description": "Word limit asked of each memory rewrite."}
    )

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def memory_model_spec(self) -> str:
        return self.memory_model or self.model
