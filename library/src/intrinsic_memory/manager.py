"""f_memory_update, the heart of the method: M_new = LLM(role, template, M_old, own output).

`IntrinsicMemory` is stateless (LangMem's convention): made from a chat model and a
template, it gives an agent's empty memory and, from the agent's own latest output, the
next version with what the call cost. Where it is stored, and when it runs, is the
caller's business (`memory_node`, the middleware, or your own code).

Two ways to update, comparable as an ablation:
- edit (the default): the model answers with a few operations on its memory (add a note to
  a section, replace note N), applied deterministically; it writes far fewer
  tokens. An empty memory has nothing to edit: the first update writes it whole.
- rewrite (the paper): the model writes the whole memory again, as notes tagged with their
  template section.

Either way the answer is asked as JSON that the backend constrains where it can, is read
into sections, and is fitted to the memory's token budget by whole notes (`memory.py`):
nothing stored is ever cut off.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from intrinsic_memory import _prompts
from intrinsic_memory._checks import whole_number
from intrinsic_memory.edits import apply_edits, edit_schema, parse_edits
from intrinsic_memory.memory import Memory, MemoryLimits, MemoryTemplate, Repairs, bound
from intrinsic_memory.models import (
    CallUsage,
    Reply,
    ainvoke,
    invoke,
    json_model,
    limit_output,
    resolve_model,
    zero_usage,
)
from intrinsic_memory.notes import MIN_NEW_WORDS, new_words, scripts_of
from intrinsic_memory.rewrite import read_rewrite, rewrite_schema
from intrinsic_memory.tokens import count_tokens

log = logging.getLogger("intrinsic_memory")

UpdateMode = Literal["edit", "rewrite"]
UPDATE_MODES: tuple[UpdateMode, ...] = ("edit", "rewrite")
"""`tuple[str, ...]`: the `mode`s `IntrinsicMemory` takes: "edit" (a few operations on the
notes) and "rewrite" (the paper: the whole memory again)."""
DEFAULT_MEMORY_TOKENS = 256
"""`int`: the memory's budget in tokens when `IntrinsicMemory` is given no `memory_tokens`."""
MIN_MEMORY_TOKENS = 32
"""`int`: the smallest `memory_tokens` accepted: below it a memory holds no more than a
heading and a few words."""
DEFAULT_MAX_EDITS = 3
# An LLM-written template is kept to this many sections: each section costs its heading
# in every prompt, and the notes must share the memory's budget.
MAX_SECTIONS = 8
TEMPLATE_TOKENS = 400  # an LLM-written template is 8-20 lines


@dataclass(frozen=True)
class MemoryUpdate:
    """The result of one update: the new memory, what the call cost, what had to be
    repaired before storing it, and whether the memory changed."""

    memory: Memory
    usage: CallUsage
    repairs: Repairs
    cut_off: bool  # the backend stopped at its output cap (complete sections were kept)
    changed: bool  # False: the answer was empty or unusable, or changed nothing

    @property
    def text(self) -> str:
        """The new memory as Markdown."""
        return self.memory.render()


class IntrinsicMemory:
    """An agent's memory manager: its empty memory, and the next version from its own output.

    Args:
        model: the chat model that writes memory updates: a LangChain chat model, or a
            "provider:model" string for `init_chat_model` (e.g. "openai:gpt-4o-mini").
        template: "generic" (one structure for every role and task), a `MemoryTemplate`,
            or Markdown with one "## " heading per section (a hand-written template, or one
            the model wrote with `write_template`).
        memory_tokens: the memory's budget: a stored memory never exceeds it (its sections
            share it), so a context that reserves it never has to cut a memory. At least 32.
        mode: "edit" (a few operations; an empty memory is written whole) or "rewrite" (the
            paper: the whole memory again).
        max_edits: the most operations one edit answer may make.
        min_new_words: an output with fewer figures and words the memory lacks is not
            news and costs no update call (`is_news`); 0 updates after every output.
        token_counter: counts a text's tokens for the budget (default: tiktoken cl100k).

    Raises ValueError (TypeError for a model or a number of another type) for a bad
    argument, naming it and the choices. The object holds no memory: pass the previous
    version to `update` and store what it returns wherever the agent's state lives.
    """

    def __init__(
        self,
        model: BaseChatModel | str,
        template: MemoryTemplate | str = "generic",
        *,
        memory_tokens: int = DEFAULT_MEMORY_TOKENS,
        mode: UpdateMode = "edit",
        max_edits: int = DEFAULT_MAX_EDITS,
        min_new_words: int = MIN_NEW_WORDS,
        token_counter: Any = count_tokens,
    ) -> None:
        if mode not in UPDATE_MODES:
            raise ValueError(f"unknown memory update mode {mode!r}: use edit or rewrite")
        if whole_number("memory_tokens", memory_tokens) < MIN_MEMORY_TOKENS:
            raise ValueError(
                f"memory_tokens={memory_tokens!r} is too small: give {MIN_MEMORY_TOKENS} or more"
            )
        if whole_number("max_edits", max_edits) < 1:
            raise ValueError(f"max_edits={max_edits!r}: give 1 or more")
        if whole_number("min_new_words", min_new_words) < 0:
            raise ValueError(
                f"min_new_words={min_new_words!r}: give 0 (update after every turn) or more"
            )
        self.model = resolve_model(model)
        self.template = MemoryTemplate.of(template)
        self.memory_tokens = memory_tokens
        self.mode: UpdateMode = mode
        self.max_edits = max_edits
        self.min_new_words = min_new_words
        self.count = token_counter
        self.limits = MemoryLimits.for_budget(self.template, memory_tokens)
        self._variants: dict[str, IntrinsicMemory] = {}  # with_template's, one per template

    def with_template(self, template: MemoryTemplate | str) -> IntrinsicMemory:
        """This manager with another template (an agent that keeps its own), else as is."""
        shaped = MemoryTemplate.of(template)
        if shaped.sections == self.template.sections:
            return self
        key = shaped.markdown()
        if key not in self._variants:
            variant = copy.copy(self)
            variant.template = shaped
            variant.limits = MemoryLimits.for_budget(shaped, self.memory_tokens)
            variant._variants = {}
            self._variants[key] = variant
        return self._variants[key]

    def __repr__(self) -> str:
        sections = len(self.template.sections)
        return f"IntrinsicMemory({self.mode}, {self.memory_tokens} tokens, {sections} sections)"

    def empty(self) -> Memory:
        """The memory before the agent's first turn."""
        return Memory(self.template)

    def read(self, memory: Memory | str | None) -> Memory:
        """A memory from its Markdown (as `Memory.render` writes it), or as it is."""
        if isinstance(memory, Memory):
            return memory
        return Memory.parse(memory or "", self.template)

    def _writes_whole(self, memory: Memory) -> bool:
        # Edit mode writes an empty memory whole: there is nothing to edit yet.
        return self.mode == "rewrite" or memory.is_empty

    @property
    def _whole_notes(self) -> int:
        """The most notes one whole write may hold: the memory's room in rewrite mode; in
        edit mode, an empty memory's first write holds what one turn gives, twice the notes
        an edit may add."""
        if self.mode == "edit":
            return min(self.limits.max_notes, 2 * self.max_edits)
        return self.limits.max_notes

    def _notes_cap(self, notes: int) -> int:
        # A note of `note_chars` characters (3 a token: figures split), its JSON around it.
        return notes * (self.limits.note_chars // 3 + 16) + 16

    @property
    def output_cap(self) -> int:
        """The most tokens one update of a non-empty memory may generate, what its answer
        may hold and no more: a few edits (edit mode), or the whole memory (rewrite mode)."""
        if self.mode == "edit":
            return self._notes_cap(self.max_edits)
        return self._notes_cap(self._whole_notes)

    def _cap(self, memory: Memory) -> int:
        if self._writes_whole(memory):
            return self._notes_cap(self._whole_notes)
        return self.output_cap

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
            text = _prompts.render(
                "memory_edit",
                edits=self.max_edits,
                words=self.limits.note_words,
                role=shown_role,
                sections=self.template.guide(),
                used=current.tokens(self.count),
                tokens=self.memory_tokens,
                memory=current.numbered(),
                turn=shown_turn,
                output=output,
            )
        else:
            text = _prompts.render(
                "memory_rewrite",
                notes=self._whole_notes,
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

    def _request(
        self,
        memory: Memory,
        output: str,
        role: str,
        turn: int | None,
        metadata: dict[str, Any] | None,
        system: str | None,
    ) -> tuple[Any, list[BaseMessage], dict[str, Any]]:
        """What one update call sends: the runnable, the messages and the call's options."""
        writes_whole = self._writes_whole(memory)
        schema = (
            rewrite_schema(self.template, self.limits, self._whole_notes)
            if writes_whole
            else edit_schema(memory, self.limits, self.max_edits)
        )
        cap = self._cap(memory)
        options = {
            "metadata": {"call_kind": "memory_update", **(metadata or {})},
            "tags": ["memory_update"],
            "max_tokens": cap,
        }
        messages = self.messages(memory, output, role=role, turn=turn, system=system)
        return json_model(self.model, schema, cap), messages, options

    def interpret(
        self,
        memory: Memory | str | None,
        reply: Reply,
        source: str | None = None,
        prompt: Sequence[str] = (),
    ) -> MemoryUpdate:
        """The stored next version from a model's answer (no model call): an empty or
        unusable answer leaves the memory as it was, and is logged. `source` is the output
        the memory was updated from: its notes keep to its scripts (`notes.strip_foreign`);
        without it, to the template's. `prompt` is the standing text the update was shown
        that is no memory's to keep (`update` gives the role): a new note copied from it and
        not from `source` is refused (`notes.copies_prompt`)."""
        previous = self.read(memory)
        repairs = Repairs()
        scripts = scripts_of(self.template.markdown() if source is None else source)
        tidy = {"previous": previous, "scripts": scripts, "prompt": prompt, "output": source}
        if not reply.text.strip():
            repairs.unusable = "the answer is empty"
            new = previous
        elif not self._writes_whole(previous):
            edits = parse_edits(reply.text, self.template, repairs)
            new = previous if edits is None else apply_edits(previous, edits, repairs)
            new = bound(new, self.limits, repairs, self.count, **tidy)
        else:
            rewritten = read_rewrite(reply.text, previous, cut_off=reply.cut_off, repairs=repairs)
            new = bound(rewritten or previous, self.limits, repairs, self.count, **tidy)
        if new.is_empty and not previous.is_empty and not repairs.unusable:
            repairs.unusable = "the answer would erase the memory"
            new = previous
        if repairs.unusable:
            log.warning("memory update unusable (%s): the memory stays as it was", repairs.unusable)
        return MemoryUpdate(new, reply.usage, repairs, reply.cut_off, new.notes != previous.notes)

    def is_news(self, memory: Memory | str | None, output: str) -> bool:
        """Whether `output` gives `memory` something to keep: an empty memory takes any
        output; otherwise at least `min_new_words` of the output's figures and words must be
        missing from it (`notes.new_words`). An output that is not news costs no call."""
        current = self.read(memory)
        if not output.strip():
            return False
        if current.is_empty or not self.min_new_words:
            return True
        return len(new_words(output, current.render())) >= self.min_new_words

    def _unchanged(self, memory: Memory) -> MemoryUpdate:
        return MemoryUpdate(memory, zero_usage(), Repairs(), cut_off=False, changed=False)

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

        `role` is the agent's role text (the update's system message); `turn` numbers the
        output in the prompt; `metadata` labels the call for tracing (LangSmith,
        callbacks); `system`, text shared by every agent's calls, opens the prompt instead
        (see `messages`). The call is kept out of `stream_mode="messages"`. An output that
        is not news (`is_news`) returns the memory unchanged, without a call. A new note
        copied from `role` rather than from `output` is refused (`copies_prompt`): the
        agent is told its role at every turn anyway. The task (`system`) is what a memory
        keeps, so a note of it stays.
        """
        current = self.read(memory)  # parsed once for the prompt, schema, cap and answer
        if not self.is_news(current, output):
            return self._unchanged(current)
        runnable, messages, options = self._request(current, output, role, turn, metadata, system)
        reply = invoke(runnable, messages, **options)
        return self.interpret(current, reply, output, prompt=(role,))

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
        current = self.read(memory)
        if not self.is_news(current, output):
            return self._unchanged(current)
        runnable, messages, options = self._request(current, output, role, turn, metadata, system)
        reply = await ainvoke(runnable, messages, **options)
        return self.interpret(current, reply, output, prompt=(role,))


def update_prompts() -> list[str]:
    """The texts every memory update is told (its prompt files): what a memory that
    parrots its instructions copies."""
    return [_prompts.load(name) for name in ("memory_rewrite", "memory_edit", "memory_section")]


def template_messages(task: str, role: str = "") -> list[BaseMessage]:
    """The prompt in which an agent's model writes its own template from the task."""
    system = "\n\n".join(p for p in (f"# Task\n{task.strip()}", role.strip()) if p)
    return [SystemMessage(system), HumanMessage(_prompts.load("template_generation"))]


def read_template(text: str) -> MemoryTemplate:
    """An LLM-written template; the generic one when the answer has no usable structure."""
    try:
        parsed = MemoryTemplate.from_markdown(text, kind="llm")
    except ValueError:
        return MemoryTemplate.generic()
    return MemoryTemplate(parsed.sections[:MAX_SECTIONS], parsed.kind)


def write_template(
    model: BaseChatModel | str,
    task: str,
    role: str = "",
    metadata: dict[str, Any] | None = None,
) -> tuple[MemoryTemplate, CallUsage]:
    """The template an agent's model writes once, at the start, from the task description
    (the paper's LLM-generated templates), and what the call cost."""
    chat = resolve_model(model)
    reply = invoke(
        limit_output(chat, TEMPLATE_TOKENS),
        template_messages(task, role),
        metadata={"call_kind": "template_generation", **(metadata or {})},
        tags=["template_generation"],
        max_tokens=TEMPLATE_TOKENS,
    )
    return read_template(reply.text), reply.usage
