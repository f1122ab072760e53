"""Run settings: the graph's context schema (LangGraph `context_schema`).

Declared once, here: each field is a setting of the graph's context, an `ima run` option
(`--field-name`, its help the description: ima/cli/settings_options.py), an `IMA_<NAME>`
environment variable, a key of the config file and a field of Studio's form. A new setting
is one field. A value comes from, in order: the caller (a command-line flag, Studio, the
SDK), an `IMA_<NAME>` environment variable, the config file (`$IMA_CONFIG` or ./ima.toml,
keys are the field names), the default. pydantic-settings does the lookup and the type
checks; every problem becomes one `UserError` line.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from intrinsic_memory import MIN_MEMORY_TOKENS
from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from ima.core.errors import UserError

TemplateKind = Literal["generic", "manual", "llm"]
MemoryMode = Literal["intrinsic", "none"]
MemoryPromptLayout = Literal["lean", "full"]
MemoryUpdateMode = Literal["rewrite", "edit"]
PromptLayout = Literal["paper", "shared"]
EmbeddedWeights = Literal["q4_0", "q4_k_m"]
MEMORY_MODES: tuple[MemoryMode, ...] = ("intrinsic", "none")
DEFAULT_MODEL = "embedded"
CONFIG_FILE = "ima.toml"
# The meeting's memory budget, chosen by the memory sweep (benchmarks/README.md): 512 tokens
# keep 3.3x the baseline's own items in view (256: 1.7x, and less on one seed), and the default
# meeting then ends by consensus within its token targets. The library keeps its smaller
# default: the sweep measured this meeting only.
MEETING_MEMORY_TOKENS = 512
# The embedded model's weights unless a run names others. q4_0, made once from the bundled
# q4_k_m when first chosen, runs 1.28x faster on prompts and 1.44x on generation (llama.cpp
# repacks Q4_0 for AVX2 at load time; K-quants have no such path), but its meetings were worse:
# the default meeting ran to the turn cap (60 turns) where q4_k_m agrees after 31, so it took
# longer in all (benchmarks/README.md, "Weights").
DEFAULT_WEIGHTS: EmbeddedWeights = "q4_k_m"
# In the default meeting on the embedded model (12-06), updates after turns with fewer than 8
# words the memory lacked changed nothing 2 times in 3 and cost a third of the update tokens.
MEETING_NEWS_WORDS = 8


def config_path() -> Path:
    return Path(os.environ.get("IMA_CONFIG") or CONFIG_FILE)


def read_config_file(path: Path) -> dict[str, Any]:
    """The config file's settings; UserError naming the file and the problem."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if "IMA_CONFIG" in os.environ:
            raise UserError(f"config file {path} (IMA_CONFIG) does not exist") from None
        return {}
    except UnicodeDecodeError:
        raise UserError(
            f"config file {path} is not UTF-8 text: fix it or unset IMA_CONFIG"
        ) from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"cannot read config file {path}: {exc}") from None


class Flag:
    """A setting's command-line names where they differ from `--field-name` (older names
    stay valid): `Annotated[int, Flag("--budget")]`."""

    def __init__(self, *names: str) -> None:
        self.names = names


class ConfigFileSource(PydanticBaseSettingsSource):
    """Settings from the TOML config file, read once per construction."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # __call__ reads the whole file at once

    def __call__(self) -> dict[str, Any]:
        return read_config_file(config_path())


class RunContext(BaseSettings):
    """The settings of one run (LangGraph passes them to every node as `runtime.context`).

    Each field is also an `ima run` option, an `IMA_<NAME>` environment variable and a key of
    the config file."""

    model_config = SettingsConfigDict(
        env_prefix="IMA_", extra="forbid", validate_default=True, validate_assignment=True
    )

    model: str = Field(
        DEFAULT_MODEL,
        description="Model for agent turns: embedded, gguf:PATH, ollama:NAME, "
        "scripted[:delay=S], or any LangChain provider:model.",
    )
    memory_model: str = Field(
        "", description="Model for memory updates; empty means the agents' model."
    )
    weights: EmbeddedWeights = Field(
        DEFAULT_WEIGHTS,
        description="Weights of the embedded model: q4_0 (made from the bundled file once, on "
        "first use; faster on CPUs) or q4_k_m (the bundled file). gguf:PATH loads any file.",
    )
    template: TemplateKind = Field(
        "generic", description="Memory template: generic, manual (from the task) or llm."
    )
    token_budget: Annotated[int, Flag("--budget")] = Field(
        2048, ge=1, description="Maximum input tokens of each agent's context."
    )
    turn_cap: int = Field(60, ge=1, description="Maximum conversation turns before the run ends.")
    seed: int = Field(0, description="Random seed passed to the model, for reproducible runs.")
    temperature: float = Field(
        0.0,
        ge=0.0,
        le=2.0,
        description="Sampling temperature of agent turns and memory updates; 0 is greedy (the "
        "seed then changes nothing). Judges always use 0.",
    )
    top_p: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="Nucleus sampling: keep the smallest set of tokens "
        "whose probability reaches top_p (1 keeps all).",
    )
    max_turn_words: int = Field(
        80, ge=1, description="Word limit asked of each agent turn (the facilitator: half)."
    )
    prompt_layout: PromptLayout = Field(
        "shared",
        description="Order of an agent's prompt: paper (task and role, memory, recent turns, "
        "question) or shared (task and recent turns first, the same for every agent, then "
        "role, memory and question; old turns leave in blocks), which a prefix-caching "
        "backend (llama.cpp, Ollama, hosted APIs) serves from its cache across agents.",
    )
    memory_tokens: int = Field(
        MEETING_MEMORY_TOKENS,
        ge=MIN_MEMORY_TOKENS,
        description="Token budget of each agent's memory: the update is asked and bounded to "
        "fit it, and every context reserves it, so a memory is never cut off.",
    )
    memory_update: MemoryUpdateMode = Field(
        "edit",
        description="How memory changes after each turn: edit (written whole at first, then a "
        "few operations that add or replace a note: far fewer generated tokens) or rewrite "
        "(the paper: the whole memory again).",
    )
    memory_news_words: int = Field(
        MEETING_NEWS_WORDS,
        ge=0,
        description="A turn with fewer figures and words its speaker's memory lacks, or one "
        "that repeats the meeting (half its word 8-grams are in earlier turns or the agents' "
        "instructions), is no news: it costs no memory update (0: update after every turn).",
    )
    memory_prompt: MemoryPromptLayout = Field(
        "lean",
        description="What a memory update is shown in the paper prompt layout: lean (the "
        "role, template, memory so far and latest turn) or full (also the whole task, like "
        "the agent's own turn). In the shared layout an update opens with the task and the "
        "request, the same for every agent, then the role, memory and latest turn.",
    )
    memory_concurrency: int = Field(
        0,
        ge=0,
        description="Memory updates that may run beside the next speaker's turn: 1 keeps the "
        "paper's strict order, 2 or more forms memory off the critical path; 0 picks the "
        "backend's measured default.",
    )
    review: bool = Field(
        False,
        description="Pause for a human decision before FINALIZE: approve the agreed design, or "
        "send feedback back into the discussion.",
    )
    call_timeout: float = Field(
        600.0, gt=0, description="Seconds before a model call is abandoned (then retried)."
    )
    long_term: bool = Field(
        True,
        description="Long-term memory across runs: start each agent with its mature lessons "
        "from earlier runs and learn from this one.",
    )
    principal: str = Field(
        "",
        description="Whose long-term memory the run uses: a user or project id (letters, "
        "digits, - and _); empty: the OS user.",
    )
    memory_store: str = Field(
        "",
        description="Where long-term memory lives: a SQLite file or a postgresql:// URL; empty: "
        "beside the runs database.",
    )
    long_term_budget: int = Field(
        300, ge=0, description="Tokens of long-term lessons each agent starts with, at most."
    )
    long_term_policy: str = Field(
        "",
        description="TOML file with maturation, decay and retention thresholds per role; "
        "empty: the defaults.",
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise UserError(describe_invalid(exc)) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, ConfigFileSource(settings_cls)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    def with_values(self, **changes: Any) -> RunContext:
        """A copy with some settings changed (validated like any other)."""
        return type(self)(**{**self.model_dump(), **changes})


def describe_invalid(exc: ValidationError) -> str:
    """One line for the first problem: which setting, what was given, what is allowed."""
    error = exc.errors()[0]
    name = ".".join(str(p) for p in error["loc"]) or "settings"
    if error["type"] == "extra_forbidden":
        known = ", ".join(sorted(RunContext.model_fields))
        return f"unknown setting {name!r} (in {config_path()} or the call; known: {known})"
    given = error.get("input")
    env = f"IMA_{name.upper()}"
    return f"setting {name}={given!r} is invalid: {error['msg'].lower()} (flag, {env} or {CONFIG_FILE})"
