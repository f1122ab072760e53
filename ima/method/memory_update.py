"""f_memory_update, the heart of the method: M_new = LLM(role, template, M_old, own output).

`IntrinsicMemory` is stateless (LangMem's convention): made from a chat model and a
template, it gives an agent's empty memory and, from the agent's own latest output, the
next version with what the call cost. Where it is stored, and when it runs, is the
caller's business (our meeting's memory nodes, the middleware, the graph wrapper).

Two ways to update, comparable as an ablation:
- rewrite (the paper): the model writes the whole memory again, one bounded list of notes
  per template section;
- edit: the model answers with a few operations on its memory (add a note to a section,
  replace or remove note N), applied deterministically; it writes far fewer tokens. An
  empty memory has nothing to edit: the first update writes it whole, as a rewrite does.

Either way the answer is asked as JSON that the backend constrains where it can (a
llama.cpp grammar, Ollama `format`, tool calling), is read into sections, and is cut to
the memory's token budget by whole notes (`memory.py`): nothing stored is ever cut off.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ima import prompts
from ima.core.state import CallUsage
from ima.core.tokens import count_tokens
from ima.method.memory import (
    Memory,
    MemoryLimits,
    MemoryTemplate,
    Repairs,
    apply_edits,
    bound,
    edit_schema,
    parse_edits,
    read_rewrite,
    rewrite_schema,
)
from ima.models.calls import Reply, ainvoke_model, invoke_model
from ima.models.structured import structured_runnable

UpdateMode = Literal["rewrite", "edit"]
UPDATE_MODES: tuple[UpdateMode, ...] = ("rewrite", "edit")
DEFAULT_MEMORY_TOKENS = 256
DEFAULT_MAX_EDITS = 3
# An LLM-written template is kept to this many sections: each section costs its heading
# in every prompt, and the notes must share the memory's budget.
MAX_SECTIONS = 8


def generic_template() -> MemoryTemplate:
    """The generic template: one structure for every role and task (the paper's best)."""
    return MemoryTemplate.from_markdown(prompts.load("templates/generic"), kind="generic")


def as_template(template: MemoryTemplate | str, kind: str = "custom") -> MemoryTemplate:
    """A template from a MemoryTemplate, "generic", or Markdown text with headings."""
    if isinstance(template, MemoryTemplate):
        return template
    if template == "generic":
        return generic_template()
    return MemoryTemplate.from_markdown(template, kind=kind)


@dataclass(frozen=True)
class MemoryUpdate:
    """The result of one update: the new memory, what the call cost, and what had to be
    repaired before storing it (counted per run)."""

    memory: Memory
    usage: CallUsage
    repairs: Repairs
    cut_off: bool  # the backend stopped at its output cap (complete sections were kept)

    @property
    def text(self) -> str:
        """The new memory as Markdown."""
        return self.memory.render()


class IntrinsicMemory:
    """An agent's memory manager: empty memory, and the next version from its own output.

    Args:
        model: the chat model that writes memory updates (any LangChain chat model).
        template: a `MemoryTemplate`, "generic", or Markdown text with one heading per
            section (a manual template, or one the model wrote with `write_template`).
        tokens: the memory's budget: a stored memory never exceeds it, so a context
            builder that reserves it never has to cut a memory.
        mode: "rewrite" (the paper: the whole memory again) or "edit" (a few operations;
            an empty memory is written whole).
        max_edits: the most operations one edit answer may make.
        token_counter: counts a text's tokens for the budget (default: tiktoken cl100k).

    The object holds no memory itself: pass the previous version to `update` and store
    what it returns wherever the agent's state lives.
    """

    def __init__(
        self,
        model: BaseChatModel,
        template: MemoryTemplate | str = "generic",
        *,
        tokens: int = DEFAULT_MEMORY_TOKENS,
        mode: UpdateMode = "rewrite",
        max_edits: int = DEFAULT_MAX_EDITS,
        token_counter: Any = count_tokens,
    ) -> None:
        if mode not in UPDATE_MODES:
            raise ValueError(f"unknown memory update mode {mode!r}: use rewrite or edit")
        if tokens < 16:
            raise ValueError(f"a memory budget of {tokens} tokens is too small: give 16 or more")
        self.model = model
        self.template = as_template(template)
        self.tokens = tokens
        self.mode: UpdateMode = mode
        self.max_edits = max_edits
        self.count = token_counter
        self.limits = MemoryLimits.for_budget(self.template, tokens)

    def empty(self) -> Memory:
        """The memory before the agent's first turn."""
        return Memory(self.template)

    def read(self, memory: Memory | str | None) -> Memory:
        """A memory from its Markdown (as rendered by `Memory.render`), or as it is."""
        if isinstance(memory, Memory):
            return memory
        return Memory.parse(memory or "", self.template)

    def _writes_whole(self, memory: Memory | str | None) -> bool:
        # Edit mode writes an empty memory whole: there is nothing to edit yet.
        return self.mode == "rewrite" or self.read(memory).is_empty

    @property
    def output_cap(self) -> int:
        """The most tokens one update of a non-empty memory may generate: a few edits (edit
        mode), or the whole memory and its JSON (rewrite mode, and any first write)."""
        if self.mode == "edit":
            return self.max_edits * (self.limits.note_chars // 3 + 16)
        return self._whole_cap

    @property
    def _whole_cap(self) -> int:
        return 2 * self.tokens + 8 * len(self.template.sections)

    def _cap(self, memory: Memory | str | None) -> int:
        return self._whole_cap if self._writes_whole(memory) else self.output_cap

    def messages(
        self,
        memory: Memory | str | None,
        output: str,
        *,
        role: str = "",
        turn: int | None = None,
        system: str | None = None,
    ) -> list[BaseMessage]:
        """The update prompt: the agent's role (system message), then its template, its
        memory so far and its latest output.

        With `system` (text every agent's calls share, e.g. the task), that is the system
        message and the role follows the request's instructions and template, so the
        first update of each agent finds them in a prefix cache too."""
        current = self.read(memory)
        shown_turn = "latest" if turn is None else turn
        shown_role = f"{role.strip()}\n\n" if system is not None and role.strip() else ""
        if not self._writes_whole(current):
            text = prompts.render(
                "memory_edit",
                edits=self.max_edits,
                words=self.limits.note_words,
                role=shown_role,
                sections=self.template.guide(),
                used=current.tokens(self.count),
                tokens=self.tokens,
                memory=current.numbered(),
                turn=shown_turn,
                output=output,
            )
        else:
            text = prompts.render(
                "memory_rewrite",
                notes=self.limits.max_notes,
                words=self.limits.note_words,
                template=self.template.skeleton(),
                role=shown_role,
                memory="(empty: this is your first turn)"
                if current.is_empty
                else current.as_json(),
                turn=shown_turn,
                output=output,
            )
        if system is not None:
            return [SystemMessage(system), HumanMessage(text)]
        return ([SystemMessage(role)] if role else []) + [HumanMessage(text)]

    def _runnable(self, memory: Memory) -> Any:
        schema = (
            rewrite_schema(self.template, self.limits)
            if self._writes_whole(memory)
            else edit_schema(memory, self.limits, self.max_edits)
        )
        return structured_runnable(self.model, schema, schema, max_tokens=self._cap(memory))

    def _call(
        self,
        memory: Memory,
        output: str,
        role: str,
        turn: int | None,
        metadata: dict[str, Any] | None,
        system: str | None,
    ) -> tuple[Any, list[BaseMessage], dict[str, Any], int]:
        """What one update call sends: runnable, messages, metadata and output cap."""
        return (
            self._runnable(memory),
            self.messages(memory, output, role=role, turn=turn, system=system),
            {"ima_kind": "memory_update", **(metadata or {})},
            self._cap(memory),
        )

    def interpret(self, memory: Memory | str | None, reply: Reply) -> MemoryUpdate:
        """The stored next version from a model's answer (no model call): an unusable
        answer leaves the memory as it was."""
        previous = self.read(memory)
        repairs = Repairs()
        if not self._writes_whole(previous):
            edits = parse_edits(reply.text, self.template, repairs)
            new = previous if edits is None else apply_edits(previous, edits, repairs)
            new = bound(new, self.limits, repairs, self.count)
        else:
            rewritten = read_rewrite(reply.text, previous, cut_off=reply.cut_off, repairs=repairs)
            new = bound(rewritten or previous, self.limits, repairs, self.count)
        return MemoryUpdate(new, reply.usage, repairs, reply.cut_off)

    def update(
        self,
        memory: Memory | str | None,
        output: str,
        *,
        role: str = "",
        turn: int | None = None,
        metadata: dict[str, Any] | None = None,
        system: str | None = None,
    ) -> MemoryUpdate:
        """The next version of `memory` from the agent's own latest `output`.

        `role` is the agent's role text (the update's system message); `metadata` labels
        the call for tracing (LangSmith, callbacks); `system`, text shared by every agent's
        calls, opens the prompt instead (see `messages`).
        """
        current = self.read(memory)  # parsed once for the prompt, schema, cap and answer
        reply = invoke_model(*self._call(current, output, role, turn, metadata, system))
        return self.interpret(current, reply)

    async def aupdate(
        self,
        memory: Memory | str | None,
        output: str,
        *,
        role: str = "",
        turn: int | None = None,
        metadata: dict[str, Any] | None = None,
        system: str | None = None,
    ) -> MemoryUpdate:
        """`update` for async callers."""
        current = self.read(memory)  # parsed once for the prompt, schema, cap and answer
        reply = await ainvoke_model(*self._call(current, output, role, turn, metadata, system))
        return self.interpret(current, reply)


TEMPLATE_TOKENS = 400  # an LLM-written template is 8-20 lines


def template_messages(task: str, role: str = "") -> list[BaseMessage]:
    """The prompt in which an agent's model writes its own template from the task."""
    system = "\n\n".join(p for p in (f"# Task\n{task.strip()}", role.strip()) if p)
    return [SystemMessage(system), HumanMessage(prompts.load("template_generation"))]


def read_template(text: str) -> MemoryTemplate:
    """An LLM-written template; the generic one when the answer has no usable structure."""
    try:
        parsed = MemoryTemplate.from_markdown(text, kind="llm")
    except ValueError:
        return generic_template()
    return MemoryTemplate(parsed.sections[:MAX_SECTIONS], parsed.kind)


def write_template(
    model: BaseChatModel,
    task: str,
    role: str = "",
    metadata: dict[str, Any] | None = None,
) -> tuple[MemoryTemplate, CallUsage]:
    """The template an agent's model writes once, at the start, from the task description
    (the paper's LLM-generated templates), and the call it cost."""
    reply = invoke_model(
        model,
        template_messages(task, role),
        {"ima_kind": "template_generation", **(metadata or {})},
        TEMPLATE_TOKENS,
    )
    return read_template(reply.text), reply.usage


def line_changes(old: str, new: str) -> dict[str, int]:
    """How an update changed the memory, for progress events: lines added and removed."""
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    return {
        "lines_added": sum(d.startswith("+ ") for d in diff),
        "lines_removed": sum(d.startswith("- ") for d in diff),
    }
