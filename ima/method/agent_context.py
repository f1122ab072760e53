"""Where an agent's context is built. f_context, the paper's Algorithm 1: task and memory
always, then the newest turns that fit the remaining token budget, kept in chronological
order; and the turn prompt around it (role, phase question).

Turn token counts are computed once when a turn is written (Turn.tokens), so building a
context touches only the turns that fit, however long the conversation is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ima import prompts
from ima.core.settings import RunContext
from ima.core.state import ContextShare, Turn
from ima.core.tokens import count_tokens
from ima.method.context import newest_that_fit
from ima.method.prompting import cached_count, sections, system_prompt
from ima.method.schedule import is_vote, speaker_after
from ima.tasks import Task


def render_turn(index: int, speaker: str, content: str) -> str:
    """How a turn appears in other agents' contexts (its token count is stored with it)."""
    return f"[{index}] {speaker}: {content.strip()}\n\n"


def recent_turns(transcript: Sequence[Turn], budget: int) -> list[Turn]:
    """Newest-first selection of whole turns within `budget` tokens, returned oldest first."""
    kept = newest_that_fit((t["tokens"] for t in reversed(transcript)), budget)
    return list(transcript[len(transcript) - kept :])


def whole_lines_within(text: str, limit: int) -> str:
    """The leading whole lines of `text` within `limit` tokens. A bounded memory always
    fits the context (run settings are checked for it); this guards memories written by
    older versions, and never leaves half a line."""
    kept: list[str] = []
    for line in text.splitlines():
        if count_tokens("\n".join([*kept, line])) > limit:
            break
        kept.append(line)
    return "\n".join(kept)


def memory_text(slot: Mapping[str, Any]) -> str:
    """What an agent's prompt shows as its memory: its long-term lessons, then its notes."""
    return "\n".join(p for p in (slot.get("lessons", ""), slot.get("text", "")) if p)


@dataclass(frozen=True)
class Context:
    """One agent's input: fixed parts, its memory, and the turns that fit."""

    memory: str
    turns: list[Turn]
    tokens: int  # total tokens of every part, as counted for the budget
    memory_tokens: int

    @property
    def rendered_turns(self) -> str:
        return "".join(render_turn(t["index"], t["speaker"], t["content"]) for t in self.turns)


def build_context(
    *, fixed_tokens: int, memory: str, transcript: Sequence[Turn], budget: int
) -> Context:
    """Fit memory and recent turns into `budget` after the fixed parts (task, role, instruction).

    Memory beats old history: it is placed first and truncated only if it alone overflows.
    """
    room = budget - fixed_tokens
    memory_tokens = count_tokens(memory) if memory else 0
    if memory_tokens > room:
        memory = whole_lines_within(memory, max(room, 0))
        memory_tokens = count_tokens(memory) if memory else 0
    turns = recent_turns(transcript, max(room - memory_tokens, 0))
    total = fixed_tokens + memory_tokens + sum(t["tokens"] for t in turns)
    return Context(memory=memory, turns=turns, tokens=total, memory_tokens=memory_tokens)


def instruction_for(task: Task, role_id: str, state: Mapping[str, Any]) -> str:
    """What the agent is asked this turn: by its role and the phase the meeting is in."""
    schedule = task.schedule
    phase = next(p for p in schedule.phases if p.name == state["phase"])
    if role_id == schedule.facilitator:
        if state["consensus"]:
            return prompts.render("instruction_finalize", finalizer=schedule.finalizer)
        return prompts.render(
            "instruction_facilitator",
            phase_instruction=phase.instruction,
            next_speaker=speaker_after(schedule, state),
        )
    if is_vote(schedule, role_id, phase.name):
        return prompts.render("instruction_voter", phase_instruction=phase.instruction)
    return prompts.render("instruction_worker", phase_instruction=phase.instruction)


@dataclass(frozen=True)
class TurnPrompt:
    """An agent's messages for one turn and how they used the token budget."""

    messages: list[BaseMessage]
    share: ContextShare

    @property
    def tokens(self) -> int:
        s = self.share
        return s["task"] + s["role"] + s["instruction"] + s["memory"] + s["history"]


def build_turn_prompt(
    task: Task, role_id: str, state: Mapping[str, Any], settings: RunContext, with_memory: bool
) -> TurnPrompt:
    """f_context for one turn: task and role, the agent's own memory (intrinsic mode), the
    newest turns that fit `settings.token_budget`, and the phase's question."""
    system = system_prompt(task, role_id, state["brief"])

    def user(memory: str | None, turns: str) -> str:
        return prompts.render(
            "agent_turn",
            sections=sections(memory, turns),
            phase=state["phase"],
            round=state["phase_round"],
            instruction=instruction_for(task, role_id, state),
            role_id=role_id,
            words=settings.max_turn_words,
        )

    # Fixed parts: system prompt and the turn frame with empty memory and no turns.
    system_tokens = cached_count(system)
    frame_tokens = cached_count(user("" if with_memory else None, "x"))
    memory = memory_text(state["memories"][role_id]) if with_memory else ""
    context = build_context(
        fixed_tokens=system_tokens + frame_tokens,
        memory=memory,
        transcript=state["transcript"],
        budget=settings.token_budget,
    )
    text = user(context.memory if with_memory else None, context.rendered_turns)
    task_tokens = cached_count(state["brief"].strip())
    share = ContextShare(
        budget=settings.token_budget,
        task=task_tokens,
        role=system_tokens - task_tokens,
        instruction=frame_tokens,
        memory=context.memory_tokens,
        history=context.tokens - system_tokens - frame_tokens - context.memory_tokens,
        history_turns=[context.turns[0]["index"], context.turns[-1]["index"]]
        if context.turns
        else [],
    )
    return TurnPrompt([SystemMessage(system), HumanMessage(text)], share)
