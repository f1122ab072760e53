"""An agent's turn prompt in the meeting: f_context, the paper's Algorithm 1 (task and memory
always, then the newest turns that fit the remaining token budget, in chronological order:
the library's `fit_window`), and the prompt around it (role, phase question), in one of
two layouts:

- paper: system message task and role, then the agent's memory, the recent turns and the
  question. The turns that fit are chosen afresh at every turn.
- shared: system message the task and the roster, then the recent turns, then the agent's
  role, memory and question. Every agent speaking at a turn sees the same recent turns (the
  room reserves the largest role, question and memory of any agent), and once the
  conversation no longer fits, the oldest turns leave `WINDOW_BLOCK` at a time, so the task
  and the turns form a prefix that stays the same across agents and for several turns: a
  prefix cache (llama.cpp, Ollama, hosted APIs) evaluates only the newest turn and the
  speaker's own parts.

Turn token counts are computed once when a turn is written (Turn.tokens), so building a
context touches only the turns that fit, however long the conversation is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intrinsic_memory import check_budget as library_check_budget
from intrinsic_memory import fit_window, minimum_budget
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ima import prompts
from ima.core.errors import UserError
from ima.core.settings import PromptLayout, RunContext
from ima.core.state import MEMORY_KEY, ContextShare, Turn, memory_slots
from ima.core.tokens import count_tokens
from ima.meeting.design.compile import accepted_proposal
from ima.meeting.prompting import (
    cached_count,
    component_line,
    conversation_section,
    memory_section,
    own_role_prompt,
    sections,
    system_prompt,
    task_prompt,
)
from ima.meeting.votes import VOTES
from ima.tasks import Task


def render_turn(index: int, speaker: str, content: str) -> str:
    """How a turn appears in other agents' contexts (its token count is stored with it)."""
    return f"[{index}] {speaker}: {content.strip()}\n\n"


# Turns the shared layout's window drops at a time once the conversation outgrows it: its
# first turn is always a multiple of this (1-based: turns 1, 5, 9, ...), so the prefix is
# stable for about this many turns.
WINDOW_BLOCK = 4
# The proposal a voter judges: the digest's first whole lines within this many tokens. The
# budget check reserves it, so the default budget holds a voter's question with its memory.
VOTED_PROPOSAL_TOKENS = 112


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
    *,
    fixed_tokens: int,
    memory: str,
    transcript: Sequence[Turn],
    budget: int,
    shared_room: int | None = None,
) -> Context:
    """Fit memory and recent turns into `budget` after the fixed parts (task, role, instruction):
    the library's `fit_window`.

    Memory beats old history: the budget always holds it (`check_budget`), the turns get
    what is left. `shared_room` (the shared layout): the turns are the block-aligned window
    within the smaller of it and what is left, the same for every agent whose parts fit the
    reserve.
    """
    memory_tokens = count_tokens(memory) if memory else 0
    shown = fixed_tokens + memory_tokens

    def size(i: int) -> int:
        return transcript[i]["tokens"]

    def window(block: int, most: int | None) -> list[Turn]:
        first = fit_window(len(transcript), size, budget, shown, block=block, most=most)
        return list(transcript[first:])

    if shared_room is None:
        turns = window(1, None)
    else:
        turns = window(WINDOW_BLOCK, shared_room)
        if not turns:  # a budget too small to share any turn: the speaker's own room
            turns = window(WINDOW_BLOCK, None)
    total = shown + sum(t["tokens"] for t in turns)
    return Context(memory=memory, turns=turns, tokens=total, memory_tokens=memory_tokens)


def instruction_for(task: Task, role_id: str, state: Mapping[str, Any]) -> str:
    """What the agent is asked this turn: by its role and the phase the meeting is in. In a
    phase of proposals (neither the first nor the vote) of a task with a `design:` block,
    a worker is shown the components it owns and the integrator lists what was proposed."""
    schedule = task.schedule
    phase = next(p for p in schedule.phases if p.name == state["phase"])
    if role_id == schedule.facilitator:
        if state["consensus"]:
            return prompts.render("instruction_finalize", finalizer=schedule.finalizer)
        return prompts.render(
            "instruction_facilitator",
            phase_instruction=phase.instruction,
            next_speaker=schedule.speaker_after(state),
        )
    if schedule.is_vote(role_id, phase.name):
        return prompts.render(
            "instruction_voter",
            phase_instruction=phase.instruction,
            proposal=voted_proposal(task, state["transcript"]),
            requirements=_own_requirements(task, role_id),
        )
    proposing = phase.name not in (schedule.phases[0].name, schedule.voting_phase)
    if proposing and task.design is not None:
        if role_id == (schedule.after_round or [None])[0]:
            return prompts.render(
                "instruction_integrator",
                phase_instruction=phase.instruction,
                components=", ".join(c.title for c in task.design.components),
            )
        return prompts.render(
            "instruction_worker",
            phase_instruction=phase.instruction,
            own_components=_own_components(task, role_id),
        )
    return prompts.render(
        "instruction_worker", phase_instruction=phase.instruction, own_components=""
    )


def voted_proposal(task: Task, transcript: Sequence[Mapping[str, Any]]) -> str:
    """The proposal on the table as a voter is shown it (and its vote is judged against)."""
    return accepted_proposal(task, transcript, tokens=VOTED_PROPOSAL_TOKENS)


def _own_components(task: Task, role_id: str) -> str:
    """The design's components `role_id` owns, with what each is for and its candidate
    technologies: what a worker proposes in a phase of proposals (a small model otherwise
    copies the first worker's list)."""
    assert task.design is not None
    own = [c for c in task.design.components if c.owner == role_id]
    lines = [component_line(c) for c in own]
    return "\nYour area's components:\n" + "\n".join(lines) if lines else ""


def _own_requirements(task: Task, role_id: str) -> str:
    """The requirements a voter's role owns, each by its id and title (a role that owns
    every item judges the proposal against the whole brief)."""
    owned = [r for r in task.requirements if r.id in task.own_items(role_id)]
    if len(owned) == len(task.requirements) > 1:
        return f"every requirement of the brief ({owned[0].id} to {owned[-1].id})"
    named = [f"{r.id} ({r.title or ' '.join(r.text.split()[:7]) + '...'})" for r in owned]
    return "; ".join(named) or "the brief"


def secret_ballot(
    task: Task, role_id: str, state: Mapping[str, Any], transcript: Sequence[Turn]
) -> Sequence[Turn]:
    """The turns a voter sees: every turn but the votes (it judges the proposal, not how
    others voted: a small model copies the first vote it reads)."""
    if not task.schedule.is_vote(role_id, state["phase"]):
        return transcript
    return [t for t in transcript if not set(VOTES) & set(t.get("flags") or [])]


def turn_words(task: Task, role_id: str, settings: RunContext) -> int:
    """The word limit of `role_id`'s turns: the facilitator, asked for two sentences, gets
    half of `settings.max_turn_words` (small models otherwise fill the rest with echoes)."""
    if role_id == task.schedule.facilitator:
        return max(1, settings.max_turn_words // 2)
    return settings.max_turn_words


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
    newest turns that fit `settings.token_budget`, and the phase's question, in the order
    `settings.prompt_layout` names."""
    layout: PromptLayout = settings.prompt_layout
    if layout == "shared":
        return _shared_turn_prompt(task, role_id, state, settings, with_memory)
    return _paper_turn_prompt(task, role_id, state, settings, with_memory)


def _share(
    settings: RunContext, *, task: int, role: int, frame: int, context: Context
) -> ContextShare:
    return ContextShare(
        budget=settings.token_budget,
        task=task,
        role=role,
        instruction=frame,
        memory=context.memory_tokens,
        history=sum(t["tokens"] for t in context.turns),
        history_turns=[context.turns[0]["index"], context.turns[-1]["index"]]
        if context.turns
        else [],
    )


def _paper_turn_prompt(
    task: Task, role_id: str, state: Mapping[str, Any], settings: RunContext, with_memory: bool
) -> TurnPrompt:
    system = system_prompt(task, role_id, state["brief"])

    def user(memory: str | None, turns: str) -> str:
        return prompts.render(
            "agent_turn",
            sections=sections(memory, turns),
            phase=state["phase"],
            round=state["phase_round"],
            instruction=instruction_for(task, role_id, state),
            role_id=role_id,
            words=turn_words(task, role_id, settings),
        )

    # Fixed parts: system prompt and the turn frame with empty memory and no turns.
    system_tokens = cached_count(system)
    frame_tokens = cached_count(user("" if with_memory else None, "x"))
    memory = memory_text(memory_slots(state)[role_id]) if with_memory else ""
    context = build_context(
        fixed_tokens=system_tokens + frame_tokens,
        memory=memory,
        transcript=secret_ballot(task, role_id, state, state["transcript"]),
        budget=settings.token_budget,
    )
    text = user(context.memory if with_memory else None, context.rendered_turns)
    task_tokens = cached_count(state["brief"].strip())
    share = _share(
        settings,
        task=task_tokens,
        role=system_tokens - task_tokens,
        frame=frame_tokens,
        context=context,
    )
    return TurnPrompt([SystemMessage(system), HumanMessage(text)], share)


def _shared_frame(
    task: Task, role_id: str, state: Mapping[str, Any], settings: RunContext, with_memory: bool
) -> Any:
    """The shared layout's user message for `role_id`, as a function of its parts."""

    def user(memory: str | None, turns: str, role: str) -> str:
        return prompts.render(
            "agent_turn_shared",
            conversation=conversation_section(turns),
            role=role,
            memory=memory_section(memory if with_memory else None),
            phase=state["phase"],
            round=state["phase_round"],
            instruction=instruction_for(task, role_id, state),
            role_id=role_id,
            words=turn_words(task, role_id, settings),
        )

    return user


def _own_parts_reserve(
    task: Task, state: Mapping[str, Any], settings: RunContext, with_memory: bool
) -> int:
    """Tokens every speaker's own parts may need at this turn: the largest role and
    question of any speaker, and the memory's whole budget (lessons included): what a
    memory holds never moves the window, so memory updates still running beside a turn
    cannot change what it shows."""
    largest = 0
    for role_id in task.speakers:
        user = _shared_frame(task, role_id, state, settings, with_memory)
        own = cached_count(own_role_prompt(task, role_id)) + cached_count(user("", "x", ""))
        largest = max(largest, own)
    if not with_memory:
        return largest
    lessons = settings.long_term_budget if settings.long_term else 0
    return largest + settings.memory_tokens + lessons


def _shared_turn_prompt(
    task: Task, role_id: str, state: Mapping[str, Any], settings: RunContext, with_memory: bool
) -> TurnPrompt:
    system = task_prompt(task, state["brief"])
    role = own_role_prompt(task, role_id)
    user = _shared_frame(task, role_id, state, settings, with_memory)
    system_tokens = cached_count(system)
    role_tokens = cached_count(role)
    frame_tokens = cached_count(user("", "x", ""))
    memory = memory_text(memory_slots(state)[role_id]) if with_memory else ""
    context = build_context(
        fixed_tokens=system_tokens + role_tokens + frame_tokens,
        memory=memory,
        transcript=secret_ballot(task, role_id, state, state["transcript"]),
        budget=settings.token_budget,
        shared_room=settings.token_budget
        - system_tokens
        - _own_parts_reserve(task, state, settings, with_memory),
    )
    text = user(context.memory, context.rendered_turns, role)
    share = _share(
        settings, task=system_tokens, role=role_tokens, frame=frame_tokens, context=context
    )
    return TurnPrompt([SystemMessage(system), HumanMessage(text)], share)


def build_question_prompt(
    task: Task, role_id: str, state: Mapping[str, Any], settings: RunContext, question: str
) -> TurnPrompt:
    """A question to `role_id` about the meeting, without its memory (the documentation
    step): the task and the role, the newest turns that fit, the question, in the order
    `settings.prompt_layout` names. In the shared layout the turns are those the next
    speaker would see, so a prefix cache serves them from the last turn's prompt."""
    brief = state["brief"]
    if settings.prompt_layout == "shared":
        system = task_prompt(task, brief)
        role = own_role_prompt(task, role_id)

        def user(turns: str) -> str:
            return f"{conversation_section(turns)}{role}\n\n{question}"

        with_memory = bool(memory_slots(state))
        shared_room = (
            settings.token_budget
            - cached_count(system)
            - _own_parts_reserve(task, state, settings, with_memory)
        )
        role_tokens = cached_count(role)
    else:
        system = system_prompt(task, role_id, brief)

        def user(turns: str) -> str:
            return sections(None, turns) + question

        shared_room = None
        role_tokens = cached_count(system) - cached_count(brief.strip())
    system_tokens = cached_count(system)
    frame_tokens = cached_count(user("x"))
    context = build_context(
        fixed_tokens=system_tokens + frame_tokens,
        memory="",
        transcript=state["transcript"],
        budget=settings.token_budget,
        shared_room=shared_room,
    )
    task_tokens = system_tokens - role_tokens if shared_room is None else system_tokens
    share = _share(
        settings,
        task=task_tokens,
        role=role_tokens,
        frame=frame_tokens - (role_tokens if shared_room is not None else 0),
        context=context,
    )
    return TurnPrompt([SystemMessage(system), HumanMessage(user(context.rendered_turns))], share)


def fixed_tokens(task: Task, brief: str, settings: RunContext) -> int:
    """Tokens of the largest fixed context (task, role, instructions) any agent needs in
    any phase: a voter's question holds the proposal on the table, up to
    `VOTED_PROPOSAL_TOKENS`."""
    probe = settings.with_values(token_budget=10**9)
    # the probe's question holds the placeholder of no proposal; a real one may be longer
    proposal = VOTED_PROPOSAL_TOKENS - cached_count(accepted_proposal(task, []))
    sizes = []
    for phase in task.schedule.phases:
        state: dict[str, Any] = {
            "brief": brief,
            "transcript": [],
            MEMORY_KEY: {r: {"text": ""} for r in task.speakers},
            **task.schedule.start(phase.name),
        }
        for role_id in task.speakers:
            more = proposal if task.schedule.is_vote(role_id, phase.name) else 0
            sizes.append(build_turn_prompt(task, role_id, state, probe, True).tokens + more)
    return max(sizes)


def check_budget(task: Task, brief: str, settings: RunContext, with_memory: bool) -> None:
    """UserError in one line, naming the minimum, when the token budget cannot hold every
    agent's fixed context, (with memory) the whole memory and long-term lessons, and a
    short newest turn: the library's `check_budget`. Every context reserves the memory and
    the lessons, so a memory is never cut to fit."""
    fixed = fixed_tokens(task, brief, settings)
    memory = settings.memory_tokens if with_memory else 0
    lessons = settings.long_term_budget if with_memory and settings.long_term else 0
    try:
        library_check_budget(
            settings.token_budget, memory, system_tokens=fixed, lessons_tokens=lessons
        )
    except ValueError:
        least = minimum_budget(memory, system_tokens=fixed, lessons_tokens=lessons)
        held = (
            "role prompt, memory and a short turn"
            if with_memory
            else "role prompt and a short turn"
        )
        raise UserError(
            f"token budget {settings.token_budget} is smaller than the task description, "
            f"{held} ({least} tokens): raise --budget to at least {least}"
            + (" or lower --memory-tokens" if with_memory else "")
        ) from None
