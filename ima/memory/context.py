"""f_context, the paper's Algorithm 1: task and memory always, then the newest turns
that fit the remaining token budget, kept in chronological order.

Turn token counts are computed once when a turn is written (Turn.tokens), so building a
context touches only the turns that fit, however long the conversation is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ima.graph.state import Turn
from ima.memory.tokens import count_tokens, encoding


def render_turn(index: int, speaker: str, content: str) -> str:
    """How a turn appears in other agents' contexts (its token count is stored with it)."""
    return f"[{index}] {speaker}: {content.strip()}\n\n"


def recent_turns(transcript: Sequence[Turn], budget: int) -> list[Turn]:
    """Newest-first selection of whole turns within `budget` tokens, returned oldest first."""
    kept: list[Turn] = []
    used = 0
    for turn in reversed(transcript):
        if used + turn["tokens"] > budget:
            break
        kept.append(turn)
        used += turn["tokens"]
    kept.reverse()
    return kept


def truncate_to_tokens(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` tokens (memory is capped, never dropped, when space is short)."""
    enc = encoding()
    ids = enc.encode(text, disallowed_special=())
    return text if len(ids) <= limit else enc.decode(ids[: max(limit, 0)])


@dataclass(frozen=True)
class Context:
    """One agent's input: fixed parts, its memory, and the turns that fit."""

    memory: str
    turns: list[Turn]
    tokens: int  # total tokens of every part, as counted for the budget

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
        memory = truncate_to_tokens(memory, max(room, 0))
        memory_tokens = count_tokens(memory) if memory else 0
    turns = recent_turns(transcript, max(room - memory_tokens, 0))
    total = fixed_tokens + memory_tokens + sum(t["tokens"] for t in turns)
    return Context(memory=memory, turns=turns, tokens=total)
